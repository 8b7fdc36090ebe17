"""Find the CUDA sources under SRC, check each one, and copy them into a work tree.

The input tree is only read: files are opened read-only and the work tree is written with fresh
files (never through a symlink of the input). Checks raise InputError with one line naming the file.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from . import cpp
from .errors import InputError

UNIT_EXTS = frozenset({".cu"})
CXX_EXTS = frozenset({".cpp", ".cc", ".cxx", ".c"})
HEADER_EXTS = frozenset({".cuh", ".h", ".hpp", ".hh", ".hxx", ".inl", ".inc", ".def", ".tcc"})
SOURCE_EXTS = UNIT_EXTS | CXX_EXTS | HEADER_EXTS
DEFAULT_MAX_BYTES = 8 * 1024 * 1024

# A C/C++ file "uses CUDA" when it includes a CUDA header (an #include line, not the text of an `#error`: LLVM
# flang-rt's `#error #include <cuda/std/complex>`; the toolkit's, or PyTorch's CUDA headers:
# c10/cuda/, ATen/cuda/, torch/csrc/cuda/, THC/), names a CUDA runtime or driver type (cudaStream_t,
# cudaError_t, CUstream ...) or PyTorch's CUDA namespaces (at::cuda::, c10::cuda::), calls the runtime or
# launches kernels.
CUDA_USE = re.compile(
    r"^[ \t]*#\s*include\s*[<\"](cuda|cublas|curand|cusparse|cufft|cusolver|cudnn|cub/|thrust/|cooperative_groups|nvrtc|"
    r"device_launch_parameters|mma\.h|cuda_|cuComplex|nvToolsExt|nvtx3/|(?:c10|ATen|torch/csrc)/cuda/|THC/)"
    r"|\bcuda[A-Z]\w+\s*\(|\bcuda[A-Z]\w*_t\b|\bcudaDeviceProp\b|\bCU(?:stream|event|context|module|function|result|device)\b"
    r"|\b(?:at|c10)::cuda::|\bC10_CUDA_\w+|<<<|__global__|__device__",
    re.MULTILINE)



def uses_cuda(text: str) -> bool:
    """Whether a C/C++ source's code (not its comments or string literals: a log line reading
    "Launch Kernel K<<<" in mmcv 2.2.0's Cambricon MLU sources) matches CUDA_USE."""
    return bool(CUDA_USE.search(text)) and bool(CUDA_USE.search(cpp.blank_code(text)))


@dataclass(frozen=True)
class SourceFile:
    """One source file of the tree: rel (POSIX path relative to the tree root), kind ("cu": a .cu
    translation unit, "cxx": a C/C++ source, "header"), text (UTF-8 content), sha256 (hex digest of
    the bytes), uses_cuda (includes CUDA headers or calls the CUDA API), encoding ("utf-8";
    "utf-8-bom" for UTF-8 that starts with a byte-order mark, which `text` and the work trees leave
    out; or "latin-1" for a file that is not UTF-8: every byte decodes, and the work trees hold it
    as UTF-8)."""

    rel: str
    kind: str
    text: str
    sha256: str
    uses_cuda: bool
    encoding: str = "utf-8"


@dataclass(frozen=True)
class Tree:
    """The sources found under `root`; `skipped` lists "path: reason" for entries left out
    (dangling symlinks, symlink loops, unreadable folders or files, binary or oversized sources)."""

    root: Path
    files: tuple[SourceFile, ...]
    skipped: tuple[str, ...]


def _kind(suffix: str) -> str:
    if suffix in UNIT_EXTS:
        return "cu"
    if suffix in CXX_EXTS:
        return "cxx"
    return "header"


class Unusable(Exception):
    """A source file that cannot be migrated; the message is the reason (one line)."""


