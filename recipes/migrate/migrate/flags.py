"""The project's own compile flags: include folders and defines per unit.

Sources, in order of precedence:
- `--compile-commands compile_commands.json` (the JSON compilation database CMake writes with
  CMAKE_EXPORT_COMPILE_COMMANDS and bear records: entries {directory, file, arguments | command}):
  each unit's -I / -iquote / -isystem folders inside the tree and its -D / -U flags;
- without it, the folders the project's build files name: CMake include_directories() /
  target_include_directories(), -I in Makefiles, include_dirs in setup.py (paths inside the tree);
- `--include-dir DIR` (tree-relative) and `--define NAME[=VALUE]`, added to every unit.
Folders outside the tree (a CUDA toolkit, a system prefix) are left out: the dev image has its own.
"""

from __future__ import annotations

import functools
import json
import os
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import cmake, configure, cpp, includes, opbuilders, setuppy
from .errors import InputError

BUILD_FILES = ("CMakeLists.txt", "Makefile", "makefile", "GNUmakefile", "setup.py")
NO_BUILD_FILES = "none"  # ProjectFlags.source of a tree without BUILD_FILES and without a compilation database
CMAKE_DIRS = re.compile(r"\b(?:target_)?include_directories\s*\(([^)]*)\)", re.I | re.S)
CMAKE_KEYWORDS = frozenset({"PUBLIC", "PRIVATE", "INTERFACE", "SYSTEM", "BEFORE", "AFTER"})
MAKE_INCLUDE = re.compile(r"(?<![\w-])-I\s*([^\s\"'$()]+)")
GUARD_OPEN = re.compile(r"#\s*ifdef\s+(\w+)|#\s*if\s+defined\s*\(?\s*(\w+)\s*\)?|#\s*if\s+([A-Za-z_]\w*)")
CMAKE_SET = re.compile(r"^[ \t]*set[ \t]*\([ \t]*(\w+)[ \t]+\"?([^\s\")]+)\"?[ \t]*\)", re.I | re.M)
CMAKE_PROJECT = re.compile(r"^[ \t]*project[ \t]*\([ \t]*(\w+)", re.I | re.M)
CMAKE_BUILD_INTERFACE = re.compile(r"\$<BUILD_INTERFACE:([^>]*)>")
SETUP_DIRS = re.compile(r"include_dirs\s*=\s*\[([^\]]*)\]", re.S)


@dataclass(frozen=True)
class UnitFlags:
    """Flags of one unit: include_dirs (tree-relative folders, in order), defines ("NAME" or
    "NAME=VALUE"), undefines (names)."""

    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    undefines: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProjectFlags:
    """units: {tree-relative unit path: UnitFlags} from a compilation database; common: flags for
    every unit (inferred from build files, plus --include-dir / --define); source: where they came
    from, for the report; outside: include folders named by the build that lie outside the tree;
    inferred: (define, reason) of the defines that the build files gave (unit_guard_defines and
    hip_switch_defines, in `common`; cmake_always_defines, in `folder_defines`); folder_defines:
    (tree-relative folder, "" for the root; define) given to the units under that folder;
    hip_switches: the names among the inferred ones that select the project's own ROCm path (its files
    are then compiled untranslated, as that build does);
    unread_options: response files the database names that were found neither beside it nor in the tree."""

    units: dict[str, UnitFlags] = field(default_factory=dict)
    common: UnitFlags = UnitFlags()
    source: str = "inferred"  # or NO_BUILD_FILES, or the compilation database's path
    outside: tuple[str, ...] = ()
    inferred: tuple[tuple[str, str], ...] = ()
    folder_defines: tuple[tuple[str, str], ...] = ()
    hip_switches: frozenset[str] = frozenset()
    unread_options: tuple[str, ...] = ()

    def for_unit(self, rel: str) -> UnitFlags:
        """The unit's own flags, then its folders' (folder_defines), then the common ones. Inferred common
        include folders come nearest first (nearest_first): the build's own order is not known then."""
        own = self.units.get(rel, UnitFlags())
        scoped = tuple(d for folder, d in self.folder_defines if not folder or rel.startswith(folder + "/"))
        common = self.common.include_dirs if self.from_database() else nearest_first(self.common.include_dirs, rel)
        return UnitFlags(tuple(dict.fromkeys(own.include_dirs + common)),
                         tuple(dict.fromkeys(own.defines + scoped + self.common.defines)),
                         tuple(dict.fromkeys(own.undefines + self.common.undefines)))

    def defined_names(self) -> frozenset[str]:
        """The names of the macros any unit gets defined (-D NAME or NAME=VALUE)."""
        defines = ([d for u in self.units.values() for d in u.defines] + [d for _folder, d in self.folder_defines]
                   + list(self.common.defines))
        return frozenset(d.split("=", 1)[0] for d in defines)

    def from_database(self) -> bool:
        """Whether the flags come from a compilation database (its include order is the build's)."""
        return self.source not in ("inferred", NO_BUILD_FILES)

    def unit_dirs(self, sources: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """{source: its include path} for the sources (candidate units) whose path is their own (an op
        builder's folders, a database's, or the inferred folders nearest first): searched before
        all_dirs() for what that unit includes."""
        return {rel: dirs for rel in sources if (dirs := self.for_unit(rel).include_dirs)}

    def all_dirs(self) -> tuple[str, ...]:
        """Every include folder any unit gets (for resolving angle includes in the tree)."""
        dirs = [d for u in self.units.values() for d in u.include_dirs] + list(self.common.include_dirs)
        return tuple(dict.fromkeys(dirs))


def nearest_first(dirs: tuple[str, ...], rel: str) -> tuple[str, ...]:
    """`dirs` (tree-relative folders) ordered by how many leading folders each shares with file `rel`'s
    folder, most first, the given order kept among equals: of two inferred folders holding same-named
    headers, the unit's own part of the tree wins (lightseq 3.0.1's csrc/ops_new/launch_enc_emb.cpp takes
    csrc/kernels/includes/embKernels.h, not inference/kernels/embKernels.h)."""
    here = posixpath.dirname(rel).split("/")

    def shared(folder: str) -> int:
        parts = folder.split("/")
        return next((k for k, (a, b) in enumerate(zip(parts, here)) if a != b), min(len(parts), len(here)))
    return tuple(sorted(dirs, key=lambda d: -shared(d) if d != "." else 0))


# Flags that name an include folder, a define or an undefine, as gcc / clang / nvcc spell them; each
# takes its value joined (-Ifoo, --include-path=foo) or as the next argument.
INCLUDE_FLAGS = ("-I", "-iquote", "-isystem", "-idirafter", "--include-path", "--system-include")
DEFINE_FLAGS = ("-D", "--define-macro")
UNDEFINE_FLAGS = ("-U", "--undefine-macro")
# Response files: gcc / clang `@FILE`, nvcc `--options-file FILE` / `-optf FILE` (CMake's Makefile
# generator writes nvcc's include folders to CMakeFiles/<target>.dir/includes_CUDA.rsp).
OPTIONS_FILE_FLAGS = ("--options-file", "-optf")


@dataclass
class _Parsed:
    """What one command line names: folders (absolute), defines, undefines, and the response files
    it names that could not be read (absolute build paths)."""

    dirs: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)
    undefines: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)


def _flag_value(args: list[str], i: int, names: tuple[str, ...]) -> tuple[str | None, int]:
    """(value, arguments used) when args[i] is one of `names` with its value joined or next; else (None, 0)."""
    a = args[i]
    for flag in names:
        if a == flag:
            return (args[i + 1], 2) if i + 1 < len(args) else (None, 0)
        if a.startswith(flag + "=") and flag.startswith("--"):
            return a[len(flag) + 1:], 1
        if a.startswith(flag) and len(a) > len(flag) and not flag.startswith("--"):
            return a[len(flag):], 1
    return None, 0


