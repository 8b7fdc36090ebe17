#!/bin/bash
# The NVIDIA H200 "before" run of docs/compare.md: transformers serve on CUDA with the serve image's bundled
# model, driven by `buildctl bench serve` (AIPerf), the same workload as the CPU run.
set -u
# Run from the repository root on the GPU machine, with a carry folder (default .bench-carry) holding
# whl/ (AIPerf, transformers 5.24.0, FastAPI, uvicorn, openai, pydantic and the wheels they need that the
# machine lacks), tiny-llama/ (the serve image's bundled model: docker cp out of rocmig/serve) and repo/
# (a copy of buildctl/). $OUT receives the run files and logs.
C=${1:-$(pwd)/.bench-carry}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $C/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
mkdir -p /opt/rocmig/models && cp -r $C/tiny-llama /opt/rocmig/models/
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv > $OUT/nvidia-smi.txt
python3 -c "import torch, transformers, pydantic; print(torch.__version__, torch.version.cuda, transformers.__version__, pydantic.__version__)"
python3 -m transformers.cli.transformers serve /opt/rocmig/models/tiny-llama --device cuda --host 127.0.0.1 --port 30000 > $OUT/server.log 2>&1 &
SRV=$!
for i in $(seq 120); do curl -sf 127.0.0.1:30000/health >/dev/null && break; sleep 1; done
curl -s 127.0.0.1:30000/v1/models; echo
cd $C/repo
python3 -m buildctl bench serve --url http://127.0.0.1:30000 --out $OUT/h200.json --tokenizer /opt/rocmig/models/tiny-llama \
  --input-len 128 --output-len 32 --concurrency 1,4,16 --num-prompts 16 --dtype bfloat16 --memory nvidia \
  --server-pid $SRV --label "NVIDIA H200 (transformers serve, CUDA)" --keep-artifacts 2>&1 | tee $OUT/bench.log
RC=${PIPESTATUS[0]}
tar -C $OUT -czf $OUT/aiperf.tgz h200.json.aiperf 2>/dev/null; rm -rf $OUT/h200.json.aiperf
kill $SRV; tail -5 $OUT/server.log
exit $RC