def _read_source(path: Path, max_bytes: int) -> tuple[str, str, str]:
    """Return (text, sha256, encoding) of a source file. A UTF-8 byte-order mark is left out of the
    text: the translators put lines above it, where the compiler reads it as a stray character
    (dlib 20.0.1's cuda_dlib.cu: "unexpected character <U+FEFF>"). A file that is not UTF-8 is
    decoded as latin-1 (every byte is a character there, so nothing is lost). Raises Unusable for
    files above `max_bytes`, binary files (NUL bytes) and unreadable ones."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise Unusable(f"{size} bytes, above the limit of {max_bytes} bytes for one source file (--max-file-bytes)")
        data = path.read_bytes()
    except OSError as exc:
        raise Unusable(f"not readable ({exc.strerror or exc})") from None
    if b"\0" in data:
        raise Unusable("binary file (contains NUL bytes)")
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        return data[3 if bom else 0:].decode("utf-8"), hashlib.sha256(data).hexdigest(), "utf-8-bom" if bom else "utf-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), hashlib.sha256(data).hexdigest(), "latin-1"


def _walk(root: Path) -> tuple[list[tuple[Path, str]], list[str]]:
    """Depth-first walk following directory symlinks; returns ([(path, rel)], skipped). A symlink
    loop (a directory link that resolves to one of its ancestors) and an unreadable folder are
    skipped with the reason."""
    found: list[tuple[Path, str]] = []
    skipped: list[str] = []
    stack: list[tuple[Path, str, tuple[str, ...]]] = [(root, "", (os.path.realpath(root),))]
    while stack:
        directory, rel_dir, ancestors = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(f"{rel_dir or '.'}: folder not readable ({exc.strerror or exc})")
            continue
        for entry in entries:
            rel = f"{rel_dir}{entry.name}"
            path = Path(entry.path)
            if entry.is_symlink():
                real = os.path.realpath(path)
                if not os.path.exists(real):
                    skipped.append(f"{rel}: dangling symlink")
                    continue
                if os.path.isdir(real):
                    if real in ancestors:
                        skipped.append(f"{rel}: symlink loop (points back to {real}); not followed")
                        continue
                    stack.append((path, rel + "/", ancestors + (real,)))
                    continue
            elif entry.is_dir(follow_symlinks=False):
                stack.append((path, rel + "/", ancestors + (os.path.realpath(path),)))
                continue
            try:
                regular = stat.S_ISREG(path.stat().st_mode)
            except OSError as exc:
                skipped.append(f"{rel}: not readable ({exc.strerror or exc})")
                continue
            if regular:
                found.append((path, rel))
    found.sort(key=lambda item: item[1])
    return found, skipped


# OpenCL C kernel sources: LightGBM's GPU learner includes src/treelearner/ocl/*.cl into a C++ string
# (`const char* src = {\n#include "ocl/histogram256.cl"\n};`); their NVIDIA OpenCL PTX is no CUDA leftover.
OPENCL_EXTS = frozenset({".cl"})
INCLUDE_NAME = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.MULTILINE)


def _included_others(texts: list[str], others: dict[str, list[tuple[Path, str]]]) -> list[tuple[Path, str]]:
    """The files of `others` ({file name: [(path, rel)]}, files without a source extension) that an
    #include of `texts` names: a tree path ending in the included name (LightGBM's .hu headers,
    Eigen's extension-less <Eigen/Core>)."""
    picked: dict[str, Path] = {}
    for text in texts:
        for name in INCLUDE_NAME.findall(text):
            name = name.strip()
            suffix = "/" + name.lstrip("./")
            for path, rel in others.get(posixpath.basename(name), []):
                if ("/" + rel).endswith(suffix):
                    picked[rel] = path
    return [(path, rel) for rel, path in sorted(picked.items())]


