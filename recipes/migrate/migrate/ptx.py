"""Inline PTX asm statements -> exact C++ (the ptx-inline-asm fixup).

An `asm("...")` statement whose every instruction has an exact C++ form is replaced by a
`do { ... } while (0)` block that binds each operand once, runs the instructions on their bits and
writes the outputs back; the helpers (ptx_helpers.h, PTX ISA 8.5 semantics) are inserted once per
file. A statement with one instruction, operand form or modifier outside the table below is left as it
is (its `inline-ptx-asm` finding stays open). The translated forms were compared with NVIDIA's own
PTX on random data (tests/data/ptx_reference.json, made on an NVIDIA GPU by bench/ptx_reference.py).

Instructions translated (d destination, a/b/c sources; .b/.u/.s 16/32/64 unless said):
  mov (registers, immediates, {lo, hi} packing and unpacking, %tid/%ntid/%ctaid/%nctaid, %clock,
  %clock64, %laneid in a tree with no HIP path: its lane within CUDA's 32-lane warp),
  lop3.b32, prmt.b32 (default mode), vabsdiff4.u32.u32.u32.add, add / sub / mul / fma .f16 and .f16x2 (.rn or none), add / sub /
  mul / fma .f32 (.rn or none; no .ftz / .sat), integer add / sub / mul.lo / mul.wide / mad.lo / min / max /
  and / or / xor / not / shl / shr, setp with an integer compare into a predicate, selp, cvt between
  integer widths, cvt.rn.f16.f32, cvt.f32.f16, cvt.rn.f16x2.f32, cvt.rn.bf16(x2).f32, cvt.f32.bf16,
  cvt.rn.f32.s32 / .u32, cvt.rzi / .rni .s32.f32 (saturating, NaN -> 0), cvta(.to).shared / .global,
  cp.async.ca / .cg (.shared.global, L2 hints, src-size zero fill) as a completed copy, cp.async.commit_group
  / wait_group / wait_all (nothing left to wait for), ld / st .global / .shared / generic with cache hints
  and .v2 / .v4, ld / st .relaxed / .acquire / .release / .volatile (.relaxed / .volatile .v2 / .v4: one
  atomic per lane) and atom / red (add, min, max, and, or,
  xor, exch, cas) at .cta / .gpu / .sys scope as HIP's __hip_atomic_* with the same order and scope
  (.volatile is PTX's .relaxed.sys; atom.add.f32, which PTX defines to flush subnormals, becomes the
  float fetch-add that HIP's atomicAdd(float*) is), bar.sync 0 / barrier.sync 0,
  membar and fence (.cta / .gpu / .sys), trap, griddepcontrol.wait / .launch_dependents (nothing to do: HIP
  starts a kernel after the one before it in its stream); .reg declarations and @p / @!p guards;
  ldmatrix.sync.aligned.m8n8 (.x1 / .x2 / .x4, .trans, .b16) and mma.sync.aligned.m16n8k8 / m16n8k16 with
  .f16 / .bf16 inputs (.f32 or .f16 accumulators) and m16n8k16 / m16n8k32 with .s8 / .u8 inputs (.s32,
  .satfinite): emulated over the 32-lane warp with shuffles (ptx_helpers.h), slow next to AMD's own matrix
  cores, for which the finding `ptx-mma-emulated` stays open.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from . import cpp, features

HELPERS = Path(__file__).with_name("ptx_helpers.h")


@functools.cache
def helpers_text() -> str:
    """The text of ptx_helpers.h, read once per run (each file the fixups touch may insert it)."""
    return HELPERS.read_text(encoding="utf-8")


@dataclass(frozen=True)
class HelperItem:
    """One top-level declaration of ptx_helpers.h's namespace (a function or function template with the
    comment lines above it): guard (its include-guard macro), names (what it declares), uses (names of
    other items it calls), text."""

    guard: str
    names: frozenset[str]
    uses: frozenset[str]
    text: str


HELPERS_BASE_GUARD = "ROCMIG_PTX_HELPERS"  # the typedefs every item uses
HELPERS_END = "}  // namespace rocmig_ptx\n"  # the last line of every helper block
QUALIFIED = re.compile(r"\brocmig_ptx::(\w+)")
DECLARED_NAME = re.compile(r"(?<![\w:])(?!__attribute__\b)([A-Za-z_]\w*)\s*\(")


@functools.cache
def helper_items() -> tuple[str, str, tuple[HelperItem, ...]]:
    """ptx_helpers.h split for insertion: (its leading comment, its typedefs, its items in file order).
    An item ends where a `}` or a `;` closes it at the namespace's top level."""
    text = helpers_text()
    open_at = text.index("namespace rocmig_ptx {\n") + len("namespace rocmig_ptx {\n")
    body = text[open_at:text.rindex(HELPERS_END)]
    comment = "".join(line + "\n" for line in text[:open_at].split("\n") if line.startswith("//"))
    blanked = cpp.blank(body)
    pieces: list[tuple[str, str]] = []
    depth, start = 0, 0
    for k, ch in enumerate(blanked):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if depth == 0 and ch in "};":
            end = body.index("\n", k) + 1 if "\n" in body[k:] else len(body)
            pieces.append((body[start:end], blanked[start:end]))
            start = end
    typedefs = "".join(raw for raw, code in pieces if code.split() and code.split()[0] in ("typedef", "using"))
    functions = [(raw, code) for raw, code in pieces if not (code.split() and code.split()[0] in ("typedef", "using"))]
    declared = [(m.group(1) if (m := DECLARED_NAME.search(code.split("{", 1)[0])) else "") for _raw, code in functions]
    every = frozenset(declared) - {""}
    seen: dict[str, int] = {}
    items = []
    for (raw, code), name in zip(functions, declared):
        seen[name] = seen.get(name, 0) + 1
        guard = f"ROCMIG_PTX_{name}" + (f"_{seen[name]}" if seen[name] > 1 else "")
        uses = frozenset(re.findall(r"\b\w+\b", code.split(name, 1)[-1])) & every
        items.append(HelperItem(guard, frozenset({name}), uses, raw))
    return comment, typedefs, tuple(items)


def helpers_for(code: str, present: str) -> str:
    """The helper block that `code` needs (the items its `rocmig_ptx::name` uses reach, in file order,
    each under its own include guard, so that blocks of files compiled together add up) less what
    `present` (the file's text) already defines; "" when nothing is missing."""
    comment, typedefs, items = helper_items()
    wanted = set(QUALIFIED.findall(cpp.blank(code)))
    grew = True
    while grew:
        before = len(wanted)
        for item in items:
            if item.names & wanted:
                wanted |= item.uses
        grew = len(wanted) != before
    chosen = [item for item in items if item.names & wanted and f"#define {item.guard}\n" not in present]
    if not chosen:
        return ""
    base = "" if f"#define {HELPERS_BASE_GUARD}\n" in present else (
        f"#ifndef {HELPERS_BASE_GUARD}\n#define {HELPERS_BASE_GUARD}\nnamespace rocmig_ptx {{\n{typedefs}}}\n#endif\n")
    return (comment + base + "namespace rocmig_ptx {\n"
            + "".join(f"#ifndef {i.guard}\n#define {i.guard}\n{i.text}#endif\n" for i in chosen) + HELPERS_END)
HELPER_USE = re.compile(r"\brocmig_ptx::")  # where the translated code first needs the helpers
ASM_START = re.compile(r"(?<![\w.])(?:asm|__asm__|__asm)\s*((?:volatile|__volatile__)\s*)?\(")
OPERAND = re.compile(r'^\s*"([=+&]*)([a-zA-Z]+)"\s*\((.*)\)\s*$', re.S)
STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
# cuda_pipeline_primitives.h's names (less the __) that rocmig_ptx has helpers for
PIPELINE_HELPERS = frozenset({"pipeline_memcpy_async", "pipeline_commit", "pipeline_wait_prior"})
HELPER_CALL = re.compile(r"(?<![\w.:])__(" + "|".join(sorted(PIPELINE_HELPERS | {"cvta_generic_to_shared", "cvta_shared_to_generic"}))
                         + r")\s*\(")
