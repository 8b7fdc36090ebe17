"""Distributed training recipes: RCCL/NCCL presets, roll call, torchrun launcher, all-reduce busbw, DDP/FSDP job.

Run from the directory that holds `recipes/` (in the train image: PYTHONPATH=/opt/rocmig):
    python -m recipes.distributed.launch --help
"""