def discover(src: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> Tree:
    """Find and check the sources under `src` (a directory, or one source file).

    Sources are the files with a source extension (SOURCE_EXTS) and, whatever their extension, the
    files of the tree that a source includes (a path ending in the included name). In a folder, a
    file that cannot be used (binary, above `max_bytes`, unreadable) is skipped with its reason in
    Tree.skipped and a non-UTF-8 one is decoded as latin-1: one file never stops the run. Raises InputError when `src` is missing, is one file that is not a source (allowed:
    see SOURCE_EXTS) or cannot be used, or no CUDA source (*.cu, *.cuh, or C/C++ using the CUDA
    API) is found.
    """
    if not src.exists():
        raise InputError(f"{src}: no such file or directory")
    others: dict[str, list[tuple[Path, str]]] = {}
    if src.is_file():
        if src.suffix not in SOURCE_EXTS:
            raise InputError(f"{src}: not a CUDA/C++ source; allowed extensions: {' '.join(sorted(SOURCE_EXTS))}")
        entries, skipped, root = [(src, src.name)], list[str](), src.parent
    else:
        root = src
        walked, skipped = _walk(src)
        entries = [(path, rel) for path, rel in walked if path.suffix in SOURCE_EXTS]
        for path, rel in walked:
            if path.suffix not in SOURCE_EXTS:
                others.setdefault(posixpath.basename(rel), []).append((path, rel))
    files: list[SourceFile] = []
    while entries:
        added = []
        for path, rel in entries:
            try:
                text, digest, encoding = _read_source(path, max_bytes)
            except Unusable as exc:
                if src.is_file():
                    raise InputError(f"{path}: {exc}") from None
                skipped.append(f"{rel}: {exc}")
                continue
            uses = path.suffix in (".cu", ".cuh") or uses_cuda(text)
            added.append(SourceFile(rel=rel, kind=_kind(path.suffix), text=text, sha256=digest, uses_cuda=uses,
                                    encoding=encoding))
        files += added
        # headers with another extension (or none) join when a source includes them
        entries = _included_others([f.text for f in added], others)
        for _path, rel in entries:
            others[posixpath.basename(rel)].remove((_path, rel))
        kernels = [rel for _path, rel in entries if _path.suffix in OPENCL_EXTS]
        skipped += [f"{rel}: OpenCL C kernel that a C++ source includes as a string literal (an OpenCL compiler "
                    "builds it at run time): not CUDA, not migrated" for rel in kernels]
        entries = [(path, rel) for path, rel in entries if path.suffix not in OPENCL_EXTS]
    files.sort(key=lambda f: f.rel)
    if not any(f.uses_cuda for f in files):
        left = f"; skipped: {'; '.join(skipped[:3])}" if skipped else ""
        raise InputError(f"{src}: no CUDA sources found (*.cu, *.cuh, or C/C++ files that include CUDA headers or call the CUDA API){left}")
    return Tree(root=root, files=tuple(files), skipped=tuple(skipped))


def units(tree: Tree) -> list[SourceFile]:
    """The translation units to compile: every .cu file and every C/C++ source that uses CUDA."""
    return [f for f in tree.files if f.kind == "cu" or (f.kind == "cxx" and f.uses_cuda)]


# macros a host C / C++ compiler leaves undefined, which CUDA and HIP compilers define
HOST_COMPILER_UNDEFINED = cpp.HIPCC_UNDEFINED | {"__NVCC__", "__CUDA_ARCH__", "__HIPCC__", "__HIP__", "__HIP_DEVICE_COMPILE__",
                                               "__CUDA__"}


def host_uses_cuda(text: str) -> bool:
    """Whether a header uses CUDA (uses_cuda) in code a host C / C++ compiler compiles: deepwave 0.1.0's
    acoustic_kernels.h writes `__host__ __device__` only under `#ifdef __CUDACC__`, so the .c files that
    include it are CPU code, which its build compiles with the C compiler; LLVM's flang-rt (vendored by
    CatBoost 1.2.10) writes its `RT_API_ATTRS __host__ __device__` under `#if defined(__CUDACC__) ||
    defined(__CUDA__)` (clang's CUDA mode), so its runtime sources are CPU code too."""
    blanked = cpp.blank(text)
    dead = cpp.dead_lines(blanked, frozenset(HOST_COMPILER_UNDEFINED))
    if not dead:
        return uses_cuda(text)
    return uses_cuda("\n".join("" if n in dead else line for n, line in enumerate(text.split("\n"), 1)))


def cuda_files(tree: Tree) -> set[str]:
    """Paths of the units (units()) and of the headers that use CUDA by their own text in code a host
    compiler compiles (host_uses_cuda): a C/C++ source that includes one of them is part of the CUDA build
    too (torch-points-kernels 0.7.0's interpolate.cpp reaches <ATen/cuda/CUDAContext.h> through its utils.h;
    includes.IncludeGraph.units_through_includes)."""
    return {f.rel for f in units(tree)} | {f.rel for f in tree.files if f.kind == "header" and f.uses_cuda
                                           and host_uses_cuda(f.text)}


# how a file's text is written back to give the input's bytes (SourceFile.encoding; UTF-8 files are plain)
CODECS = {"latin-1": "latin-1", "utf-8-bom": "utf-8-sig"}


def restore_encodings(dirs: list[Path], files: list[SourceFile]) -> None:
    """Re-encode the work-tree copies (under each of `dirs`) of the files that were not plain UTF-8 in
    their input encoding, so that the compiler reads the input's bytes: a latin-1 string literal
    ("\xb5s") keeps its length and bytes, as in the CUDA build. The copies are UTF-8 until then
    (hipify-perl and the fixups read UTF-8); only ASCII is added to them, so each encodes back.
    A copy whose text no longer encodes in the input's encoding stays UTF-8."""
    for f in files:
        codec = CODECS.get(f.encoding)
        if codec is None:
            continue
        for folder in dirs:
            path = folder / f.rel
            if not path.is_file():
                continue
            text = path.read_text(encoding="utf-8")
            try:
                data = text.encode(codec)
            except UnicodeEncodeError:
                continue
            path.write_bytes(data)


def read_work_text(path: Path) -> tuple[str, str]:
    """(text, codec) of a work-tree copy after restore_encodings: UTF-8, else latin-1 (every byte a
    character, so writing the text back with the codec gives the same bytes)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def write_tree(dest: Path, texts: dict[str, str]) -> None:
    """Write {rel: text} under `dest` as fresh regular files (UTF-8, newlines kept as given)."""
    for rel, text in texts.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