PIPELINE_NAME = re.compile(r"(?<![\w.:])__(pipeline_\w+)\b")  # a cuda_pipeline_primitives.h name
PIPELINE_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]cuda_pipeline(?:_primitives)?\.h[>"][^\n]*$', re.M)
CONSTRAINT_WIDTH = {"h": 16, "r": 32, "f": 32, "l": 64, "d": 64, "n": 64, "i": 64}
UTYPE = {16: "rocmig_ptx::u16", 32: "rocmig_ptx::u32", 64: "rocmig_ptx::u64"}
STYPE = {8: "signed char", 16: "short", 32: "int", 64: "long long"}
SPECIAL = {f"%{reg}.{axis}": f"{var}.{axis}" for reg, var in
           (("tid", "threadIdx"), ("ntid", "blockDim"), ("ctaid", "blockIdx"), ("nctaid", "gridDim"))
           for axis in "xyz"}
SPECIAL.update({"%clock": "clock()", "%clock64": "clock64()"})
CACHE_HINTS = re.compile(r"^(?:ca|cg|cs|lu|nc|wb|wt|L1::no_allocate|L1::evict_\w+|L2::evict_\w+|L2::\d+B)$")
FENCES = {"cta": "__threadfence_block()", "gl": "__threadfence()", "gpu": "__threadfence()",
          "sys": "__threadfence_system()"}
INT_OPS = {"add": "+", "sub": "-", "and": "&", "or": "|", "xor": "^"}
COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
           "lo": "<", "ls": "<=", "hi": ">", "hs": ">="}


ORDERS = {"weak": "", "volatile": "", "relaxed": "__ATOMIC_RELAXED", "acquire": "__ATOMIC_ACQUIRE",
          "release": "__ATOMIC_RELEASE", "acq_rel": "__ATOMIC_ACQ_REL"}
SCOPES = {"cta": "__HIP_MEMORY_SCOPE_WORKGROUP", "gpu": "__HIP_MEMORY_SCOPE_AGENT", "sys": "__HIP_MEMORY_SCOPE_SYSTEM"}
ATOMIC_OPS = {"add": "__hip_atomic_fetch_add", "min": "__hip_atomic_fetch_min", "max": "__hip_atomic_fetch_max",
              "and": "__hip_atomic_fetch_and", "or": "__hip_atomic_fetch_or", "xor": "__hip_atomic_fetch_xor",
              "exch": "__hip_atomic_exchange", "cas": ""}


@dataclass(frozen=True)
class Access:
    """A memory instruction's modifiers: space (global, shared, generic), vector lanes, type kind
    (b, u, s, f) and width in bits, C type of one element, memory order and scope (__ATOMIC_* /
    __HIP_MEMORY_SCOPE_* names, empty for a plain access), atomic operation (atom / red)."""
    space: str
    lanes: int
    kind: str
    width: int
    ctype: str
    order: str
    scope: str
    op: str


class Unsupported(Exception):
    """An instruction or operand form without an exact translation: the statement is left as it is."""


@dataclass(frozen=True)
class Operand:
    """One asm operand: constraint letter (r, l, h, f, d, n, i), C++ expression, output or not,
    read-write (`+`)."""
    letter: str
    expr: str
    output: bool
    readwrite: bool

    @property
    def width(self) -> int:
        return CONSTRAINT_WIDTH[self.letter]


@dataclass
class Statement:
    """A parsed asm statement: text offsets [start, end) of `asm ... )`, its template (escapes decoded),
    operands in %N order (outputs first), extended (has a ':' part: `%%` is a literal %), volatile
    (`asm volatile`: its loads and stores happen every time), memory (a "memory" clobber: a compiler barrier)."""
    start: int
    end: int
    template: str
    operands: list[Operand]
    extended: bool
    volatile: bool = False
    memory: bool = False


