"""Tie each failed compile to the finding that explains it.

A unit fails on AMD for a reason the report should name. The first compiler error is read for its
location and message, then, in order:

1. an open finding of the file the error lies in, within NEAR lines of the error, or on the first line
   of the statement that holds the error's line (an asm statement whose fifth line has the operand);
2. a diagnostic rule (rules.yaml, key `diagnostic`) whose regex matches the error message and whose
   check holds: it becomes a new finding at the error's line;
3. an open finding on an #if / #elif line whose block holds the error: the test chose the code that
   fails (`#if CUDART_VERSION >= 2020` is false under hipcc, so its #else is the code compiled).

The first that applies is the explanation; a failure with neither is "unexplained" in the summary.
An open finding farther from the error, in its file or in another the unit includes, is not taken
as the cause: a front-end error stops the compile before the code of most findings is reached (an
undeclared `__nanosleep` on line 18 is not explained by inline PTX on line 6), and a wrong cause
misleads more than none.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from . import cpp, flags, includes
from .rules import Rule

LOCATION = re.compile(r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?:fatal )?error: (?P<message>.*)$")
NEAR = 3  # lines between a finding and the error it explains (fixups may add a line or two above)


@dataclass(frozen=True)
class Location:
    """Where a compiler error lies, in the CUDA input: rel (tree-relative path; "" for a file outside
    the tree, e.g. a HIP header), line (1-based CUDA input line, 0 when unknown), message (the text
    after "error: "), path (the file as the compiler named it; "" when the error names none)."""

    rel: str
    line: int
    message: str
    path: str = field(default="", compare=False)


# A migrated file as the compile passes read it: (tree-relative path of its CUDA input, function of a
# 1-based migrated line giving the 1-based CUDA input line, None for a line the migration added)
Migrated = tuple[str, Callable[[int], "int | None"]]


def locate(first_error: str, files: Mapping[str, Migrated]) -> Location:
    """The Location of a first_error line (compile.first_error). files: {normalized absolute path:
    Migrated} of every file of the migrated trees (hip/, torch/) the compile passes read."""
    m = LOCATION.match(first_error)
    if not m:
        return Location("", 0, first_error.split("error: ", 1)[-1])
    rel, back = files.get(os.path.normpath(m.group("path")), ("", lambda _line: None))
    message = re.sub(r" \(in [^()]*\)$", "", m.group("message"))
    return Location(rel, (back(int(m.group("line"))) or 0) if rel else 0, message, m.group("path"))


def _open(findings: Iterable[dict], severities: tuple[str, ...]) -> list[dict]:
    return [x for x in findings if x["status"] == "open" and x["severity"] in severities]


def _explained(finding: dict, how: str) -> dict:
    return {"rule": finding["rule"], "file": finding["file"], "line": finding["line"], "how": how}


@dataclass(frozen=True)
class Diagnostic:
    """A diagnostic rule with its regex compiled; check(name, where) -> a note ("" when the rule does
    not hold)."""

    rule: Rule
    pattern: re.Pattern
    check: Callable[[str, Location], str] | None


def _in_tree(name: str, where: Location) -> str:
    return f"`{name}`, included in {where.rel}" if where.rel else ""


def _outside_tree(name: str, where: Location) -> str:
    return "" if where.rel else f"`{name}`, included in a header of the dev image, not of the tree"


def in_torch_headers(include_root: str) -> Callable[[str, Location], str]:
    """The "torch-header" check: the error lies in a header under `include_root` (the PyTorch C++ headers
    the extension units compile against; "" when there are none). Returns the note naming the header, or ""."""
    root = include_root.rstrip("/") + "/"

    def check(_name: str, where: Location) -> str:
        if not include_root or where.rel or not where.path.startswith(root):
            return ""
        return f"in PyTorch's {where.path[len(root):]}"
    return check


def own_header(texts: Mapping[str, str]) -> Callable[[str, Location], str]:
    """The "tree-incomplete" check over the tree's files ({rel: text}): a header that a tree file
    includes and that is missing, while
    - a source of the same stem lies in that file's folder (`exllama/cuda_buffers.cu` includes
      "cuda_buffers.cuh"), or
    - the include's first folder is the name of a folder the including file lies in (mmdet3d 0.17.3's
      mmdet3d/ops/spconv/src/indice_cuda.cu includes <spconv/indice.h>, from the spconv/include/ folder
      its setup.py names and its sdist leaves out):
    the project's own header, left out of the sdist or checkout. Returns the note naming both, or ""."""
    def check(name: str, where: Location) -> str:
        if not where.rel or where.rel not in texts or not (f'"{name}"' in texts[where.rel] or f"<{name}>" in texts[where.rel]):
            return ""
        if any(rel == name or rel.endswith("/" + name) for rel in texts):
            return ""  # in the tree, under a folder the build names (--include-dir)
        folder = posixpath.dirname(where.rel)
        stem = posixpath.splitext(posixpath.basename(name))[0]
        siblings = sorted(rel for rel in texts if posixpath.dirname(rel) == folder
                          and posixpath.splitext(posixpath.basename(rel))[0] == stem)
        if siblings and f'"{name}"' in texts[where.rel]:
            return f"`{name}`, included in {where.rel}; the tree has {siblings[0]} but not the header"
        first, _, rest = name.partition("/")
        parts = folder.split("/")
        if rest and first in parts:
            own = "/".join(parts[:len(parts) - parts[::-1].index(first)])
            return f"`{name}`, included in {where.rel}: a header of the project's own {own}/, which the tree lacks"
        return ""
    return check


