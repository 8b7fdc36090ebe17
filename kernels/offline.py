"""Compile every kernel for AMD targets offline and check each code object's arch.

No GPU is needed: TileLang's HIP backend generates HIP C++ and calls hipcc. The
source and the code object (``kernel.hip``, ``kernel.hsaco``) are kept in a
folder per target and kernel, and the arch is read from the code object itself
(``kernels.codeobject``), not trusted from the command line.

Run: ``python -m kernels.offline --out DIR [--targets gfx90a,gfx942,...] [--json FILE]``.
Exit status 0 when every kernel compiled and every code object holds exactly its
target's arch, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kernels import api
from kernels.codeobject import code_object_archs
from kernels.problems import FlashAttentionProblem, GemmProblem, RmsNormProblem
from kernels.targets import AMD_TARGETS, get_target

# One problem per kernel and dtype path; fp16 and bf16 both (bf16 is what needs
# hip_bfloat16, the include tools/patch_tilelang_hip.py fixes on Debian's ROCm).
OFFLINE_PROBLEMS = [
    ("gemm", GemmProblem(4096, 4096, 4096, "float16")),
    ("gemm", GemmProblem(4096, 4096, 4096, "bfloat16")),
    ("flash_attention", FlashAttentionProblem(8, 32, 4096, 128, True, "float16")),
    ("flash_attention", FlashAttentionProblem(8, 32, 4096, 64, False, "bfloat16")),
    ("rmsnorm", RmsNormProblem(16384, 8192, "bfloat16")),
    ("rmsnorm", RmsNormProblem(16384, 4096, "float16")),
]


def _label(kernel: str, problem) -> str:
    extra = f"-hd{problem.head_dim}{'-causal' if problem.causal else ''}" if kernel == "flash_attention" else ""
    return f"{kernel}-{problem.dtype}{extra}"


def compile_target(target: str, out_dir: Path) -> list[dict]:
    """Compile ``OFFLINE_PROBLEMS`` for ``target`` under ``out_dir/target/``.

    Returns one record per kernel: ``target``, ``kernel``, ``label``, ``seconds``,
    ``code_object`` (path), ``archs`` (read from it), ``ok``, and ``error``
    when the compile failed.

    Raises:
        ValueError: ``target`` is not an AMD target of ``kernels.targets``.
    """
    if get_target(target).vendor != "amd":
        raise ValueError(f"target {target!r} is not an AMD target; allowed: {', '.join(AMD_TARGETS)}")
    records = []
    for kernel, problem in OFFLINE_PROBLEMS:
        label = _label(kernel, problem)
        where = out_dir / target / label
        where.mkdir(parents=True, exist_ok=True)
        rec: dict = {"target": target, "kernel": kernel, "label": label}
        t0 = time.time()
        try:
            jit_kernel = api.compile(kernel, target, problem)
            rec["seconds"] = round(time.time() - t0, 1)
            (where / "kernel.hip").write_text(jit_kernel.get_kernel_source())
            obj = where / "kernel.hsaco"
            archs = code_object_archs(api.write_hip_code_object(jit_kernel, target, obj))
        except Exception as exc:  # one failing kernel is reported with the others
            rec.update(ok=False, error=f"{type(exc).__name__}: {str(exc)[-1500:]}")
            records.append(rec)
            continue
        rec.update(code_object=str(obj), archs=archs, ok=archs == [target])
        records.append(rec)
    return records


def main(argv: list[str] | None = None) -> int:
    """CLI entry; see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for sources and code objects")
    ap.add_argument("--targets", default=",".join(AMD_TARGETS), help="comma list of AMD targets")
    ap.add_argument("--json", type=Path, help="write the records here")
    args = ap.parse_args(argv)
    targets = [t for t in args.targets.split(",") if t]
    for t in targets:
        if t not in AMD_TARGETS:
            ap.error(f"--targets: {t!r} is not one of {', '.join(AMD_TARGETS)}")
    records = [rec for t in targets for rec in compile_target(t, args.out)]
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    for r in records:
        status = "ok" if r["ok"] else "FAIL"
        detail = ",".join(r.get("archs", [])) or r.get("error", "")[-300:]
        print(f"{status:<5}{r['target']:<9}{r['label']:<40}{detail}")
    return 0 if all(r["ok"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