def _split_sections(body: str, blanked: str) -> list[str]:
    """Split an asm body at its ':' separators. Operand expressions sit inside parentheses, so every
    ':' outside them (the template is string literals) separates sections, `::` two empty ones."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(blanked):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == ":" and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    return parts


def _operands(section: str, output: bool) -> list[Operand]:
    if not section.strip():
        return []
    out = []
    for part in cpp.split_args(section, cpp.blank(section), angle=False):
        m = OPERAND.match(part)
        if not m or m.group(2) not in CONSTRAINT_WIDTH:
            raise Unsupported(f"operand {part.strip()!r}")
        out.append(Operand(m.group(2), m.group(3).strip(), output, "+" in m.group(1)))
    return out


def _decode(literals: str) -> str:
    escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'"}
    return re.sub(r"\\(.)", lambda m: escapes.get(m.group(1), m.group(1)), literals)


# nvcc's own macros, which hipcc never defines: an #if on them is false on AMD
NVCC_ONLY = frozenset({"__NVCC__", "__CUDACC_VER_MAJOR__", "__CUDACC_VER_MINOR__", "__CUDACC_VER_BUILD__"})
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(?:\((\w*)\))?[ \t]*(.*)$", re.M)
TEMPLATE_PART = re.compile(r'\s*(?:"(?:[^"\\\n]|\\.)*"|#\w+)')
MACRO_USE = re.compile(r"\b(\w+)\b(?:\s*\(([^()]*)\))?")


def string_macros(text: str, dead: set[int]) -> dict[str, tuple[str | None, str]]:
    """{name: (parameter or None, body)} of the file's macros whose body is string literals, `#param`
    or nothing (`#define L2_CACHEHINT(size) ".L2::" #size "B"`, AWQ's asm templates), from the
    #defines not in `dead` lines; a name defined twice in live code is left out."""
    found: dict[str, tuple[str | None, str]] = {}
    seen: set[str] = set()
    for m in DEFINE.finditer(text):
        name, param, body = m.group(1), m.group(2), m.group(3).strip()
        if cpp.line_of(text, m.start()) in dead:
            continue
        if name in seen:
            found.pop(name, None)
            continue
        seen.add(name)
        parts = TEMPLATE_PART.findall(body)
        if "".join(parts).strip() == body.strip() and all(p.strip()[0] == '"' or p.strip()[1:] == param for p in parts):
            found[name] = (param, body)
    return found


def _expand(template: str, macros: dict[str, tuple[str | None, str]]) -> str:
    """An asm template's text with the string macros of `macros` expanded (`#param` stringified)."""
    def one(m: re.Match[str]) -> str:
        name, arg = m.group(1), m.group(2)
        if name not in macros:
            return m.group(0)
        param, body = macros[name]
        if param is None:
            return " " + body + (f"({arg})" if arg is not None else "") + " "
        if arg is None:
            return m.group(0)
        return " " + re.sub(rf"#{param}\b", '"' + arg.strip() + '"', body) + " "
    pieces = STRING.split(template)  # even indexes: code between the literals
    return "".join(MACRO_USE.sub(one, piece) if k % 2 == 0 else f'"{piece}"' for k, piece in enumerate(pieces))


def statements(text: str, blanked: str | None = None,
               macros: dict[str, tuple[str | None, str]] | None = None) -> list[Statement]:
    """The asm statements of `text` that parse (a template of string literals, after expanding the
    file's string `macros` (string_macros), and constraint operands); statements with other macros in
    the template or with named operands are left out."""
    blanked = cpp.blank(text) if blanked is None else blanked
    found = []
    for m in ASM_START.finditer(blanked):
        k = cpp.closing_paren(blanked, m.end())
        if k is None:
            continue
        body, scan = text[m.end():k - 1], blanked[m.end():k - 1]
        sections = _split_sections(body, scan)
        if macros and STRING.sub("", sections[0]).strip():
            sections[0] = _expand(sections[0], macros)
        if STRING.sub("", sections[0]).strip():
            continue
        try:
            outputs = _operands(sections[1], True) if len(sections) > 1 else []
            inputs = _operands(sections[2], False) if len(sections) > 2 else []
        except Unsupported:
            continue
        template = _decode("".join(STRING.findall(sections[0])))
        memory = len(sections) > 3 and '"memory"' in sections[3].replace(" ", "")
        found.append(Statement(m.start(), k, template, outputs + inputs, len(sections) > 1, bool(m.group(1)), memory))
    return found


def _instructions(template: str, extended: bool) -> list[str]:
    text = re.sub(r"//[^\n]*", "", template)
    if extended:
        text = re.sub(r"%(%|=|\d+|[A-Za-z_]\w*)",
                      lambda m: "%" if m.group(1) == "%" else f"\x00{m.group(1)}" if m.group(1).isdigit()
                      else (_raise(f"%{m.group(1)}")), text)
    out = []
    for piece in re.split(r"[;\n]", text):
        piece = piece.strip().lstrip("{").strip()  # a scope's braces, never an operand's
        while piece.endswith("}") and piece.count("}") > piece.count("{"):
            piece = piece[:-1].strip()
        if piece:
            out.append(piece)
    return out


def _raise(what: str) -> str:
    raise Unsupported(what)


class Translator:
    """Translates one statement's instructions; `code` collects the C++ statements. cuda_warps: the
    tree has no HIP path, so %laneid is the lane within CUDA's 32-lane warp (as warp.py's rewrites)."""

    def __init__(self, stmt: Statement, cuda_warps: bool):
        self.stmt = stmt
        self.cuda_warps = cuda_warps
        self.regs: dict[str, int] = {}  # declared register -> width (0: predicate)
        self.code: list[str] = []

    # operands -----------------------------------------------------------------------------------
    def _name(self, token: str) -> str:
        return "_r_" + re.sub(r"\W", "_", token.lstrip("%"))

    def read(self, token: str, width: int) -> str:
        """C++ expression of `token` as an unsigned value of `width` bits."""
        token = token.strip()
        if token.startswith("\x00"):
            n = int(token[1:])
            if n >= len(self.stmt.operands):
                raise Unsupported(f"operand %{n}")
            return f"(({UTYPE[width]})_p{n})"
        if token in self.regs:
            if self.regs[token] == 0:
                raise Unsupported(f"predicate {token!r} as a value")
            return f"(({UTYPE[width]}){self._name(token)})"
        if token in SPECIAL:
            return f"(({UTYPE[width]}){SPECIAL[token]})"
        if token == "%laneid" and self.cuda_warps:
            return f"(({UTYPE[width]})rocmig_ptx::lane32())"
        m = re.fullmatch(r"(-?)(0[xX][0-9a-fA-F]+|\d+)[uU]?", token)
        if m:
            return f"(({UTYPE[width]})({m.group(1)}{m.group(2)}ull))"
        m = re.fullmatch(r"0[fF]([0-9a-fA-F]{8})", token)
        if m and width == 32:
            return f"((rocmig_ptx::u32)0x{m.group(1)}u)"
        raise Unsupported(f"operand {token!r}")

    def pred(self, token: str) -> str:
        token = token.strip()
        if self.regs.get(token) == 0:
            return self._name(token)
        raise Unsupported(f"predicate {token!r}")

    def write(self, token: str, width: int, expr: str, signed: bool = False) -> None:
        """`token` = the `width`-bit value `expr`; signed: a .s result, which PTX sign-extends into a
        wider destination register (an "=l" operand of ld.s32, a 32-bit one of cvt.s16.s32)."""
        token = token.strip()
        value = f"(rocmig_ptx::u64)(long long)({STYPE[width]})({expr})" if signed else f"({UTYPE[width]})({expr})"
        if token.startswith("\x00"):
            n = int(token[1:])
            if n >= len(self.stmt.operands) or not self.stmt.operands[n].output:
                raise Unsupported(f"output %{n}")
            self.code.append(f"_p{n} = {value};")
        elif self.regs.get(token, -1) > 0:
            self.code.append(f"{self._name(token)} = ({UTYPE[self.regs[token]]}){value};")
        else:
            raise Unsupported(f"destination {token!r}")

    def write_pred(self, token: str, expr: str) -> None:
        self.code.append(f"{self.pred(token)} = ({expr});")

    # instructions -------------------------------------------------------------------------------
    def instruction(self, text: str) -> None:
        guard = re.match(r"@(!?)(%?\w+)\s+", text)
        if guard:
            mark = len(self.code)
            self.instruction(text[guard.end():])
            body = " ".join(self.code[mark:])
            del self.code[mark:]
            self.code.append(f"if ({'!' if guard.group(1) else ''}{self.pred(guard.group(2))}) {{ {body} }}")
            return
        m = re.match(r"([\w.:]+)\s*(.*)$", text, re.S)
        if not m:
            raise Unsupported(text)
        opcode, rest = m.group(1), m.group(2)
        if opcode == ".reg":
            return self.declare(rest)
        args = [a.strip() for a in _split_top(rest)] if rest.strip() else []
        parts = opcode.split(".")
        handler = getattr(self, "op_" + parts[0], None)
        if handler is None:
            raise Unsupported(opcode)
        handler(parts[1:], args)

    def declare(self, rest: str) -> None:
        m = re.match(r"\.(pred|[bsuf](?:16|32|64))\s+(.+)$", rest.strip())
        if not m:
            raise Unsupported(".reg " + rest)
        width = 0 if m.group(1) == "pred" else int(m.group(1)[1:])
        for name in _split_top(m.group(2)):
            name = name.strip()
            count = re.fullmatch(r"(%?\w+)<(\d+)>", name)
            names = [f"{count.group(1)}{i}" for i in range(int(count.group(2)))] if count else [name]
            for reg in names:
                if not re.fullmatch(r"%?[A-Za-z_]\w*", reg):
                    raise Unsupported(".reg " + reg)
                self.regs[reg] = width
                self.code.append(f"bool {self._name(reg)} = false;" if width == 0
                                 else f"{UTYPE[width]} {self._name(reg)} = 0;")

    @staticmethod
    def _type(parts: list[str]) -> tuple[str, int]:
        last = parts[-1] if parts else ""
        m = re.fullmatch(r"([bsuf])(16|32|64)", last)
        if not m:
            raise Unsupported("type ." + last)
        return m.group(1), int(m.group(2))

    def op_mov(self, mods: list[str], args: list[str]) -> None:
        if mods == ["pred"]:
            return self.write_pred(args[0], self.pred(args[1]))
        kind, width = self._type(mods)
        if len(mods) != 1 or len(args) != 2:
            raise Unsupported("mov." + ".".join(mods))
        dst, src = args
        if src.startswith("{"):
            pieces = _vector(src)
            half = width // len(pieces)
            if half not in (16, 32) or len(pieces) != 2:
                raise Unsupported("mov pack " + src)
            return self.write(dst, width, f"(({UTYPE[width]}){self.read(pieces[0], half)} | "
                                          f"(({UTYPE[width]}){self.read(pieces[1], half)} << {half}))")
        if dst.startswith("{"):
            pieces = _vector(dst)
            half = width // len(pieces)
            if half not in (16, 32) or len(pieces) != 2:
                raise Unsupported("mov unpack " + dst)
            self.code.append(f"{{ rocmig_ptx::u64 _v = {self.read(src, width)};")  # read before either write
            self.write(pieces[0], half, "_v")
            self.write(pieces[1], half, f"(_v >> {half})")
            self.code.append("}")
            return None
        self.write(dst, width, self.read(src, width))

    def op_lop3(self, mods: list[str], args: list[str]) -> None:
        if mods != ["b32"] or len(args) != 5:
            raise Unsupported("lop3")
        a, b, c, lut = (self.read(x, 32) for x in args[1:])
        self.write(args[0], 32, f"rocmig_ptx::lop3({a}, {b}, {c}, {lut})")

    def op_prmt(self, mods: list[str], args: list[str]) -> None:
        if mods != ["b32"] or len(args) != 4:
            raise Unsupported("prmt mode")
        a, b, c = (self.read(x, 32) for x in args[1:])
        self.write(args[0], 32, f"rocmig_ptx::prmt({a}, {b}, {c})")

    def op_vabsdiff4(self, mods: list[str], args: list[str]) -> None:
        if mods != ["u32", "u32", "u32", "add"] or len(args) != 4:
            raise Unsupported("vabsdiff4." + ".".join(mods))
        a, b, c = (self.read(x, 32) for x in args[1:])
        self.write(args[0], 32, f"rocmig_ptx::vabsdiff4_add({a}, {b}, {c})")

    def _float(self, op: str, mods: list[str], args: list[str]) -> bool:
        """add / sub / mul / fma on .f16, .f16x2, .f32 (rounding .rn or none); False when not float."""
        if not mods or mods[-1] not in ("f16", "f16x2", "f32"):
            return False
        if mods[:-1] not in ([], ["rn"]) or (op == "fma" and mods[:-1] != ["rn"]):
            raise Unsupported(f"{op}." + ".".join(mods))
        ftype = mods[-1]
        width = 16 if ftype == "f16" else 32
        for token in args[1:]:  # an integer literal or "n" operand would be read as bits, not as a number
            token = token.strip()
            if re.fullmatch(r"-?(?:0[xX][0-9a-fA-F]+|\d+)[uU]?", token) or (
                    token.startswith("\x00") and int(token[1:]) < len(self.stmt.operands)
                    and self.stmt.operands[int(token[1:])].letter in ("n", "i")):
                raise Unsupported(f"{op}.{ftype} with an integer immediate")
        n = 3 if op == "fma" else 2
        if len(args) != n + 1:
            raise Unsupported(op)
        values = ", ".join(self.read(x, width) for x in args[1:])
        suffix = {"f16": "f16", "f16x2": "f16x2", "f32": "f32"}[ftype]
        self.write(args[0], width, f"rocmig_ptx::{op}_{suffix}({values})")
        return True

    def _int(self, op: str, mods: list[str], args: list[str]) -> None:
        kind, width = self._type(mods)
        if kind == "f":
            raise Unsupported(f"{op}." + ".".join(mods))
        extra = mods[:-1]
        if op == "mul" and extra == ["wide"] and width == 32 and kind in "us":
            cast = "(long long)(int)" if kind == "s" else "(rocmig_ptx::u64)"
            return self.write(args[0], 64, f"(rocmig_ptx::u64)({cast}{self.read(args[1], 32)} * "
                                           f"{cast}{self.read(args[2], 32)})")
        if op in ("mul", "mad"):
            if extra != ["lo"]:
                raise Unsupported(f"{op}." + ".".join(mods))
            wide = "(rocmig_ptx::u32)" if width == 16 else ""  # u16 * u16 would multiply as int
            value = f"({wide}{self.read(args[1], width)} * {wide}{self.read(args[2], width)})"
            if op == "mad":
                value = f"({value} + {self.read(args[3], width)})"
            return self.write(args[0], width, value)
        if extra:
            raise Unsupported(f"{op}." + ".".join(mods))
        if op in ("min", "max"):
            a, b = self.read(args[1], width), self.read(args[2], width)
            if kind == "s":
                a, b = f"({STYPE[width]}){a}", f"({STYPE[width]}){b}"
            return self.write(args[0], width, f"(({a} {'<' if op == 'min' else '>'} {b}) ? {a} : {b})")
        self.write(args[0], width, f"({self.read(args[1], width)} {INT_OPS[op]} {self.read(args[2], width)})")

    def op_add(self, mods: list[str], args: list[str]) -> None:
        if not self._float("add", mods, args):
            self._int("add", mods, args)

    def op_sub(self, mods: list[str], args: list[str]) -> None:
        if not self._float("sub", mods, args):
            self._int("sub", mods, args)

    def op_mul(self, mods: list[str], args: list[str]) -> None:
        if not self._float("mul", mods, args):
            self._int("mul", mods, args)

    def op_fma(self, mods: list[str], args: list[str]) -> None:
        if not self._float("fma", mods, args):
            raise Unsupported("fma." + ".".join(mods))

    def op_mad(self, mods: list[str], args: list[str]) -> None:
        self._int("mad", mods, args)

    def op_min(self, mods: list[str], args: list[str]) -> None:
        self._int("min", mods, args)

    def op_max(self, mods: list[str], args: list[str]) -> None:
        self._int("max", mods, args)

    def _bitwise(self, op: str, mods: list[str], args: list[str]) -> None:
        if mods == ["pred"]:
            a, b = self.pred(args[1]), self.pred(args[2])
            return self.write_pred(args[0], f"{a} {INT_OPS[op]} {b}")
        self._int(op, mods, args)

    def op_and(self, mods: list[str], args: list[str]) -> None:
        self._bitwise("and", mods, args)

    def op_or(self, mods: list[str], args: list[str]) -> None:
        self._bitwise("or", mods, args)

    def op_xor(self, mods: list[str], args: list[str]) -> None:
        self._bitwise("xor", mods, args)

    def op_not(self, mods: list[str], args: list[str]) -> None:
        if mods == ["pred"]:
            return self.write_pred(args[0], f"!{self.pred(args[1])}")
        _kind, width = self._type(mods)
        self.write(args[0], width, f"~{self.read(args[1], width)}")

    def _shift(self, left: bool, mods: list[str], args: list[str]) -> None:
        kind, width = self._type(mods)
        if len(mods) != 1 or width == 16 or kind == "f":
            raise Unsupported("shift ." + ".".join(mods))
        name = f"shl{width}" if left else f"shr_{'s' if kind == 's' else 'u'}{width}"
        self.write(args[0], width, f"rocmig_ptx::{name}({self.read(args[1], width)}, {self.read(args[2], 32)})")

    def op_shl(self, mods: list[str], args: list[str]) -> None:
        self._shift(True, mods, args)

    def op_shr(self, mods: list[str], args: list[str]) -> None:
        self._shift(False, mods, args)

    def op_setp(self, mods: list[str], args: list[str]) -> None:
        if len(mods) != 2 or mods[0] not in COMPARE or len(args) != 3:
            raise Unsupported("setp." + ".".join(mods))
        kind, width = self._type(mods[1:])
        if kind == "f" or (kind == "b" and mods[0] not in ("eq", "ne")):
            raise Unsupported("setp." + ".".join(mods))
        if mods[0] in ("lo", "ls", "hi", "hs") and kind != "u":
            raise Unsupported("setp." + ".".join(mods))
        a, b = self.read(args[1], width), self.read(args[2], width)
        if kind == "s":
            a, b = f"({STYPE[width]}){a}", f"({STYPE[width]}){b}"
        self.write_pred(args[0], f"{a} {COMPARE[mods[0]]} {b}")

    def op_selp(self, mods: list[str], args: list[str]) -> None:
        _kind, width = self._type(mods)
        if len(mods) != 1 or len(args) != 4:
            raise Unsupported("selp")
        self.write(args[0], width, f"({self.pred(args[3])} ? {self.read(args[1], width)} : {self.read(args[2], width)})")

    def op_cvt(self, mods: list[str], args: list[str]) -> None:
        if len(args) == 3 and mods in (["rn", "f16x2", "f32"], ["rn", "bf16x2", "f32"]):
            return self.write(args[0], 32, f"rocmig_ptx::cvt_rn_{mods[1]}_f32({self.read(args[1], 32)}, "
                                           f"{self.read(args[2], 32)})")
        if len(args) != 2:
            raise Unsupported("cvt." + ".".join(mods))
        if mods == ["rn", "f16", "f32"]:
            return self.write(args[0], 16, f"rocmig_ptx::b16((_Float16)rocmig_ptx::f32({self.read(args[1], 32)}))")
        if mods == ["f32", "f16"]:
            return self.write(args[0], 32, f"rocmig_ptx::b32((float)rocmig_ptx::f16({self.read(args[1], 16)}))")
        if mods == ["rn", "bf16", "f32"]:
            return self.write(args[0], 16, f"rocmig_ptx::bf16_rn({self.read(args[1], 32)})")
        if mods == ["f32", "bf16"]:
            return self.write(args[0], 32, f"((rocmig_ptx::u32){self.read(args[1], 16)} << 16)")
        if mods in (["rn", "f32", "s32"], ["rn", "f32", "u32"]):
            cast = "(int)" if mods[2] == "s32" else ""
            return self.write(args[0], 32, f"rocmig_ptx::b32((float){cast}{self.read(args[1], 32)})")
        if mods in (["rzi", "s32", "f32"], ["rni", "s32", "f32"]):
            return self.write(args[0], 32, f"rocmig_ptx::cvt_s32_f32({self.read(args[1], 32)}, {str(mods[0] == 'rni').lower()})",
                              signed=True)
        if len(mods) == 2 and all(re.fullmatch(r"[us](16|32|64)", t) for t in mods):
            dkind, dwidth = self._type(mods[:1])
            skind, swidth = self._type(mods[1:])
            value = self.read(args[1], swidth)
            if skind == "s":
                value = f"({STYPE[swidth]}){value}"
            return self.write(args[0], dwidth, value, signed=dkind == "s")
        raise Unsupported("cvt." + ".".join(mods))

    def op_cvta(self, mods: list[str], args: list[str]) -> None:
        if len(args) != 2 or mods[-1] not in ("u32", "u64"):
            raise Unsupported("cvta." + ".".join(mods))
        width = int(mods[-1][1:])
        space = [m for m in mods[:-1] if m != "to"]
        value = self.read(args[1], 64)
        if space == ["shared"] and "to" in mods:
            return self.write(args[0], width, f"rocmig_ptx::cvta_generic_to_shared((const void*){value})")
        if space == ["shared"]:
            return self.write(args[0], width, f"rocmig_ptx::bits(rocmig_ptx::cvta_shared_to_generic({value}))")
        if space == ["global"]:
            return self.write(args[0], width, value)
        raise Unsupported("cvta." + ".".join(mods))

    def _address(self, token: str, space: str, ctype: str) -> str:
        m = re.fullmatch(r"\[\s*([^\]+\-]+?)\s*(?:([+-])\s*(\w+)\s*)?\]", token.strip())
        if not m:
            raise Unsupported(f"address {token!r}")
        base = self.read(m.group(1), 64)
        if m.group(2):
            base = f"({base} {m.group(2)} {self.read(m.group(3), 64)})"
        if space == "shared":
            return f"rocmig_ptx::shared_ptr<{ctype}>({base})"
        return f"rocmig_ptx::global_ptr<{ctype}>({base})"

    def _memory(self, mods: list[str], ops: tuple[str, ...] = ()) -> Access:
        """The state space, vector lanes, type, memory order and scope of ld / st / atom / red
        modifiers (in any order); `ops` are the operation names the instruction may carry (atom.add)."""
        space, lanes, kind, width, order, scope, op = "generic", 1, "", 0, "", "", ""
        for mod in mods:
            if mod in ("global", "shared", "shared::cta"):
                space = "shared" if mod.startswith("shared") else mod
            elif re.fullmatch(r"v[24]", mod):
                lanes = int(mod[1:])
            elif re.fullmatch(r"[bsuf](8|16|32|64)", mod):
                kind, width = mod[0], int(mod[1:])
            elif mod in ORDERS:
                order = mod
            elif mod in SCOPES:
                scope = mod
            elif mod in ops:
                op = mod
            elif not CACHE_HINTS.match(mod):
                raise Unsupported("memory modifier ." + mod)
        if not width or (ops and not op) or (scope and order in ("", "weak", "volatile")):
            raise Unsupported("memory access ." + ".".join(mods))
        ctype = {8: "unsigned char", 16: "rocmig_ptx::u16", 32: "rocmig_ptx::u32", 64: "rocmig_ptx::u64"}[width]
        if kind == "s" and width == 8:
            ctype = "signed char"
        if ops or order not in ("", "weak"):
            # atomics: HIP's __hip_atomic_* take int / unsigned / long long / float / double
            ctype = {("s", 32): "int", ("s", 64): "long long", ("f", 32): "float", ("f", 64): "double",
                     ("u", 32): "rocmig_ptx::u32", ("b", 32): "rocmig_ptx::u32", ("u", 64): "rocmig_ptx::u64",
                     ("b", 64): "rocmig_ptx::u64"}.get((kind, width), "")
            # a vector access is one access per lane (PTX memory model: no order among them), so a relaxed /
            # volatile .v2 / .v4 load or store is that many relaxed atomics; others stay one lane
            if not ctype or (lanes != 1 and (ops or order not in ("volatile", "relaxed"))):
                raise Unsupported("atomic access ." + ".".join(mods))
            if order == "volatile":  # PTX: ld/st.volatile are relaxed at system scope
                order, scope = "relaxed", "sys"
            order = ORDERS[order or "relaxed"]
            scope = SCOPES[scope or ("sys" if order == ORDERS["relaxed"] and not ops else "gpu")]
        else:
            order = scope = ""
        return Access(space, lanes, kind, width, ctype, order, scope, op)

    def _value(self, token: str, access: Access) -> str:
        """A source operand as the access's C type (float bits reinterpreted, integers converted)."""
        bits = self.read(token, max(access.width, 16))
        if access.kind == "f":
            return f"rocmig_ptx::f32({bits})" if access.width == 32 else f"rocmig_ptx::f64({bits})"
        return f"({access.ctype}){bits}"

    def op_ld(self, mods: list[str], args: list[str]) -> None:
        access = self._memory(mods)
        dsts = _vector(args[0]) if args[0].startswith("{") else [args[0]]
        if len(dsts) != access.lanes or len(args) != 2:
            raise Unsupported("ld operands")
        signed = access.kind == "s"
        if access.order:
            pointer = self._address(args[1], access.space, access.ctype)
            if access.lanes == 1:
                return self.write(dsts[0], access.width,
                                  f"rocmig_ptx::bits(__hip_atomic_load({pointer}, {access.order}, {access.scope}))",
                                  signed=signed)
            self.code.append(f"{{ {access.ctype}* _a = {pointer};")  # the address before any write
            for lane, dst in enumerate(dsts):
                if dst.strip() != "_":
                    self.write(dst, access.width,
                               f"rocmig_ptx::bits(__hip_atomic_load(_a + {lane}, {access.order}, {access.scope}))",
                               signed=signed)
            self.code.append("}")
            return
        volatile = "volatile " if self.stmt.volatile else ""  # asm volatile: loaded every time, as written
        pointer = self._address(args[1], access.space, f"{volatile}const {access.ctype}")
        self.code.append(f"{{ {volatile}const {access.ctype}* _a = {pointer};")  # the address before any write
        for lane, dst in enumerate(dsts):
            if dst.strip() != "_":
                self.write(dst, access.width, f"_a[{lane}]", signed=signed)
        self.code.append("}")

    def op_st(self, mods: list[str], args: list[str]) -> None:
        access = self._memory(mods)
        srcs = _vector(args[1]) if args[1].startswith("{") else [args[1]]
        if len(srcs) != access.lanes or len(args) != 2:
            raise Unsupported("st operands")
        pointer = self._address(args[0], access.space, access.ctype)
        if access.order:
            for lane, src in enumerate(srcs):
                self.code.append(f"__hip_atomic_store({pointer} + {lane}, {self._value(src, access)}, {access.order}, "
                                 f"{access.scope});")
            return
        if self.stmt.volatile:
            pointer = f"(({'volatile ' + access.ctype}*){pointer})"
        for lane, src in enumerate(srcs):
            self.code.append(f"{pointer}[{lane}] = ({access.ctype}){self.read(src, max(access.width, 16))};")

    def _packed_add(self, packed: str, mods: list[str], args: list[str], result: bool) -> None:
        """atom / red .add on an f16x2 / bf16x2 word (optionally .noftz: halves never flush anyway): a
        compare-and-swap loop on the 32-bit word, each half added and rounded as add.f16x2 / add.bf16x2 do;
        atomic as the one 32-bit unit PTX updates."""
        access = self._memory([m for m in mods if m not in (packed, "noftz")] + ["b32"], tuple(ATOMIC_OPS))
        dst, rest = (args[0], args[1:]) if result else ("", args)
        if access.op != "add" or len(rest) != 2:
            raise Unsupported("atomic ." + ".".join(mods))
        pointer = self._address(rest[0], access.space, access.ctype)
        adder = "rocmig_ptx::add_f16x2" if packed == "f16x2" else "rocmig_ptx::add_bf16x2"
        mark = len(self.code)
        if result:
            self.write(dst, 32, "_old")
        written = " ".join(self.code[mark:])
        del self.code[mark:]
        self.code.append(f"{{ rocmig_ptx::u32* _w = {pointer}; rocmig_ptx::u32 _v = {self.read(rest[1], 32)}; "
                         f"rocmig_ptx::u32 _old = __hip_atomic_load(_w, __ATOMIC_RELAXED, {access.scope}); "
                         f"while (!__hip_atomic_compare_exchange_weak(_w, &_old, {adder}(_old, _v), {access.order}, "
                         f"__ATOMIC_RELAXED, {access.scope})) {{}} {written} }}")

    def _atomic(self, mods: list[str], args: list[str], result: bool) -> None:
        packed = next((m for m in mods if m in ("f16x2", "bf16x2")), None)
        if packed:
            self._packed_add(packed, mods, args, result)
            return
        access = self._memory(mods, tuple(ATOMIC_OPS))
        allowed = {"add": "busf", "min": "us", "max": "us", "exch": "bus", "cas": "bus"}.get(access.op, "b")
        if access.kind not in allowed:
            raise Unsupported("atomic ." + ".".join(mods))
        dst, rest = (args[0], args[1:]) if result else ("", args)
        if len(rest) != (3 if access.op == "cas" else 2):
            raise Unsupported("atomic operands")
        pointer = self._address(rest[0], access.space, access.ctype)
        values = [self._value(token, access) for token in rest[1:]]
        if access.op == "cas":
            # the failure order may not be a release (C++ [atomics.types.operations])
            failure = ORDERS["relaxed"] if access.order in (ORDERS["relaxed"], ORDERS["release"]) else ORDERS["acquire"]
            mark = len(self.code)
            if result:
                self.write(dst, access.width, "rocmig_ptx::bits(_expected)")
            written = " ".join(self.code[mark:])
            del self.code[mark:]
            self.code.append(f"{{ {access.ctype} _expected = {values[0]}; __hip_atomic_compare_exchange_strong("
                             f"{pointer}, &_expected, {values[1]}, {access.order}, {failure}, {access.scope}); "
                             f"{written} }}")
            return
        call = f"{ATOMIC_OPS[access.op]}({pointer}, {values[0]}, {access.order}, {access.scope})"
        if result:
            self.write(dst, access.width, f"rocmig_ptx::bits({call})")
        else:
            self.code.append(call + ";")

    def op_atom(self, mods: list[str], args: list[str]) -> None:
        self._atomic(mods, args, result=True)

    def op_red(self, mods: list[str], args: list[str]) -> None:
        self._atomic(mods, args, result=False)

    def op_ldmatrix(self, mods: list[str], args: list[str]) -> None:
        rest = [m for m in mods if m not in ("sync", "aligned", "shared", "shared::cta")]
        trans = "trans" in rest
        rest = [m for m in rest if m != "trans"]
        if len(rest) != 3 or rest[0] != "m8n8" or rest[1] not in ("x1", "x2", "x4") or rest[2] != "b16" \
                or "sync" not in mods or len(args) != 2:
            raise Unsupported("ldmatrix." + ".".join(mods))
        dsts = _vector(args[0]) if args[0].startswith("{") else [args[0]]
        if len(dsts) != int(rest[1][1:]):
            raise Unsupported("ldmatrix operands")
        self.code.append(f"{{ rocmig_ptx::u64 _m = {self.read(_bracket(args[1]), 64)};")  # before any write
        for m, dst in enumerate(dsts):
            self.write(dst, 32, f"rocmig_ptx::ldmatrix_b16(_m, {m}u, {'true' if trans else 'false'})")
        self.code.append("}")

    def op_mma(self, mods: list[str], args: list[str]) -> None:
        satfinite = "satfinite" in mods
        rest = [m for m in mods if m not in ("sync", "aligned", "satfinite")]
        shape = re.fullmatch(r"m16n8k(\d+)", rest[0]) if rest else None
        if not shape or "sync" not in mods or rest[1:3] != ["row", "col"] or len(rest) != 7 or len(args) != 4:
            raise Unsupported("mma." + ".".join(mods))
        k = int(shape.group(1))
        dtype, atype, btype, ctype = rest[3:]
        d, a, b, c = (_vector(x) for x in args)
        regs_a = [self.read(x, 32) for x in a]
        regs_b = [self.read(x, 32) for x in b]
        if atype in ("f16", "bf16") and btype == atype and k in (8, 16) and not satfinite \
                and (dtype, ctype) in (("f32", "f32"), ("f16", "f16")) and (dtype == "f32" or atype == "f16"):
            wide = dtype == "f32"
            if (len(a), len(b), len(c), len(d)) != (k // 4, k // 8, 4 if wide else 2, 4 if wide else 2):
                raise Unsupported("mma operands")
            if wide:
                acc = ", ".join(f"rocmig_ptx::f32({self.read(x, 32)})" for x in c)
            else:
                acc = ", ".join(f"rocmig_ptx::half_lane({self.read(x, 32)}, {e}, false)" for x in c for e in (0, 1))
            self.code.append(f"{{ rocmig_ptx::u32 _a[] = {{{', '.join(regs_a)}}}; rocmig_ptx::u32 _b[] = "
                             f"{{{', '.join(regs_b)}}}; float _c[4] = {{{acc}}}; float _d[4]; "
                             f"rocmig_ptx::mma_16bit<{k}>(_a, _b, _c, _d, {'true' if atype == 'bf16' else 'false'});")
            if wide:
                for i, x in enumerate(d):
                    self.write(x, 32, f"rocmig_ptx::b32(_d[{i}])")
            else:
                for i, x in enumerate(d):
                    self.write(x, 32, f"(rocmig_ptx::u32)rocmig_ptx::b16((_Float16)_d[{2 * i}]) | "
                                      f"((rocmig_ptx::u32)rocmig_ptx::b16((_Float16)_d[{2 * i + 1}]) << 16)")
            self.code.append("}")
            return
        if atype in ("s8", "u8") and btype in ("s8", "u8") and dtype == ctype == "s32" and k in (16, 32):
            self._mma_8bit(k, (a, b, c, d), regs_a, regs_b, "rocmig_ptx::u32", [self.read(x, 32) for x in c],
                           f"mma_8bit<{k}>", f"{str(atype == 's8').lower()}, {str(btype == 's8').lower()}, "
                           f"{str(satfinite).lower()}", "_d[{i}]")
            return
        if atype in ("e4m3", "e5m2") and btype in ("e4m3", "e5m2") and dtype == ctype == "f32" and k in (16, 32) \
                and not satfinite:
            self._mma_8bit(k, (a, b, c, d), regs_a, regs_b, "float", [f"rocmig_ptx::f32({self.read(x, 32)})" for x in c],
                           f"mma_fp8<{k}>", f"{str(atype == 'e5m2').lower()}, {str(btype == 'e5m2').lower()}",
                           "rocmig_ptx::b32(_d[{i}])")
            return
        raise Unsupported("mma." + ".".join(mods))

    def _mma_8bit(self, k: int, operands: tuple[list[str], ...], regs_a: list[str], regs_b: list[str], acc_type: str,
                  acc: list[str], helper: str, flags: str, result: str) -> None:
        """An mma of 8-bit fragments (k = 16 or 32: A in k/8 registers, B in k/16, C and D 4 values of
        acc_type) through rocmig_ptx::`helper`(_a, _b, _c, _d, `flags`); `result` formats D[i] as 32 bits."""
        a, b, c, d = operands
        if (len(a), len(b), len(c), len(d)) != (k // 8, k // 16, 4, 4):
            raise Unsupported("mma operands")
        self.code.append(f"{{ rocmig_ptx::u32 _a[] = {{{', '.join(regs_a)}}}; rocmig_ptx::u32 _b[] = {{{', '.join(regs_b)}}}; "
                         f"{acc_type} _c[4] = {{{', '.join(acc)}}}; {acc_type} _d[4]; "
                         f"rocmig_ptx::{helper}(_a, _b, _c, _d, {flags});")
        for i, x in enumerate(d):
            self.write(x, 32, result.format(i=i))
        self.code.append("}")

    def op_cp(self, mods: list[str], args: list[str]) -> None:
        if mods[:1] != ["async"]:
            raise Unsupported("cp." + ".".join(mods))
        rest = mods[1:]
        if rest in (["commit_group"], ["wait_all"]) or (rest == ["wait_group"] and len(args) == 1):
            self.code.append("(void)0;")
            return
        if not rest or rest[0] not in ("ca", "cg"):
            raise Unsupported("cp." + ".".join(mods))
        spaces = [m for m in rest[1:] if not m.startswith("L2::")]
        if spaces not in (["shared", "global"], ["shared::cta", "global"]):
            raise Unsupported("cp." + ".".join(mods))
        if "L2::cache_hint" in rest:
            args = args[:-1]
        if len(args) not in (3, 4):
            raise Unsupported("cp.async operands")
        dst = _bracket(args[0])
        src = _bracket(args[1])
        size = self.read(args[2], 32)
        src_size = self.read(args[3], 32) if len(args) == 4 and self.regs.get(args[3].strip()) != 0 else size
        if len(args) == 4 and self.regs.get(args[3].strip()) == 0:  # ignore-src: true zero-fills all
            src_size = f"({self.pred(args[3])} ? 0u : {size})"
        self.code.append(f"rocmig_ptx::cp_async({self.read(dst, 64)}, {self.read(src, 64)}, {size}, {src_size});")

    def op_createpolicy(self, mods: list[str], args: list[str]) -> None:
        # An L2 cache eviction policy: an opaque 64-bit value (PTX ISA, createpolicy) that only .L2::cache_hint
        # operands read, which change where lines are cached, never the values: any value keeps the results.
        if not mods or mods[0] not in ("fractional", "range", "cvt") or mods[-1] != "b64" or not args:
            raise Unsupported("createpolicy." + ".".join(mods))
        self.write(args[0], 64, "0ull")

    def op_griddepcontrol(self, mods: list[str], args: list[str]) -> None:
        # Programmatic dependent launch (sm_90, PTX ISA griddepcontrol): .wait waits until the grids this one
        # depends on have ended and their memory is visible, .launch_dependents lets the next grid start
        # early. HIP starts a kernel after the one before it in the stream has ended: both have nothing to do.
        if mods not in (["wait"], ["launch_dependents"]) or args:
            raise Unsupported("griddepcontrol." + ".".join(mods))
        self.code.append("(void)0;")

    def _barrier(self, mods: list[str], args: list[str]) -> None:
        if [m for m in mods if m != "aligned"] != ["sync"] or len(args) != 1 or self.read(args[0], 32) != "((rocmig_ptx::u32)(0ull))":
            raise Unsupported("bar." + ".".join(mods))
        self.code.append("__syncthreads();")

    def op_bar(self, mods: list[str], args: list[str]) -> None:
        self._barrier(mods, args)

    def op_barrier(self, mods: list[str], args: list[str]) -> None:
        self._barrier(mods, args)

    def op_membar(self, mods: list[str], args: list[str]) -> None:
        if len(mods) != 1 or mods[0] not in FENCES or args:
            raise Unsupported("membar." + ".".join(mods))
        self.code.append(FENCES[mods[0]] + ";")

    def op_fence(self, mods: list[str], args: list[str]) -> None:
        if len(mods) != 2 or mods[0] not in ("acq_rel", "sc") or mods[1] not in FENCES or args:
            raise Unsupported("fence." + ".".join(mods))
        self.code.append(FENCES[mods[1]] + ";")

    def op_trap(self, mods: list[str], args: list[str]) -> None:
        if mods or args:
            raise Unsupported("trap")
        self.code.append("__builtin_trap();")


def _split_top(text: str) -> list[str]:
    return cpp.split_args(text, angle=False)


def _vector(token: str) -> list[str]:
    token = token.strip()
    if not (token.startswith("{") and token.endswith("}")):
        raise Unsupported(f"vector {token!r}")
    return [t.strip() for t in token[1:-1].split(",")]


def _bracket(token: str) -> str:
    m = re.fullmatch(r"\[\s*([^\]]+?)\s*\]", token.strip())
    if not m:
        raise Unsupported(f"address {token!r}")
    return m.group(1)


def _laid_out(items: list[str], lines: int, indent: str) -> str:
    """`items` (the block's opening, its statements, its closing) on `lines` lines, spread evenly; the
    lines after the first start with `indent`."""
    if lines <= 1:
        return " ".join(items)
    per = -(-len(items) // lines)
    rows = [" ".join(items[k * per:(k + 1) * per]) for k in range(lines)]
    return "\n".join([rows[0], *((indent + row) if row else "" for row in rows[1:])])


def translate(stmt: Statement, cuda_warps: bool, lines: int = 1, indent: str = "") -> str:
    """C++ for one asm statement: a `do { ... } while (0)` block in place of `asm(...)`, on `lines` lines
    (the statement's own count, so that every line below keeps its number; `indent` starts each line
    after the first). Raises Unsupported when any part has no exact translation."""
    tr = Translator(stmt, cuda_warps)
    for text in _instructions(stmt.template, stmt.extended):
        tr.instruction(text)
    binds = []
    for n, op in enumerate(stmt.operands):
        if op.readwrite:  # "+r": one lvalue, read now and written back at the end
            binds.append(f"auto& _o{n} = ({op.expr}); rocmig_ptx::u64 _p{n} = rocmig_ptx::bits(_o{n});")
        elif op.output:
            binds.append(f"rocmig_ptx::u64 _p{n} = 0;")
        elif op.letter == "f":
            binds.append(f"rocmig_ptx::u64 _p{n} = rocmig_ptx::bits((float)({op.expr}));")
        elif op.letter == "d":
            binds.append(f"rocmig_ptx::u64 _p{n} = rocmig_ptx::bits((double)({op.expr}));")
        else:
            binds.append(f"rocmig_ptx::u64 _p{n} = rocmig_ptx::bits({op.expr});")
    outs = [f"rocmig_ptx::assign<{op.width}>({f'_o{n}' if op.readwrite else op.expr}, _p{n});"
            for n, op in enumerate(stmt.operands) if op.output]
    summary = "; ".join(_instructions(stmt.template, stmt.extended)).replace("\x00", "%").replace("*/", "* /")
    fence = ["__atomic_signal_fence(__ATOMIC_SEQ_CST);"] if stmt.memory else []  # the clobber's compiler barrier
    return _laid_out([f"do {{ /* PTX: {summary} */", *fence, *binds, *tr.code, *outs, *fence, "} while (0)"], lines, indent)


@functools.lru_cache(maxsize=4)
def _untranslated_lines(text: str) -> dict[int, str]:
    """{1-based line: untranslated()'s reason} for the first parsed asm statement starting on each line of
    `text`, parsed once per file (a CUTLASS header has hundreds of statements, each a finding)."""
    reasons: dict[int, str] = {}
    for stmt in statements(text, None, string_macros(text, set())):
        line = cpp.line_of(text, stmt.start)
        if line in reasons:
            continue
        try:
            translate(stmt, cuda_warps=True)
            reasons[line] = ""
        except Unsupported as e:
            reasons[line] = str(e).replace("\x00", "%")
    return reasons


def untranslated(text: str, line: int) -> str:
    """Why the asm statement that starts on 1-based `line` of `text` has no translation (the first
    instruction, modifier or operand refused, e.g. "operand '%globaltimer'"), "" when it has one or
    when no parsed statement starts there; a template that is not string literals says so."""
    reasons = _untranslated_lines(text)
    if line in reasons:
        return reasons[line]
    return "the template is not string literals (a macro or named operands)" if ASM_START.search(
        cpp.blank(text.split("\n")[line - 1] if 0 < line <= text.count("\n") + 1 else "")) else ""


# PTX's instruction names (PTX ISA 8.x, "Instructions"), the part before the first `.`
PTX_OPCODES = frozenset("""
abs activemask add addc alloca and applypriority atom bar barrier bfe bfi bfind bmsk bra brev brkpt call clusterlaunchcontrol
clz cnot copysign cos cp createpolicy cvt cvta discard div dp2a dp4a elect ex2 exit fence fma fns getctarank
griddepcontrol isspacep istypeof ld ldmatrix ldu lg2 lop3 mad mad24 madc mapa match max mbarrier membar min mma mov
movmatrix mul mul24 multimem nanosleep neg not or pmevent popc prefetch prefetchu prmt rcp red redux rem ret rsqrt sad
selp set setmaxnreg setp shf shfl shl shr sin slct sqrt st stackrestore stacksave stmatrix sub subc suld suq sured sust
szext tanh tcgen05 tensormap testp tex tld4 trap txq vabsdiff vabsdiff2 vabsdiff4 vadd vadd2 vadd4 vavrg2 vavrg4 vmad vmax
vmax2 vmax4 vmin vmin2 vmin4 vote vset vset2 vset4 vshl vshr vsub vsub2 vsub4 wgmma wmma xor
""".split())
MNEMONIC = re.compile(r"^\s*(?:[A-Za-z_$][\w$]*:\s*)?(?:@!?%?\w+\s+)?([A-Za-z_][\w]*)")


def not_ptx(text: str, line: int) -> str:
    """Why the asm statement that starts on 1-based `line` of `text` is not PTX, "" when it may be: an empty
    template is a compiler barrier (`asm volatile("" ::: "memory")`, valid for AMD too), a template none of
    whose instructions is a PTX instruction (PTX_OPCODES) is the host's assembly (x86's `fxsave %0`,
    `int $3`, `rdtscp` in CPU headers a unit includes: deepwave 0.1.0, catboost 1.2.10). A template that is
    not string literals may be anything: ""."""
    lines = text.split("\n")
    if not 0 < line <= len(lines):
        return ""
    start = sum(len(x) + 1 for x in lines[:line - 1])
    blanked = cpp.blank(text)
    m = ASM_START.search(blanked, start, start + len(lines[line - 1]))
    k = cpp.closing_paren(blanked, m.end()) if m else None
    if m is None or k is None:
        return ""
    template_part = _split_sections(text[m.end():k - 1], blanked[m.end():k - 1])[0]
    if STRING.sub("", template_part).strip():
        return ""
    template = _decode("".join(STRING.findall(template_part)))
    pieces = [p.strip() for p in re.split(r"[;\n]", template.replace("{", ";").replace("}", ";"))]
    names = [n.group(1).split(".")[0] for p in pieces if p and not p.startswith(".") and (n := MNEMONIC.match(p))]
    if not names:
        return "an empty template: a compiler barrier, which hipcc compiles for AMD too"
    if not any(n in PTX_OPCODES for n in names):
        return f"the host's assembly (`{names[0]}` is no PTX instruction), not device code"
    return ""


def rewrite(text: str, cuda_warps: bool = False, dead: set[int] | None = None) -> str:
    """`text` with every translatable asm statement replaced (see module doc), and the calls of
    __cvta_generic_to_shared / __cvta_shared_to_generic and of cuda_pipeline_primitives.h's
    __pipeline_memcpy_async / __pipeline_commit / __pipeline_wait_prior (all absent from HIP; the copy is
    complete on return, as cp.async's) mapped to the helpers; the header's include is commented out where no
    compiled line needs another of its names (calls only in code not compiled on AMD need none). The helpers are
    inserted after the includes when anything changed. dead: 1-based lines not compiled on AMD (left alone)."""
    if "asm" not in text and "__cvta_" not in text and "__pipeline_" not in text:
        return text
    dead = dead or set()
    blanked = cpp.blank(text)
    changed = False
    own = set(re.findall(r"\b__(pipeline_\w+|cvta_\w+)\s*\([^;{]*\)\s*\{", blanked))  # the file defines it
    # live names of the header that no helper maps (the file's own definitions aside)
    unmapped = {m.group(1) for m in PIPELINE_NAME.finditer(blanked) if cpp.line_of(text, m.start()) not in dead} \
        - PIPELINE_HELPERS - own
    experimental = "nvcuda::experimental" in blanked
    for m in reversed(list(HELPER_CALL.finditer(blanked))):
        if cpp.line_of(text, m.start()) not in dead and m.group(1) not in own:
            text = text[:m.start()] + f"rocmig_ptx::{m.group(1)}" + text[m.end() - 1:]
            changed = True
    if not unmapped and not experimental:
        why = "rocmig_ptx's pipeline helpers instead" if changed else "HIP lacks it; no line compiled on AMD uses it"
        text = PIPELINE_INCLUDE.sub(lambda m: "// " + m.group(0).strip() + ": " + why, text)
    blanked = cpp.blank(text)
    macros = string_macros(text, cpp.dead_lines(blanked, cpp.HIPCC_UNDEFINED | NVCC_ONLY) | dead)
    for stmt in reversed(statements(text, blanked, macros)):
        if cpp.line_of(text, stmt.start) in dead:
            continue
        line_start = text.rfind("\n", 0, stmt.start) + 1
        indent = re.match(r"[ \t]*", text[line_start:]).group(0) + "  "
        try:
            code = translate(stmt, cuda_warps, text.count("\n", stmt.start, stmt.end) + 1, indent)
        except Unsupported:
            continue
        text = text[:stmt.start] + code + text[stmt.end:]
        changed = True
    block = helpers_for(text, text) if changed else ""
    return features.insert_after_includes(text, block, HELPER_USE) if block else text