def in_project_std_library(texts: Mapping[str, str], standard_folders: set[str]) -> Callable[[str, Location], str]:
    """The "std-library" check: a missing header that the tree holds only inside a folder of a C++
    standard library of its own (includes.IncludeGraph.standard_folders, which no unit searches).
    Returns the note naming the folder, or ""; each name is looked up once (its answer does not depend
    on where it is included)."""
    @functools.cache
    def held_only_there(name: str) -> str:
        suffix = "/" + name.lstrip("./")
        held = sorted(rel[: len(rel) - len(suffix)] for rel in texts if ("/" + rel).endswith(suffix))
        inside = [folder for folder in held if folder in standard_folders]
        if not inside or len(inside) < len(held):
            return ""
        return f"`{name}` is in the project's C++ standard library {inside[0]}/ (left off the include path)"

    def check(name: str, where: Location) -> str:
        return held_only_there(name)
    return check


NOT_A_TYPE = frozenset({"return", "case", "throw", "else", "sizeof", "new", "delete", "goto", "do", "co_return",
                        "co_yield", "and", "or", "not", "typeid", "decltype", "alignof"})


ENUM_BODY = re.compile(r"\benum\b[^;{}()]*\{([^{}]*)\}")


def _enumerators(blanked: str) -> set[str]:
    """The enumerator names of the enum bodies of a blanked text (`enum class LogLevel { TRACE, DEBUG,
    WARNING }`: TRACE, DEBUG, WARNING)."""
    return {m.group(1) for body in ENUM_BODY.finditer(blanked) for item in body.group(1).split(",")
            for m in [re.match(r"\s*([A-Za-z_]\w*)", item)] if m}


# C++20 keywords: a compile with an older -std reads them as names ("unknown type name 'requires'"), which no
# file declares, however the tree writes them
CXX20_KEYWORDS = frozenset({"requires", "concept", "co_await", "co_yield", "co_return", "consteval", "constinit", "char8_t"})


def _declares(blanked: str, name: str) -> bool:
    """Whether some occurrence of `name` in a blanked text may declare it: `#define name`, an enumerator
    (_enumerators), the name after an identifier or `>` (a type: `float name`, `struct name`), the
    keywords of expressions (NOT_A_TYPE) excepted, or after `*` / `&` where only a type precedes it on
    its line (`static T* name(`; `return S0 * name(x)` is a use). It errs toward "declares"."""
    if "enum" in blanked and name in _enumerators(blanked):
        return True
    for m in re.finditer(r"\b" + re.escape(name) + r"\b", blanked):
        before = blanked[:m.start()].rstrip(" \t")
        if re.search(r"#\s*define$", before):
            return True
        if before.endswith(("*", "&")):  # `T* name` begins its line with the type; `S0 * name(x)` does not
            head = before[before.rfind("\n") + 1:].rstrip("*& \t")
            if re.fullmatch(r"[\s\w:<>,]*[\w>]", head) and not set(re.findall(r"\w+", head)) & NOT_A_TYPE:
                return True
            continue
        word = re.search(r"([A-Za-z_]\w*)$", before)
        if (word and word.group(1) not in NOT_A_TYPE) or before.endswith(">"):
            return True
    return False


def _program_users(texts: Mapping[str, str], programs: includes.Programs, name: str, rel: str) -> list[str]:
    """The files of the tree ({rel: text}) that write `name` as a word, sorted, less the files of programs
    other than the one `rel` belongs to (includes.Programs.other)."""
    here = posixpath.dirname(rel)
    return sorted(r for r, text in texts.items() if name in text and re.search(rf"\b{re.escape(name)}\b", text)
                  and not programs.other(here, posixpath.dirname(r)))


def _program_declarers(texts: Mapping[str, str], programs: includes.Programs, name: str, rel: str) -> list[str]:
    """The files of _program_users that may declare `name` (_declares)."""
    return [r for r in _program_users(texts, programs, name, rel) if _declares(cpp.blank(texts[r]), name)]


