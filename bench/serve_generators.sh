#!/bin/bash
# The two load generators of `buildctl bench serve` on one server and one workload (docs/benchmarks.md):
# AIPerf from the host's venv and GuideLLM inside the serve image, both against `docker run rocmig/serve`
# (CPU mode, bundled model), one after the other; then `buildctl compare` of the two run files.
# Usage, from the repository root after `make venv` and `buildctl build --image serve`:
#   bash bench/serve_generators.sh [OUT_DIR]     (default docs/compare/cpu-generators)
set -eu
OUT=${1:-docs/compare/cpu-generators}
IMAGE=${IMAGE:-rocmig/serve:rocm7.2-gfx942-debian}
WORKLOAD=(--input-len 64 --output-len 16 --num-prompts 8 --concurrency 1,4 --dtype bfloat16 --memory cpu)
mkdir -p "$OUT"
NAME=rocmig-bench-gen-$$
docker run -d --name "$NAME" -p 127.0.0.1:30017:30000 "$IMAGE" >/dev/null
trap 'docker rm -f "$NAME" >/dev/null' EXIT
for i in $(seq 150); do curl -sf 127.0.0.1:30017/v1/models >/dev/null && break; sleep 2; done
.venv/bin/python -m buildctl bench serve --url http://127.0.0.1:30017 --out "$OUT/aiperf.json" "${WORKLOAD[@]}" \
    --container "$NAME" --load-generator aiperf --label "AIPerf 0.13.0 (host)"
WORK=$(mktemp -d) && chmod 777 "$WORK"
docker run --rm --network "container:$NAME" --pid "container:$NAME" -v "$PWD:/src:ro" -v "$WORK:/out" -w /src \
    -e PYTHONPATH=/src --entrypoint python "$IMAGE" -m buildctl bench serve --url http://127.0.0.1:30000 \
    --out /out/guidellm.json "${WORKLOAD[@]}" --tokenizer /opt/rocmig/models/tiny-llama \
    --load-generator guidellm --label "GuideLLM 0.8.1 (in the serve image)"
cp "$WORK/guidellm.json" "$OUT/guidellm.json" && rm -rf "$WORK"
.venv/bin/python -m buildctl compare "$OUT/aiperf.json" "$OUT/guidellm.json" --out "$OUT"
