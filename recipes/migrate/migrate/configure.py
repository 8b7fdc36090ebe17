"""A CMake build's configure checks, run here: the defines a project's build passes only when a check passes.

LightGBM 4.7.0's CMakeLists.txt runs `check_cxx_source_compiles("#include <mm_malloc.h> ..." MM_MALLOC)` and, when
it compiles, `add_definitions(-DMM_MALLOC)`; without the define its common.h #defines `_mm_malloc` itself, which
clang's mm_malloc.h (reached through Eigen's SSE path) then breaks. migrate reads such checks (cmake.configure_checks)
and the defines they gate (cmake.check_gated_defines), runs each check as CMake's module would, with the host C / C++
compiler of the machine migrate runs on (the image's), and takes the defines of the checks that pass where the
sources test them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

CHECK_SECONDS = 60  # one configure check's compile and link


def compiler(language: str) -> str | None:
    """The host compiler for "c" or "c++": c++ / cc, clang++ / clang, g++ / gcc, else a versioned clang on the
    PATH (the dev image has Debian's clang++-22 and clang-22 only); None when there is none."""
    names = ("c++", "clang++", "g++") if language == "c++" else ("cc", "clang", "gcc")
    found = next((path for name in names if (path := shutil.which(name))), None)
    if found:
        return found
    versioned = re.compile(r"clang\+\+-\d+" if language == "c++" else r"clang-\d+")
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        try:
            names = tuple(sorted((n for n in os.listdir(folder) if versioned.fullmatch(n)),
                                 key=lambda n: int(n.rsplit("-", 1)[1]), reverse=True))
        except OSError:
            continue
        if names:
            return os.path.join(folder, names[0])
    return None


def check_source(kind: str, args: tuple[str, ...]) -> tuple[str, str] | None:
    """(language, program) that CMake's module builds for a check (cmake.CHECK_KINDS kind, its arguments): the
    source itself (check_cxx_source_compiles / check_c_source_compiles), the headers (check_include_file(s), `;`
    separating several), a use of the symbol after its headers (check_symbol_exists, as CheckSymbolExists.cmake
    writes it), a call of the function (check_function_exists links `char f(void)` in C). None for arguments
    it cannot read."""
    if kind in ("cxx-source", "c-source"):
        return ("c++" if kind == "cxx-source" else "c"), args[0]
    if kind == "include":
        headers = [h for h in args[0].split(";") if h]
        return "c++", "".join(f"#include <{h}>\n" for h in headers) + "int main(void) { return 0; }\n"
    if kind == "symbol" and len(args) >= 2:
        headers = "".join(f"#include <{h}>\n" for h in args[1].split(";") if h)
        return "c++", (f"{headers}int main(int argc, char** argv) {{\n  (void)argv;\n#ifndef {args[0]}\n"
                       f"  return ((int*)(&{args[0]}))[argc];\n#else\n  (void)argc;\n  return 0;\n#endif\n}}\n")
    if kind == "function":
        return "c", f"char {args[0]}(void);\nint main(void) {{ {args[0]}(); return 0; }}\n"
    return None


def passes(kind: str, args: tuple[str, ...]) -> bool:
    """Whether the check compiles and links with the host compiler (compiler()); False without a compiler, for a
    check it cannot read (check_source), or past CHECK_SECONDS."""
    source = check_source(kind, args)
    tool = compiler(source[0]) if source else None
    if not source or not tool:
        return False
    with tempfile.TemporaryDirectory(prefix="rocmig-check-") as folder:
        path = Path(folder) / ("check.cpp" if source[0] == "c++" else "check.c")
        path.write_text(source[1], encoding="utf-8")
        try:
            run = subprocess.run([tool, str(path), "-o", str(Path(folder) / "check")], capture_output=True,
                                 timeout=CHECK_SECONDS, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return False
    return run.returncode == 0