def _parse_args(args: list[str], directory: str, read_options: Callable[[str], list[str] | None],
                parsed: _Parsed | None = None, depth: int = 0) -> _Parsed:
    """Include folders (absolute, relative ones taken from `directory`), defines and undefines of one
    compiler command line, response files expanded in place by read_options(absolute path), which
    returns their arguments or None when the file cannot be found."""
    parsed = parsed if parsed is not None else _Parsed()
    i = 0
    while i < len(args):
        a = args[i]
        optfile, used = _flag_value(args, i, OPTIONS_FILE_FLAGS)
        if optfile is None and a.startswith("@") and len(a) > 1:
            optfile, used = a[1:], 1
        if optfile is not None:
            path = posixpath.normpath(posixpath.join(directory, optfile))
            inner = read_options(path) if depth < 4 else None
            if inner is None:
                parsed.unread.append(path)
            else:
                _parse_args(inner, directory, read_options, parsed, depth + 1)
            i += used
            continue
        for names, bucket in ((INCLUDE_FLAGS, parsed.dirs), (DEFINE_FLAGS, parsed.defines),
                              (UNDEFINE_FLAGS, parsed.undefines)):
            value, used = _flag_value(args, i, names)
            if value is not None:
                if bucket is parsed.dirs:
                    value = posixpath.normpath(posixpath.join(directory, value))
                bucket.append(value)
                i += used
                break
        else:
            i += 1
    return parsed


def _tree_root(entries: list[tuple[str, str]], rels: set[str]) -> str | None:
    """The absolute folder of the build that corresponds to the tree root: the prefix left when a
    tree path is a suffix of an entry's file (the most common one over all entries)."""
    counts: dict[str, int] = {}
    for _directory, path in entries:
        best = max((r for r in rels if path == r or path.endswith("/" + r)), key=len, default=None)
        if best is not None:
            root = path[: len(path) - len(best)].rstrip("/") or "/"
            counts[root] = counts.get(root, 0) + 1
    return max(counts, key=lambda r: counts[r]) if counts else None


def _inside(path: str, root: str) -> str | None:
    if path == root:
        return "."
    prefix = root.rstrip("/") + "/"
    return path[len(prefix):] if path.startswith(prefix) else None


def _options_reader(database: Path, directories: list[str], root: str, src: Path) -> Callable[[str], list[str] | None]:
    """read_options for _parse_args: a response file named by its path on the build host is looked
    up under the database's own folder (CMake writes compile_commands.json in its build folder, the
    common folder of the entries' `directory`), then under the source tree (a build folder inside
    it); its arguments are split as the shell does. None when neither holds it."""
    build_root = posixpath.commonpath(directories) if directories else ""

    def read(path: str) -> list[str] | None:
        candidates = []
        for base, here in ((build_root, database.parent), (root, src)):
            rel = _inside(path, base) if base else None
            if rel is not None:
                candidates.append(here / rel)
        for candidate in candidates:
            try:
                return shlex.split(candidate.read_text(encoding="utf-8", errors="replace"))
            except (OSError, ValueError):
                continue
        return None

    return read


def load_compile_commands(path: Path, rels: set[str], src: Path | None = None) -> ProjectFlags:
    """Read a JSON compilation database and map it onto the tree (rels: its tree-relative paths; src:
    the tree's folder, where response files of a build folder inside the tree are read).

    An entry's `directory` that is relative is taken from the database's own folder. Response files
    (`@FILE`, nvcc's `--options-file FILE`) are expanded; those found neither beside the database
    nor in the tree are listed in `unread_options`. Raises InputError naming the file when it is
    unreadable, not a JSON list of entries with `directory`, `file` and `arguments` or `command`, or
    when none of its files is in the tree."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"--compile-commands {path}: not a readable JSON file ({exc})") from None
    if not isinstance(raw, list):
        raise InputError(f"--compile-commands {path}: expected a JSON list of {{directory, file, arguments|command}}")
    parsed = []
    anchor = posixpath.normpath(path.parent.absolute().as_posix())
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict) or not isinstance(entry.get("directory"), str) or not isinstance(entry.get("file"), str):
            raise InputError(f"--compile-commands {path}: entry {index}: expected directory and file strings")
        if isinstance(entry.get("arguments"), list):
            args = [str(a) for a in entry["arguments"]]
        elif isinstance(entry.get("command"), str):
            try:
                args = shlex.split(entry["command"])
            except ValueError as exc:
                raise InputError(f"--compile-commands {path}: entry {index}: command does not parse ({exc})") from None
        else:
            raise InputError(f"--compile-commands {path}: entry {index}: expected `arguments` (list) or `command` (string)")
        directory = posixpath.normpath(posixpath.join(anchor, entry["directory"]))
        parsed.append((directory, posixpath.normpath(posixpath.join(directory, entry["file"])), args))
    root = _tree_root([(d, f) for d, f, _a in parsed], rels)
    if root is None:
        raise InputError(f"--compile-commands {path}: none of its {len(parsed)} files is in the source tree")
    read = _options_reader(path, [d for d, _f, _a in parsed], root, src if src is not None else path.parent)
    units: dict[str, UnitFlags] = {}
    outside: list[str] = []
    unread: list[str] = []
    for directory, file, args in parsed:
        rel = _inside(file, root)
        if rel is None or rel not in rels:
            continue
        found = _parse_args(args, directory, read)
        unread += found.unread
        inside = []
        for d in found.dirs:
            r = _inside(d, root)
            if r is None:
                outside.append(d)
            else:
                inside.append(r)
        units[rel] = UnitFlags(tuple(dict.fromkeys(inside)), tuple(found.defines), tuple(found.undefines))
    return ProjectFlags(units=units, source=str(path), outside=tuple(sorted(set(outside))),
                        unread_options=tuple(sorted(set(unread))))


def _cmake_scopes(src: Path, lists: list[Path]) -> dict[Path, dict[str, str]]:
    """{CMakeLists.txt: the variables its include folders may name}: CMAKE_CURRENT_SOURCE_DIR /
    CMAKE_CURRENT_LIST_DIR (its folder), PROJECT_SOURCE_DIR / CMAKE_SOURCE_DIR (the folder of the nearest
    CMakeLists.txt at or above it with project(); else the tree root), <name>_SOURCE_DIR of every
    project(<name>) in the tree, and the one-word set(NAME value) of its own file and of the
    CMakeLists.txt above it (subdirectories inherit them), each resolved where it is set."""
    texts = {path: path.read_text(encoding="utf-8", errors="replace") for path in lists}
    projects = {path.parent: m.group(1) for path, text in texts.items() for m in [CMAKE_PROJECT.search(text)] if m}
    named = {f"{name}_SOURCE_DIR": str(folder) for folder, name in projects.items()}
    scopes: dict[Path, dict[str, str]] = {}
    for path in sorted(texts, key=lambda p: len(p.parts)):
        here = path.parent
        parent = next((scopes[q / "CMakeLists.txt"] for q in here.parents if q / "CMakeLists.txt" in scopes), {})
        top = next((q for q in (here, *here.parents) if q in projects), src)
        variables = {**named, **{k: v for k, v in parent.items() if not k.startswith("CMAKE_CURRENT")},
                     "CMAKE_CURRENT_SOURCE_DIR": str(here), "CMAKE_CURRENT_LIST_DIR": str(here),
                     "PROJECT_SOURCE_DIR": str(top), "CMAKE_SOURCE_DIR": str(top)}
        for m in CMAKE_SET.finditer(texts[path]):
            value = _cmake_value(m.group(2), variables)
            if value is not None:
                variables[m.group(1)] = value
        scopes[path] = variables
    return scopes


def _cmake_value(word: str, variables: dict[str, str]) -> str | None:
    """`word` with ${NAME} replaced from `variables` and $<BUILD_INTERFACE:x> unwrapped; None when a
    variable is unknown or another generator expression remains."""
    word = CMAKE_BUILD_INTERFACE.sub(r"\1", word)
    value = re.sub(r"\$\{(\w+)\}", lambda m: variables.get(m.group(1), "\0"), word)
    return None if "\0" in value or "$" in value else value


# Python build helpers besides setup.py that a setup.py imports (cupy 14.2.0's
# install/cupy_builder/cupy_setup_build.py appends ('CUPY_USE_HIP', '1') to define_macros)
PYTHON_BUILD_SCRIPT = re.compile(r"\w*(?:setup|build)\w*\.py")


def _build_files(src: Path, cmake_modules: bool = False, python_helpers: bool = False) -> list[Path]:
    """The build files (BUILD_FILES, *.cmake modules when `cmake_modules`, Python build helpers,
    PYTHON_BUILD_SCRIPT, when `python_helpers`) under the folder `src`, in walk order."""
    found: list[Path] = []
    for folder, _dirs, files in os.walk(src):
        found += [Path(folder) / name for name in sorted(files)
                  if name in BUILD_FILES or (cmake_modules and name.endswith(".cmake"))
                  or (python_helpers and PYTHON_BUILD_SCRIPT.fullmatch(name))]
    return found


def whole_unit_guard(text: str) -> str | None:
    """The macro M when all of a unit's code sits in one `#ifdef M` / `#if defined(M)` / `#if M` block (comments
    and blank lines around it aside, and inside the file's own include guard or `#pragma once`: dlib
    20.0.1's cusolver_dlibapi.cu is `#ifndef DLIB_DNN_CuSOLVER_CU_ / #define ... / #ifdef
    DLIB_USE_CUDA ... #endif / #endif`), else None."""
    lines = [line.strip() for line in cpp.blank(text).split("\n") if line.strip()]
    if lines and re.fullmatch(r"#\s*pragma\s+once", lines[0]):
        lines = lines[1:]
    own = re.fullmatch(r"#\s*ifndef\s+(\w+)", lines[0]) if len(lines) > 3 else None
    if own and re.fullmatch(rf"#\s*define\s+{own.group(1)}\b.*", lines[1]) and re.fullmatch(r"#\s*endif\b.*", lines[-1]):
        lines = lines[2:-1]
    if len(lines) < 2:
        return None
    m = GUARD_OPEN.fullmatch(lines[0])
    if not m or not re.fullmatch(r"#\s*endif\b.*", lines[-1]):
        return None
    depth = 0
    for i, line in enumerate(lines):
        if re.match(r"#\s*if", line):
            depth += 1
        elif re.match(r"#\s*endif\b", line):
            depth -= 1
            if depth == 0 and i != len(lines) - 1:
                return None
        elif depth == 1 and re.match(r"#\s*(else|elif)\b", line):
            return None
    return m.group(1) or m.group(2) or m.group(3)