def declared_nowhere(texts: Mapping[str, str]) -> Callable[[str, Location], str]:
    """The "tree-undeclared" check over the tree's files ({rel: text}): an undeclared name (the error
    lies in the tree) that no file of the tree may declare (_declares), so its declaration is in a file
    the tree lacks or in a library header nobody includes; in a collection of programs, the files of
    other programs (includes.Programs.other) do not count. Returns the note naming the files that use
    it, or ""."""
    programs = includes.Programs.of(texts)

    def check(name: str, where: Location) -> str:
        if not where.rel or name in CXX20_KEYWORDS:
            return ""
        users = _program_users(texts, programs, name, where.rel)
        if where.rel not in users or any(_declares(cpp.blank(texts[rel]), name) for rel in users):
            return ""
        return f"`{name}` is used in {len(users)} file(s) of the tree ({', '.join(users[:3])}) and declared in none"
    return check


CALLEE = re.compile(r"([A-Za-z_]\w*)\s*\(")


def _parameter_count(params: str) -> int:
    """The parameters of a declaration's blanked parameter list text (`int * in, int levels`: 2; `void`: 0),
    counting top-level commas only (a default `f(a, b)` or a template argument is one parameter)."""
    depth, count = 0, 0
    for ch in params:
        depth += ch in "(<[{"
        depth -= ch in ")>]}"
        count += ch == "," and depth == 0
    return 0 if params.strip() in ("", "void") else count + 1


ERROR_DIRECTIVE = re.compile(r"#\s*error\b")


def declared_with_other_arity(texts: Mapping[str, str]) -> Callable[[str, Location], str]:
    """The "tree-arity" check over the tree's files ({rel: text}): a call on the erring line (the error lies
    in the tree; `expected` is the parameter count clang's "too many / too few arguments to function call,
    expected N" names) of a function that a file of the tree declares with exactly that many parameters:
    the caller and the declaration come from different versions of the project (altis' dwt.cu calls
    `dwt_cuda::fdwt53` with 7 arguments; the dwt.h beside it declares 5), and nvcc fails the same way.
    Returns the note naming the function and its declaring file, or ""."""
    def check(expected: str, where: Location) -> str:
        if not where.rel or where.rel not in texts or not where.line:
            return ""
        lines = cpp.blank(texts[where.rel]).split("\n")
        line = lines[where.line - 1] if where.line <= len(lines) else ""
        for callee in dict.fromkeys(m.group(1) for m in CALLEE.finditer(line)):
            declaration = re.compile(rf"[\w*&>]\s+(?:\w+::)*{re.escape(callee)}\s*\(([^;{{}}()]*(?:\([^()]*\)[^;{{}}()]*)*)\)\s*[;{{]")
            for rel, text in sorted(texts.items()):
                if callee not in text:
                    continue
                if any(_parameter_count(m.group(1)) == int(expected) for m in declaration.finditer(cpp.blank(text))):
                    return (f"`{callee}` is declared in {rel} with {expected} parameters; {where.rel} calls it with "
                            f"another count (the files come from different versions of the project)")
        return ""
    return check


def own_error_directive(texts: Mapping[str, str]) -> Callable[[str, Location], str]:
    """The "error-directive" check over the tree's files ({rel: text}): the erring line (the error lies in
    the tree) is the project's own `#error`, which fires under nvcc too: a define its build or runtime
    compiler passes is missing here (nabu 2026.1's flatfield.cu: `#error "Please provide the N_FLATS
    variable"`, compiled by CuPy with -DN_FLATS=...). Returns the note quoting the directive, or ""."""
    def check(_name: str, where: Location) -> str:
        if not where.rel or where.rel not in texts or not where.line:
            return ""
        lines = texts[where.rel].split("\n")
        line = lines[where.line - 1].strip() if where.line <= len(lines) else ""
        return f"{where.rel}:{where.line} is the project's own `{line}`" if ERROR_DIRECTIVE.match(line) else ""
    return check


def declared_in_another_unit(texts: Mapping[str, str]) -> Callable[[str, Location], str]:
    """The "other-unit" check over the tree's files ({rel: text}): an undeclared name (the error lies in
    the tree) that only other sources of the same program declare (_declares; not other programs' files,
    includes.Programs.other), none of which the erring file includes by name: a declaration in another
    translation unit, which this one cannot see (a missing extern, or a name the project mistyped: the
    CUDA samples' particles copies to `params`, which particles.cpp declares, for `cudaParams`). Returns
    the note naming those sources, or ""."""
    programs = includes.Programs.of(texts)

    def check(name: str, where: Location) -> str:
        if not where.rel or where.rel not in texts or name in CXX20_KEYWORDS:
            return ""
        declaring = _program_declarers(texts, programs, name, where.rel)
        if not declaring or any(rel == where.rel or not rel.endswith(includes.SOURCE_SUFFIXES)
                                or posixpath.basename(rel) in texts[where.rel] for rel in declaring):
            return ""
        return (f"`{name}` is declared only in {', '.join(declaring[:3])}, another translation unit of the program, "
                f"which {where.rel} does not include")
    return check


