"""PyTorch extension units: hipified and compiled the way PyTorch's own extension build does on ROCm.

When a user pip-installs a CUDA extension against ROCm PyTorch, torch.utils.cpp_extension runs
torch.utils.hipify over the extension (is_pytorch_extension=True: foo.cu -> foo.hip, foo_cuda.cu ->
foo_hip.hip, a header whose name does not change gets a _hip suffix, includes rewritten to match) and
compiles the results with hipcc and its own flags (COMMON_HIP_FLAGS + COMMON_HIPCC_FLAGS in
cpp_extension.py, -std=c++20, torch/include and torch/include/torch/csrc/api/include, Python's
include folder). This module does the same for the units of a tree that include torch/ATen/c10.

The headers and torch.utils.hipify come from $ROCMIG_TORCH_PATH (OUT of migrate.torch_headers in the
debian lane: a reconstruction; a ROCm PyTorch install in the amd lane). Source of the flags:
torch/utils/cpp_extension.py of PyTorch 2.14.1.
"""

from __future__ import annotations

import glob
import io
import os
import re
import shutil
import sys
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, replace
from pathlib import Path

from . import advice, sysdeps, tree

TORCH_PATH_ENV = "ROCMIG_TORCH_PATH"
# cpp_extension.py: COMMON_HIP_FLAGS (less -fPIC, added below) + COMMON_HIPCC_FLAGS, and the extension
# defines BuildExtension adds.
FLAGS = ("-D__HIP_PLATFORM_AMD__=1", "-DUSE_ROCM=1", "-DHIPBLAS_V2", "-DCUDA_HAS_FP16=1",
         "-D__HIP_NO_HALF_OPERATORS__=1", "-D__HIP_NO_HALF_CONVERSIONS__=1", "-DHIP_ENABLE_WARP_SYNC_BUILTINS=1",
         "-DTORCH_API_INCLUDE_EXTENSION_H", "-DTORCH_EXTENSION_NAME=rocmig_check", "-fPIC")
STD = "c++20"
# torch.utils.hipify's defaults (hipify_python.hipify: extensions, header_extensions) and header suffixes
# beyond them. In extension mode a header under a folder named cuda moves to one named hip
# (get_hip_file_path); a file it includes that hipify did not take (glm's .inl files beside its .hpp)
# stays behind and the moved header's relative #include no longer resolves. Taking the tree's other
# header suffixes (tree.HEADER_EXTS) as headers too keeps each included file next to its includer,
# translated like it.
HEADER_EXTENSIONS = (".cuh", ".h", ".hpp", *sorted(tree.HEADER_EXTS - {".cuh", ".h", ".hpp"}))
EXTENSIONS = (".cu", ".c", ".cc", ".cpp", ".in", *HEADER_EXTENSIONS)


@dataclass(frozen=True)
class Torch:
    """A PyTorch header set for ROCm: include_dirs (absolute, in -I order), hipify_parent (folder that
    holds torch.utils.hipify as `hipify/`), origin (for the report: "reconstruction" or "install")."""

    include_dirs: tuple[str, ...]
    hipify_parent: str
    origin: str


def find(env: dict[str, str] | None = None) -> Torch | None:
    """The torch header set: $ROCMIG_TORCH_PATH (include/ + hipify/), else an installed ROCm PyTorch
    (site-packages torch/include with ATen/hip, and torch/utils/hipify); None when neither is present."""
    env = dict(os.environ) if env is None else env
    python = sysdeps.python_include_dir()
    extra = (python,) if python else ()
    root = env.get(TORCH_PATH_ENV, "")
    if root and os.path.exists(os.path.join(root, "include", "torch", "extension.h")) \
            and os.path.isdir(os.path.join(root, "hipify")):
        inc = os.path.join(root, "include")
        return Torch((inc, os.path.join(inc, "torch", "csrc", "api", "include")) + extra, root, "reconstruction")
    for base in sorted(glob.glob("/usr/lib/python3*/*-packages/torch") + glob.glob("/usr/local/lib/python3*/*-packages/torch")
                       + glob.glob("/opt/venv/lib/python3*/site-packages/torch")):
        inc = os.path.join(base, "include")
        if os.path.isdir(os.path.join(inc, "ATen", "hip")) and os.path.isdir(os.path.join(base, "utils", "hipify")):
            return Torch((inc, os.path.join(inc, "torch", "csrc", "api", "include")) + extra,
                         os.path.join(base, "utils"), "install")
    return None


