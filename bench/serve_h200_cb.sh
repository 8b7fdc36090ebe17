#!/bin/bash
# Two server settings on the NVIDIA H200, same model and load: transformers serve as is, then with
# --continuous-batching (paged KV cache). Compared with `buildctl compare` on this machine.
set -u
# Run from the repository root on the GPU machine, with a carry folder (default .bench-carry) holding
# whl/ (AIPerf, transformers 5.24.0, FastAPI, uvicorn, openai, pydantic and the wheels they need that the
# machine lacks), tiny-llama/ (the serve image's bundled model: docker cp out of rocmig/serve) and repo/
# (a copy of buildctl/). $OUT receives the run files and logs.
C=${1:-$(pwd)/.bench-carry}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $C/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
mkdir -p /opt/rocmig/models && cp -r $C/tiny-llama /opt/rocmig/models/
run() {  # run NAME LABEL [server flags]
  local name=$1 label=$2; shift 2
  python3 -m transformers.cli.transformers serve /opt/rocmig/models/tiny-llama --device cuda --host 127.0.0.1 --port 30000 "$@" > $OUT/server-$name.log 2>&1 &
  local srv=$!
  for i in $(seq 180); do curl -sf 127.0.0.1:30000/health >/dev/null && break; sleep 1; done
  (cd $C/repo && timeout 250 python3 -m buildctl bench serve --url http://127.0.0.1:30000 --out $OUT/$name.json \
    --tokenizer /opt/rocmig/models/tiny-llama --input-len 256 --output-len 128 --concurrency 1,8,32 --num-prompts 64 \
    --dtype bfloat16 --memory nvidia --server-pid $srv --label "$label") 2>&1 | tee $OUT/bench-$name.log
  kill $srv; wait $srv 2>/dev/null; sleep 2
}
run h200-plain "H200, transformers serve"
run h200-cb "H200, transformers serve --continuous-batching" --continuous-batching
tail -3 $OUT/server-h200-cb.log
ls $OUT