def declared_in_unincluded_header(texts: Mapping[str, str], reach: Callable[[str], set[str]]) -> Callable[[str, Location], str]:
    """The "unincluded-header" check over the tree's files ({rel: text}): an undeclared name (the error
    lies in the tree) that only headers of the same program declare (_declares; not other programs'
    files, includes.Programs.other), none of which the erring file reaches through its includes
    (reach(rel): the files rel includes, transitively, and rel itself). The unit leaned on a header it
    never includes: one an older library header or its includer's order once brought in (torch-encoding
    1.2.1's rectify_cuda.cu uses ScalarConvert, which only its common.h defines, as PyTorch's THC once
    did). Returns the note naming those headers, or ""."""
    programs = includes.Programs.of(texts)

    def check(name: str, where: Location) -> str:
        if not where.rel or where.rel not in texts or name in CXX20_KEYWORDS:
            return ""
        declaring = _program_declarers(texts, programs, name, where.rel)
        seen = reach(where.rel)
        if not declaring or any(rel in seen or rel.endswith(includes.SOURCE_SUFFIXES) for rel in declaring):
            return ""
        return (f"`{name}` is declared only in {', '.join(declaring[:3])}, which {where.rel} does not include, "
                f"directly or through its includes")
    return check


# macros that hipcc never defines: an #if that needs them is never taken on AMD
NVIDIA_ONLY = cpp.HIPCC_UNDEFINED | {"__CUDA_ARCH__"}


def _gated_declaration(texts: Mapping[str, str], name: str, where: Location,
                       off: Callable[[str], frozenset[str]]) -> tuple[str, int, str] | None:
    """(rel, line, condition) of the first #if branch that holds a declaration of `name` (_declares, line
    by line) and is not compiled because a macro of off(blanked text) is undefined there (besides the
    ones hipcc never defines, NVIDIA_ONLY), when every declaration of the name lies in such a branch;
    for "no member named" one such declaration is enough (another class's members do not help this
    class). None otherwise."""
    if not where.rel or not name:
        return None
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    member = where.message.startswith("no member named")
    gated: list[tuple[str, int, str]] = []
    for rel, text in sorted(texts.items()):
        if name not in text or not pattern.search(text):
            continue
        blanked = cpp.blank(text)
        names = off(blanked)
        spans = [(b.line, b.end, b.condition) for chain in cpp.if_chains(blanked, NVIDIA_ONLY | names) for b in chain
                 if b.on_amd is False and set(re.findall(r"\w+", b.condition)) & names]
        for number, line in enumerate(blanked.split("\n"), 1):
            if name not in line or not pattern.search(line) or not _declares(line, name):
                continue
            span = next((s for s in spans if s[0] < number < (s[1] or number + 1)), None)
            if span is not None:
                gated.append((rel, span[0], span[2]))
            elif not member:  # declared for this compile too: not the cause of an undeclared name
                return None
    return gated[0] if gated else None


def declared_for_nvidia_only(texts: Mapping[str, str]) -> Callable[[str, Location], str]:
    """The "arch-gated" check over the tree's files ({rel: text}): every declaration of the name the
    error names lies in a branch of an #if on __CUDA_ARCH__ that is never taken on AMD (hipcc does not
    define it; _gated_declaration): optimum-quanto 0.2.7's ScalarType<nv_bfloat16> declares num2float
    under `#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800`, ScalarType<half> for every arch.
    Returns the note naming the first such #if, or ""."""
    def check(name: str, where: Location) -> str:
        found = _gated_declaration(texts, name, where, lambda _blanked: frozenset({"__CUDA_ARCH__"}))
        if found is None:
            return ""
        rel, line, condition = found
        return (f"`{name}` is declared only under `#if {condition.strip()}` ({rel}:{line}), which hipcc never "
                "takes: it does not define __CUDA_ARCH__")
    return check


def _defined_by_build(passed: frozenset[str], build_check: Callable[[str], str]) -> Callable[[str], str]:
    """build_check(name) (where the project's build defines the macro), memoized, and "" for a macro this
    compile gets (`passed`) or a reserved name (`__X`)."""
    where_of: dict[str, str] = {}

    def from_build(name: str) -> str:
        if name not in where_of:
            where_of[name] = "" if name in passed or name.startswith("__") else build_check(name)
        return where_of[name]
    return from_build