def unit_guard_defines(src: Path, units: dict[str, str], given: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """((NAME or NAME=VALUE, reason), ...): the macros that guard all the code of a unit (`#ifdef
    USE_CUDA` around LightGBM's every .cu file, dlib's `#ifdef DLIB_USE_CUDA` in its .cu and .cpp
    CUDA units) and that the build files under `src` pass with -D (add_definitions(-DUSE_CUDA),
    add_compile_definitions / target_compile_definitions, -D in a Makefile, define_macros in
    setup.py) or a header template of the tree defines (`#cmakedefine NAME`). Such a unit is only
    built with the macro defined, so its CUDA build defines it; without it the unit would compile to
    nothing. The value is the build's when it names one value; a Python build that runs nvcc itself counts
    (_jit_build_texts: warp-lang 0.8.0's build.py passes -DWP_ENABLE_CUDA=1, and its cuda_util.cpp is one
    `#if WP_ENABLE_CUDA` block). Names in `given` (--define) are left to the user. units: {rel: text} of the
    units (sources that use CUDA)."""
    guards: dict[str, list[str]] = {}
    for rel, text in sorted(units.items()):
        name = whole_unit_guard(text)
        if name:
            guards.setdefault(name, []).append(rel)
    taken = {d.split("=", 1)[0] for d in given}
    files = _build_texts(src) + _jit_build_texts(src) if src.is_dir() and guards else []
    templates = _template_texts(src) if src.is_dir() and guards else []
    found = []
    for name, rels in guards.items():
        if name in taken:
            continue
        defined = _build_define(files, name) or _config_define(templates, name)
        if defined:
            found.append((defined[0], f"guards all the code of {len(rels)} unit{'s' if len(rels) != 1 else ''} "
                          f"({first_files(rels)}); the build defines it at {defined[1]}"))
    return tuple(found)


CMAKEDEFINE = r"^[ \t]*#[ \t]*cmakedefine(?:01)?[ \t]+{name}\b"


def _config_define(templates: list[tuple[str, str]], name: str) -> tuple[str, str] | None:
    """(NAME, "file:line (#cmakedefine, on when its CMake option is)") when one of the tree's header
    templates ((path, text), _template_texts) holds `#cmakedefine NAME`: CMake's configure_file writes
    `#define NAME` into the generated header when the option of that name is on (dlib 20.0.1:
    dlib/config.h.in:30, option DLIB_USE_CUDA), else None."""
    pattern = re.compile(CMAKEDEFINE.format(name=re.escape(name)), re.M)
    for rel, text in templates:
        m = pattern.search(text)
        if m:
            return name, f"{rel}:{cpp.line_of(text, m.start())} (#cmakedefine, on when its CMake option is)"
    return None


def _template_texts(src: Path) -> list[tuple[str, str]]:
    """(tree-relative path, text) of the tree's header templates (_header_templates), least nested
    first; an unreadable one is left out."""
    texts = []
    for _header, rel in _header_templates(src):
        try:
            texts.append((rel, (src / rel).read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return texts


def _build_texts(src: Path, cmake_modules: bool = False, python_helpers: bool = False) -> list[tuple[str, str]]:
    """(tree-relative path, text) of the build files under `src` (_build_files), read once for every
    name looked up; an unreadable file is left out."""
    texts = []
    for path in _build_files(src, cmake_modules, python_helpers):
        try:
            texts.append((path.relative_to(src).as_posix(), path.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return texts


# torch.utils.cpp_extension's JIT build arguments: load(..., extra_cuda_cflags=[...]) / load_inline(...), and a
# Python build that writes nvcc's command line itself with -D flags on it (warp-lang 0.8.0's warp/build.py:
# cuda_cmd = f'"{cuda_home}/bin/nvcc" -O3 ... -DWP_CUDA -DWP_ENABLE_CUDA=1 ...')
JIT_BUILD = re.compile(r"\bextra_(?:cuda_)?cflags\s*=|^[^\n#]*\bnvcc\b[^\n]*\s-D[A-Za-z_]", re.M)


def _jit_build_texts(src: Path) -> list[tuple[str, str]]:
    """(tree-relative path, text) of the Python files under `src`, other than the build files
    (BUILD_FILES), that pass compiler flags to PyTorch's JIT extension build or to nvcc (JIT_BUILD: rwkv 0.8.32's
    model.py calls load(..., extra_cuda_cflags=[..., f"-D_N_={HEAD_SIZE}"]); warp-lang 0.8.0's build.py runs
    nvcc with -DWP_ENABLE_CUDA=1); an unreadable file is left out."""
    return [(rel, text) for rel, text in _python_texts(src) if ("cflags" in text or "nvcc" in text) and JIT_BUILD.search(text)]


def _python_texts(src: Path) -> list[tuple[str, str]]:
    """(tree-relative path, text) of _python_files(src); an unreadable file is left out."""
    texts = []
    for path in _python_files(src):
        try:
            texts.append((path.relative_to(src).as_posix(), path.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return texts


def _python_files(src: Path) -> list[Path]:
    """The Python files under `src` other than setup.py (build modules, JIT loaders, and the rest), in walk
    order; hidden folders are not entered."""
    found = []
    for folder, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(folder) / name for name in sorted(files) if name.endswith(".py") and name != "setup.py"]
    return found


def _build_define(files: list[tuple[str, str]], name: str) -> tuple[str, str] | None:
    """(NAME or NAME=VALUE, "file:line") when one of the build files (_build_texts) passes macro `name`
    with -D (add_definitions(-DNAME), add_compile_definitions / target_compile_definitions, -D in a
    Makefile, define_macros in setup.py), else None. The value is the build's when it names one value."""
    pattern = re.compile(
        rf"(?<![\w-])-D\s*{name}(?:=(\S+?))?(?=[\s)\"',]|$)|\(\s*[\"']{name}[\"']\s*,\s*(?:[\"']([^\"']*)[\"']|None)"
        rf"|(?:add_compile_definitions|target_compile_definitions)\s*\([^)]*?(?<![\w-]){name}(?:=(\S+?))?(?=[\s)])", re.I)
    values, where = set(), ""
    for rel, text in files:
        for m in pattern.finditer(text):
            values.add(next((g for g in m.groups() if g), ""))
            where = where or f"{rel}:{cpp.line_of(text, m.start())}"
    if not where:
        return None
    value = values.pop() if len(values) == 1 else ""
    if "{" in value or "$" in value:  # computed when the build runs (a Python f-string, a make / CMake variable)
        value = ""
    return (f"{name}={value}" if value else name), where


# A CMake string that computes a name from variables ("GGML_CUDA_FA_${TYPE_K}_${TYPE_V}"), with at least
# three literal characters before the first variable
CMAKE_TEMPLATE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}(?:\$\{\w+\}[A-Za-z0-9_]*)+")
CMAKE_DEFINES = re.compile(r"\b(?:add_compile_definitions|add_definitions|target_compile_definitions)\s*\(", re.I)


# Templates a build writes a header from: autoconf's config.h.in, CMake's configure_file inputs
# (foo.h.in, foo.h.cmake, foo.h.cmakein), of a header-named file (HEADER_NAMES).
HEADER_TEMPLATE_SUFFIXES = (".in", ".cmake", ".cmakein")
HEADER_NAMES = re.compile(r"\.(h|hh|hpp|hxx|cuh|inc|inl)$")


def _header_templates(src: Path) -> list[tuple[str, str]]:
    """(header path a template writes, template path) of the tree's header templates (a header-named
    path, HEADER_NAMES, plus a suffix of HEADER_TEMPLATE_SUFFIXES: config.h.in), least nested first."""
    found = []
    for folder, _dirs, names in os.walk(src) if src.is_dir() else ():
        for name in names:
            suffix = next((x for x in HEADER_TEMPLATE_SUFFIXES if name.endswith(x)), "")
            if suffix and HEADER_NAMES.search(name[:-len(suffix)]):
                rel = os.path.relpath(os.path.join(folder, name), src).replace(os.sep, "/")
                found.append((rel[:-len(suffix)], rel))
    return sorted(found, key=lambda pair: (pair[1].count("/"), pair[1]))


def header_template(src: Path) -> Callable[[str], str]:
    """A check of a missing header's include name (`starpu_config.h`, `common/config.h`) against the
    files under `src`: returns "written by the project's build from <template>" when a file of the tree
    is that header (a header-named path: HEADER_NAMES) plus a template suffix (HEADER_TEMPLATE_SUFFIXES),
    the least nested first; else "written by the project's Python build (file:line names it)" when a Python
    file of the tree that writes files (PYTHON_WRITES) names the header's file name as a string; else "".
    The tree is walked once, at the first check (a run without a missing header never walks it)."""
    templates = functools.cache(lambda: _header_templates(src))
    writers = functools.cache(lambda: [(rel, text) for rel, text in _python_texts(src) + _setup_texts(src)
                                       if PYTHON_WRITES.search(text)] if src.is_dir() else [])

    def check(name: str) -> str:
        wanted = name.lstrip("./")
        for stem, rel in templates():
            if stem == wanted or stem.endswith("/" + wanted):
                return f"written by the project's build from {rel}"
        literal = re.compile(r"""["']([\w./-]*/)?""" + re.escape(posixpath.basename(wanted)) + r"""["']""")
        for rel, text in writers():
            m = literal.search(text)
            if m:
                return f"written by the project's Python build ({rel}:{cpp.line_of(text, m.start())} names it)"
        return ""
    return check


# a Python file that writes files (flashinfer-python 0.2.2's setup.py writes csrc/generated/dispatch.inc, its
# flashinfer/jit/attention/pytorch.py the *_config.inc headers its JIT units include)
PYTHON_WRITES = re.compile(r"\.write_text\s*\(|\bwrite_if_different\s*\(|\bopen\s*\([^)]*[\"']w")


def _setup_texts(src: Path) -> list[tuple[str, str]]:
    """(tree-relative path, text) of the tree's setup.py files; an unreadable one is left out."""
    texts = []
    for path in _build_files(src):
        if path.name == "setup.py":
            try:
                texts.append((path.relative_to(src).as_posix(), path.read_text(encoding="utf-8", errors="replace")))
            except OSError:
                continue
    return texts


def build_generated(src: Path) -> Callable[[str], str]:
    """A check of macro names against the build files under `src` (CMakeLists.txt, *.cmake, Makefiles,
    setup.py, Python files that JIT-build an extension: _jit_build_texts): returns a function of a name that gives where the build defines it ("-DNAME at
    CMakeLists.txt:12", or "CMake computes it: `GGML_CUDA_FA_${TYPE_K}_${TYPE_V}` at
    cmake/common.cmake:105" for a name built from variables in a file that passes compile
    definitions, as ggml's per-type flash-attention switches are: the template whose own letters make
    most of the name, at least half of it), or "" when the build does not.
    The files are read once, when the check is made, and each name is looked up once."""
    files = _build_texts(src, cmake_modules=True) + _jit_build_texts(src) if src.is_dir() else []
    templates = []
    for rel, text in files:
        if not CMAKE_DEFINES.search(text):
            continue
        for m in CMAKE_TEMPLATE.finditer(text):
            regex = "".join(r"\w+" if part.startswith("${") else re.escape(part)
                            for part in re.split(r"(\$\{\w+\})", m.group(0)) if part)
            templates.append((re.compile(regex, re.I), m.group(0), f"{rel}:{cpp.line_of(text, m.start())}"))

    @functools.cache
    def check(name: str) -> str:
        if not re.fullmatch(r"\w+", name):
            return ""
        found = _build_define(files, name)
        if found:
            return f"the build passes -D{found[0]} at {found[1]}"
        # the template that writes most of the name itself: ggml's "GGML_${backend}" (a backend's
        # option name) matches any GGML_ name, "GGML_CUDA_FA_${TYPE_K}_${TYPE_V}" spells 14 of 20 letters
        fits = [(len(re.sub(r"\$\{\w+\}", "", written)), written, where)
                for regex, written, where in templates if regex.fullmatch(name)]
        fits = [fit for fit in fits if 2 * fit[0] >= len(name)]
        if not fits:
            return ""
        _literal, written, where = max(fits, key=lambda fit: fit[0])
        return f"CMake computes it: `{written}` at {where}"
    return check


DEFINE_LINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.M)


def build_tested(texts: dict[str, str], passed: frozenset[str], check: Callable[[str], str]) -> list[tuple[str, int, str, str]]:
    """[(rel, line, name, where the build defines it)] for each preprocessor test (#if, #ifdef, #elif,
    #ifndef) of a macro that no file of the tree defines, that the compile does not get (`passed`:
    ProjectFlags.defined_names), and that the build files define or compute (check: build_generated):
    the branch the project's build would select is not the one compiled. texts: {rel: text}; one
    entry per name and file, at its first test."""
    in_tree = {name for text in texts.values() for name in DEFINE_LINE.findall(text)}
    found, where_of = [], {}
    for rel, text in sorted(texts.items()):
        seen: set[str] = set()
        blanked = cpp.blank(text)
        for m in TESTED.finditer(blanked):
            for name in re.findall(r"\b[A-Za-z_]\w*\b", m.group(1)):
                if name == "defined" or name in seen or name in in_tree or name in passed:
                    continue
                seen.add(name)
                if name not in where_of:
                    where_of[name] = check(name)
                if where_of[name]:
                    found.append((rel, cpp.line_of(blanked, m.start()), name, where_of[name]))
    return found


# A project's own switch to its ROCm build (LightGBM's USE_ROCM, ggml's GGML_USE_HIP, XGBoost's
# XGBOOST_USE_HIP): [PREFIX_](USE|WITH|ENABLE|BUILD)_(ROCM|HIP|AMD|AMDGPU)
HIP_SWITCH = re.compile(r"\b((?:[A-Z][A-Z0-9]*_)?(?:USE|WITH|ENABLE|BUILD)_(?:ROCM|HIP|HIPBLAS|AMD|AMDGPU))\b")
TESTED = re.compile(r"^[ \t]*#[ \t]*(?:ifdef|ifndef|if|elif)\b([^\n]*)", re.M)


def hip_switch_defines(src: Path, texts: dict[str, str], given: tuple[str, ...],
                       undefines: tuple[str, ...] = ()) -> tuple[tuple[str, str], ...]:
    """((NAME or NAME=VALUE, reason), ...): the project's own ROCm build switches (HIP_SWITCH names)
    that its sources test in #if / #ifdef lines and that its build files define (_build_define), as
    LightGBM 4.7.0's `cmake -DUSE_ROCM=ON` adds -DUSE_ROCM (CMakeLists.txt) and ggml's HIP backend
    add_compile_definitions(GGML_USE_HIP). With it defined the sources take the branches the project
    wrote and tests for AMD GPUs, as its own ROCm build does. texts: {rel: text} of the tree's files;
    names in `given` (--define) and `undefines` (--undefine) are left to the user."""
    tested: dict[str, list[str]] = {}
    for rel, text in sorted(texts.items()):
        for m in TESTED.finditer(text):
            for name in HIP_SWITCH.findall(m.group(1)):
                if rel not in tested.setdefault(name, []):
                    tested[name].append(rel)
    taken = {d.split("=", 1)[0] for d in given} | set(undefines)
    files = _build_texts(src, python_helpers=True) if src.is_dir() and tested else []
    found = []
    for name, rels in sorted(tested.items()):
        defined = None if name in taken else _build_define(files, name)
        if defined:
            found.append((defined[0], f"the project's own ROCm build switch: tested in {len(rels)} file"
                          f"{'s' if len(rels) != 1 else ''} ({first_files(rels)}), "
                          f"defined by its build at {defined[1]}; --undefine {name} migrates the CUDA path instead"))
    return tuple(found)


def _cmake_top_level_defines(text: str) -> list[tuple[str, int]]:
    """(NAME or NAME=VALUE, line) of the add_definitions(-D...) / add_compile_definitions(...) calls of one
    CMakeLists.txt that lie outside every if() / foreach() / while() / function() / macro() block, also
    one opened on the same line: the defines its folder's targets get whatever the configuration.
    Comments are ignored, a quoted argument is one word; a value naming a variable (`${...}`), a list
    or an escape is left out, as its text is not the value the compiler gets."""
    code, structure = cmake.code_of(text)
    blocks = [(m.start(), -1 if m.group(1) else 1) for m in cmake.CMAKE_BLOCK.finditer(structure)]
    found = []
    for m in cmake.CMAKE_DEFINE_CALL.finditer(structure):
        if sum(step for at, step in blocks if at < m.start()) > 0:
            continue
        close = structure.find(")", m.end())
        # a quoted argument is one word without its quotes; quotes inside an unquoted one are literal
        # (add_definitions(-DNAME="text") defines NAME as the string literal "text")
        words = [w[1:-1] if w.startswith('"') else w
                 for w in cmake.CMAKE_WORD.findall(code[m.end():close if close >= 0 else len(code)]) if w]
        for word in words:
            if m.group(1).lower() == "add_definitions":
                word = word[2:] if word.startswith("-D") else ""
            elif word.startswith("-D"):
                word = word[2:]
            if cmake.DEFINE_WORD.fullmatch(word):
                found.append((word, code.count("\n", 0, m.start()) + 1))
    return found


def tested_in(texts: dict[str, str], names: set[str]) -> dict[str, list[str]]:
    """{name: the files (sorted) whose #if / #ifdef / #ifndef / #elif lines test it} for the `names` the
    tree's files ({rel: text}) test; comments do not count."""
    tested: dict[str, list[str]] = {}
    for rel, text in sorted(texts.items()):
        if not any(name in text for name in names):
            continue
        for m in TESTED.finditer(cpp.blank(text)):
            for name in re.findall(r"\b[A-Za-z_]\w*\b", m.group(1)):
                if name in names and rel not in tested.setdefault(name, []):
                    tested[name].append(rel)
    return tested


# a Python module that builds a PyTorch extension for the GPU (a builder class, a JIT loader)
PYTHON_GPU_BUILD = re.compile(r"\b(?:CUDAExtension|cpp_extension|nvcc)\b")


def _python_builds(src: Path, build_files: list[Path] | None) -> list[tuple[Path, bool]]:
    """(path, helper) of the tree's setup.py files (helper False) and its other Python files (helper
    True: the build modules a setup.py imports and JIT loaders, told apart by setuppy's GPU contexts)."""
    setups = [p for p in (_build_files(src) if build_files is None else build_files) if p.name == "setup.py"]
    return [(p, False) for p in setups] + [(p, True) for p in _python_files(src)]


def setup_gpu_defines(src: Path, texts: dict[str, str], given: tuple[str, ...],
                      build_files: list[Path] | None = None) -> tuple[tuple[str, str], ...]:
    """((NAME or NAME=VALUE, reason), ...): the macros the tree's setup.py files and Python build modules
    pass in their GPU build (setuppy.gpu_build_defines: spatial-correlation-sampler 0.5.0's `macro =
    [("USE_CUDA", None)]` in the else of `if CPU_ONLY:`, ColossalAI 0.5.0's `_CudaExtension.nvcc_flags()`
    returning "-DCOLOSSAL_WITH_CUDA"), which PyTorch's ROCm build of the extension compiles with too, and that
    the sources test in #if / #ifdef lines. A name given two values, a ROCm switch (HIP_SWITCH,
    hip_switch_defines' part) and the names in `given` (--define, --undefine, the defines inferred
    before) are left out. texts: {rel: text} of the tree's files; build_files: as in cmake_always_defines."""
    if not src.is_dir() or not texts:
        return ()
    taken = {d.split("=", 1)[0] for d in given}
    found: dict[str, list[tuple[str, str]]] = {}
    for path, helper in _python_builds(src, build_files):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if helper and not PYTHON_GPU_BUILD.search(text):
            continue
        for name, value, line in setuppy.gpu_build_defines(text, helper):
            if name not in taken and not HIP_SWITCH.fullmatch(name):
                found.setdefault(name, []).append((f"{name}={value}" if value else name,
                                                   f"{path.relative_to(src).as_posix()}:{line}"))
    return tuple((define, f"the project's Python build passes it in its GPU build ({where}), which PyTorch's ROCm build "
                          f"takes too, and {_testing(rels)} ({first_files(rels)}); --undefine {name} leaves it out")
                 for name, define, where, rels in _tested_once(texts, found))


def cmake_always_defines(src: Path, texts: dict[str, str], units: dict[str, str], given: tuple[str, ...],
                         undefines: tuple[str, ...] = (),
                         build_files: list[Path] | None = None) -> tuple[tuple[str, str, str], ...]:
    """((folder, NAME or NAME=VALUE, reason), ...): the macros that a CMakeLists.txt at or above a unit's
    folder defines outside any if() / foreach() / function() block (_cmake_top_level_defines), so its
    build passes them to the targets of that folder (`folder`, tree-relative, "" for the root) and below
    whatever the configuration, and that the tree's sources test in #if / #ifdef lines (comments not
    counted). natten 0.21.7's csrc/CMakeLists.txt:147 has add_definitions("-DNATTEN_WITH_CUTLASS"), and
    its op bodies sit in `#ifdef NATTEN_WITH_CUTLASS ... #else TORCH_CHECK(false, "libnatten not compiled
    with CUTLASS.")`: without the define the units compile, but not the code the build compiles. A name
    that two files give different values is left out. texts: {rel: text} of the tree's files; units:
    {rel: text} of the units; names in `given` (--define and the defines inferred before) and
    `undefines` (--undefine) are left as they are; build_files: _build_files(src) when the caller
    has them (None: walked here)."""
    if not src.is_dir() or not units:
        return ()
    taken = {d.split("=", 1)[0] for d in given} | set(undefines)
    unit_dirs = {posixpath.dirname(rel) for rel in units}
    found: list[tuple[str, str, str]] = []  # (folder, define, "file:line")
    for path in _build_files(src) if build_files is None else build_files:
        folder = path.parent.relative_to(src).as_posix()
        folder = "" if folder == "." else folder
        if path.name != "CMakeLists.txt" or not any(not folder or d == folder or d.startswith(folder + "/")
                                                    for d in unit_dirs):
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        where = path.relative_to(src).as_posix()
        found += [(folder, define, f"{where}:{line}") for define, line in _cmake_top_level_defines(text)
                  if define.split("=", 1)[0] not in taken]
    values: dict[str, set[str]] = {}
    for _folder, define, _where in found:
        values.setdefault(define.split("=", 1)[0], set()).add(define)
    names = {name for name, seen in values.items() if len(seen) == 1}
    tested = tested_in(texts, names)
    out, seen = [], set()
    for folder, define, where in found:
        rels = tested.get(define.split("=", 1)[0])
        if rels and (folder, define) not in seen:
            seen.add((folder, define))
            out.append((folder, define, f"the build always defines it for the units under {folder or 'the tree'}/ "
                        f"(outside any if() at {where}) and {len(rels)} file{'s test' if len(rels) != 1 else ' tests'} "
                        f"it ({first_files(rels)})"))
    return tuple(sorted(out, key=lambda entry: entry[1]))


def _cmake_texts(src: Path, build_files: list[Path] | None) -> Iterator[tuple[str, str]]:
    """(tree-relative path, text) of the tree's CMake files (CMakeLists.txt, *.cmake) among `build_files`
    (None: _build_files(src, cmake_modules=True)); an unreadable file is left out."""
    for path in _build_files(src, cmake_modules=True) if build_files is None else build_files:
        if path.name != "CMakeLists.txt" and not path.name.endswith(".cmake"):
            continue
        try:
            yield path.relative_to(src).as_posix(), path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue


def cmake_hip_branch_defines(src: Path, texts: dict[str, str], given: tuple[str, ...],
                             build_files: list[Path] | None = None) -> tuple[tuple[str, str], ...]:
    """((NAME or NAME=VALUE, reason), ...): the macros the tree's CMake files (CMakeLists.txt, *.cmake)
    pass in their HIP build branches (cmake.hip_branch_defines), so the project's own ROCm build
    compiles with them, and that the sources test in #if / #ifdef lines (comments not counted). A name
    two branches give different values is left out, and so are the names in `given` (--define,
    --undefine and the defines inferred before) and the project's ROCm switches (HIP_SWITCH names,
    hip_switch_defines' part). texts: {rel: text} of the tree's files; build_files: as in
    cmake_always_defines."""
    if not src.is_dir() or not texts:
        return ()
    taken = {d.split("=", 1)[0] for d in given}
    found: dict[str, list[tuple[str, str]]] = {}
    for rel, text in _cmake_texts(src, build_files):
        if not cmake.HIP_WORD.search(text):
            continue
        for define, line in cmake.hip_branch_defines(text):
            name = define.split("=", 1)[0]
            if name not in taken and not HIP_SWITCH.fullmatch(name):
                found.setdefault(name, []).append((define, f"{rel}:{line}"))
    return tuple((define, f"the project's ROCm build passes it (a HIP branch at {where}) and {_testing(rels)} "
                          f"({first_files(rels)}); --undefine {name} leaves it out")
                 for name, define, where, rels in _tested_once(texts, found))


def cmake_cuda_flag_defines(src: Path, texts: dict[str, str], given: tuple[str, ...],
                            build_files: list[Path] | None = None) -> tuple[tuple[str, str], ...]:
    """((NAME or NAME=VALUE, reason), ...): in a tree whose CMake files have no HIP branch, the macros they
    put in the CUDA compile flags (cmake.cuda_flag_defines: DyNet 2.1.2's -DHAVE_CUDA, which guards all of
    dynet/cuda.h) that the sources test in #if / #ifdef lines: a port compiles the same code with them. A
    tree with its own HIP branch gets that branch's defines instead (cmake_hip_branch_defines). A name given
    two values, a ROCm switch and the names in `given` (--define, --undefine, the defines inferred before)
    are left out. texts: {rel: text} of the tree's files; build_files: as in cmake_always_defines."""
    if not src.is_dir() or not texts:
        return ()
    taken = {d.split("=", 1)[0] for d in given}
    found: dict[str, list[tuple[str, str]]] = {}
    for rel, text in _cmake_texts(src, build_files):
        if cmake.HIP_WORD.search(text) and cmake.has_hip_branch(text):
            return ()
        for define, line in cmake.cuda_flag_defines(text):
            name = define.split("=", 1)[0]
            if name not in taken and not HIP_SWITCH.fullmatch(name):
                found.setdefault(name, []).append((define, f"{rel}:{line}"))
    return tuple((define, f"the project's CUDA build passes it to nvcc ({where}) and {_testing(rels)} "
                          f"({first_files(rels)}); --undefine {name} leaves it out")
                 for name, define, where, rels in _tested_once(texts, found))


def cmake_check_defines(src: Path, texts: dict[str, str], given: tuple[str, ...],
                        build_files: list[Path] | None = None) -> tuple[tuple[str, str], ...]:
    """((NAME or NAME=VALUE, reason), ...): the macros the tree's CMake files define in an `if(${CHECK})`
    branch after a configure check of that name (cmake.check_gated_defines, cmake.configure_checks) whose check
    passes when run here (configure.passes: LightGBM 4.7.0's MM_MALLOC) and that the sources test in #if /
    #ifdef lines. A name given two values and the names in `given` (--define, --undefine, the defines inferred
    before) are left out. texts: {rel: text} of the tree's files; build_files: as in cmake_always_defines."""
    if not src.is_dir() or not texts:
        return ()
    taken = {d.split("=", 1)[0] for d in given}
    found: dict[str, list[tuple[str, str]]] = {}
    checks: dict[str, tuple[str, tuple[str, ...], str]] = {}
    gated: list[tuple[str, str, str]] = []
    for rel, text in _cmake_texts(src, build_files):
        here = cmake.configure_checks(text)
        checks.update({var: (kind, args, f"{rel}:{line}") for var, (kind, args, line) in here.items()})
        gated += [(var, define, f"{rel}:{line}") for var, define, line in cmake.check_gated_defines(text, set(checks))]
    tested = tested_in(texts, {define.split("=", 1)[0] for _var, define, _where in gated} - taken)
    ran: dict[str, bool] = {}
    for var, define, where in gated:
        name = define.split("=", 1)[0]
        if name in tested and ran.setdefault(var, configure.passes(*checks[var][:2])):
            found.setdefault(name, []).append((define, f"{where}, after its check {var} at {checks[var][2]}, "
                                                       "which passes here"))
    return tuple((define, f"the project's CMake build passes it at {where}, and {_testing(rels)} ({first_files(rels)}); "
                          f"--undefine {name} leaves it out")
                 for name, define, where, rels in _tested_once(texts, found))


def covers(where: str, rel: str) -> bool:
    """Whether the build file of `where` ("file:line", tree-relative) lies at or above the folder of tree path
    `rel`: its flags are those of rel's build (a vendored library's own build file below covers its files only)."""
    base, folder = posixpath.dirname(where.rsplit(":", 1)[0]), posixpath.dirname(rel)
    return base in ("", folder) or folder.startswith(base + "/")


# an x86 instruction-set switch a build passes its C++ compiler (GCC's x86 options); -march=native is left
# out: it names the building machine, not the project
ISA_FLAG = re.compile(r"(?<![\w-])-m(avx\w*|fma4?|f16c|sse\d(?:\.\d)?|sse4a|ssse3|bmi2?|popcnt|lzcnt|pclmul|aes|amx-\w+)(?![\w.-])")


def host_isa_flags(src: Path, build_files: list[Path] | None = None) -> tuple[tuple[str, str], ...]:
    """((flag, "file:line"), ...): the x86 instruction-set flags (-mavx, -mf16c, -mfma, -mavx512f, ...)
    the tree's build files (CMake, setup.py, Makefiles) name, in the order first met; sysdeps.unit_flags gives
    a unit those of the build files that cover it (covers). A unit whose CPU code calls intrinsics of those sets
    (bmtrain 1.0.1's adam_cpu.hpp: _mm256_cvtph_ps needs F16C) compiles only with them; -march=native is not
    taken (it means the building machine). () for a single file. build_files: as in cmake_always_defines."""
    if not src.is_dir():
        return ()
    found: dict[str, str] = {}
    for path in _build_files(src, cmake_modules=True) if build_files is None else build_files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for m in ISA_FLAG.finditer(text):
            found.setdefault(m.group(0), f"{path.relative_to(src).as_posix()}:{cpp.line_of(text, m.start())}")
    return tuple(found.items())


# A C++ standard a build file names: CMake's CMAKE_CXX_STANDARD / CMAKE_CUDA_STANDARD / CMAKE_HIP_STANDARD
# variables and CXX_STANDARD / CUDA_STANDARD properties, compile features cxx_std_NN / cuda_std_NN, and
# -std=c++NN / gnu++NN flags (Makefiles, setup.py); clang's draft names 1z, 2a, 2b, 2c are 17, 20, 23, 26
STANDARD = re.compile(r"\b(?:CMAKE_(?:CXX|CUDA|HIP)_STANDARD|(?:CXX|CUDA|HIP)_STANDARD)\s+\"?(\d\d)\b"
                      r"|\b(?:cxx|cuda)_std_(\d\d)\b|(?<![\w-])-std=(?:c|gnu)\+\+(\d\d|1z|2a|2b|2c)\b")
DRAFT_STANDARDS = {"1z": 17, "2a": 20, "2b": 23, "2c": 26}
DEFAULT_STANDARD = 17  # the C++ standard units are compiled with unless their build names a newer one


def build_standards(src: Path, build_files: list[Path] | None = None) -> tuple[tuple[int, str], ...]:
    """((standard, "file:line"), ...): the C++ standards (11, 14, 17, 20, 23, ...) the tree's build files name
    (STANDARD), first place of each per file. pennylane-lightning-gpu 0.45.0's CMakeLists.txt sets
    CMAKE_CXX_STANDARD 20, and its headers use `requires` clauses. () for a single file."""
    if not src.is_dir():
        return ()
    found: list[tuple[int, str]] = []
    for path in _build_files(src, cmake_modules=True) if build_files is None else build_files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        seen: set[int] = set()
        for m in STANDARD.finditer(text):
            word = next(g for g in m.groups() if g)
            year = DRAFT_STANDARDS.get(word) or int(word)
            if year not in seen:
                seen.add(year)
                found.append((year, f"{path.relative_to(src).as_posix()}:{cpp.line_of(text, m.start())}"))
    return tuple(found)


def standard_for(standards: tuple[tuple[int, str], ...], rel: str) -> tuple[str, str]:
    """(the -std value for unit `rel`, the build file line that asks for it or ""): the newest standard that a
    build file covering the unit (covers) names (build_standards) when newer than DEFAULT_STANDARD, else
    c++17. An older one is not taken: C++17 compiles their code too, and the HIP headers need it."""
    year, where = max(((y, w) for y, w in standards if covers(w, rel)), default=(DEFAULT_STANDARD, ""))
    return (f"c++{year}", where) if year > DEFAULT_STANDARD else (f"c++{DEFAULT_STANDARD}", "")


def _tested_once(texts: dict[str, str], found: dict[str, list[tuple[str, str]]]) -> list[tuple[str, str, str, list[str]]]:
    """[(name, NAME or NAME=VALUE, first "file:line", the files testing it)] of the defines a build passes
    (found: {name: [(define, where), ...]}) that the tree's files ({rel: text}) test in #if lines and that
    every place gives the same value, sorted by name."""
    tested = tested_in(texts, set(found))
    return [(name, places[0][0], places[0][1], tested[name]) for name, places in sorted(found.items())
            if tested.get(name) and len({define for define, _where in places}) == 1]


def _testing(rels: list[str]) -> str:
    """"N file(s) test(s) it" for the files `rels`."""
    return f"{len(rels)} file{'s test' if len(rels) != 1 else ' tests'} it"


def cuda_only_units(src: Path, units: set[str]) -> dict[str, str]:
    """{unit: "CMakeLists.txt:line"} of the `units` (tree-relative) that the tree's CMakeLists.txt files
    list only in branches selecting a CUDA build, in none of them elsewhere (cmake.listed_sources), when some CMake file of the
    tree (CMakeLists.txt, *.cmake) has a branch selecting a HIP build: the project's own ROCm build then
    leaves them out. Empty for a tree without such a branch (every CUDA build lists its sources under
    some CUDA test) or without build files."""
    if not src.is_dir() or not units:
        return {}
    texts = _build_texts(src, cmake_modules=True)
    cmake_texts = [(rel, text) for rel, text in texts if rel.endswith((".cmake", "CMakeLists.txt"))]
    if not any(cmake.has_hip_branch(text) for _rel, text in cmake_texts):
        return {}
    found: dict[str, str] = {}
    elsewhere: set[str] = set()
    for rel, text in cmake_texts:
        if posixpath.basename(rel) != "CMakeLists.txt":
            continue
        cuda, other = cmake.listed_sources(text, posixpath.dirname(rel))
        elsewhere |= other
        for source, line in cuda.items():
            if source in units:
                found.setdefault(source, f"{rel}:{line}")
    return {source: where for source, where in found.items() if source not in elsewhere}


# a build that finds its sources by listing folders: which files it compiles cannot be read off its text
DIRECTORY_SCAN = re.compile(r"\bglob\.i?glob\s*\(|\.r?glob\s*\(|\blistdir\s*\(|\bos\.walk\s*\(|\bscandir\s*\("
                            r"|\bfile\s*\(\s*GLOB|\$\(wildcard|\$\(shell\s+find", re.I)
LINE_COMMENT = re.compile(r"#.*$", re.MULTILINE)
CMAKE_GLOB_CALL = re.compile(r"\bfile\s*\(\s*GLOB(?:_RECURSE)?\b[^)]*\)", re.I)  # read by cmake.glob_sources


def _named_sources(texts: list[tuple[str, str]], units: set[str]) -> set[str]:
    """The `units` that a build text ((tree-relative path, text), comments dropped) names: by a path
    ending in the unit's path (`csrc/ops_new/dropout.cpp`), or by its bare file name in a CMake or Make
    file of the unit's own folder (relative to it), or anywhere in a Python file (which may join folders)."""
    by_name: dict[str, list[str]] = {}
    for unit in units:
        by_name.setdefault(posixpath.basename(unit), []).append(unit)
    pattern = re.compile(r"[\w./${}-]*(?<![\w-])(" + "|".join(re.escape(n) for n in sorted(by_name, key=len, reverse=True))
                         + r")(?![\w.])")
    named: set[str] = set()
    for rel, text in texts:
        python, here = rel.endswith(".py"), posixpath.dirname(rel)
        for m in pattern.finditer(LINE_COMMENT.sub("", text)):
            path = re.sub(r"\$\{\w*\}|\$\(\w*\)", "", m.group(0)).lstrip("./")
            for unit in by_name[m.group(1)]:
                if "/" in path and ("/" + unit).endswith("/" + path):
                    named.add(unit)
                elif "/" not in path and (python or posixpath.dirname(unit) == here):
                    named.add(unit)
    return named


def _scans_folders(rel: str, text: str) -> bool:
    """Whether build file `rel` finds sources by listing folders (DIRECTORY_SCAN) in a way
    cmake.glob_sources does not read: a CMakeLists.txt's file(GLOB) calls are read there."""
    text = LINE_COMMENT.sub("", text)
    return bool(DIRECTORY_SCAN.search(CMAKE_GLOB_CALL.sub("", text) if posixpath.basename(rel) == "CMakeLists.txt" else text))


def unbuilt_units(src: Path, units: set[str]) -> dict[str, str]:
    """{unit: why} of the `units` (tree-relative) that the project's build does not compile: a whole
    folder of units that no build file names, where the build names its other sources one by one
    (lightseq 3.0.1's csrc/ops/, the generation its op builders replaced by csrc/ops_new/: their lines
    in the builders are commented out), and a unit that the CMake file(GLOB) patterns compiling its
    folder do not match and nothing names (qulacs 0.6.14's src/gpusim/test.cpp beside `*.cu`: cmake.glob_sources).
    Build files: CMakeLists.txt, *.cmake, Makefiles, setup.py and the tree's other Python files. Empty
    when the build lists folders some other way (a Python glob, $(wildcard), a file(GLOB) not read), names
    no unit, or has no files; a folder with a build file of its own is left out unless its globs list it."""
    if not src.is_dir() or not units:
        return {}
    texts = _build_texts(src, cmake_modules=True) + _python_texts(src)
    globbed: set[str] = set()
    glob_folders: set[str] = set()
    for rel, text in texts:
        if posixpath.basename(rel) == "CMakeLists.txt" and "GLOB" in text.upper():
            matched, listed, complete = cmake.glob_sources(text, posixpath.dirname(rel), units)
            if not complete:
                return {}
            globbed |= matched
            glob_folders |= listed
    if not texts or any(_scans_folders(rel, text) for rel, text in texts):
        return {}
    named = _named_sources(texts, units) | globbed
    if not named:
        return {}
    build_folders = {posixpath.dirname(rel) for rel, _text in texts if not rel.endswith(".py")}
    built_folders = {posixpath.dirname(u) for u in named}
    found = {u: "no build file of the project names it or its folder's other sources (CMakeLists.txt, Makefiles, "
                "setup.py, the Python build modules), while the build names its sources one by one"
             for u in sorted(units - named) if posixpath.dirname(u) not in built_folders | build_folders}
    found |= {u: "the file(GLOB) patterns that compile its folder do not match it, and no build file names it"
              for u in sorted(units - named) if posixpath.dirname(u) in glob_folders}
    return found


def first_files(rels: list[str]) -> str:
    """The first two paths of `rels`, then ", ..." when there are more (for a reason's text)."""
    return ", ".join(rels[:2]) + (", ..." if len(rels) > 2 else "")


def infer_from_build_files(src: Path, build_files: list[Path] | None = None) -> tuple[str, ...]:
    """Tree-relative include folders the build files under `src` name (CMake include_directories /
    target_include_directories, -I in Makefiles, include_dirs in setup.py); only folders that exist
    in the tree. In CMake, ${VAR} is resolved from _cmake_scopes (the project folders, one-word set()
    values) and $<BUILD_INTERFACE:x> is x; a folder naming anything else is left out. build_files:
    _build_files(src) when the caller has them (None: walked here)."""
    if not src.is_dir():
        return ()
    build_files = _build_files(src) if build_files is None else build_files
    try:
        scopes = _cmake_scopes(src, [p for p in build_files if p.name == "CMakeLists.txt"])
    except OSError:
        scopes = {}
    found: list[str] = []
    for path in build_files:
        name = path.name
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        here = path.parent
        candidates: list[str] = []
        if name == "CMakeLists.txt":
            for m in CMAKE_DIRS.finditer(text):
                words = [w.strip("\"'") for w in m.group(1).split()]
                if m.group(0).lower().startswith("target_"):
                    words = words[1:]
                for w in words:
                    if w.upper() in CMAKE_KEYWORDS:
                        continue
                    value = _cmake_value(w, scopes.get(path, {}))
                    if value:
                        candidates.append(value)
        elif name == "setup.py":
            for m in SETUP_DIRS.finditer(text):
                candidates += re.findall(r"[\"']([^\"']+)[\"']", m.group(1))
        else:
            candidates += MAKE_INCLUDE.findall(text)
        for c in candidates:
            if "$" in c:
                continue
            target = (here / c).resolve() if not os.path.isabs(c) else Path(c).resolve()
            try:
                rel = target.relative_to(src.resolve()).as_posix()
            except ValueError:
                continue
            if target.is_dir():
                found.append(rel or ".")
    return tuple(dict.fromkeys(found))


BUILDER_METHODS = re.compile(r"def\s+(?:include_paths|include_dirs)\s*\(")


def builder_include_dirs(src: Path, rels: set[str]) -> dict[str, tuple[str, ...]]:
    """{unit: its include folders} from the op-builder classes of the tree's Python files
    (opbuilders.unit_include_dirs); rels: the tree's files (tree-relative). An unreadable file is left out."""
    if not src.is_dir():
        return {}
    builders = [(rel, text) for rel, text in _python_texts(src) if BUILDER_METHODS.search(text)]
    if not builders:
        return {}
    folders = {"/".join(rel.split("/")[:k]) for rel in rels for k in range(1, rel.count("/") + 1)}
    units = {rel for rel in rels if rel.endswith(includes.SOURCE_SUFFIXES)}
    return opbuilders.unit_include_dirs(builders, units, folders)


def project_flags(src: Path, rels: set[str], compile_commands: Path | None, include_dirs: tuple[str, ...],
                  defines: tuple[str, ...], units: dict[str, str] | None = None,
                  texts: dict[str, str] | None = None, undefines: tuple[str, ...] = ()) -> ProjectFlags:
    """The flags of a run: the compilation database when given, else what the build files name (the
    include folders, the defines that guard whole units: unit_guard_defines over `units`, {rel: text},
    the project's own ROCm build switches: hip_switch_defines over `texts`, {rel: text} of every
    file, the defines a CMakeLists.txt always passes that the sources test: cmake_always_defines, those
    its HIP branch passes: cmake_hip_branch_defines, or in a tree without one those its CUDA build passes
    nvcc: cmake_cuda_flag_defines; those its configure checks gate, where the check passes here:
    cmake_check_defines; and a setup.py's GPU build's: setup_gpu_defines);
    --include-dir / --define added to every unit, --undefine names taken out of the inferred
    defines and undefined for every unit. Raises InputError for a bad database, an --include-dir that
    is not a folder of the tree, or a malformed --define / --undefine."""
    for d in defines:
        if not re.fullmatch(r"[A-Za-z_]\w*(=.*)?", d):
            raise InputError(f"--define {d}: expected NAME or NAME=VALUE")
    for u in undefines:
        if not re.fullmatch(r"[A-Za-z_]\w*", u):
            raise InputError(f"--undefine {u}: expected a macro NAME")
    guarded: tuple[tuple[str, str], ...] = ()
    switches: tuple[tuple[str, str], ...] = ()
    always: tuple[tuple[str, str, str], ...] = ()
    hip_branch: tuple[tuple[str, str], ...] = ()
    setup_gpu: tuple[tuple[str, str], ...] = ()
    cuda_flags: tuple[tuple[str, str], ...] = ()
    checked: tuple[tuple[str, str], ...] = ()
    build_files = _build_files(src) if src.is_dir() else []
    if not compile_commands:
        guarded = unit_guard_defines(src, units or {}, defines + undefines)
        switches = hip_switch_defines(src, texts or {}, defines + tuple(d for d, _why in guarded), undefines)
        always = cmake_always_defines(src, texts or {}, units or {},
                                      defines + tuple(d for d, _why in guarded + switches), undefines, build_files)
        hip_branch = cmake_hip_branch_defines(
            src, texts or {}, defines + undefines + tuple(d for d, _why in guarded + switches)
            + tuple(d for _folder, d, _why in always))
        setup_gpu = setup_gpu_defines(src, texts or {}, defines + undefines + tuple(d for d, _why in guarded + switches + hip_branch)
                                      + tuple(d for _folder, d, _why in always), build_files)
        cuda_flags = cmake_cuda_flag_defines(src, texts or {}, defines + undefines + tuple(
            d for d, _why in guarded + switches + hip_branch + setup_gpu) + tuple(d for _folder, d, _why in always), build_files)
        checked = cmake_check_defines(src, texts or {}, defines + undefines + tuple(
            d for d, _why in guarded + switches + hip_branch + setup_gpu + cuda_flags) + tuple(d for _folder, d, _why in always),
            build_files)
    base = load_compile_commands(compile_commands, rels, src if src.is_dir() else src.parent) if compile_commands else ProjectFlags(
        units={rel: UnitFlags(dirs) for rel, dirs in builder_include_dirs(src, rels).items()},
        common=UnitFlags(infer_from_build_files(src, build_files),
                         tuple(d for d, _why in guarded + switches + hip_branch + setup_gpu + cuda_flags + checked)),
        inferred=guarded + switches + hip_branch + setup_gpu + cuda_flags + checked + tuple((d, why) for _folder, d, why in always),
        folder_defines=tuple((folder, d) for folder, d, _why in always),
        hip_switches=frozenset(d.split("=", 1)[0] for d, _why in switches),
        source="inferred" if build_files else NO_BUILD_FILES)
    root = src if src.is_dir() else src.parent
    extra = []
    for d in include_dirs:
        rel = posixpath.normpath(d)
        if rel.startswith("../") or os.path.isabs(rel) or not (root / rel).is_dir():
            raise InputError(f"--include-dir {d}: not a folder of the source tree {src} (give it relative to the tree)")
        extra.append(rel)
    common = UnitFlags(tuple(dict.fromkeys(base.common.include_dirs + tuple(extra))), base.common.defines + defines,
                       tuple(dict.fromkeys(base.common.undefines + undefines)))
    return ProjectFlags(units=base.units, common=common, source=base.source, outside=base.outside, inferred=base.inferred,
                        folder_defines=base.folder_defines, hip_switches=base.hip_switches,
                        unread_options=base.unread_options)
