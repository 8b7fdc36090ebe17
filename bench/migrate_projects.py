"""Measure the migrate recipe on real CUDA projects from PyPI sdists, per offload arch.

For each project: download the sdist (pip download; for sdists whose metadata step imports torch,
which pip cannot prepare here, the file is taken from PyPI's simple index, PEP 691 - the index pip
itself reads), unpack it, run the recipe of this working tree in the dev image with --baseline, and
count per arch the units that compiled (migrated, and plain hipify-perl as the baseline), the
translator of each unit, the failures with their first error, the wall time, the CPU time of the
recipe's processes (user + sys, from bash's `times` in the container: unlike the wall time it does not
grow with the machine's load) and the load average around the run.

With --compare-recipes DIR (a recipes/ folder of another checkout, e.g. `git worktree add /tmp/ref main`
then DIR=/tmp/ref/recipes), each project is also run with that recipe, right before this tree's, and the
row gives the ratio of CPU and wall times (this tree / DIR) and whether both compiled the same units.

    .venv/bin/python bench/migrate_projects.py [--project NAME==VERSION ...] [--arch gfx942 --arch gfx1100]
        [--jobs 2] [--subset N] [--only GLOB ...] [--under PATH] [--out build/bench/migrate] [--markdown] [--no-baseline]
        [--compare-recipes DIR] [--migrate-arg=ARG ...] [--no-torch]

Output: one JSON line per project on stdout (with --markdown, a table for docs/benchmarks.md), and
OUT/<project>/report.json. Needs the dev image ($ROCMIG_DEV_IMAGE, default
rocmig/dev:rocm7.2.4-gfx942-debian), Docker and PyPI.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGE = os.environ.get("ROCMIG_DEV_IMAGE", "rocmig/dev:rocm7.2.4-gfx942-debian")
PROJECTS = ("causal-conv1d==1.7.0", "mamba-ssm==2.3.2.post1", "torch-scatter==2.1.2", "torch-cluster==1.6.3",
            "bitsandbytes==0.50.2", "gsplat==1.5.3", "flash-attn==2.8.3.post2")
SIMPLE = "https://pypi.org/simple/{name}/"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _is_sdist(filename: str, name: str, version: str) -> bool:
    parts = filename.rsplit("-", 1)
    return len(parts) == 2 and _norm(parts[0]) == _norm(name) and parts[1] in (f"{version}.tar.gz", f"{version}.zip")


def _cached(cache: Path, name: str, version: str) -> Path | None:
    return next((p for p in sorted(cache.iterdir()) if _is_sdist(p.name, name, version)), None)


def _from_index(name: str, version: str, cache: Path) -> Path | None:
    """Download the sdist of NAME==VERSION listed in PyPI's simple index (PEP 691 JSON) into `cache`;
    None when the index lists none. Raises OSError when the index cannot be read."""
    context = ssl.create_default_context(cafile=CA_BUNDLE if os.path.exists(CA_BUNDLE) else None)
    request = urllib.request.Request(SIMPLE.format(name=name), headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, context=context, timeout=60) as response:
        files = json.load(response)["files"]
    for f in files:
        if _is_sdist(f["filename"], name, version):
            target = cache / f["filename"]
            partial = target.with_name(target.name + ".part")
            with urllib.request.urlopen(f["url"], context=context, timeout=600) as response, open(partial, "wb") as out:
                shutil.copyfileobj(response, out)
            partial.replace(target)
            return target
    return None


def fetch_sdist(spec: str, cache: Path) -> Path:
    """The sdist of `spec` (NAME==VERSION) under `cache`, downloaded when absent: from PyPI's simple
    index, a plain download, else with `pip download --no-binary :all:` (which first prepares the
    package's metadata: LightGBM's scikit-build backend ran past 10 minutes on a fresh CI machine).
    Raises RuntimeError when neither finds an sdist of that version."""
    name, version = spec.split("==")
    cache.mkdir(parents=True, exist_ok=True)
    found = _cached(cache, name, version)
    if found:
        return found
    try:
        found = _from_index(name, version, cache)
    except (OSError, ValueError, KeyError):
        found = None
    if found:
        return found
    try:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--quiet",
                        "--dest", str(cache), spec], capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"{spec}: pip download ran past {exc.timeout} s") from exc
    found = _cached(cache, name, version)
    if found:
        return found
    raise RuntimeError(f"{spec}: no sdist on PyPI")


def unpack(sdist: Path, dest: Path) -> Path:
    """Unpack `sdist` into `dest`; returns the project folder."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    if sdist.suffix == ".zip":
        with zipfile.ZipFile(sdist) as z:
            z.extractall(dest)
    else:
        with tarfile.open(sdist) as t:
            t.extractall(dest, filter="data")
    entries = list(dest.iterdir())
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else dest