def declared_off_by_build(texts: Mapping[str, str], passed: frozenset[str],
                          build_check: Callable[[str], str]) -> Callable[[str, Location], str]:
    """The "build-gated" check over the tree's files ({rel: text}): every declaration of the name the
    error names lies in an #if branch on a macro that the project's build defines (build_check:
    flags.build_generated, "" for a name it does not) and this compile does not get (`passed`):
    vLLM 0.34.0 declares vllm::fp8::scaled_vec_conversion under `#ifdef ENABLE_FP8`, which its CMake
    build appends to its GPU flag list (cmake/utils.cmake). Returns the note naming the #if and where
    the build defines the macro, or ""."""
    from_build = _defined_by_build(passed, build_check)

    def off(blanked: str) -> frozenset[str]:
        return frozenset(n for m in flags.TESTED.finditer(blanked) for n in re.findall(r"\b[A-Za-z_]\w*\b", m.group(1))
                         if n != "defined" and from_build(n))

    def check(name: str, where: Location) -> str:
        found = _gated_declaration(texts, name, where, off)
        if found is None:
            return ""
        rel, line, condition = found
        macro = next(n for n in re.findall(r"\w+", condition) if n != "defined" and from_build(n))
        directive = "#ifdef" if re.fullmatch(r"\w+", condition.strip()) else "#if"
        return (f"`{name}` is declared only under `{directive} {condition.strip()}` ({rel}:{line}); "
                f"{from_build(macro)}, this compile does not: --define {macro}")
    return check


def declared_behind_build_switch(texts: Mapping[str, str], graph: includes.IncludeGraph, passed: frozenset[str],
                                 build_check: Callable[[str], str]) -> Callable[[str, Location], str]:
    """The "include-gated" check over the tree's files ({rel: text}, graph: their IncludeGraph): an
    undeclared name (the error lies in the tree) that only headers of the tree declare (_declares), each
    of which the erring file reaches only through an #include inside an #if on a macro the project's
    build defines (build_check: flags.build_generated) and this compile does not get (`passed`).
    horovod 0.28.1's collective_operations.h writes LOG(WARNING), whose logging.h comes through
    global_state.h's `#if HAVE_GLOO`, which its CMake build defines when Gloo is built. Returns the note
    naming the #if, the file and where the build defines the macro, or ""."""
    programs = includes.Programs.of(texts)
    build = _defined_by_build(passed, build_check)
    spans_of: dict[str, list[tuple[int, int, str]]] = {}

    def gate(rel: str, target: str) -> tuple[int, str, str] | None:
        """(line, condition, macro) of the build-switched #if around `rel`'s #include of `target`, or None."""
        text = texts.get(rel, "")
        if rel not in spans_of:
            spans_of[rel] = [(b.line, b.end, b.condition) for chain in cpp.if_chains(cpp.blank(text)) for b in chain
                             if b.word in ("if", "ifdef", "elif")]
        spans = spans_of[rel]
        for m in includes.INCLUDE.finditer(text):
            if posixpath.basename(m.group(2)) != posixpath.basename(target):
                continue
            number = text.count("\n", 0, m.start()) + 1
            for start, end, condition in spans:
                macro = next((n for n in re.findall(r"\b[A-Za-z_]\w*\b", condition) if n != "defined" and build(n)), "")
                if start < number < (end or number + 1) and macro:
                    return start, condition, macro
        return None

    def check(name: str, where: Location) -> str:
        if not where.rel or where.rel not in texts:
            return ""
        declaring = [r for r in _program_declarers(texts, programs, name, where.rel) if not r.endswith(includes.SOURCE_SUFFIXES)]
        if not declaring:
            return ""
        edges = graph.unit_edges(where.rel)
        open_reach, stack, gates = {where.rel}, [where.rel], {}
        while stack:  # what the erring file reaches without passing a build-switched #include
            here = stack.pop()
            for target, _folder in edges.get(here, []):
                if target in open_reach:
                    continue
                found = gate(here, target) if (here, target) in graph.conditional else None
                if found:
                    gates.setdefault(target, (here, *found))
                    continue
                open_reach.add(target)
                stack.append(target)
        if any(r in open_reach for r in declaring) or not gates:
            return ""
        behind = graph.reach(where.rel)
        hidden = [r for r in declaring if r in behind]
        if not hidden:
            return ""
        here, line, condition, macro = next(iter(gates.values()))
        return (f"`{name}` is declared in {hidden[0]}, which {where.rel} reaches only through `#if {condition.strip()}` "
                f"({here}:{line}); {build(macro)}, this compile does not: --define {macro}")
    return check


def _typedef_name(text: str, line: int) -> str:
    """The name a `typedef ... NAME;` on 1-based `line` of `text` declares ("" when there is none):
    "typedef redefinition with different types" names only the types."""
    lines = text.split("\n")
    typedef = re.search(r"\btypedef\b[^;]*?\b(\w+)\s*;", lines[line - 1]) if 0 < line <= len(lines) else None
    return typedef.group(1) if typedef else ""


def redeclares_hip(texts: Mapping[str, str]) -> Callable[[str, Location], str]:
    """The "hip-name" check over the tree's files ({rel: text}, the CUDA input): a redefinition in a
    tree file of a CUDA API name (cu* / CU* / cuda*, or its hip* name): the tree declares it itself,
    and hipify renamed it to the HIP name that HIP's headers declare. Returns the note, or ""."""
    def check(name: str, where: Location) -> str:
        name = name or (_typedef_name(texts[where.rel], where.line) if where.rel in texts else "")
        if not re.match(r"(?:hip|HIP|cu|CU|cuda|CUDA)[A-Z_a-z]", name):
            return ""
        return f"{where.rel} declares `{name}`, which HIP's headers declare too (under its HIP name)"
    return check


