"""One migration run: discover -> copy -> hipify -> fixups -> scan -> compile (-> baseline) -> report data.

Output folder layout (all under --out):
  cuda/      untouched copy of the input sources
  hip/       migrated tree (per unit hipify-clang or hipify-perl, headers hipify-perl; + exact fixups)
  hipify-perl/  hipify-perl's translation of the units hipify-clang made (fallback and baseline)
  fallback/  hipify-perl + fixups of those units, compiled when hipify-clang's output fails
  torch/     the tree hipified by torch.utils.hipify (extension mode) for units that include PyTorch, + exact fixups
  baseline/  plain hipify-perl output (--baseline only)
  build/     code objects and one compiler log per unit and arch group
  report.json, report.md, report.html (written last, atomically)
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import os
import posixpath
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from . import (
    REPORT_SCHEMA_VERSION,
    advice,
    cpp,
    explain,
    flags,
    hipify,
    includes,
    report,
    semantic,
    sysdeps,
    torch_ext,
    tree,
)
from .archs import Arch, wavefront_groups
from .compile import Job, Result, compile_all, device_library_header, find_hipcc, host_only
from .errors import InputError
from .rules import Rule

MARKER = ".rocmig-migrate"
# hipBLAS's half-precision functions (hipblasHgemm, hipblasHgemmBatched, ...), hipify's names of cuBLAS's cublasH*
HIPBLAS_HALF_CALL = re.compile(r"\bhipblasH[a-z][A-Za-z]*\s*\(")
# hipblasHalf as a value type (`hipblasHalf one = 0x3c00;`: its bits as uint16_t); a pointer to it (a
# reinterpret_cast of the half data, gptqmodel's exllamav2 compat_gemm.cuh) holds with either type
HIPBLAS_HALF_VALUE = re.compile(r"\bhipblasHalf\b(?!\s*(?:const\s*)?\*)")
WAVEFRONT_MACROS = ("ROCM_WAVEFRONT_SIZE",)  # read by DeepSpeed's kernels; its build gets it from rocminfo
SYNC_USE = re.compile(r"\b__(shfl|shfl_up|shfl_down|shfl_xor|ballot|any|all|match_any|match_all|reduce_\w+)_sync\s*\(|\b__activemask\s*\(|\b__syncwarp\s*\(")


@dataclass(frozen=True)
class Options:
    """Run options (see cli.py for the flags)."""

    src: Path
    out: Path
    archs: tuple[Arch, ...]
    jobs: int
    baseline: bool
    max_file_bytes: int
    timeout: int
    extra_flags: tuple[str, ...]
    opt: str = "-O0"
    compile_commands: Path | None = None
    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    undefines: tuple[str, ...] = ()
    only: tuple[str, ...] = ()


def prepare_out(out: Path, src: Path) -> None:
    """Make `out` ready: create it, or clear a previous run's output (marked by .rocmig-migrate).

    Raises InputError when `out` lies inside `src`, or holds files that are not a previous run's.
    """
    src_real, out_real = src.resolve(), out.resolve()
    if src.is_dir() and (out_real == src_real or src_real in out_real.parents):
        raise InputError(f"--out {out}: lies inside the input tree {src}; choose a folder outside it")
    if out.exists():
        if not out.is_dir():
            raise InputError(f"--out {out}: exists and is not a folder")
        entries = [p for p in out.iterdir()]
        if entries and not (out / MARKER).exists():
            raise InputError(f"--out {out}: folder is not empty and holds no previous migrate output; give an empty or new folder")
        for entry in entries:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / MARKER).write_text("written by rocmig's migrate recipe; the folder is cleared on the next run\n")
    except OSError as exc:
        raise InputError(f"--out {out}: cannot be written ({exc.strerror}); give a folder this user may write") from None


def tool_version(args: list[str]) -> str:
    """First line of a tool's version output ("" when it cannot be run)."""
    try:
        proc = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = [line.strip() for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    return lines[0] if lines else ""


# Files per hipify-perl process: large enough that its start (about 0.14 s) is spread, small enough that
# the workers' batches end close together.
HIPIFY_BATCH = 40


def hipify_tree(src_dir: Path, files: list[tree.SourceFile], hip_dir: Path, workers: int) -> dict[str, list[hipify.HipifyWarning]]:
    """hipify-perl every source of `src_dir` into `hip_dir` (once per distinct content); returns
    {rel: warnings}."""
    tool = hipify.find_hipify()
    tables = hipify.read_tables(tool)
    by_digest: dict[str, list[tree.SourceFile]] = {}
    for f in files:
        by_digest.setdefault(f.sha256, []).append(f)

    groups = list(by_digest.values())
    # one hipify-perl process per batch of files (hipify.translate_many), `workers` batches at a time
    size = max(1, min(HIPIFY_BATCH, -(-len(groups) // max(1, workers))))
    batches = [groups[i:i + size] for i in range(0, len(groups), size)]

    def one(batch: list[list[tree.SourceFile]]) -> list[list[hipify.HipifyWarning]]:
        pairs = [(src_dir / group[0].rel, hip_dir / group[0].rel) for group in batch]
        if tables is None:  # hipify-perl's own warnings, read from its stderr, are per process
            return [hipify.translate(tool, src, dst, None) for src, dst in pairs]
        return hipify.translate_many(tool, pairs, tables)

    warnings: dict[str, list[hipify.HipifyWarning]] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for batch, found_in_batch in zip(batches, pool.map(one, batches)):
            for group, found in zip(batch, found_in_batch):
                for f in group:
                    warnings[f.rel] = found
                    if f is not group[0]:
                        (hip_dir / f.rel).parent.mkdir(parents=True, exist_ok=True)
                        shutil.copyfile(hip_dir / group[0].rel, hip_dir / f.rel)
    return warnings


COPIED = "no unit includes it and it uses no CUDA: copied to hip/ unchanged, not translated"
OWN_PORT = ("the project's own ROCm path ({names}): compiled as its ROCm build compiles it, copied to hip/ unchanged, "
            "not translated (--undefine {first} translates its CUDA path instead)")


def unused_files(files: list[tree.SourceFile], graph: includes.IncludeGraph, units: list[tree.SourceFile]) -> frozenset[str]:
    """The files that no translation unit includes (graph: the CUDA tree's include graph) and that use
    no CUDA (tree.SourceFile.uses_cuda): a project's other backends, tools and tests. They are copied,
    not translated: hipify-perl costs about 0.1-1 s of CPU per file (ggml's tree holds 459 sources, of
    which its CUDA units reach 100), and nothing compiled here sees them."""
    reached = compiled_files(graph, units)
    return frozenset(f.rel for f in files if f.rel not in reached and not f.uses_cuda)


# why a folder the build names is not put on a unit's include path
STANDARD_FOLDER = ("holds a C++ standard library (<cstdint>, <cmath>, ...): on the include path it would take the place of "
                   "the toolchain's own (the project's build pairs it with -nostdinc++ and its own runtime)")


def include_folders(compiler_flags: tuple[str, ...]) -> list[Path]:
    """The folders that `-IDIR`, `-I DIR` and `-isystem DIR` of compiler flags add to the include path, in
    order (the Python C API's and NumPy's come as -isystem: sysdeps.python_flags)."""
    folders: list[Path] = []
    for k, flag in enumerate(compiler_flags):
        if flag in ("-I", "-isystem") and k + 1 < len(compiler_flags):
            folders.append(Path(compiler_flags[k + 1]))
        elif flag.startswith("-I") and len(flag) > 2:
            folders.append(Path(flag[2:]))
    return folders


def run(opts: Options, rules: list[Rule], progress: Callable[[str], None] = lambda _text: None) -> dict:
    """Run the whole migration and return the report data (see docs/migrate.md for the schema).
    progress(line) is called at each step and after each compiled unit (one plain line, no newline).

    Raises InputError for bad input (before anything is written except the cleared --out) and
    ToolError when hipify-perl or hipcc is missing.
    """
    started = time.time()
    source = tree.discover(opts.src, opts.max_file_bytes)
    if opts.only and not any(selected(f.rel, opts.only) for f in source.files if f.kind != "header"):
        raise InputError(f"--only {' '.join(opts.only)}: matches no source of {opts.src} (globs on paths relative "
                         "to SRC, e.g. 'csrc/*.cu')")
    project = flags.project_flags(opts.src, {f.rel for f in source.files}, opts.compile_commands, opts.include_dirs,
                                  opts.defines, {u.rel: u.text for u in tree.units(source)},
                                  {f.rel: f.text for f in source.files}, opts.undefines)
    hipcc = find_hipcc()
    hipify.find_hipify()
    prepare_out(opts.out, opts.src)
    progress(f"{report.count(len(source.files), 'file')} read; project flags: {project.source}")
    cuda_dir, hip_dir, base_dir, build_dir = (opts.out / d for d in ("cuda", "hip", "baseline", "build"))
    tree.write_tree(cuda_dir, {f.rel: f.text for f in source.files})
    sysdirs = includes.system_include_dirs(hipcc)
    defined = project.defined_names()
    tool, no_tool = semantic.find_tool()
    # hipify-clang parses with the CUDA headers on its system path: <cuda.h> is never a tree file there
    unit_dirs = project.unit_dirs(f.rel for f in source.files if f.kind != "header")
    cuda_graph = includes.IncludeGraph({f.rel: f.text for f in source.files}, cpp.ROCM_BUILD_MACROS - defined,
                                       include_dirs=project.all_dirs(),
                                       system_dirs=sysdirs + ((str(tool.cuda_path / "include"),) if tool else ()),
                                       defined=frozenset(d.split("=", 1)[0] for d in project.common.defines),
                                       unit_dirs=unit_dirs)
    by_rel = {f.rel: f for f in source.files}
    unit_list, included = cuda_graph.units_through_includes([f.rel for f in source.files if f.kind != "header"],
                                                            tree.cuda_files(source))
    left_out = frozenset(rel for rel in unit_list if opts.only and not selected(rel, opts.only))
    units = [by_rel[rel] for rel in unit_list if rel not in left_out]
    if not units:
        raise InputError(f"--only {' '.join(opts.only)}: matches none of the {report.count(len(unit_list), 'unit')} "
                         f"of {opts.src}")
    unit_rels = {u.rel for u in units}
    # a project's own ROCm path (its build's switch, flags.hip_switch_defines) is HIP code already:
    # its CMake / Make ROCm build hands the sources to hipcc as they are, so they are copied, not
    # translated; a PyTorch extension's ROCm build hipifies every source (cpp_extension), so it is not
    own_port = bool(project.hip_switches) and not any(cuda_graph.closure(u.rel).torch for u in units)
    copied = frozenset(f.rel for f in source.files) if own_port else unused_files(list(source.files), cuda_graph, units)
    own_port_files = {rel: f"its switch {', '.join(sorted(project.hip_switches))}" for rel in copied} if own_port else {}
    copied_reason = OWN_PORT.format(names=", ".join(sorted(project.hip_switches)), first=min(project.hip_switches)) \
        if own_port else COPIED
    progress(f"{report.count(len(source.files), 'file')}, {report.count(len(units), 'unit')}: hipify-perl "
             f"{report.count(len(source.files) - len(copied), 'file')}")
    hip_warnings = hipify_tree(cuda_dir, [f for f in source.files if f.rel not in copied], hip_dir, opts.jobs)
    tree.write_tree(hip_dir, {f.rel: f.text for f in source.files if f.rel in copied})
    semantic_units = {}
    cuda_texts = {f.rel: f.text for f in source.files}
    standards = flags.build_standards(opts.src)
    for u in units:
        need, own = cuda_graph.closure(u.rel), project.for_unit(u.rel)
        if not need.torch and u.rel not in copied:
            # the system libraries' folders (MPI's) come after the tree's, as in the unit's compile
            system = include_folders(sysdeps.unit_flags(cuda_graph.unit_edges(u.rel), cuda_texts, u.rel))
            semantic_units[u.rel] = ([cuda_dir / d for d in dict.fromkeys(own.include_dirs + need.dirs)
                                      if d not in cuda_graph.standard_folders] + system,
                                     list(own.defines), flags.standard_for(standards, u.rel)[0])
    perl_dir = opts.out / "hipify-perl"
    if tool and semantic_units:
        progress(f"hipify-clang: {report.count(len(semantic_units), 'unit')}")
    clang = semantic.translate_units(tool, semantic_units, cuda_dir, hip_dir, perl_dir, opts.jobs, opts.timeout) if tool else {}
    timings = {"hipify_s": round(time.time() - started, 2)}

    texts = {f.rel: (f.text, (hip_dir / f.rel).read_text(encoding="utf-8")) for f in source.files}
    toolkit_dirs = (str(tool.cuda_path / "include"),) if tool else None
    migrated = advice.migrate_tree(texts, rules, list(opts.archs), project.all_dirs(), sysdirs, defines=defined,
                                   copied=copied, toolkit_dirs=toolkit_dirs, unit_dirs=unit_dirs)
    final_texts, graph = migrated.final, migrated.graph
    made_by_clang = sorted(rel for rel, made in clang.items() if made.ok)
    if made_by_clang:
        perl_texts = {**texts, **{rel: (texts[rel][0], (perl_dir / rel).read_text(encoding="utf-8")) for rel in made_by_clang}}
        alternative = advice.migrate_tree(perl_texts, rules, list(opts.archs), project.all_dirs(), sysdirs,
                                          defines=defined, copied=copied, toolkit_dirs=toolkit_dirs,
                                          unit_dirs=unit_dirs)
        tree.write_tree(opts.out / "fallback", {rel: alternative.final[rel] for rel in made_by_clang})
    files_out: dict[str, dict] = {}
    for f in source.files:
        why_perl = (no_tool if f.rel in semantic_units else
                    "includes PyTorch headers: torch.utils.hipify is its translator" if f.rel in unit_rels else
                    "header or non-unit file (hipify-clang translates units only)")
        files_out[f.rel] = {"path": f.rel, "kind": f.kind, "unit": False, "encoding": f.encoding,
                            "translator": ({"name": "none", "reason": copied_reason} if f.rel in copied
                                           else _translator(clang.get(f.rel), why_perl)),
                            "hipify_warnings": [{"line": w.line, "message": w.message} for w in hip_warnings.get(f.rel, [])],
                            "findings": [x.__dict__ for x in migrated.findings[f.rel]],
                            "fixes": migrated.fix_entries(f.rel),
                            "compile": {}, **({"baseline": {}} if opts.baseline else {})}
    build_check = flags.build_generated(opts.src)
    if opts.baseline:
        base_dir.mkdir(parents=True, exist_ok=True)
        shutil.copytree(hip_dir, base_dir, dirs_exist_ok=True)
        if perl_dir.is_dir():
            shutil.copytree(perl_dir, base_dir, dirs_exist_ok=True)
    tree.write_tree(hip_dir, final_texts)
    timings["fixups_scan_s"] = round(time.time() - started - timings["hipify_s"], 2)

    hipcc_version = tool_version([str(hipcc), "--version"])
    defines = _defines(final_texts, opts.archs, hip_version(hipcc_version))
    groups = wavefront_groups(list(opts.archs))
    torch = torch_ext.find()
    torch_units = [u.rel for u in units if graph.closure(u.rel).torch]
    torch_dir = opts.out / "torch"
    if torch and torch_units:
        progress(f"torch.utils.hipify: {report.count(len(torch_units), 'unit')}")
    half_flags = torch_ext.half_undefines(opts.src) if torch and torch_units else ()
    isa_flags = flags.host_isa_flags(opts.src)
    torch_dirs = {rel: tuple(dict.fromkeys(project.for_unit(rel).include_dirs + graph.closure(rel).dirs)) for rel in torch_units}
    torch_map = torch_ext.hipify_units(torch, cuda_dir, torch_dir, torch_dirs) if torch and torch_units else {}
    filled: list[str] = []
    if torch_map:
        cuda_texts = {f.rel: f.text for f in source.files}
        by_torch = torch_ext.apply_fixups(
            torch_map, cuda_texts, torch_dir,
            lambda part: advice.migrate_tree(part, rules, list(opts.archs), project.all_dirs(), sysdirs,
                                             tree_cuda=cuda_texts, toolkit_dirs=toolkit_dirs,
                                             pytorch_files=frozenset(path for rel, path in torch_map.items()
                                                                     if graph.closure(rel).torch)))
        _torch_entries(files_out, torch_map, by_torch, torch_units,
                       {u.rel: graph.reach(u.rel) for u in units}, torch.origin if torch else "")
        reached = set().union(*(cuda_graph.reach(rel) for rel in torch_units))
        filled = torch_ext.fill_unreached(torch_dir, torch_map, reached, cuda_texts, final_texts)
        for rel in filled:
            entry = files_out[rel]
            entry["torch"] = {"translator": {"name": entry["translator"]["name"], "reason": (
                "torch.utils.hipify did not reach it (an include it renamed to a HIP header); the extension units "
                "compile this translation of it")}, "fixes": entry["fixes"], "findings": entry["findings"]}
    # after _torch_entries, which gives files seen only by extension units their torch findings
    if not opts.compile_commands:
        compiled = compiled_files(cuda_graph, units)
        note_build_branches(files_out, rules, {f.rel: f.text for f in source.files if f.rel in compiled}, defined, build_check)
    note_guarded_units(files_out, rules, {u.rel: (u.text, project.for_unit(u.rel).defines) for u in units})
    note_unit_findings(files_out, rules, "cuda-only-unit",
                       {rel: f"listed for CUDA builds only at {where}" for rel, where in flags.cuda_only_units(opts.src, unit_rels).items()})
    note_unit_findings(files_out, rules, "unit-not-built", flags.unbuilt_units(opts.src, unit_rels))
    jobs, base_jobs = [], []
    fallback_jobs: dict[str, Job] = {}
    seen_fingerprints: dict[str, str] = {}
    twins: dict[str, str] = {}  # unit -> earlier unit with the same fingerprint (compiled once)
    for u in units:
        need = graph.closure(u.rel)
        own = project.for_unit(u.rel)
        dirs = tuple(d for d in dict.fromkeys(own.include_dirs + need.dirs) if d not in graph.standard_folders)
        entry = files_out[u.rel]
        standard = [d for d in own.include_dirs if d in graph.standard_folders]
        if standard:
            entry["include_dirs_left_out"] = {d: STANDARD_FOLDER for d in standard}
        entry["unit"] = True
        entry["include_dirs"] = list(dirs)
        entry["defines"] = list(own.defines)
        if own.undefines:
            entry["undefines"] = list(own.undefines)
        if need.torch and torch is None:
            skipped = {"status": "needs-torch", "first_error": f"includes <{need.torch_header}>; no PyTorch C++ headers in this image",
                       "log": "", "seconds": 0.0, "opt": ""}
            entry["compile"] = {a.name: dict(skipped) for a in opts.archs}
            if opts.baseline:
                entry["baseline"] = {a.name: dict(skipped) for a in opts.archs}
            continue
        key = graph.fingerprint(u.rel) + repr(own)
        if key in seen_fingerprints:
            twins[u.rel] = seen_fingerprints[key]
            continue
        seen_fingerprints[key] = u.rel
        per_group = {g[0].wavefront: tuple(f"{d['name']}={d['values'][g[0].name]}" if d["values"][g[0].name] else d["name"]
                                           for d in defines if g[0].name in d["values"]) + own.defines for g in groups}
        unit_flags, std = sysdeps.unit_flags(graph.unit_edges(u.rel), final_texts, u.rel, sysdirs, isa_flags) \
            + tuple(f"-U{n}" for n in own.undefines), flags.standard_for(standards, u.rel)[0]
        if need.torch and torch is not None:
            entry["translator"] = {"name": "torch.utils.hipify", "hipified_path": torch_map[u.rel],
                                   "reason": f"includes <{need.torch_header}>: hipified as PyTorch's extension build "
                                             f"does, then rocmig's exact fixups; PyTorch headers: {torch.origin}"}
            unit_flags, std = unit_flags + tuple(torch_ext.flags(torch)) + tuple(f for f, _where in half_flags), torch_ext.STD
            source_path = torch_dir / torch_map[u.rel]
            unit_dirs = tuple(torch_dir / d for d in dirs)
        else:
            source_path, unit_dirs = hip_dir / u.rel, tuple(hip_dir / d for d in dirs)
        # the sources it #includes are part of its text (a kernel.cu included by a .cpp brings device code)
        within = "".join((hip_dir / rel).read_text(encoding="utf-8") for rel, users in sorted(included.items()) if u.rel in users)
        host = host_only(u.kind, cpp.blank(source_path.read_text(encoding="utf-8") + "\n" + within))
        library = device_library_header([cpp.blank_code(final_texts[r]) for r in sorted(graph.reach(u.rel))
                                          if r in final_texts]) if host else ""
        if library:
            host = False
            entry["compiled_as_hip"] = (f"C/C++ source compiled as HIP (-x hip): it includes <{library}>, whose rocThrust / "
                                        "hipCUB / rocPRIM headers compile only as HIP; its build must compile it with hipcc too")
        elif host:
            entry["host_only"] = ("C/C++ source without device code: compiled once as C++ (-x c++ "
                                  "-D__HIP_PLATFORM_AMD__=1), as its build's host compiler does; the result stands for every arch")
        jobs.append(Job(u.rel, source_path, unit_dirs, per_group, unit_flags, std, host))
        if u.rel in made_by_clang:
            fallback_jobs[u.rel] = Job(u.rel, opts.out / "fallback" / u.rel, tuple(hip_dir / d for d in dirs), per_group,
                                       unit_flags + ("-iquote", str((hip_dir / u.rel).parent)), host_only=host)
        if opts.baseline:
            base_jobs.append(Job(u.rel, base_dir / u.rel, tuple(base_dir / d for d in dirs),
                                 {g[0].wavefront: own.defines for g in groups}, unit_flags, std, host, casts=False))
    tree.restore_encodings([cuda_dir, hip_dir, base_dir, opts.out / "fallback"], list(source.files))
    t0 = time.time()
    results = compile_all(hipcc, jobs, groups, build_dir / "hip", opts.out, opts.jobs, list(opts.extra_flags),
                          opts.timeout, opts.opt, done=lambda so_far, total: progress(compile_progress("compile", so_far, total)))
    failed = [fallback_jobs[rel] for rel, per_arch in results.items()
              if rel in fallback_jobs and any(r.status != "ok" for r in per_arch.values())]
    if failed:
        again = compile_all(hipcc, failed, groups, build_dir / "fallback", opts.out, opts.jobs, list(opts.extra_flags),
                            opts.timeout, opts.opt,
                            done=lambda so_far, total: progress(compile_progress("compile (hipify-perl fallback)", so_far, total)))
        for rel, per_arch in again.items():
            if sum(r.status == "ok" for r in per_arch.values()) > sum(r.status == "ok" for r in results[rel].values()):
                first = next(r.first_error for r in results[rel].values() if r.status != "ok").replace(f"{opts.out}/", "")
                results[rel] = per_arch
                shutil.copyfile(opts.out / "fallback" / rel, hip_dir / rel)
                files_out[rel]["translator"] = {"name": "hipify-perl", "reason": "hipify-clang's translation failed to "
                                                f"compile ({first}); hipify-perl's compiled"}
    timings["compile_s"] = round(time.time() - t0, 2)
    for rel, per_arch in results.items():
        files_out[rel]["compile"] = {a: dict(r.__dict__) for a, r in per_arch.items()}
    read = {os.path.normpath(hip_dir / f.rel): (f.rel, migrated.states[f.rel].cuda_line if f.rel in migrated.states
                                                  else lambda line: line) for f in source.files}
    if torch_map:
        # files torch.utils.hipify did not reach: their CUDA text, or the tree's translation (filled)
        read.update({os.path.normpath(torch_dir / f.rel): (f.rel, migrated.states[f.rel].cuda_line if f.rel in filled
                                                            and f.rel in migrated.states else lambda line: line)
                     for f in source.files if f.rel not in torch_map})
        read.update({os.path.normpath(torch_dir / path): (rel, by_torch.states[path].cuda_line)
                     for rel, path in torch_map.items() if path in by_torch.states})
    texts = {f.rel: f.text for f in source.files}
    failed = [u.rel for u in units if any(r["status"] == "failed" for r in files_out[u.rel]["compile"].values())]
    note_unit_findings(files_out, rules, "include-outside-build-path", outside_build_path(cuda_graph, project, failed))
    explain_failures(files_out, [u.rel for u in units], set(torch_units), read,
                     explain.diagnostics(rules, {"build-generated": build_check,
                                                 "build-template": flags.header_template(opts.src)},
                                         {"tree-incomplete": explain.own_header(texts),
                                          "std-library": explain.in_project_std_library(texts, cuda_graph.standard_folders),
                                          "tree-undeclared": explain.declared_nowhere(texts),
                                          "other-unit": explain.declared_in_another_unit(texts),
                                          "tree-arity": explain.declared_with_other_arity(texts),
                                          "error-directive": explain.own_error_directive(texts),
                                          "unincluded-header": explain.declared_in_unincluded_header(texts, cuda_graph.reach),
                                          "include-gated": explain.declared_behind_build_switch(texts, cuda_graph, defined, build_check),
                                          "arch-gated": explain.declared_for_nvidia_only(texts),
                                          "build-gated": explain.declared_off_by_build(texts, defined, build_check),
                                          "own-rocm": explain.in_own_rocm_code(texts, own_port_files),
                                          "torch-header": explain.in_torch_headers(torch.include_dirs[0] if torch else ""),
                                          "tree-redefined": explain.defined_elsewhere(texts),
                                          "hip-name": explain.redeclares_hip(texts),
                                          "device-code": explain.in_device_code(texts),
                                          "uses-deviceptr": explain.file_uses(texts, ("CUdeviceptr",)),
                                          "uses-void-handle": explain.file_uses(texts, explain.VOID_HANDLES)}),
                     texts, unit_fallbacks(rules), {u.rel: cuda_graph.reach_unconditional(u.rel) for u in units})
    if opts.baseline:
        t0 = time.time()
        base = compile_all(hipcc, base_jobs, groups, build_dir / "baseline", opts.out, opts.jobs,
                           list(opts.extra_flags), opts.timeout, opts.opt,
                           done=lambda so_far, total: progress(compile_progress("baseline compile", so_far, total)))
        timings["baseline_compile_s"] = round(time.time() - t0, 2)
        for rel, per_arch in base.items():
            files_out[rel]["baseline"] = {a: r.__dict__ for a, r in per_arch.items()}
    for rel, twin in twins.items():
        for key in ("compile", "baseline") if opts.baseline else ("compile",):
            files_out[rel][key] = {a: {**r, "same_as": twin} for a, r in files_out[twin][key].items()}
        # a byte-identical extension unit was hipified as its twin was, not as a file its twin includes
        if files_out[twin].get("translator", {}).get("name") == "torch.utils.hipify" and rel in torch_map:
            files_out[rel]["translator"] = {**files_out[twin]["translator"], "hipified_path": torch_map[rel]}
        if "host_only" in files_out[twin]:
            files_out[rel]["host_only"] = files_out[twin]["host_only"]
    reasons = not_compiled(list(source.files), {u.rel: graph.reach(u.rel) for u in units},
                           {rel: graph.reach(rel) for rel in left_out})
    for rel, why in reasons.items():
        files_out[rel]["not_compiled"] = why
    timings["wall_s"] = round(time.time() - started, 2)
    return {
        "schema": REPORT_SCHEMA_VERSION,
        "complete": True,
        "source": str(opts.src),
        "out": str(opts.out),
        "archs": [{"name": a.name, "family": a.family, "wavefront": a.wavefront, "lds_bytes": a.lds_bytes}
                  for a in opts.archs],
        "tools": {"hipcc": hipcc_version,
                  "hipify_perl": tool_version([str(hipify.find_hipify()), "-version"]),
                  "hipify_clang": tool_version([str(tool.path), "--version"]) if tool else f"not used: {no_tool}",
                  "cuda_headers": str(tool.cuda_path) if tool else "",
                  "torch_headers": {"origin": torch.origin, "include": list(torch.include_dirs)} if torch else None},
        "options": {"jobs": opts.jobs, "baseline": opts.baseline, "extra_flags": list(opts.extra_flags), "opt": opts.opt,
                    "arch_groups": [[a.name for a in g] for g in groups],
                    "project_flags": {"source": project.source, "include_dirs": list(project.common.include_dirs),
                                      "defines": list(project.common.defines),
                                      "inferred_defines": [{"define": d, "reason": why} for d, why in project.inferred],
                                      "extension_flags": [{"flag": f, "reason": f"the build script's nvcc argument at {where}, "
                                                           "as cpp_extension passes it to hipcc"} for f, where in half_flags],
                                      "standards": [{"std": f"c++{year}", "where": where} for year, where in standards],
                                      "host_isa_flags": [{"flag": f, "reason": f"the build's x86 instruction-set flag at {where}, for the "
                                                          "host pass of the units under that folder that include x86 "
                                                          "intrinsics"} for f, where in isa_flags],
                                      "units": len(project.units),
                                      "outside_tree": list(project.outside),
                                      "unread_options": list(project.unread_options)}},
        "defines": defines,
        "timings": timings,
        "skipped": list(source.skipped),
        "input_sha256": hashlib.sha256("".join(f.rel + f.sha256 for f in source.files).encode()).hexdigest(),
        "files": [files_out[f.rel] for f in source.files],
    }


def compiled_files(graph: includes.IncludeGraph, units: list[tree.SourceFile]) -> set[str]:
    """The files the units compile: the units and every file they include."""
    return set().union(*(graph.reach(u.rel) for u in units)) if units else set()


def note_build_branches(files_out: dict[str, dict], rules: list[Rule], texts: dict[str, str],
                        passed: frozenset[str], check: Callable[[str], str]) -> None:
    """Add a `build-tested` rule's info finding to each file whose preprocessor tests read a macro the
    build defines and the compile does not get (flags.build_tested; reserved names and NDEBUG, which
    a release build's flags carry, aside). texts: {rel: CUDA text} of the compiled files."""
    rule = next((r for r in rules if r.check == "build-tested"), None)
    if rule is None:
        return
    for rel, line, name, where in flags.build_tested(texts, passed, check):
        if name.startswith("_") or name == "NDEBUG":
            continue
        text = texts[rel].split("\n")[line - 1].strip()
        files_out[rel]["findings"].append({
            "rule": rule.id, "severity": rule.severity, "file": rel, "line": line, "col": 1, "text": text,
            "message": rule.message, "hint": rule.hint, "suggestion": "", "status": "open",
            "note": f"{name}: {where}"})


def note_guarded_units(files_out: dict[str, dict], rules: list[Rule], units: dict[str, tuple[str, tuple[str, ...]]]) -> None:
    """Add the `guarded-off` rule's finding to each unit whose whole code sits in the block of a macro
    its compile does not define (flags.whole_unit_guard): it compiles to nothing. units: {rel: (CUDA
    text, the unit's -D defines)}; compiler-defined names (leading `__`) are left out."""
    rule = next((r for r in rules if r.check == "guarded-off"), None)
    if rule is None:
        return
    for rel, (text, defines) in units.items():
        name = flags.whole_unit_guard(text)
        if not name or name.startswith("__") or name in {d.split("=", 1)[0] for d in defines}:
            continue
        line = next(n for n, raw in enumerate(cpp.blank(text).split("\n"), 1) if flags.GUARD_OPEN.fullmatch(raw.strip()))
        files_out[rel]["findings"].append({
            "rule": rule.id, "severity": rule.severity, "file": rel, "line": line, "col": 1,
            "text": text.split("\n")[line - 1].strip(), "message": rule.message, "hint": rule.hint, "suggestion": "",
            "status": "open", "note": f"{name} is not defined for this unit"})


def note_unit_findings(files_out: dict[str, dict], rules: list[Rule], check: str, notes: dict[str, str]) -> None:
    """Add the finding (line 0: the whole unit) of the rule with `check` to each unit of `notes` ({unit: the finding's
    note}): `cuda-only-unit` for the units the project's CMake build compiles for CUDA only
    (flags.cuda_only_units), `unit-not-built` for those its build does not compile (flags.unbuilt_units),
    `include-outside-build-path` for those whose build include path lacks a header (outside_build_path);
    explain_failures falls back on them for the unit's failed compiles."""
    rule = next((r for r in rules if r.check == check), None)
    if rule is None:
        return
    for rel, note in notes.items():
        files_out[rel]["findings"].append({
            "rule": rule.id, "severity": rule.severity, "file": rel, "line": 0, "col": 1, "text": "",
            "message": rule.message, "hint": rule.hint, "suggestion": "", "status": "open", "note": note})


def outside_build_path(graph: includes.IncludeGraph, project: flags.ProjectFlags, units: list[str]) -> dict[str, str]:
    """{unit: note} of the `units` whose include path the project's op builder gives (inferred flags:
    flags.builder_include_dirs) that include a tree header found only in a folder that path lacks: the
    project's own build does not find it (lightseq 3.0.1's pybind_op.cpp includes normalize_layer.h, which
    only csrc/ops/includes holds, while its builder names csrc/ops_new/includes). graph: the CUDA tree's."""
    if project.from_database():
        return {}
    out = {}
    for rel in units:
        own = project.units.get(rel)
        if own is None or not own.include_dirs:
            continue
        edges = graph.unit_edges(rel)
        missing = sorted({(target, folder) for f in graph.reach(rel) for target, folder in edges.get(f)
                          if folder and folder not in own.include_dirs})
        if missing:
            target, folder = missing[0]
            more = f" (and {report.count(len(missing) - 1, 'more header')})" if len(missing) > 1 else ""
            out[rel] = (f"{posixpath.basename(target)} is found only in {folder}{more}, which the include path its op "
                        f"builder gives ({', '.join(own.include_dirs)}) lacks")
    return out


def unit_fallbacks(rules: list[Rule]) -> dict[str, tuple[str, bool]]:
    """{rule id: (how its finding explains a whole unit's failure, whether a finding in a file the unit
    includes counts)} for explain_failures: the unit's
    cuda-only-unit and unit-not-built findings (the project's build leaves it out), then a CUTLASS include (a library with no
    ROCm build, whose templates fail wherever the unit first instantiates them)."""
    out = {r.id: ("the project's build leaves the unit out", False) for r in rules if r.check in ("cuda-only-unit", "unit-not-built")}
    out.update({r.id: ("the project's own build does not find a header the unit includes", False)
                for r in rules if r.check == "include-outside-build-path"})
    out.update({r.id: ("the unit uses CUTLASS, which has no ROCm build", True) for r in rules if r.id == "cutlass-no-rocm"})
    return out


def explain_failures(files_out: dict[str, dict], units: list[str], torch_units: set[str],
                     read: dict[str, explain.Migrated], diagnostics: list[explain.Diagnostic],
                     texts: dict[str, str], fallbacks: dict[str, tuple[str, bool]] | None = None,
                     reach: dict[str, set[str]] | None = None) -> None:
    """Give every failed compile result of the compiled `units` (tree-relative paths) its `explained_by` ({rule, file, line, how}: explain.explain), and add the findings diagnostic
    rules make to their files' entries; a timeout has no compiler error to read and stays
    unexplained. A PyTorch extension unit sees a file's torch.utils.hipify findings where it has
    them. A failure no finding or diagnostic explains is explained by the first open finding of a rule in
    `fallbacks` (unit_fallbacks, in order), in the unit or, where the rule says so, a file it includes
    (reach: {unit: files it includes, transitively, through #include lines outside #if blocks: warp-lang
    0.8.0's warp.cu includes cutlass_gemm.cu under `#if WP_ENABLE_CUTLASS` only}). read: explain.locate's {path: Migrated}; texts: {rel: CUDA text}."""
    def fallback(unit: str) -> dict | None:
        included = sorted((reach or {}).get(unit, set()) - {unit})
        for rule, (how, closure) in (fallbacks or {}).items():
            for rel in [unit, *included] if closure else [unit]:
                for f in files_out.get(rel, {}).get("findings", []):
                    if f["rule"] == rule and f.get("status", "open") == "open":
                        return {"rule": rule, "file": rel, "line": f["line"], "how": how}
        return None

    def findings(rel: str, torch: bool) -> list[dict]:
        entry = files_out.get(rel, {})
        return entry["torch"]["findings"] if torch and "torch" in entry else entry.get("findings", [])

    def line_text(rel: str, line: int) -> str:
        lines = texts.get(rel, "").split("\n")
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""

    for unit in units:
        seen = functools.partial(findings, torch=unit in torch_units)
        known: dict[str, dict | None] = {}  # first_error -> its explanation, alike for every arch
        for result in files_out[unit]["compile"].values():
            if result["status"] != "failed" or not result["first_error"]:
                continue
            if result["first_error"] not in known:
                where = explain.locate(result["first_error"], read)
                known[result["first_error"]], made = explain.explain(where, unit, seen, diagnostics, line_text)
                if made and made not in seen(made["file"]):
                    seen(made["file"]).append(made)
            if not known[result["first_error"]]:
                known[result["first_error"]] = fallback(unit)
            if known[result["first_error"]]:
                result["explained_by"] = known[result["first_error"]]


def compile_progress(step: str, so_far: dict[str, dict[str, Result]], total: int) -> str:
    """A progress line of a compile step: units done of `total`, then per arch its counts by status
    ("compile: 3/10 units; gfx942: 3 ok; gfx1100: 2 ok, 1 failed")."""
    per_arch: dict[str, dict[str, int]] = {}
    for per_unit in so_far.values():
        for arch, r in per_unit.items():
            counts = per_arch.setdefault(arch, {})
            counts[r.status] = counts.get(r.status, 0) + 1
    archs = "; ".join(f"{a}: " + ", ".join(f"{n} {st}" for st, n in c.items()) for a, c in per_arch.items())
    return f"{step}: {len(so_far)}/{total} units; {archs}"


def selected(rel: str, globs: tuple[str, ...]) -> bool:
    """Whether tree path `rel` matches one of the --only globs (fnmatch: `*` also crosses `/`)."""
    return any(fnmatch.fnmatchcase(rel, glob) for glob in globs)


def not_compiled(files: list[tree.SourceFile], reach: dict[str, set[str]],
                 left_out: Mapping[str, set[str]] | None = None) -> dict[str, str]:
    """{rel: why it was not compiled} for every file that is not a unit. reach: {unit: the files it
    includes, transitively (IncludeGraph.reach)}; left_out: {unit --only left out: the files it includes}. A
    file only those units include is theirs, not compiled in this run either. A header, or a source
    that other sources include, is compiled within the units that include it; a C/C++ source without CUDA
    use is the host compiler's, so none counts as a failure, but each is named in the report so that no
    source is left out unseen."""
    reasons = {}
    left_out = left_out or {}
    for f in files:
        if f.rel in reach:
            continue
        if f.rel in left_out:
            reasons[f.rel] = report.LEFT_OUT
            continue
        users = sorted(unit for unit, files_in in reach.items() if f.rel in files_in)
        if not users and any(f.rel in files_in for files_in in left_out.values()):
            reasons[f.rel] = report.INCLUDED_BY_LEFT_OUT
            continue
        within = (f"compiled within the {report.count(len(users), 'unit')} that include{'s' if len(users) == 1 else ''} "
                  f"it ({', '.join(users[:3])}{', ...' if len(users) > 3 else ''})")
        if f.kind == "header":
            reasons[f.rel] = f"header: {within}" if users else "header that no unit includes: not compiled"
        elif users:
            reasons[f.rel] = f"{report.INCLUDED_SOURCE}, as its project's build does: {within}"
        else:
            reasons[f.rel] = ("C/C++ source that includes no CUDA header and uses no CUDA API: the host "
                              "compiler builds it, not compiled here")
    return reasons


def _torch_entries(files_out: dict[str, dict], mapped: dict[str, str], by_torch: advice.Migrated,
                   torch_units: list[str], reach: dict[str, set[str]], origin: str) -> None:
    """Record in the report what torch.utils.hipify and the fixups after it made of each file they
    reached: a file compiled only within PyTorch extension units takes the torch translation as its
    translator, fixes and findings (`hipified_path` names its file under torch/); a header that other
    units include too keeps its hip/ entry and gets the torch one under `torch`."""
    torch_set = set(torch_units)
    elsewhere = set().union(*(files for unit, files in reach.items() if unit not in torch_set))
    for rel, path in mapped.items():
        if rel not in files_out:
            continue
        made = {"name": "torch.utils.hipify", "hipified_path": path,
                "reason": "included by a PyTorch extension unit: hipified as PyTorch's extension build does, then "
                          f"rocmig's exact fixups; PyTorch headers: {origin}"}
        fixes = by_torch.fix_entries(path)
        findings = [x.__dict__ for x in by_torch.findings[path]]
        if rel in elsewhere:
            files_out[rel]["torch"] = {"translator": made, "fixes": fixes, "findings": findings}
        else:
            files_out[rel].update(translator=made, fixes=fixes, findings=findings)


def _translator(made: semantic.Outcome | None, why_perl: str) -> dict:
    """The report's translator entry of a file: {name, reason}. Units are hipify-clang's when its parse
    succeeded; headers, and units whose parse failed or did not run (why_perl), are hipify-perl's.
    PyTorch extension units are set to torch.utils.hipify when they are compiled."""
    if made is not None and made.ok:
        return {"name": "hipify-clang", "reason": ""}
    if made is not None:
        return {"name": "hipify-perl", "reason": f"hipify-clang failed: {made.reason}"}
    return {"name": "hipify-perl", "reason": why_perl}


HIP_VERSION = re.compile(r"HIP version:?\s*(\d+)\.(\d+)")


def hip_version(text: str) -> tuple[int, int] | None:
    """(major, minor) of HIP from `hipcc --version` output ("HIP version: 7.2.26015-..."), None when absent."""
    m = HIP_VERSION.search(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def warp_sync_reason(version: tuple[int, int] | None) -> str:
    """Why HIP_ENABLE_WARP_SYNC_BUILTINS is in the build defines, for the image's HIP (major, minor).
    HIP 6.2 added the *_sync warp functions behind this define; HIP 7 declares them unless
    HIP_DISABLE_WARP_SYNC_BUILTINS is defined (hip/amd_detail/amd_warp_sync_functions.h of HIP 7.2)."""
    what = "the tree uses *_sync warp intrinsics"
    if version is None:
        return f"{what}; HIP 6.2-6.x declares them only with this define, HIP 7.x without it (HIP version unknown)"
    shown = f"{version[0]}.{version[1]}"
    if version >= (7, 0):
        return (f"{what}; HIP {shown} declares them by default, so the define is not needed here; it is kept for "
                "builds of the same tree with HIP 6.2-6.x, which declare them only with it")
    if version >= (6, 2):
        return f"{what}; HIP {shown} declares them only with this define"
    return f"{what}; HIP {shown} has none of them (added in HIP 6.2): the define does not help, the tree needs HIP 6.2 or later"


def _defines(texts: dict[str, str], archs: tuple[Arch, ...], version: tuple[int, int] | None = None) -> list[dict]:
    """Build defines the migrated tree needs: the wavefront macro per arch (from the arch table) when
    the tree uses it without defining it, HIP_ENABLE_WARP_SYNC_BUILTINS when it uses *_sync
    intrinsics, with a reason for the image's HIP `version` (major, minor; see warp_sync_reason), and
    HIPBLAS_USE_HIP_HALF when it calls hipBLAS's half-precision functions and never uses
    hipblasHalf as a value type itself (a tree written for hipBLAS's uint16_t half keeps it).
    Each: {name, values: {arch: value or ""}, reason}."""
    blanked = {rel: cpp.blank(t) for rel, t in texts.items()}
    found = []
    for macro in WAVEFRONT_MACROS:
        used = any(re.search(rf"\b{macro}\b", t) for t in blanked.values())
        defined = any(re.search(rf"#\s*define\s+{macro}\b", t) for t in blanked.values())
        if used and not defined:
            found.append({"name": macro, "values": {a.name: str(a.wavefront) for a in archs},
                          "reason": f"the tree reads {macro} and does not define it; its value is the wavefront size "
                                    "of each offload arch from the arch table (a GPU-less rocminfo gives 32, wrong on CDNA)"})
    if any(SYNC_USE.search(t) for t in blanked.values()):
        found.append({"name": "HIP_ENABLE_WARP_SYNC_BUILTINS", "values": {a.name: "" for a in archs},
                      "reason": warp_sync_reason(version)})
    half_calls = sorted({m.group(0).rstrip("( \t") for t in blanked.values() for m in HIPBLAS_HALF_CALL.finditer(t)})
    if half_calls and not any(HIPBLAS_HALF_VALUE.search(t) for t in blanked.values()):
        found.append({"name": "HIPBLAS_USE_HIP_HALF", "values": {a.name: "" for a in archs},
                      "reason": f"the tree calls {', '.join(half_calls[:3])} with CUDA's __half data, as cuBLAS's "
                                "cublasH* functions take it; hipBLAS types them with hipblasHalf, which is uint16_t "
                                "unless this define makes it __half (hipblas/hipblas.h, ROCm 7.2)"})
    return found