def subset(src: Path, n: int) -> None:
    """Keep only the first `n` .cu units (sorted by path) of `src`, for quick iterations."""
    units = sorted(src.rglob("*.cu"))
    for path in units[n:]:
        path.unlink()


def keep_only(src: Path, patterns: list[str]) -> None:
    """Delete the C/C++/CUDA sources of `src` whose tree-relative path matches none of `patterns`
    (fnmatch globs such as 'csrc/cuda/*.cu'), to measure part of a large project."""
    for path in sorted(src.rglob("*")):
        if path.suffix in (".cu", ".cpp", ".cc", ".cxx") and path.is_file():
            rel = path.relative_to(src).as_posix()
            if not any(fnmatch.fnmatch(rel, pattern) for pattern in patterns):
                path.unlink()


TIMES = re.compile(r"^(\d+)m([\d.]+)s (\d+)m([\d.]+)s$")


def run(src: Path, out: Path, archs: list[str], jobs: int, baseline: bool = True,
        recipes: Path = ROOT / "recipes", extra: tuple[str, ...] = (),
        torch: bool = True) -> tuple[subprocess.CompletedProcess, float | None]:
    """The recipe of `recipes` in the dev image: `src` read-only, `out` writable, `extra` passed on to
    the recipe (e.g. --define USE_CUDA); torch=False hides the image's PyTorch headers (units that
    need them are reported needs-torch, as tests/images/test_migrate_deepspeed.py runs DeepSpeed).
    Returns the process and the CPU seconds (user + sys) of the recipe and its children, None when
    not reported."""
    out.mkdir(parents=True, exist_ok=True)
    cmd = ["docker", "run", "--rm", "--user", f"{os.getuid()}:{os.getgid()}", "-e", "HOME=/tmp",
           "-e", "PYTHONPATH=/opt/rocmig/recipes/migrate", *([] if torch else ["-e", "ROCMIG_TORCH_PATH="]),
           "-v", f"{recipes}:/opt/rocmig/recipes:ro",
           "-v", f"{src}:/src:ro", "-v", f"{out}:/out", IMAGE, "bash", "-c",
           'python3 -m migrate "$@"; rc=$?; times >&2; exit $rc', "migrate", "/src", "--out", "/out/run",
           *sum((["--arch", a] for a in archs), []), "--jobs", str(jobs), *(["--baseline"] if baseline else []),
           "--fail-on", "never", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=7200, check=False)
    lines = proc.stderr.strip().splitlines()
    m = TIMES.match(lines[-1].strip()) if lines else None
    cpu = (int(m[1]) * 60 + float(m[2]) + int(m[3]) * 60 + float(m[4])) if m else None
    return proc, cpu


def summarize(spec: str, report: dict, wall: float, cpu: float | None = None, load: tuple[float, float] = (0.0, 0.0)) -> dict:
    """Per arch: units, ok, failed (path -> first error), explained (failed path -> "rule at file:line" of
    the finding that explains it), unexplained (failed paths without one), baseline ok; translators of
    the units; wall and CPU seconds; the 1-minute load average before and after the run."""
    units = [f for f in report["files"] if f["unit"]]
    per_arch = {}
    for arch in (a["name"] for a in report["archs"]):
        ok = [f["path"] for f in units if f["compile"][arch]["status"] == "ok"]
        base_ok = [f["path"] for f in units if f.get("baseline", {}).get(arch, {}).get("status") == "ok"]
        failed = {f["path"]: f["compile"][arch]["first_error"][:240] for f in units if f["compile"][arch]["status"] != "ok"}
        explained = {f["path"]: "{rule} at {file}:{line}".format(**f["compile"][arch]["explained_by"])
                     for f in units if f["compile"][arch].get("explained_by")}
        per_arch[arch] = {"units": len(units), "ok": len(ok), "baseline_ok": len(base_ok), "failed": failed,
                          "explained": explained, "unexplained": sorted(set(failed) - set(explained))}
    translators: dict[str, int] = {}
    for f in units:
        name = f.get("translator", {}).get("name", "hipify-perl")
        translators[name] = translators.get(name, 0) + 1
    return {"project": spec, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1) if cpu is not None else None,
            "load": [round(x, 1) for x in load], "timings": report.get("timings", {}), "archs": per_arch,
            "translators": translators}