def defined_elsewhere(texts: Mapping[str, str]) -> Callable[[str, Location], str]:
    """The "tree-redefined" check over the tree's files ({rel: text}): a redefinition error in a tree
    file whose name a header of the tree (not a source: other units are compiled apart) also declares
    (_declares): the tree conflicts with itself
    (its files come from different versions, or a unit repeats what a header it includes defines), as
    nvcc would report. Returns the note naming the other files, or ""."""
    def check(name: str, where: Location) -> str:
        if not where.rel or where.rel not in texts:
            return ""
        if not name and where.message.startswith("expected "):
            return _macro_declared(texts, where)
        name = name or _typedef_name(texts[where.rel], where.line)
        if not name:
            return ""
        pattern = re.compile(rf"\b{re.escape(name)}\b")
        others = sorted(rel for rel, text in texts.items() if rel != where.rel and not rel.endswith(includes.SOURCE_SUFFIXES)
                        and name in text and pattern.search(text) and _declares(cpp.blank(text), name))
        if not others:
            return ""
        return f"`{name}` is defined in {where.rel} and also in {', '.join(others[:3])}"
    return check


OBJECT_MACRO = r"^[ \t]*#[ \t]*define[ \t]+{name}\b(?!\()[ \t]*(?P<value>.*)$"


def _macro_declared(texts: Mapping[str, str], where: Location) -> str:
    """For a parse error ("expected unqualified-id") on a line that declares a name which a header of
    the tree defines as an object-like macro (llm.c: common.h's `#define WARP_SIZE 32U`, a unit's
    `constexpr int WARP_SIZE = 32;` of another version): the note naming both, or ""."""
    lines = texts[where.rel].split("\n")
    if not 0 < where.line <= len(lines):
        return ""
    line = cpp.blank(lines[where.line - 1])
    for name in dict.fromkeys(re.findall(r"[A-Za-z_]\w*", line)):
        if not _declares(line, name):
            continue
        define = re.compile(OBJECT_MACRO.format(name=re.escape(name)), re.M)
        for rel, text in sorted(texts.items()):
            if rel == where.rel or rel.endswith(includes.SOURCE_SUFFIXES) or name not in text:
                continue
            m = define.search(text)
            if m:
                return (f"`{name}` is declared in {where.rel} and is a macro of {rel} "
                        f"(`#define {name} {m.group('value').strip()}`), which the preprocessor expands in the declaration")
    return ""


# CUDA library handle and descriptor types that are distinct struct pointers in CUDA and all `void*` in HIP 7.2
# (hipblas.h, hipblaslt.h, hipsolver.h, hipsparse.h: `typedef void* hipblasHandle_t;` ...), so overloads on two
# of them become one function
VOID_HANDLES = ("cublasHandle_t", "cublasLtHandle_t", "cusolverDnHandle_t", "cusolverRfHandle_t", "cusolverSpHandle_t",
                "cusparseHandle_t", "cusparseMatDescr_t", "cusparseDnMatDescr_t", "cusparseDnVecDescr_t",
                "cusparseSpVecDescr_t")


def file_uses(texts: Mapping[str, str], names: tuple[str, ...]) -> Callable[[str, Location], str]:
    """A check over the tree's files ({rel: text}) that holds where the error's file names one of
    `names` (CUdeviceptr: CUDA's integer device address, a pointer in HIP). Returns the note, or ""."""
    def check(_name: str, where: Location) -> str:
        text = texts.get(where.rel, "")
        used = [n for n in names if re.search(rf"\b{re.escape(n)}\b", text)]
        return f"{where.rel} uses {used[0]}" if used else ""
    return check


def in_device_code(texts: Mapping[str, str]) -> Callable[[str, Location], str]:
    """A check over the tree's files ({rel: text}) that holds where the error's line lies in a
    __device__ or __global__ function (cpp.enclosing_function_head of the CUDA input). Returns the
    note naming the function's head, or ""."""
    def check(name: str, where: Location) -> str:
        text = texts.get(where.rel, "")
        if not text or where.line <= 0:
            return ""
        blanked = cpp.blank(text)
        offset = sum(len(line) + 1 for line in blanked.split("\n")[:where.line - 1])
        head = cpp.enclosing_function_head(blanked, offset)
        if not head or not re.search(r"\b__(?:device|global)__\b", head):
            return ""
        return f"`{name}` is called in device code: {' '.join(head.split())[:120]}"
    return check