def hipify_units(torch: Torch, cuda_dir: Path, out_dir: Path, units: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """Copy `cuda_dir` to `out_dir` and hipify `units` there with torch.utils.hipify in extension
    mode, headers they include following, found next to their includer or in the unit's include
    folders (units: {tree-relative unit: its -I folders, tree-relative}, which cpp_extension passes
    as header_include_dirs). Units are hipified in groups that share their folders, as
    cpp_extension hipifies each extension with its own: torch.utils.hipify resolves an include in
    every folder it is given, the last match winning, so a tree with two copies of a header folder
    (DeepSpeed's csrc/includes and deepspeed/ops/csrc/includes) would otherwise have one copy's units
    include the other copy's hipified headers, which their compile does not see. Returns {file:
    hipified tree-relative path} for every file of the tree it reached (units and the headers they
    include). A file torch.utils.hipify leaves as it is maps to itself."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    shutil.copytree(cuda_dir, out_dir)
    if torch.hipify_parent not in sys.path:
        sys.path.insert(0, torch.hipify_parent)
    from hipify import hipify_python  # type: ignore[import-not-found]

    groups: dict[tuple[str, ...], list[str]] = {}
    for unit, dirs in sorted(units.items()):
        groups.setdefault(dirs, []).append(unit)
    result: dict = {}
    for dirs, members in groups.items():
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            result.update(hipify_python.hipify(
                project_directory=str(out_dir), output_directory=str(out_dir), extensions=EXTENSIONS,
                header_extensions=HEADER_EXTENSIONS, header_include_dirs=[str(out_dir / d) for d in dirs],
                includes=[f"{out_dir}/*"], extra_files=[str(out_dir / u) for u in members], show_detailed=False,
                show_progress=False, is_pytorch_extension=True, hipify_extra_files_only=True))
    mapped = {unit: unit for unit in units}
    root = os.path.realpath(out_dir)
    for source, entry in result.items():
        rel = os.path.relpath(os.path.realpath(source), root)
        path = getattr(entry, "hipified_path", None)
        if rel.startswith("..") or not (out_dir / rel).is_file():
            continue
        mapped[rel] = os.path.relpath(os.path.realpath(path), root) if path else rel
    return mapped


def apply_fixups(mapped: dict[str, str], cuda_texts: dict[str, str], out_dir: Path,
                 migrate: Callable[[dict[str, tuple[str, str]]], advice.Migrated]) -> advice.Migrated:
    """rocmig's exact fixups on torch.utils.hipify's output: torch.utils.hipify runs first (it is the
    translator PyTorch's extension build uses, with PyTorch's own CUDA -> HIP names), then the fixups,
    which rewrite only CUDA forms with one correct HIP form and so hold on any translator's HIP code.
    mapped: hipify_units' {file: hipified path}; cuda_texts: {file: CUDA text} of the whole tree;
    migrate: advice.migrate_tree with the run's rules, archs and include folders, given {hipified
    path: (CUDA text, torch.utils.hipify text)}. The fixed texts replace the files in `out_dir`.
    Returns the Migrated result keyed by hipified path, its findings naming the original files."""
    texts = {path: (cuda_texts[rel], (out_dir / path).read_text(encoding="utf-8", errors="replace"))
             for rel, path in mapped.items() if rel in cuda_texts}
    migrated = migrate(texts)
    tree.write_tree(out_dir, {path: migrated.final[path] for path in texts})
    original = {path: rel for rel, path in mapped.items()}
    findings = {path: [replace(x, file=original[path]) for x in found] for path, found in migrated.findings.items()}
    return replace(migrated, findings=findings)


def fill_unreached(out_dir: Path, mapped: dict[str, str], reached: set[str], cuda_texts: dict[str, str],
                   translated: dict[str, str]) -> list[str]:
    """Write into `out_dir` (torch.utils.hipify's copy of the tree) the tree's own translation (`translated`:
    {rel: hipify-clang / hipify-perl text after the fixups}) of each file that extension units reach
    (`reached`: tree-relative, through the CUDA tree's includes) and torch.utils.hipify left untouched
    because it never reached it: an include it renamed to a HIP header (transformer-engine-torch 2.20.2's
    own "common/util/cuda_runtime.h" became "common/util/hip/hip_runtime.h"), which tree-include-kept
    then put back, so the unit would otherwise compile the header's CUDA text. A file torch.utils.hipify
    mapped, or whose copy in `out_dir` is no longer its CUDA text, is left. Returns the files written,
    sorted."""
    written = []
    for rel in sorted(reached - set(mapped)):
        cuda, hip = cuda_texts.get(rel), translated.get(rel)
        if cuda is None or hip is None or hip == cuda:
            continue
        path = out_dir / rel
        try:
            if path.read_text(encoding="utf-8", errors="replace") != cuda:
                continue
        except OSError:
            continue
        written.append(rel)
    tree.write_tree(out_dir, {rel: translated[rel] for rel in written})
    return written


# The -U flags of the half / bfloat16 operator switches in a build script's nvcc arguments
# (DeepSpeed's op_builder, apex, flash-attn, mamba-ssm: '-U__CUDA_NO_HALF_OPERATORS__', ...).
# DeepSpeed's ROCm branch names the HIP ones itself ('-U__HIP_NO_HALF_OPERATORS__').
HALF_SWITCH = re.compile(r"""["']-U\s*(__(?:CUDA|HIP)_NO_(?:HALF|HALF2|BFLOAT16)_(?:OPERATORS|CONVERSIONS)__)["']""")
# A CMake build names its hipcc flags itself (vLLM's cmake/utils.cmake, for GPU_LANG HIP: "-U__HIP_NO_HALF_OPERATORS__");
# its nvcc ones are no HIP flags (nothing hipifies them)
CMAKE_HIP_HALF_SWITCH = re.compile(r"""["']-U\s*(__HIP_NO_(?:HALF|HALF2|BFLOAT16)_(?:OPERATORS|CONVERSIONS)__)["']""")


# A build that takes torch's switches out of cpp_extension's nvcc list instead (flashinfer-python 0.2.2's setup.py
# and jit/core.py: the "-D__CUDA_NO_HALF_OPERATORS__", ... strings, then `torch_cpp_ext.COMMON_NVCC_FLAGS.remove(flag)`
# within a few lines); on ROCm the same switches are in COMMON_HIPCC_FLAGS, which that code leaves in place
HALF_SWITCH_DEFINE = re.compile(r"""["']-D\s*(__CUDA_NO_(?:HALF|HALF2|BFLOAT16)_(?:OPERATORS|CONVERSIONS)__)["']""")
NVCC_FLAGS_REMOVE = re.compile(r"\bCOMMON_NVCC_FLAGS\s*\.\s*remove\s*\(")
REMOVE_WINDOW = 12  # lines from a switch's string to the remove() call that takes it out


def _removed_switches(text: str) -> list[re.Match[str]]:
    """The -D__CUDA_NO_HALF_...__ strings of a Python build file that a COMMON_NVCC_FLAGS.remove( call at most
    REMOVE_WINDOW lines below takes out of torch's nvcc flags."""
    removals = [text.count("\n", 0, m.start()) for m in NVCC_FLAGS_REMOVE.finditer(text)]
    hits = []
    for m in HALF_SWITCH_DEFINE.finditer(text):
        line = text.count("\n", 0, m.start())
        if any(0 <= r - line <= REMOVE_WINDOW for r in removals):
            hits.append(m)
    return hits


def half_undefines(src: Path) -> tuple[tuple[str, str], ...]:
    """((hipcc flag, "file:line"), ...): the `-U__CUDA_NO_HALF_OPERATORS__`-style arguments the tree's
    Python build scripts give nvcc, as the -U__HIP_NO_... flags cpp_extension passes hipcc for them on
    ROCm (_hipify_compile_flags in torch/utils/cpp_extension.py 2.14 replaces the first CUDA of each
    nvcc flag with HIP). They undo COMMON_HIP_FLAGS' -D__HIP_NO_HALF_OPERATORS__=1 and
    -D__HIP_NO_HALF_CONVERSIONS__=1, which hide __half's operators and conversions: without them
    DeepSpeed's `(__half)1.0f` casts do not compile. CMake files (CMakeLists.txt, *.cmake) count with their
    explicit -U__HIP_NO_... flags only (vLLM's cmake/utils.cmake). A Python build that removes the -D switches
    from torch's COMMON_NVCC_FLAGS (_removed_switches) means the same; cpp_extension would still pass the HIP ones
    on ROCm, so the port has to remove them from COMMON_HIPCC_FLAGS too (the report names the line). Files
    without such an argument are not read further than a substring test; a run on one file (no tree) finds none."""
    found: dict[str, str] = {}
    if not src.is_dir():
        return ()
    for folder, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(f for f in files if f.endswith((".py", ".cmake")) or f == "CMakeLists.txt"):
            path = Path(folder) / name
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if "_NO_HALF" not in text and "_NO_BFLOAT16" not in text:
                continue
            python = name.endswith(".py")
            matches = [*(HALF_SWITCH if python else CMAKE_HIP_HALF_SWITCH).finditer(text),
                       *(_removed_switches(text) if python else ())]
            for m in sorted(matches, key=lambda m: m.start()):
                flag = "-U" + m.group(1).replace("CUDA", "HIP", 1)
                found.setdefault(flag, f"{path.relative_to(src).as_posix()}:{text.count(chr(10), 0, m.start()) + 1}")
    return tuple(sorted(found.items()))


def flags(torch: Torch) -> list[str]:
    """The compile flags of an extension unit besides the offload archs: defines, -fPIC, -I dirs."""
    return [*FLAGS, *(f"-I{d}" for d in torch.include_dirs)]