def markdown(rows: list[dict]) -> str:
    """The docs/benchmarks.md table."""
    lines = ["| project (sdist) | arch | units | compiled | % | failed without a finding | plain hipify-perl | translators "
             "| wall s | CPU s | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for arch, a in r["archs"].items():
            pct = 100.0 * a["ok"] / a["units"] if a["units"] else 0.0
            tr = ", ".join(f"{k} {v}" for k, v in sorted(r["translators"].items()))
            load = "-".join(f"{x:g}" for x in r.get("load", []))
            lines.append(f"| {r['project']} | {arch} | {a['units']} | {a['ok']} | {pct:.0f} | {len(a.get('unexplained', []))} "
                         f"| {a['baseline_ok']} | {tr} "
                         f"| {r['wall_s']} | {r.get('cpu_s')} | {load} |")
    compared = [r for r in rows if "compare" in r]
    if compared:
        lines += ["", "| project (sdist) | CPU s (this / reference) | CPU ratio | wall s (this / reference) | wall ratio | same units compiled |",
                  "|---|---|---|---|---|---|"]
        for r in compared:
            c = r["compare"]
            lines.append(f"| {r['project']} | {r['cpu_s']} / {c['cpu_s']} | {c['cpu_ratio']} | {r['wall_s']} / {c['wall_s']} "
                         f"| {c['wall_ratio']} | {c['same_units_ok']} |")
    return "\n".join(lines)


def _measure(spec: str, src: Path, out: Path, archs: list[str], jobs: int, baseline: bool, recipes: Path,
             extra: tuple[str, ...] = (), torch: bool = True) -> dict:
    """One recipe run of `src`, summarized; {"project", "error"} when the recipe failed."""
    load0 = os.getloadavg()[0]
    started = time.monotonic()
    proc, cpu = run(src, out, archs, jobs, baseline, recipes, extra, torch)
    wall = time.monotonic() - started
    report_path = out / "run" / "report.json"
    if proc.returncode not in (0, 1) or not report_path.exists():
        return {"project": spec, "error": proc.stderr.strip()[-500:]}
    return summarize(spec, json.loads(report_path.read_text()), wall, cpu, (load0, os.getloadavg()[0]))


def _ok_units(row: dict) -> dict[str, int]:
    return {arch: a["ok"] for arch, a in row["archs"].items()}


def main(argv: list[str] | None = None) -> int:
    """CLI entry; exit 0, or 5 when a recipe run failed."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--project", action="append", help="NAME==VERSION (repeat); default: the PROJECTS list")
    p.add_argument("--arch", action="append", help="offload arch (repeat); default gfx942 and gfx1100")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--subset", type=int, default=0, help="keep only the first N .cu units of each project")
    p.add_argument("--only", action="append", default=[], metavar="GLOB",
                   help="keep only the .cu/.cpp sources whose path in the sdist matches (repeat)")
    p.add_argument("--out", type=Path, default=ROOT / "build" / "bench" / "migrate")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--no-baseline", action="store_true", help="skip the plain hipify-perl compile (halves the time)")
    p.add_argument("--under", default="", help="keep only the sources under this folder of each sdist (e.g. csrc)")
    p.add_argument("--compare-recipes", type=Path, default=None,
                   help="recipes/ folder of another checkout, run on each project first for a same-run ratio")
    p.add_argument("--no-torch", action="store_true",
                   help="hide the image's PyTorch headers: units that need them are reported needs-torch")
    p.add_argument("--migrate-arg", action="append", default=[], metavar="ARG",
                   help="passed on to the recipe (repeat), e.g. --migrate-arg=--define=USE_CUDA --migrate-arg=--include-dir=include")
    args = p.parse_args(argv)
    extra = tuple(args.migrate_arg)
    archs = args.arch or ["gfx942", "gfx1100"]
    rows, code = [], 0
    for spec in args.project or PROJECTS:
        sdist = fetch_sdist(spec, ROOT / "build" / "cache" / "sdists")
        work = args.out / _norm(spec.split("==")[0])
        src = unpack(sdist, work / "src")
        if args.under:
            src = src / args.under
        if args.subset:
            subset(src, args.subset)
        if args.only:
            keep_only(src, args.only)
        reference = None
        if args.compare_recipes:
            reference = _measure(spec, src, work / "reference", archs, args.jobs, not args.no_baseline,
                                 args.compare_recipes.resolve(), extra, not args.no_torch)
        row = _measure(spec, src, work / "out", archs, args.jobs, not args.no_baseline, ROOT / "recipes", extra,
                       not args.no_torch)
        if "error" in row or (reference and "error" in reference):
            print(json.dumps(row if "error" in row else reference), flush=True)
            code = 5
            continue
        if reference:
            row["compare"] = {"cpu_s": reference["cpu_s"], "wall_s": reference["wall_s"],
                              "cpu_ratio": round(row["cpu_s"] / reference["cpu_s"], 2) if row["cpu_s"] and reference["cpu_s"] else None,
                              "wall_ratio": round(row["wall_s"] / reference["wall_s"], 2),
                              "same_units_ok": _ok_units(row) == _ok_units(reference), "reference_ok": _ok_units(reference)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.markdown:
        print(markdown(rows))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