# macros that select a project's own ROCm code: HIP's platform and compiler macros and a project's switch
# to its ROCm build ([PREFIX_](USE|WITH|ENABLE|BUILD)_(ROCM|HIP|AMD|AMDGPU), GGML_USE_HIP, ...)
ROCM_MACRO = re.compile(r"\b(?:__HIP_PLATFORM_(?:AMD|HCC)__|__HIPCC__|__HIP__|__HIP_DEVICE_COMPILE__|USE_ROCM|"
                        r"(?:[A-Z][A-Z0-9]*_)?(?:USE|WITH|ENABLE|BUILD)_(?:ROCM|HIP|AMD|AMDGPU))\b")


def _rocm_only_spans(blanked: str) -> list[tuple[int, int, str]]:
    """(first line, end line, condition) of the #if branches of a blanked text that a build without the
    ROCm macros (ROCM_MACRO) does not take, in chains that test one of them: the project's own ROCm code."""
    names = frozenset(ROCM_MACRO.findall(blanked))
    if not names:
        return []
    return [(b.line, b.end or b.line, b.condition) for chain in cpp.if_chains(blanked, names)
            if any(ROCM_MACRO.search(c.condition) for c in chain) for b in chain
            if b.on_amd is False and (ROCM_MACRO.search(b.condition) or b.word == "else")]


def in_own_rocm_code(texts: Mapping[str, str], own_port: Mapping[str, str] | None = None) -> Callable[[str, Location], str]:
    """The "own-rocm" check over the tree's files ({rel: CUDA text}): the error's line is the project's own
    ROCm code, written for HIP and left untranslated by the fixups: its file is one the project's own ROCm
    build compiles as written (own_port: {rel: the build switch that selects that path}; ctransformers
    0.2.27's ggml-cuda.cu under GGML_USE_HIPBLAS, written for ROCm 5, calls memcpy without <cstring>),
    it lies in an #if branch that only a ROCm build takes (_rocm_only_spans: `#if defined(USE_ROCM)`, the
    #else of `#ifndef USE_ROCM`), or its file is included only from such branches (exllama 0.1.0's
    hip_compat.cuh, written for HIP 5, fails under HIP 7.2 where __half2's x is a __half). Returns the
    note, or ""."""
    def check(_name: str, where: Location) -> str:
        if own_port and where.rel in own_port:
            return (f"{where.rel} is compiled as the project's own ROCm build compiles it ({own_port[where.rel]}), "
                    "not translated")
        text = texts.get(where.rel, "")
        if not text or where.line <= 0:
            return ""
        for first, end, condition in _rocm_only_spans(cpp.blank(text)):
            if first < where.line < end:
                return f"the error's line is in the project's own ROCm branch `{condition.strip() or '#else'}` ({where.rel}:{first})"
        base = posixpath.basename(where.rel)
        includers = []
        for rel, other in sorted(texts.items()):
            if rel == where.rel or base not in other:
                continue
            blanked = cpp.blank_code(other)
            lines = [n for n, line in enumerate(blanked.split("\n"), 1)
                     if re.match(r'\s*#\s*include\s*["<]([^">]*/)?' + re.escape(base) + r'[">]', line)]
            spans = _rocm_only_spans(cpp.blank(other)) if lines else []
            includers += [(rel, n, any(a < n < b for a, b, _c in spans)) for n in lines]
        if includers and all(inside for _rel, _n, inside in includers):
            rel, n, _inside = includers[0]
            return f"{where.rel} is the project's own ROCm code: included only from ROCm branches ({rel}:{n})"
        return ""
    return check


def _of_name(check: Callable[[str], str]) -> Callable[[str, Location], str]:
    return lambda name, _where: check(name)


def diagnostics(rules: list[Rule], checks: Mapping[str, Callable[[str], str]],
                located: Mapping[str, Callable[[str, Location], str]] | None = None) -> list[Diagnostic]:
    """The rules with a `diagnostic` regex, compiled; checks: {check name: function of the regex's
    `name` group returning a note, "" when the rule does not hold}; located: the same for functions
    that also read where the error lies (own_header), beside the checks "in-tree" (a file of the
    tree) and "outside-tree" (a header of the image's)."""
    by_name: dict[str, Callable[[str, Location], str]] = {"in-tree": _in_tree, "outside-tree": _outside_tree}
    by_name.update({name: _of_name(check) for name, check in checks.items()})
    by_name.update(located or {})
    return [Diagnostic(r, re.compile(r.diagnostic), by_name[r.check] if r.check else None)
            for r in rules if r.diagnostic]


def _diagnosed(where: Location, unit: str, text: str, rules: list[Diagnostic]) -> dict | None:
    """A new finding (scan.Finding's fields) from the first diagnostic rule that matches, or None."""
    for d in rules:
        m = d.pattern.search(where.message)
        if not m:
            continue
        note = d.check(m.groupdict().get("name") or "", where) if d.check else ""
        if d.check and not note:
            continue
        return {"rule": d.rule.id, "severity": d.rule.severity, "file": where.rel or unit, "line": where.line,
                "col": 1, "text": text, "message": d.rule.message, "hint": d.rule.hint, "suggestion": "",
                "status": "open", "note": note or f"from the compiler's error: {where.message}"}
    return None


