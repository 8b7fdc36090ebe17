"""What a project's CMake files say about its builds, read without running CMake.

The files are read as text: comments and string contents are set aside (code_of), and each command is
seen with the build its innermost if() / elseif() / else() branch selects (commands): "hip" for a
branch whose condition selects a HIP / ROCm build, "cuda" for one that selects another build, "unknown"
for a configuration choice. From that: the defines a HIP branch passes (hip_branch_defines) and the
sources a CUDA branch lists (listed_sources).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterator

# CMake's lexical pieces that hide structure: quoted and bracket arguments, bracket and line comments
CMAKE_LEXEME = re.compile(r'"(?:\\.|[^"\\])*"|#\[(=*)\[.*?\]\1\]|\[(=*)\[.*?\]\2\]|#[^\n]*', re.S)
CMAKE_BLOCK = re.compile(r"(?<![\w$])(end)?(?:if|foreach|while|function|macro)[ \t]*\(", re.I)
CMAKE_DEFINE_CALL = re.compile(r"(?<![\w$])(add_definitions|add_compile_definitions)[ \t]*\(", re.I)
# NAME or NAME=VALUE, a VALUE with no variable, list, escape or quote, or one whole string literal
DEFINE_WORD = re.compile(r'[A-Za-z_]\w*(?:=(?:"[^"$;\\]*"|[^\s$;"\'\\]*))?')
CMAKE_WORD = re.compile(r'"(?:\\.|[^"\\])*"|[^\s"]*(?:"[^"]*"[^\s"]*)*')


def code_of(text: str) -> tuple[str, str]:
    """(code, structure) of a CMake file, both as long as `text` with its newlines: code has the
    comments (# to the line end, #[[ ... ]] brackets) blanked; structure also blanks the contents of
    quoted and bracket arguments, so that a `(`, `#` or keyword inside one is not read as code."""
    def keep_lines(piece: str) -> str:
        return re.sub(r"[^\n]", " ", piece)

    def code(m: re.Match[str]) -> str:
        return keep_lines(m.group(0)) if m.group(0).startswith("#") else m.group(0)

    def structure(m: re.Match[str]) -> str:
        piece = m.group(0)
        return keep_lines(piece) if piece.startswith("#") else piece[0] + keep_lines(piece[1:-1]) + piece[-1]
    return CMAKE_LEXEME.sub(code, text), CMAKE_LEXEME.sub(structure, text)



# A CMake condition that selects a HIP / ROCm build: the string "HIP" / "ROCM" (`${GPU_LANG} STREQUAL "HIP"`)
# or a switch variable that ends in HIP / ROCM / HIPBLAS (`USE_ROCM`, `GGML_HIP`, `HIP_FOUND`,
# `CMAKE_HIP_COMPILER`), not negated with NOT; `FUSED_KDA_HIP_SRC` or `VLLM_ROCM_HAS_GFX1100` name something else
HIP_CONDITION_WORD = r"(?<![\w])(?:[A-Za-z0-9]+_)*(?:HIP|ROCM|ROCm|HIPBLAS)(?:_FOUND|_COMPILER)?(?![\w])"
HIP_WORD = re.compile(HIP_CONDITION_WORD)
CUDA_WORD = re.compile(r"(?<![A-Za-z0-9])CUDA(?![a-z])")
COMMAND = re.compile(r"(?<![\w$])([A-Za-z_]\w*)[ \t]*\(")
# a -DNAME or -DNAME=VALUE word (quoted or not) anywhere in a command's arguments
D_WORD = re.compile(r'(?<![\w-])-D([A-Za-z_]\w*(?:=[^\s$;"\'\\)]*)?)(?=[\s";)]|$)')
# commands whose -D words are compile flags of the directory's targets: flag variables (set, list, string)
# and the directory-wide definitions and options; a target_* command's reach one target only, and a message()
# or ExternalProject_Add's CMAKE_ARGS are not compile flags
FLAG_COMMANDS = frozenset({"set", "list", "string", "add_definitions", "add_compile_options", "add_compile_definitions"})
# a source file named in a command: a relative path of a C / C++ / CUDA source, or one under the
# folder's own ${CMAKE_CURRENT_SOURCE_DIR} / ${CMAKE_CURRENT_LIST_DIR}, or under the tree root's
# ${PROJECT_SOURCE_DIR} / ${CMAKE_SOURCE_DIR} (group `root`: the tree is the project's top folder)
SOURCE_WORD = re.compile(r"^(?:\$\{(?:CMAKE_CURRENT_SOURCE_DIR|CMAKE_CURRENT_LIST_DIR)\}/|(?P<root>\$\{(?:PROJECT_SOURCE_DIR|CMAKE_SOURCE_DIR)\}/))?"
                         r"([\w./+-]+\.(?:cu|cpp|cc|cxx|c|hip))$")


def branch(condition: str) -> str:
    """"hip" for a CMake condition that selects a HIP build (HIP_WORD; also one that names CUDA too:
    `GPU_LANG STREQUAL "CUDA" OR GPU_LANG STREQUAL "HIP"` is taken by both builds), "cuda" for one that
    names CUDA only, else "unknown": a configuration choice (an option, an arch list), and any condition
    with a NOT (`NOT GPU_LANG STREQUAL "HIP"` negates the whole comparison, `NOT WITH_CUDA` may be a CPU
    build), whose build is not read here."""
    if re.search(r"\bNOT\b", condition):
        return "unknown"
    if HIP_WORD.search(condition):
        return "hip"
    return "cuda" if CUDA_WORD.search(condition) else "unknown"


def _calls(structure: str, code: str) -> list[tuple[str, str, int]]:
    """(command name in lower case, its argument text from `code`, offset) of every command of a CMake
    file, block commands included, from its code_of() pair."""
    found = []
    for m in COMMAND.finditer(structure):
        close = structure.find(")", m.end())
        found.append((m.group(1).lower(), code[m.end():len(structure) if close < 0 else close], m.start()))
    return found


def _chains_with_hip(calls: list[tuple[str, str, int]]) -> set[int]:
    """Offsets of the if() commands whose chain (the if and its elseif()s) has a branch that selects a HIP
    build (branch())."""
    found, opened = set(), []
    for name, args, at in calls:
        if name == "if":
            opened.append(at)
        if name in ("if", "elseif") and opened and branch(args) == "hip":
            found.add(opened[-1])
        elif name == "endif" and opened:
            opened.pop()
    return found


def _walk(calls: list[tuple[str, str, int]], code: str, bodies: dict[str, str]) -> Iterator[tuple[str, str, int, str | None]]:
    """commands() over _calls(), with `bodies` {macro or function name: the build of its body}."""
    with_hip = _chains_with_hip(calls)
    stack: list[str | None] = []  # per open if() its current branch's build; None: a loop / function
    chain: list[bool] = []  # per open if(): its chain has a HIP branch
    for name, args, at in calls:
        if name in ("if", "elseif"):
            if name == "if":
                chain.append(at in with_hip)
                stack.append(None)
            if not stack:
                continue
            selected = branch(args)
            # a branch naming CUDA beside the chain's HIP branch is the CUDA alternative, NOT or not
            # (horovod 0.28.1: `if(NOT DEFINED HOROVOD_GPU OR HOROVOD_GPU STREQUAL "CUDA") ... elseif(HOROVOD_GPU STREQUAL "ROCM")`)
            if selected == "unknown" and chain and chain[-1] and CUDA_WORD.search(args):
                selected = "cuda"
            stack[-1] = selected
        elif name == "else" and stack:
            stack[-1] = "cuda" if stack[-1] == "hip" else "unknown"
        elif name in ("foreach", "while"):
            stack.append(None)
        elif name in ("function", "macro"):
            words = args.split()
            stack.append(bodies.get(words[0].lower()) if words else None)
        elif name in ("endif", "endforeach", "endwhile", "endfunction", "endmacro"):
            if stack:
                stack.pop()
            if name == "endif" and chain:
                chain.pop()
        else:
            build = next((state for state in reversed(stack) if state is not None), None)
            yield name, args, code.count("\n", 0, at) + 1, build


def commands(text: str) -> Iterator[tuple[str, str, int, str | None]]:
    """(command name in lower case, its argument text with comments blanked, 1-based line, build) for each
    command of a CMake file other than the block commands, where build is what the innermost if()
    branch around it selects (branch(); None outside every if()). Loops count as nothing; the body of a
    macro() or function() has the build of its calls in the file when they all agree (horovod 0.28.1's
    ADD_CUDA macro lists cuda_operations.cc and is called from the CUDA branch only). An else() after a
    "hip" branch is "cuda", any other else() "unknown"."""
    code, structure = code_of(text)
    calls = _calls(structure, code)
    defined = {args.split()[0].lower() for name, args, _at in calls if name in ("function", "macro") and args.split()}
    builds: dict[str, set[str | None]] = {}
    for name, _args, _line, build in _walk(calls, code, {}):
        if name in defined:
            builds.setdefault(name, set()).add(build)
    yield from _walk(calls, code, {name: seen.pop() for name, seen in builds.items() if len(seen) == 1 and None not in seen})


def hip_branch_defines(text: str) -> list[tuple[str, int]]:
    """(NAME or NAME=VALUE, line) of the defines one CMake file passes where the innermost if() / elseif()
    branch around them selects HIP (commands): -D words in any command (vLLM 0.34.0's
    `elseif(${GPU_LANG} STREQUAL "HIP") list(APPEND GPU_FLAGS "-DUSE_ROCM" "-DENABLE_FP8" ...)`,
    add_definitions) and the names of add_compile_definitions. A define under a further condition (an
    arch list, an option) or an else() is not the HIP build's in general, nor is one a target_* command
    gives one target (vLLM's `target_compile_definitions(_C_stable_libtorch PRIVATE TORCH_TARGET_VERSION=...)`
    turns PyTorch's full headers off for that target's units only), nor a -D word outside FLAG_COMMANDS
    (a message, an external project's CMAKE_ARGS); a value naming a variable, and a reserved name (`__X`),
    are left out."""
    found: list[tuple[str, int]] = []
    for name, args, line, build in commands(text):
        if build != "hip" or name not in FLAG_COMMANDS:
            continue
        words = D_WORD.findall(args)
        if name == "add_compile_definitions":
            words += [w[1:-1] if w.startswith('"') else w for w in CMAKE_WORD.findall(args) if w and not w.startswith("-")]
        found += [(w, line) for w in words if DEFINE_WORD.fullmatch(w) and not w.startswith("__")]
    return found


# a CMake variable of flags for CUDA compiles only (FindCUDA's CUDA_NVCC_FLAGS, CMAKE_CUDA_FLAGS[_<CONFIG>],
# a project's own CUDA_FLAGS / NVCC_FLAGS)
CUDA_FLAGS_VARIABLE = re.compile(r"(?:CMAKE_)?(?:CUDA_NVCC|CUDA|NVCC)_FLAGS(?:_[A-Z]+)?")


def cuda_flag_defines(text: str) -> list[tuple[str, int]]:
    """(NAME or NAME=VALUE, line) of the -D words one CMake file puts in a variable of CUDA compile flags
    (set / list(APPEND) / string(APPEND) on CUDA_FLAGS_VARIABLE) that its CUDA build always passes: outside
    every if(), in a branch that selects a CUDA build (branch()), or in every branch of an if() chain that
    ends in else() (DyNet 2.1.2's -DHAVE_CUDA, given under both `if(CUDA_ARCH)` and its else() inside
    `if(WITH_CUDA_BACKEND)`). One branch of a configuration choice (DyNet's `if(CUDNN_FOUND)` -> -DHAVE_CUDNN)
    and HIP branches are left out, as are a value naming a variable and a reserved name (`__X`)."""
    code, structure = code_of(text)
    found: dict[str, int] = {}
    # per open if(): [build of the current branch, its defines, the defines of every unknown branch so far
    # (None before the first), whether an else() was met, whether a branch was not "unknown"]
    chains: list[list] = []

    def give(defines: dict[str, int]) -> None:
        target = chains[-1][1] if chains else found
        for define, line in defines.items():
            target.setdefault(define, line)

    def close_branch(chain: list) -> None:
        build, defines = chain[0], chain[1]
        if build == "cuda":
            for define, line in defines.items():
                found.setdefault(define, line)
        if build == "unknown":
            chain[2] = dict(defines) if chain[2] is None else {d: n for d, n in chain[2].items() if d in defines}
        else:
            chain[4] = True

    for name, args, at in _calls(structure, code):
        if name == "if":
            chains.append([branch(args), {}, None, False, False])
        elif name in ("elseif", "else") and chains:
            close_branch(chains[-1])
            chains[-1][0] = branch(args) if name == "elseif" else "unknown"
            chains[-1][1] = {}
            chains[-1][3] = chains[-1][3] or name == "else"
        elif name == "endif" and chains:
            chain = chains.pop()
            close_branch(chain)
            if chain[3] and not chain[4] and chain[2]:
                give(chain[2])
        elif name in ("set", "list", "string"):
            words = args.split()
            variable = words[1] if name in ("list", "string") and len(words) > 1 else (words[0] if words else "")
            if CUDA_FLAGS_VARIABLE.fullmatch(variable):
                line = code.count("\n", 0, at) + 1
                give({w: line for w in D_WORD.findall(args) if DEFINE_WORD.fullmatch(w) and not w.startswith("__")})
    return sorted(found.items(), key=lambda item: item[1])


# CMake's configure checks (the CheckCXXSourceCompiles, CheckIncludeFile, CheckSymbolExists, CheckFunctionExists
# modules): command -> what it tests
CHECK_KINDS = {"check_cxx_source_compiles": "cxx-source", "check_c_source_compiles": "c-source",
               "check_include_file": "include", "check_include_file_cxx": "include", "check_include_files": "include",
               "check_symbol_exists": "symbol", "check_cxx_symbol_exists": "symbol", "check_function_exists": "function"}
CMAKE_ESCAPE = re.compile(r"\\(.)")


def _unquote(word: str) -> str:
    """A CMake argument's value: a quoted argument without its quotes and with \\", \\\\, \\n, \\t, \\; resolved."""
    if len(word) < 2 or not word.startswith('"'):
        return word
    return CMAKE_ESCAPE.sub(lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), word[1:-1])


def configure_checks(text: str) -> dict[str, tuple[str, tuple[str, ...], int]]:
    """{result variable: (kind (CHECK_KINDS), its arguments before the variable, unquoted; line)} of the configure
    checks one CMake file runs (LightGBM 4.7.0: check_cxx_source_compiles("#include <mm_malloc.h> ..." MM_MALLOC)).
    A check whose arguments name a variable (`${X}`) is left out: its value is the build's."""
    code, structure = code_of(text)
    found: dict[str, tuple[str, tuple[str, ...], int]] = {}
    for name, args, at in _calls(structure, code):
        words = [_unquote(w) for w in CMAKE_WORD.findall(args) if w]
        if name in CHECK_KINDS and len(words) >= 2 and not any("${" in w for w in words):
            found[words[-1]] = (CHECK_KINDS[name], tuple(words[:-1]), code.count("\n", 0, at) + 1)
    return found


def check_gated_defines(text: str, variables: set[str]) -> list[tuple[str, str, int]]:
    """(result variable, NAME or NAME=VALUE, line) of the defines one CMake file passes
    (add_definitions(-DX) / add_compile_definitions(X)) in the first branch of an if() whose whole condition is
    one of `variables` (`if(${MM_MALLOC})`, `if(HAVE_X)`): its build defines X when that configure check passes."""
    code, structure = code_of(text)
    found: list[tuple[str, str, int]] = []
    gates: list[str | None] = []  # per open if(): the variable its current branch requires, or None
    for name, args, at in _calls(structure, code):
        if name == "if":
            m = re.fullmatch(r"\s*(?:\$\{(\w+)\}|(\w+))\s*", args)
            variable = (m.group(1) or m.group(2)) if m else None
            gates.append(variable if variable in variables else None)
        elif name in ("elseif", "else") and gates:
            gates[-1] = None
        elif name == "endif" and gates:
            gates.pop()
        elif name in ("add_definitions", "add_compile_definitions") and gates and gates[-1]:
            words = D_WORD.findall(args)
            if name == "add_compile_definitions":
                words += [_unquote(w) for w in CMAKE_WORD.findall(args) if w and not w.startswith("-")]
            found += [(gates[-1], w, code.count("\n", 0, at) + 1) for w in words if DEFINE_WORD.fullmatch(w)]
    return found


def has_hip_branch(text: str) -> bool:
    """Whether a CMake file has an if() / elseif() branch that selects a HIP build."""
    code, _structure = code_of(text)
    return any(branch(code[m.end():code.find(")", m.end())]) == "hip"
               for m in re.finditer(r"(?<![\w$])(?:if|elseif)[ \t]*\(", code, re.I))


def listed_sources(text: str, folder: str) -> tuple[dict[str, int], set[str]]:
    """({tree-relative path: line} of the sources one CMakeLists.txt (in tree-relative `folder`, "" for the
    root) names in branches that select a CUDA build, {the sources it names elsewhere}), from every command
    (list(APPEND ...), set(), add_library, target_sources, ...): vLLM 0.34.0 appends
    csrc/fused_qknorm_rope_cache_kernel.cu to its sources under `if(VLLM_GPU_LANG STREQUAL "CUDA")` only.
    Paths are read relative to the file's folder, as CMake reads a relative source path, and normalized
    (`../csrc/k.cu`); one that leaves the tree is left out."""
    cuda: dict[str, int] = {}
    elsewhere: set[str] = set()
    for _name, args, line, build in commands(text):
        for w in CMAKE_WORD.finditer(args):
            word = w.group(0)
            m = SOURCE_WORD.match(word[1:-1] if word.startswith('"') else word)
            if not m:
                continue
            rel = posixpath.normpath(posixpath.join("" if m.group("root") else folder, m.group(2)))
            if rel.startswith("../"):
                continue
            if build == "cuda":
                cuda.setdefault(rel, line + args.count("\n", 0, w.start()))
            else:
                elsewhere.add(rel)
    return cuda, elsewhere


# commands that compile the sources in their arguments
TARGET_COMMANDS = frozenset({"add_library", "add_executable", "target_sources", "cuda_add_library", "cuda_add_executable",
                             "hip_add_library", "hip_add_executable", "pybind11_add_module", "python_add_library",
                             "nanobind_add_module"})
GLOB_OPTIONS = frozenset({"LIST_DIRECTORIES", "TRUE", "FALSE", "ON", "OFF", "CONFIGURE_DEPENDS", "FOLLOW_SYMLINKS"})
FOLDER_VARIABLE = re.compile(r"^\$\{(?:CMAKE_CURRENT_SOURCE_DIR|CMAKE_CURRENT_LIST_DIR)\}/?")


def _compiled_variables(calls: list[tuple[str, str, int]]) -> set[str]:
    """Names of the variables whose value reaches a target command (TARGET_COMMANDS): named there as
    ${NAME}, or set() / list(APPEND) into such a variable (followed until nothing changes)."""
    compiled = {v for name, args, _at in calls if name in TARGET_COMMANDS for v in re.findall(r"\$\{(\w+)\}", args)}
    while True:
        more = set()
        for name, args, _at in calls:
            words = args.split()
            if name == "list" and len(words) > 1 and words[0].upper() == "APPEND":
                words = words[1:]
            elif name != "set" or not words:
                continue
            if words[0] in compiled:
                more |= set(re.findall(r"\$\{(\w+)\}", " ".join(words[1:])))
        if more <= compiled:
            return compiled
        compiled |= more


def glob_sources(text: str, folder: str, files: set[str]) -> tuple[set[str], set[str], bool]:
    """(the `files` (tree-relative paths) that one CMakeLists.txt in tree-relative `folder` compiles through
    file(GLOB ...) / file(GLOB_RECURSE ...), the folders those globs list without recursing, whether every
    such glob was read). A glob counts when its variable reaches a target command (_compiled_variables);
    one that feeds a clang-format target or a configure_file() loop does not. Patterns are read relative
    to `folder` or under ${CMAKE_CURRENT_SOURCE_DIR}; a pattern with another variable is not read (False).
    qulacs 0.6.14's src/gpusim compiles `file(GLOB GPUSIM_SRC "*.cu" "*.cuh" "*.h")`: its test.cpp is not
    built."""
    code, structure = code_of(text)
    calls = _calls(structure, code)
    compiled = _compiled_variables(calls)
    matched: set[str] = set()
    listed: set[str] = set()
    complete = True
    for name, args, _at in calls:
        words = [_unquote(w.group(0)) for w in CMAKE_WORD.finditer(args) if w.group(0)]
        if name != "file" or len(words) < 3 or words[0].upper() not in ("GLOB", "GLOB_RECURSE") or words[1] not in compiled:
            continue
        recurse = words[0].upper() == "GLOB_RECURSE"
        patterns = words[2:]
        if "RELATIVE" in (w.upper() for w in patterns):
            complete = False
            continue
        for pattern in (p for p in patterns if p.upper() not in GLOB_OPTIONS):
            pattern = FOLDER_VARIABLE.sub("", pattern)
            if "$" in pattern or pattern.startswith("/"):
                complete = False
                continue
            where, leaf = posixpath.split(posixpath.normpath(posixpath.join(folder, pattern)))
            where = "" if where == "." else where
            if any(c in where for c in "*?["):
                complete = False
                continue
            if not recurse:
                listed.add(where)
            for rel in files:
                here = posixpath.dirname(rel)
                inside = here == where or (recurse and (not where or here.startswith(where + "/")))
                if inside and fnmatch.fnmatchcase(posixpath.basename(rel), leaf):
                    matched.add(rel)
    return matched, listed, complete
