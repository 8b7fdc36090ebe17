"""Fine-tuning recipes: LLaMA-Factory configs for ROCm, a checking launcher, a tiny local model for CPU proofs.

Run from the directory that holds `recipes/` (in the train image: PYTHONPATH=/opt/rocmig):
    python -m recipes.finetune.launch recipes/finetune/configs/llama3_lora_sft.yaml --dry-run
"""
