"""Light C/C++ text analysis for the scanner: blank comments and strings, find lines that are dead
on AMD (#if branches for NVIDIA only), collect #define / constexpr integer constants, evaluate
simple constant expressions. No preprocessor is run; what cannot be decided is treated as live /
unknown, so the scanner errs towards reporting.
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
from dataclasses import dataclass

# Macros hipcc (HIP-Clang) defines on AMD, and macros it does not define.
AMD_DEFINED = frozenset({"__HIP_PLATFORM_AMD__", "__HIP_PLATFORM_HCC__", "__HIPCC__", "__HIP__", "USE_ROCM",
                         "__HIP_PLATFORM_AMD", "HIP_PLATFORM_AMD"})
# defined on AMD by PyTorch's ROCm builds (torch.utils.cpp_extension passes -DUSE_ROCM=1) and by a
# project's own ROCm build; migrate's compile of a unit without PyTorch defines them only when asked
ROCM_BUILD_MACROS = frozenset({"USE_ROCM"})
AMD_UNDEFINED = frozenset({"__CUDA_ARCH__", "__NVCC__", "__HIP_PLATFORM_NVIDIA__", "__HIP_PLATFORM_NVCC__",
                           "__CUDACC_VER_MAJOR__", "__CUDA__"})
# Macros hipcc does not define that the translators rename in CUDA text (__CUDACC__ -> __HIPCC__): in
# a CUDA input they mark code the HIP build compiles, so only a migrated text's tests of them are dead.
HIPCC_UNDEFINED = frozenset({"__CUDACC__", "__CUDACC_RTC__"})
SIZEOF = {"char": 1, "int8_t": 1, "uint8_t": 1, "short": 2, "half": 2, "__half": 2, "int16_t": 2,
          "__nv_bfloat16": 2, "__hip_bfloat16": 2, "int": 4, "unsigned": 4, "float": 4, "int32_t": 4,
          "uint32_t": 4, "unsigned int": 4, "double": 8, "long": 8, "int64_t": 8, "uint64_t": 8,
          "size_t": 8, "long long": 8, "float2": 8, "float4": 16, "int4": 16, "double2": 16, "half2": 4,
          "__half2": 4}


BLANKABLE = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*(?:\"|(?=\n)|\Z)|'(?:\\.|[^'\\\n])*(?:'|(?=\n)|\Z)",
                       re.DOTALL)


NOT_NEWLINE = re.compile(r"[^\n]")


def _spaces(text: str) -> str:
    return NOT_NEWLINE.sub(" ", text) if "\n" in text else " " * len(text)


def _blank_match(m: re.Match[str]) -> str:
    text = m.group(0)
    if text[0] in "\"'":  # keep the quotes, blank the contents
        inner = text[1:-1] if len(text) > 1 and text[-1] == text[0] else text[1:]
        return text[0] + _spaces(inner) + text[1 + len(inner):]
    return _spaces(text)


# CUDA's all-32-lanes mask written as a literal: 0xffffffff (any case, u/l suffix), ~0u, -1 cast to a
# 32-bit unsigned type (`uint32_t(-1)`, `(unsigned)-1`, `static_cast<unsigned>(-1)`), and the int
# literals `~0` and `-1`, which CUDA's unsigned mask parameter turns into 0xffffffff and which HIP's
# *_sync templates refuse (static_assert: the mask must be a 64-bit integer), so no HIP code holds
# them; 64-bit spellings (`~0ull`, `-1ll`) are HIP's all-64-lanes mask and are left alone
_U32 = r"(?:(?:std::)?uint32_t|unsigned(?:\s+int)?)"
FULL_MASK_LITERAL = (r"0[xX][fF]{8}(?![0-9a-fA-F])(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)?|~\s*0[uU](?![lL\w])"
                     r"|~\s*0(?![\w.])|(?<![\w)\].])-\s*1(?![\w.])"
                     rf"|{_U32}\s*\(\s*-\s*1\s*\)|\(\s*{_U32}\s*\)\s*(?:-\s*1\b|\(\s*-\s*1\s*\))"
                     rf"|static_cast\s*<\s*{_U32}\s*>\s*\(\s*-\s*1\s*\)")


# blank(), blank_code() and dead_lines() are asked about the same file texts at every step of a run (the
# include graph, the scan, each fixup, the warp analysis): each answer is kept for the texts of a run
CACHED_TEXTS = 16384


@functools.lru_cache(maxsize=CACHED_TEXTS)
def blank(text: str) -> str:
    """Return `text` with comments and the contents of string/char literals replaced by spaces;
    same length, newlines kept, so offsets and line numbers stay valid."""
    return BLANKABLE.sub(_blank_match, text)


QUOTE_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]*)"', re.M)


@functools.lru_cache(maxsize=CACHED_TEXTS)
def blank_code(text: str) -> str:
    """blank(text) with the header names of `#include "..."` lines kept, for rules that match an
    include (a quoted header name is a string literal to blank(), and `#include "cutlass/arch/mma.h"`
    would match nothing); same length as `text`."""
    blanked = blank(text)
    for m in QUOTE_INCLUDE.finditer(text):
        if blanked[m.start(1) - 1] == '"':  # the directive itself is code, not inside a comment
            blanked = blanked[:m.start(1)] + m.group(1) + blanked[m.end(1):]
    return blanked


DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif|include|define)\b([^\n]*)\n?", re.M)


def top_level_includes(blanked: str) -> list[re.Match[str]]:
    """The #include directives (DIRECTIVE matches) of a blanked text that lie outside every #if, an include
    guard aside: a first `#ifndef X` followed by `#define X` whose #endif is the text's last directive.
    Where something is added next to one of them, every build of the file sees it."""
    directives = list(DIRECTIVE.finditer(blanked))
    guard = False
    if len(directives) > 2 and directives[0].group(1) == "ifndef" and directives[1].group(1) == "define" \
            and directives[0].group(2).split()[:1] == directives[1].group(2).split()[:1]:
        depth = 0
        for m in directives:
            depth += 1 if m.group(1).startswith("if") else -1 if m.group(1) == "endif" else 0
            if depth == 0:
                guard = m is directives[-1]
                break
    found, depth = [], -1 if guard else 0
    for m in directives:
        word = m.group(1)
        if word.startswith("if"):
            depth += 1
        elif word == "endif":
            depth -= 1
        elif word == "include" and depth <= 0:
            found.append(m)
    return found


def _condition(expr: str, undefined: frozenset[str] = frozenset(), known: frozenset[str] = frozenset()) -> bool | None:
    """Evaluate an #if expression on AMD: True / False, or None when its value depends on macros we
    do not know (every assignment of the unknown ones is tried; up to 4 unknowns). `undefined`:
    further macros known to be undefined on AMD (see amd_undefined), also ones of AMD_DEFINED that a
    build does not define (ROCM_BUILD_MACROS); `known`: macros the compile defines (their
    `defined(...)` is true; their value stays unknown)."""
    unknown: dict[str, tuple[int, ...]] = {}

    def defined(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        if name in AMD_UNDEFINED or name in undefined:
            return "0"
        if name in AMD_DEFINED or name in known:
            return "1"
        unknown.setdefault(f"d_{name}", (0, 1))
        return f"d_{name}"

    expr = re.sub(r"\bdefined\s*\(\s*(\w+)\s*\)|\bdefined\s+(\w+)", defined, expr.strip())
    for name in AMD_UNDEFINED:
        expr = re.sub(rf"\b{name}\b", "0", expr)
    for name in re.findall(r"\b(?!d_)[A-Za-z_]\w*\b", expr):
        unknown.setdefault(name, (0, 1, 32, 64))
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr).strip()
    if len(unknown) > 4:
        return None
    try:
        code = compile(ast.parse(expr, mode="eval"), "<if>", "eval")
    except SyntaxError:
        return None
    results = set()
    names = list(unknown)
    for combo in itertools.product(*(unknown[n] for n in names)):
        try:
            results.add(bool(eval(code, {"__builtins__": {}}, dict(zip(names, combo)))))
        except Exception:  # noqa: BLE001 - anything not plain arithmetic/logic is "unknown"
            return None
    return results.pop() if len(results) == 1 else None


def matching_open(blanked: str, close: int) -> int | None:
    """Offset of the parenthesis that opens the one closing at `close`, or None."""
    depth = 0
    for k in range(close, -1, -1):
        depth += {")": 1, "(": -1}.get(blanked[k], 0)
        if depth == 0:
            return k
    return None


NESTING = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|endif)\b", re.MULTILINE)
INCLUDE_GUARD = re.compile(r"\s*#[ \t]*ifndef[ \t]+(\w+)[ \t]*\n\s*#[ \t]*define[ \t]+(\w+)")


def guard_name(blanked: str) -> str | None:
    """The macro of the file's include guard: its first conditional is `#ifndef X` / `#define X` and
    its #endif is the file's last directive (also where a translator put an #include above it); None
    when the file has no such guard."""
    directives = list(NESTING.finditer(blanked))
    if not directives or directives[0].group(1) != "ifndef":
        return None
    guard = INCLUDE_GUARD.match(blanked, directives[0].start())
    if not guard or guard.group(1) != guard.group(2):
        return None
    depth = 0
    for n, m in enumerate(directives):
        depth += -1 if m.group(1) == "endif" else 1
        if depth == 0:
            return guard.group(1) if n == len(directives) - 1 else None
    return None


def include_guard(blanked: str) -> bool:
    """True when the file has an include guard (guard_name)."""
    return guard_name(blanked) is not None


def dead_lines(blanked: str, undefined: frozenset[str] = frozenset(), known: frozenset[str] = frozenset()) -> set[int]:
    """1-based numbers of lines inside #if / #elif / #else branches that are never compiled on AMD
    (e.g. `#ifndef __HIP_PLATFORM_AMD__`, the #else of `#ifdef __HIP_PLATFORM_AMD__`), nested
    directives included; macros in `undefined` count as not defined, those in `known` as defined. A condition
    continued over lines with a backslash is read whole; its continuation lines count with the directive."""
    return set(_dead_lines(blanked, frozenset(undefined), frozenset(known)))


@functools.lru_cache(maxsize=CACHED_TEXTS)
def _dead_lines(blanked: str, undefined: frozenset[str], known: frozenset[str]) -> frozenset[int]:
    """dead_lines, kept per (text, macros)."""
    dead: set[int] = set()
    # stack entries: [some branch so far is taken for sure?, live outside this #if?]
    stack: list[list[bool]] = []
    live = True
    lines = blanked.split("\n")
    continued = 0  # continuation lines of the directive just read, still to skip
    for number, line in enumerate(lines, start=1):
        if continued:
            continued -= 1
            continue
        m = re.match(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", line)
        if m:
            word, rest = m.group(1), m.group(2)
            while rest.endswith("\\") and number + continued < len(lines):
                rest = rest[:-1] + " " + lines[number + continued]
                continued += 1
            if not (live if word in ("if", "ifdef", "ifndef") else not stack or stack[-1][1]):
                dead.update(range(number, number + continued + 1))  # a directive nested in a dead branch
            if word in ("if", "ifdef", "ifndef"):
                cond = _condition(rest if word == "if" else f"defined({rest.strip()})", undefined, known)
                if word == "ifndef" and cond is not None:
                    cond = not cond
                stack.append([cond is True, live])
                live = live and cond is not False
            elif stack and word == "elif":
                top = stack[-1]
                cond = _condition(rest, undefined, known)
                live = top[1] and not top[0] and cond is not False
                top[0] = top[0] or cond is True
            elif stack and word == "else":
                top = stack[-1]
                live = top[1] and not top[0]
                top[0] = True
            elif stack and word == "endif":
                live = stack.pop()[1]
            continue
        if not live:
            dead.add(number)
    return frozenset(dead)


@dataclass(frozen=True)
class Branch:
    """One branch of an #if chain: line (1-based, of its directive), word (if, ifdef, ifndef, elif,
    else), condition (the directive's text after the word), on_amd (True: taken on AMD for sure,
    False: never taken, None: unknown), code (the branch's lines, nested directives included), end
    (line of the directive that ends the branch: the next #elif / #else, or #endif)."""

    line: int
    word: str
    condition: str
    on_amd: bool | None
    code: str
    end: int = 0


def if_chains(blanked: str, undefined: frozenset[str] = frozenset()) -> list[list[Branch]]:
    """Every #if / #ifdef / #ifndef chain of a blanked text with its branches in order (nested chains
    too, each on its own), evaluated as dead_lines does; macros in `undefined` count as not defined."""
    chains: list[list[Branch]] = []
    # open chains: (branches so far, lines of the current branch, [every branch so far is never taken])
    stack: list[tuple[list[Branch], list[str], list[bool]]] = []

    def close_branch(entry: tuple[list[Branch], list[str], list[bool]], end: int) -> None:
        branches, lines, _taken = entry
        last = branches[-1]
        branches[-1] = Branch(last.line, last.word, last.condition, last.on_amd, "\n".join(lines), end)
        lines.clear()

    for number, line in enumerate(blanked.split("\n"), start=1):
        m = re.match(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", line)
        word = m.group(1) if m else ""
        if stack and word not in ("elif", "else", "endif"):
            for _branches, lines, _taken in stack:
                lines.append(line)
        if word in ("if", "ifdef", "ifndef"):
            rest = m.group(2) if m else ""
            cond = _condition(rest if word == "if" else f"defined({rest.strip()})", undefined)
            if word == "ifndef" and cond is not None:
                cond = not cond
            stack.append(([Branch(number, word, rest.strip(), cond, "")], [], [cond is False]))
        elif stack and word in ("elif", "else"):
            entry = stack[-1]
            close_branch(entry, number)
            for _branches, lines, _taken in stack[:-1]:
                lines.append(line)
            before = entry[0]
            cond = True if word == "else" else _condition(m.group(2) if m else "", undefined)
            if any(b.on_amd is True for b in before):
                on_amd: bool | None = False
            elif cond is True and not entry[2][0]:
                on_amd = None  # taken only when an earlier branch of unknown value is not
            else:
                on_amd = cond
            entry[0].append(Branch(number, word, (m.group(2) if m else "").strip(), on_amd, ""))
            entry[2][0] = entry[2][0] and cond is False
        elif stack and word == "endif":
            entry = stack.pop()
            close_branch(entry, number)
            chains.append(entry[0])
            for _branches, lines, _taken in stack:
                lines.append(line)
    return chains


def unsure_lines(blanked: str, undefined: frozenset[str] = frozenset()) -> set[int]:
    """1-based numbers of lines inside an #if branch that is not taken on AMD for sure (if_chains:
    on_amd False or unknown): what is left is compiled by hipcc whatever the unknown macros are."""
    unsure: set[int] = set()
    for chain in if_chains(blanked, undefined):
        for branch in chain:
            if branch.on_amd is not True:
                unsure.update(range(branch.line + 1, branch.end))
    return unsure


def amd_undefined(blanked_texts: list[str]) -> frozenset[str]:
    """Macros that a tree #defines only in branches dead on AMD (DeepSpeed's PTX_AVAILABLE is defined
    under `#if __CUDA_ARCH__ >= 530` in the NVIDIA branch): on AMD they are undefined, unless a build
    passes them with -D."""
    live_defs: set[str] = set()
    dead_defs: set[str] = set()
    for text in blanked_texts:
        dead = dead_lines(text)
        for number, line in enumerate(text.split("\n"), start=1):
            m = re.match(r"\s*#\s*define\s+(\w+)", line)
            if m:
                (dead_defs if number in dead else live_defs).add(m.group(1))
    return frozenset(dead_defs - live_defs)


DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]+?)[ \t]*$", re.MULTILINE)
CONST = re.compile(r"\b(?:static\s+)?(?:constexpr\s+|const\s+)?(?:unsigned\s+int|unsigned|int|size_t|long|auto|"
                   r"uint32_t|int32_t|int64_t|uint64_t)\s+(\w+)\s*=\s*([^;{}]+);")


ASSIGNMENT = re.compile(r"(?<![\w.>])\b([A-Za-z_]\w*)\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)")


def symbols(blanked: str) -> dict[str, str]:
    """Object-like #defines and integer variables initialized once (const/constexpr or never assigned
    again in the file) of one file: {name: expression}. A name defined twice with different
    expressions, or assigned again, maps to "" (ambiguous)."""
    found: dict[str, str] = {}
    initialized: set[str] = set()
    for regex in (DEFINE, CONST):
        for m in regex.finditer(blanked):
            name, value = m.group(1), m.group(2).strip()
            if found.get(name, value) != value:
                value = ""
            found[name] = value
            if regex is CONST:
                initialized.add(name)
    assigned: dict[str, int] = {}
    for m in ASSIGNMENT.finditer(blanked):
        assigned[m.group(1)] = assigned.get(m.group(1), 0) + 1
    for name, value in found.items():
        count = assigned.get(name, 0)
        if value and count and not (count == 1 and name in initialized) and count > \
                len(re.findall(rf"\b{re.escape(name)}\s*=\s*{re.escape(value)}", blanked)):
            found[name] = ""
    return found


CHAR_LITERAL = re.compile(r"'([^'\\\n]|\\[ntr0\\'\"])'")
CHAR_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\r": "\r", "\\0": "\0", "\\\\": "\\", "\\'": "'", '\\"': '"'}


def evaluate(expr: str, names: dict[str, str], depth: int = 0,
             cache: dict[tuple[str, int], int | None] | None = None) -> int | None:
    """Evaluate a C integer constant expression (literals, character literals such as ' ' or '\\n',
    + - * / % << >>, parentheses, sizeof of basic types, names from `names`); None when it is not a
    constant we can decide (or names nest deeper than 8). `cache` ((name, depth) -> value, shared by calls
    over the same `names`) computes each name once per depth, with the same results as without it: a
    large tree's constants refer to each other many times over."""
    if depth > 8 or not expr:
        return None
    expr = CHAR_LITERAL.sub(lambda m: str(ord(CHAR_ESCAPES.get(m.group(1), m.group(1)))), expr)
    if "'" in expr or '"' in expr:
        return None
    expr = re.sub(r"\bsizeof\s*\(\s*([\w ]+?)\s*\)", lambda m: str(SIZEOF.get(m.group(1), "?")), expr)
    expr = re.sub(r"\bstatic_cast\s*<[^>]*>", "", expr)
    expr = re.sub(r"\(\s*(unsigned|int|size_t|long|unsigned int|uint32_t|int64_t)\s*\)", "", expr)
    expr = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expr)

    def name_value(m: re.Match) -> str:
        key = (m.group(0), depth + 1)
        if cache is not None and key in cache:
            value = cache[key]
        else:
            value = evaluate(names.get(key[0], ""), names, depth + 1, cache)
            if cache is not None:
                cache[key] = value
        return "?" if value is None else str(value)

    expr = re.sub(r"\b[A-Za-z_]\w*\b", name_value, expr)
    if "?" in expr:
        return None
    try:
        tree = ast.parse(expr.replace("/", "//"), mode="eval")
    except SyntaxError:
        return None
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv,
               ast.Mod, ast.LShift, ast.RShift, ast.USub, ast.UAdd, ast.BitAnd, ast.BitOr)
    if not all(isinstance(node, allowed) and (not isinstance(node, ast.Constant) or type(node.value) is int)
               for node in ast.walk(tree)):
        return None
    try:
        value = eval(compile(tree, "<const>", "eval"), {"__builtins__": {}})
    except (ArithmeticError, ValueError, TypeError):
        return None
    return value if isinstance(value, int) else None


