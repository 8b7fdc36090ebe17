#!/usr/bin/env bash
# DDP checkpoint-and-resume of recipes/distributed on the GPUs of one host with the NCCL backend (RCCL's
# API twin), as issue 9 asks; with one GPU it checks the GPU code path and bitwise resume, not bandwidth.
# Writes $OUT/ddp_resume.json. NVLink multicast stays off (device README).
set -euo pipefail
out=${OUT:-/tmp/out}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ngpu=$(python3 -c 'import torch; print(torch.cuda.device_count())')
work=$(mktemp -d)
run() { python3 -m recipes.distributed.launch --nproc-per-node "$ngpu" --preset single-node \
          --env NCCL_NVLS_ENABLE=0 train --steps 400 --ckpt-every 200 "$@"; }
run --ckpt-dir "$work/full" | tee "$work/full.log"
mkdir -p "$work/resumed"
cp -r "$work/full/step-00000200" "$work/resumed/"
run --ckpt-dir "$work/resumed" --resume auto | tee "$work/resumed.log"
python3 - "$work" "$ngpu" "$out/ddp_resume.json" <<'PY'
import json, sys
work, ngpu, dest = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def final(name):
    lines = [json.loads(l) for l in open(f"{work}/{name}.log") if l.startswith("{") and "weights_sha256" in l]
    return lines[-1]
full, resumed = final("full"), final("resumed")
import torch
result = {"gpus": ngpu, "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
          "uninterrupted": full, "resumed_from_step_200": resumed,
          "bitwise_equal": full["weights_sha256"] == resumed["weights_sha256"]}
json.dump(result, open(dest, "w"), indent=2)
print(json.dumps(result, indent=2))
PY