CONDITIONAL = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b")
BLOCK_LINES = 400  # the longest #if block whose finding explains an error inside it


def _enclosing_conditional(findings: list[dict], where: Location,
                           line_text: Callable[[str, int], str]) -> dict | None:
    """The finding on the innermost #if / #elif line whose block (up to its #endif) holds the error's
    line, or None: the test chose which code the HIP build compiles (`#if CUDART_VERSION >= 2020` is
    false under hipcc, so its #else branch is the one compiled and failing)."""
    best = None
    for finding in findings:
        start = finding["line"]
        if not start < where.line <= start + BLOCK_LINES:
            continue
        head = CONDITIONAL.match(line_text(where.rel, start))
        if not head or head.group(1) not in ("if", "ifdef", "ifndef", "elif"):
            continue
        depth = 1
        for line in range(start + 1, where.line):
            m = CONDITIONAL.match(line_text(where.rel, line))
            if m and m.group(1) in ("if", "ifdef", "ifndef"):
                depth += 1
            elif m and m.group(1) == "endif":
                depth -= 1
                if depth == 0:
                    break
        if depth > 0 and (best is None or start > best["line"]):
            best = finding
    return best


# diagnostic rules that name the one CUDA name HIP does not declare, preferred over a warning at the line
# that only names the API family the call belongs to
NAME_DIAGNOSTICS = ("cuda-name-unmapped", "cuda-intrinsic-unmapped")
FAMILY_WARNINGS = ("cuda-driver-api",)
STATEMENT_LINES = 40  # lines of one statement that a finding on its first line explains


def _same_statement(finding: dict, where: Location, line_text: Callable[[str, int], str]) -> bool:
    """True when the error's line lies further down the statement the finding's line starts (no `;`
    outside string literals in between): a multi-line asm statement whose operand the compiler names."""
    if not 0 < where.line - finding["line"] <= STATEMENT_LINES:
        return False
    span = [line_text(where.rel, n) for n in range(finding["line"], where.line)]
    return bool(span[0].strip()) and ";" not in cpp.blank("\n".join(span))


def explain(where: Location, unit: str, findings: Callable[[str], list[dict]], rules: list[Diagnostic],
            line_text: Callable[[str, int], str]) -> tuple[dict | None, dict | None]:
    """(explanation, new finding) of one failed compile: explanation is {rule, file, line, how} or
    None; new finding is the diagnostic rule's finding to add to the report (None when an existing
    finding explains the failure). unit: tree-relative unit path (the new finding's file when the
    error lies outside the tree); findings(rel): the report's finding dicts of a file as this unit sees it;
    line_text(rel, line): the CUDA input line, for a new finding's `text`."""
    here = findings(where.rel) if where.rel else []
    if where.line:
        near = [x for x in _open(here, ("error", "warning")) if x["line"] and abs(x["line"] - where.line) <= NEAR]
        if near:
            # a line that holds a name the error quotes first (fixups shift lines, so the nearest line
            # may be the wrong one), then the nearest line; on one line an error finding before a warning
            quoted = [q for q in re.findall(r"'([^']+)'", where.message) if re.fullmatch(r"[\w:]+", q)]
            best = min(near, key=lambda x: (not any(q in x.get("text", "") for q in quoted),
                                            abs(x["line"] - where.line), x["severity"] != "error"))
            if best["rule"] in FAMILY_WARNINGS:
                # the compiler names a CUDA name HIP lacks: that says more than a warning about its API family
                made = _diagnosed(where, unit, line_text(where.rel, where.line) if where.rel else "", rules)
                if made and made["rule"] in NAME_DIAGNOSTICS:
                    return _explained(made, "the compiler's error"), made
            return _explained(best, "a finding at the error's line"), None
        spanning = [x for x in _open(here, ("error", "warning")) if _same_statement(x, where, line_text)]
        if spanning:
            best = max(spanning, key=lambda x: (x["line"], x["severity"] == "error"))
            return _explained(best, "a finding on the statement that holds the error's line"), None
    made = _diagnosed(where, unit, line_text(where.rel, where.line) if where.rel and where.line else "", rules)
    if made:
        return _explained(made, "the compiler's error"), made
    # an info finding on the #if counts too: build-defined-branch names the macro the build passes there
    # (deepwave 0.1.0's `#if DW_ACCURACY == 2 ... #else #error DW_ACCURACY must be specified`)
    enclosing = _enclosing_conditional(_open(here, ("error", "warning", "info")), where, line_text) if where.line else None
    if enclosing:
        return _explained(enclosing, "a finding on the #if that encloses the error's line"), None
    return None, None