PAREN = re.compile(r"[()]")


def closing_paren(blanked: str, start: int) -> int | None:
    """Offset just past the ')' that closes the '(' ending at `start` in a blanked text (strings and
    comments already spaces), or None when it does not close."""
    depth = 1
    for m in PAREN.finditer(blanked, start):
        depth += 1 if m.group() == "(" else -1
        if not depth:
            return m.end()
    return None


def split_args(text: str, scan: str | None = None, angle: bool = True) -> list[str]:
    """Split `text` at top-level commas (outside (), [], {} and, with `angle`, <>). Nesting is read from
    `scan` when given: a copy of `text` of the same length with strings and comments blanked."""
    opens, closes = ("([{<", ")]}>") if angle else ("([{", ")]}")
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text if scan is None else scan):
        if c in opens:
            depth += 1
        elif c in closes:
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


FUNCTION_TAIL = re.compile(r"\)\s*(?:const\s*|noexcept\s*|override\s*|final\s*|->\s*[\w:<>,\s*&]+?\s*)*$")


CONTROL_HEAD = re.compile(r"\s*(?:else\s+)?(?:if|for|while|switch|catch)\s*\(")


def enclosing_function_head(blanked: str, offset: int) -> str | None:
    """Declaration text (from the end of the previous statement or block up to its `{`) of the innermost
    brace block around `offset` that is a function body (opened right after a `)`, optionally followed
    by const / noexcept / override / final / a trailing return type, and not an if / for / while /
    switch / catch statement's block); None outside any function.
    `blanked` is a text whose comments and literals are blanked (blank / blank_code)."""
    opens: list[int] = []
    for i, ch in enumerate(blanked[:offset]):
        if ch == "{":
            opens.append(i)
        elif ch == "}" and opens:
            opens.pop()
    for start in reversed(opens):
        before = blanked[:start]
        if FUNCTION_TAIL.search(before):
            head_start = max(before.rfind(";"), before.rfind("}"), before.rfind("{")) + 1
            if CONTROL_HEAD.match(before[head_start:]):
                continue  # `if (x) {`, `for (...) {`: a statement's block inside the function
            return before[head_start:]
    return None


def line_of(text: str, offset: int) -> int:
    """1-based line number of character `offset` in `text`."""
    return text.count("\n", 0, offset) + 1
