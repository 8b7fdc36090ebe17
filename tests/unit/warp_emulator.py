"""An emulator of CUDA warps and HIP wavefronts that runs kernel source text on the CPU.

The migrate recipe's warp fixups and suggestions rewrite source text; this runs that text, so the
tests compare what the CUDA original computes on 32-lane warps with what the migrated HIP computes
on wave64 and wave32, on random data. The C subset is what pycparser parses (C99: no templates or
references) after qualifiers are removed; object-like #defines are substituted.

Semantics, with their sources:
- HIP (hipamd/include/hip/amd_detail/amd_warp_functions.h, amd_warp_sync_functions.h of ROCm/clr):
  __shfl/_up/_down/_xor with width (the index formulas of those headers, lanes outside the active
  set read an undefined value), __ballot (64-bit, active lanes), __any/__all, __activemask
  (= __ballot(true)), __lane_id, warpSize; the *_sync forms static_assert a 64-bit mask, ignore its
  upper half on wave32, and run a waterfall over the distinct masks of the active lanes in which
  `MASK == __ballot(true)` must hold (else __hip_assert traps: builds without NDEBUG).
- CUDA (CUDA C++ Programming Guide, "Warp Shuffle Functions", "Warp Vote Functions"): 32-lane
  warps, the mask parameter is `unsigned`, every lane named in the mask must execute the call, a
  source lane outside the mask gives an undefined value; pre-9 forms act on the active lanes.
An undefined value is POISON: arithmetic keeps it, a branch on it or a store of it shows in the result.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from pycparser import c_ast, c_parser


class Trap(Exception):
    """The program would not compile or would trap (HIP's device assert), or is undefined in CUDA."""


class _Return(Exception):
    def __init__(self, value):
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


POISON = None  # an undefined value (read from a lane that is not active / not in the mask)

INT_TYPES = {
    ("int",): (32, True), ("signed",): (32, True), ("signed", "int"): (32, True), ("unsigned",): (32, False),
    ("unsigned", "int"): (32, False), ("long",): (64, True), ("long", "int"): (64, True),
    ("long", "long"): (64, True), ("long", "long", "int"): (64, True), ("unsigned", "long"): (64, False),
    ("unsigned", "long", "long"): (64, False), ("unsigned", "long", "long", "int"): (64, False),
    ("size_t",): (64, False), ("uint32_t",): (32, False), ("int32_t",): (32, True), ("uint64_t",): (64, False),
    ("int64_t",): (64, True), ("bool",): (32, True), ("char",): (8, True), ("signed", "char"): (8, True),
    ("unsigned", "char"): (8, False), ("short",): (16, True), ("unsigned", "short"): (16, False),
}
PRELUDE = "typedef unsigned long size_t; typedef unsigned uint32_t; typedef int int32_t; " \
          "typedef unsigned long long uint64_t; typedef long long int64_t; typedef int bool;\n"


@dataclass(frozen=True)
class T:
    """A C type: kind "i" (bits, signed), "f" (bits 32 or 64) or "p" (pointer to elem)."""

    kind: str
    bits: int = 32
    signed: bool = True
    elem: T | None = None


I32, U32, I64, U64, F32, F64 = T("i", 32, True), T("i", 32, False), T("i", 64, True), T("i", 64, False), T("f", 32), T("f", 64)


@dataclass
class V:
    """A value: its type and Python value (int, float, (Buf, offset) for pointers, or POISON)."""

    t: T
    v: object


@dataclass
class Buf:
    """A memory object: element type and elements."""

    t: T
    data: list


def convert(value: V, t: T) -> V:
    """C conversion of `value` to type `t`."""
    if value.v is POISON:
        return V(t, POISON)
    if t.kind == "p":
        return V(t, value.v)
    if t.kind == "f":
        x = float(value.v)
        return V(t, struct.unpack("f", struct.pack("f", x))[0] if t.bits == 32 else x)
    x = int(value.v)  # float -> int truncates toward zero
    x &= (1 << t.bits) - 1
    if t.signed and x >> (t.bits - 1):
        x -= 1 << t.bits
    return V(t, x)


def common(a: T, b: T) -> T:
    """The usual arithmetic conversions (C11 6.3.1.8)."""
    if a.kind == "f" or b.kind == "f":
        return F64 if F64 in (a, b) else F32
    if a.signed == b.signed:
        return a if a.bits >= b.bits else b
    uns, sig = (a, b) if not a.signed else (b, a)
    if uns.bits >= sig.bits:
        return uns
    return sig


def type_of(node) -> T:
    """The T of a pycparser type node."""
    if isinstance(node, (c_ast.Typename, c_ast.Decl)):
        return type_of(node.type)
    if isinstance(node, c_ast.PtrDecl):
        return T("p", elem=type_of(node.type))
    if isinstance(node, c_ast.ArrayDecl):
        return type_of(node.type)
    if isinstance(node, c_ast.TypeDecl):
        names = tuple(node.type.names)
        if names in (("float",),):
            return F32
        if names == ("double",):
            return F64
        if names == ("void",):
            return I32
        bits, signed = INT_TYPES[names]
        return T("i", bits, signed)
    raise Trap(f"unsupported type {node!r}")


def preprocess(source: str) -> str:
    """Turn kernel source into the C that pycparser reads: object-like #defines substituted, other
    directives dropped, CUDA/HIP qualifiers removed, __shared__ marked as `extern`."""
    defines: dict[str, str] = {}
    lines = []
    helper = False  # inside the recipe's type-dispatched mask helper (C++ templates), run as builtins here
    for line in source.split("\n"):
        if re.match(r"\s*#\s*ifndef\s+ROCMIG_LANE_MASK\b", line):
            helper = True
        if helper:
            helper = not re.match(r"\s*#\s*endif\b", line)
            lines.append("")
            continue
        m = re.match(r"\s*#\s*define\s+(\w+)\s+(.*)$", line)
        if m:
            defines[m.group(1)] = m.group(2).strip()
            lines.append("")
        elif re.match(r"\s*#", line):
            lines.append("")
        else:
            lines.append(line)
    text = "\n".join(lines)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    for _ in range(4):
        for name, value in defines.items():
            text = re.sub(rf"\b{name}\b", value, text)
    text = re.sub(r"\w+\s*<<<.*?>>>\s*\([^;]*\)\s*;", ";", text, flags=re.DOTALL)  # host-side launches
    text = re.sub(r"__launch_bounds__\s*\([^)]*\)", "", text)
    text = re.sub(r"\b(__global__|__device__|__host__|__forceinline__|inline|static|__restrict__|const)\b", "", text)
    text = re.sub(r"\b__shared__\b", "extern", text)
    text = re.sub(r"\btrue\b", "1", text)
    return re.sub(r"\bfalse\b", "0", text)


def parse(source: str) -> dict[str, c_ast.FuncDef]:
    """{function name: definition} of kernel source."""
    ast = c_parser.CParser().parse(PRELUDE + preprocess(source))
    return {n.decl.name: n for n in ast.ext if isinstance(n, c_ast.FuncDef)}


@dataclass
class Lane:
    """One thread: its indices and the wave/warp it belongs to."""

    tid: tuple[int, int, int]
    bid: tuple[int, int, int]
    linear: int
    shared: dict = field(default_factory=dict)


class Machine:
    """Runs a kernel on one platform: mode "cuda" (32-lane warps) or "hip" with `wave` 64 or 32."""

    def __init__(self, source: str, mode: str, wave: int = 32):
        self.funcs = parse(source)
        self.mode, self.wave = mode, (32 if mode == "cuda" else wave)

    # ---- launching -------------------------------------------------------------------------
    def launch(self, kernel: str, grid: int, block: int, args: list) -> list:
        """Run `kernel` with 1-D grid and block; list args become global buffers of the parameter's
        element type (returned, in argument order, after the run); ints are passed by value."""
        func = self.funcs[kernel]
        params = func.decl.type.args.params if func.decl.type.args else []
        values, buffers = [], []
        for p, a in zip(params, args):
            t = type_of(p)
            if isinstance(a, list):
                buf = Buf(t.elem, [convert(V(t.elem, x), t.elem).v for x in a])
                buffers.append(buf)
                values.append(V(t, (buf, 0)))
            else:
                values.append(convert(V(I64 if isinstance(a, int) else F64, a), t))
        for b in range(grid):
            shared: dict = {}
            lanes = [Lane((t, 0, 0), (b, 0, 0), t, shared) for t in range(block)]
            self._run_block(func, lanes, values, block, grid)
        return [b.data for b in buffers]

    def _run_block(self, func, lanes, values, block, grid):
        gens = [self._call(func, list(values), lane, (block, grid)) for lane in lanes]
        pending: list = [("start",)] * len(lanes)
        results: list = [None] * len(lanes)
        done = [False] * len(lanes)
        while True:
            for i, g in enumerate(gens):
                if not done[i] and pending[i] is not None and pending[i][0] in ("start", "ready"):
                    try:
                        pending[i] = g.send(None if pending[i][0] == "start" else results[i])
                    except StopIteration:
                        done[i] = True
                        pending[i] = None
            if all(done):
                return
            fired = False
            for w0 in range(0, len(lanes), self.wave):
                wave = [i for i in range(w0, min(w0 + self.wave, len(lanes))) if not done[i]]
                ops = [i for i in wave if pending[i][0] == "warp"]
                if not ops:
                    continue
                site = pending[ops[0]][1]
                active = [i for i in ops if pending[i][1] == site]
                out = self._warp_op(pending[active[0]][2], {i: pending[i][3] for i in active}, lanes)
                for i in active:
                    results[i] = out[i]
                    pending[i] = ("ready",)
                fired = True
            if fired:
                continue
            waiting = [i for i in range(len(lanes)) if not done[i]]
            if all(pending[i][0] == "sync" for i in waiting):
                for i in waiting:
                    results[i] = V(I32, 0)
                    pending[i] = ("ready",)
                continue
            raise Trap("deadlock: lanes wait at different barriers")

    # ---- warp operations -------------------------------------------------------------------
    def lane_id(self, lane: Lane) -> int:
        return lane.linear % self.wave

    def _warp_op(self, name: str, args: dict[int, list[V]], lanes: list[Lane]) -> dict[int, V]:
        active = sorted(args)
        if self.mode == "hip" and name.endswith("_sync"):
            return self._hip_sync(name, args, lanes)
        if self.mode == "cuda" and name.endswith("_sync"):
            return self._cuda_sync(name, args, lanes)
        return self._plain(name, args, lanes, set(active))

    def _plain(self, name, args, lanes, active: set[int]) -> dict[int, V]:
        wave_bits = 64 if (self.mode == "hip" and self.wave == 64) else 32
        by_lane = {self.lane_id(lanes[i]): i for i in active}
        out: dict[int, V] = {}
        if name in ("__ballot", "__ballot64", "__any", "__all", "__activemask"):
            preds = {i: (V(I32, 1) if name == "__activemask" else args[i][0]) for i in active}
            if any(p.v is POISON for p in preds.values()):
                return {i: V(U64, POISON) for i in active}
            bits = sum(1 << self.lane_id(lanes[i]) for i in active if preds[i].v)
            if name == "__any":
                return {i: V(I32, int(bits != 0)) for i in active}
            if name == "__all":
                return {i: V(I32, int(all(preds[i].v for i in active))) for i in active}
            t = U64 if self.mode == "hip" else U32
            return {i: V(t, bits & ((1 << wave_bits) - 1)) for i in active}
        if name == "__match_any":
            return {i: V(U64, sum(1 << self.lane_id(lanes[j]) for j in active if args[j][0].v == args[i][0].v))
                    for i in active}
        for i in active:
            var, x, width = args[i][0], args[i][1].v, (args[i][2].v if len(args[i]) > 2 else self.wave)
            if x is POISON or width is POISON:
                out[i] = V(var.t, POISON)
                continue
            self_ = self.lane_id(lanes[i])
            if name == "__shfl":
                index = (x & (width - 1)) + (self_ & ~(width - 1))
            elif name == "__shfl_up":
                index = self_ - x
                index = self_ if index < (self_ & ~(width - 1)) else index
            elif name == "__shfl_down":
                index = self_ if (self_ & (width - 1)) + x >= width else self_ + x
            elif name == "__shfl_xor":
                index = self_ ^ x
                index = self_ if index >= ((self_ + width) & ~(width - 1)) else index
            else:
                raise Trap(f"unknown warp operation {name}")
            index %= self.wave
            src = by_lane.get(index)
            out[i] = V(var.t, POISON) if src is None else convert(args[src][0], var.t)
        return out

    def _hip_sync(self, name, args, lanes) -> dict[int, V]:
        base = name[:-5]
        out: dict[int, V] = {}
        masks = {}
        for i, a in args.items():
            if a[0].t.kind != "i" or a[0].t.bits != 64:
                raise Trap(f"{name}: static_assert: the mask must be a 64-bit integer (got {a[0].t})")
            if a[0].v is POISON:
                raise Trap(f"{name}: undefined mask")
            masks[i] = a[0].v & (0xFFFFFFFF if self.wave == 32 else (1 << 64) - 1)
        for value in sorted(set(masks.values())):
            subset = {i for i in masks if masks[i] == value}
            bits = sum(1 << self.lane_id(lanes[i]) for i in subset)
            if value == 0 or bits != value:
                raise Trap(f"{name}: __hip_assert(MASK == __ballot(true)) fails: mask {value:#x}, active {bits:#x}")
            rest = {i: args[i][1:] for i in subset}
            if base in ("__ballot", "__any", "__all"):
                ballot = self._plain("__ballot", rest, lanes, subset)
                for i in subset:
                    b = ballot[i].v
                    if b is POISON:
                        out[i] = V(I32, POISON)
                    elif base == "__ballot":
                        out[i] = V(U64, b & value)
                    elif base == "__any":
                        out[i] = V(I32, int((b & value) != 0))
                    else:
                        out[i] = V(I32, int((b & value) == value))
            elif base == "__match_any":
                match = self._plain("__match_any", rest, lanes, subset)
                out.update({i: V(U64, match[i].v & value) for i in subset})
            else:
                out.update(self._plain(base, rest, lanes, subset))
        return out

    def _cuda_sync(self, name, args, lanes) -> dict[int, V]:
        base = name[:-5]
        masks = {i: convert(a[0], U32).v for i, a in args.items()}
        bits = sum(1 << self.lane_id(lanes[i]) for i in args)
        for i, m in masks.items():
            if m is POISON or not (m >> self.lane_id(lanes[i])) & 1:
                raise Trap(f"{name}: lane {self.lane_id(lanes[i])} is not in its own mask {m}")
            if m & ~bits:
                raise Trap(f"{name}: mask {m:#x} names lanes that do not execute the call (active {bits:#x})")
        out: dict[int, V] = {}
        for value in sorted(set(masks.values())):
            subset = {i for i in masks if masks[i] == value}
            rest = {i: args[i][1:] for i in subset}
            if base in ("__shfl", "__shfl_up", "__shfl_down", "__shfl_xor"):
                rest = {i: (a + [V(I32, 32)] if len(a) == 2 else a) for i, a in rest.items()}
                out.update(self._plain(base, rest, lanes, subset))
            elif base == "__match_any":
                match = self._plain("__match_any", rest, lanes, subset)
                out.update({i: V(U32, match[i].v & value) for i in subset})
            else:
                ballot = self._plain("__ballot", rest, lanes, subset)
                for i in subset:
                    b = ballot[i].v
                    if b is POISON:
                        out[i] = V(I32, POISON)
                    elif base == "__ballot":
                        out[i] = V(U32, b & value)
                    elif base == "__any":
                        out[i] = V(I32, int((b & value) != 0))
                    else:
                        out[i] = V(I32, int((b & value) == value))
        return out

    # ---- interpreter -----------------------------------------------------------------------
    def _call(self, func: c_ast.FuncDef, args: list[V], lane: Lane, dims):
        params = func.decl.type.args.params if func.decl.type.args else []
        scope: dict[str, tuple[T, Buf]] = {}
        for p, a in zip(params, args):
            if isinstance(p, c_ast.Decl):
                t = type_of(p)
                scope[p.name] = (t, Buf(t, [convert(a, t).v]))
        try:
            yield from self._stmt(func.body, [scope], lane, dims)
        except _Return as r:
            return r.value
        return V(I32, 0)

    def _lookup(self, env, name):
        for scope in reversed(env):
            if name in scope:
                return scope[name]
        raise Trap(f"undeclared name {name}")

    def _stmt(self, node, env, lane, dims):
        if node is None:
            return
        if isinstance(node, c_ast.Compound):
            env = env + [{}]
            for item in node.block_items or []:
                yield from self._stmt(item, env, lane, dims)
        elif isinstance(node, c_ast.Decl):
            yield from self._decl(node, env, lane, dims)
        elif isinstance(node, c_ast.DeclList):
            for d in node.decls:
                yield from self._decl(d, env, lane, dims)
        elif isinstance(node, c_ast.If):
            cond = yield from self._expr(node.cond, env, lane, dims)
            if cond.v is POISON:
                raise Trap("branch on an undefined value")
            yield from self._stmt(node.iftrue if cond.v else node.iffalse, env + [{}], lane, dims)
        elif isinstance(node, c_ast.For):
            env = env + [{}]
            yield from self._stmt(node.init, env, lane, dims)
            while True:
                if node.cond is not None:
                    cond = yield from self._expr(node.cond, env, lane, dims)
                    if cond.v is POISON:
                        raise Trap("loop condition on an undefined value")
                    if not cond.v:
                        break
                try:
                    yield from self._stmt(node.stmt, env, lane, dims)
                except _Break:
                    break
                except _Continue:
                    pass
                if node.next is not None:
                    yield from self._expr(node.next, env, lane, dims)
        elif isinstance(node, c_ast.While):
            while True:
                cond = yield from self._expr(node.cond, env, lane, dims)
                if cond.v is POISON:
                    raise Trap("loop condition on an undefined value")
                if not cond.v:
                    break
                try:
                    yield from self._stmt(node.stmt, env + [{}], lane, dims)
                except _Break:
                    break
                except _Continue:
                    pass
        elif isinstance(node, c_ast.Return):
            value = (yield from self._expr(node.expr, env, lane, dims)) if node.expr is not None else V(I32, 0)
            raise _Return(value)
        elif isinstance(node, c_ast.Break):
            raise _Break()
        elif isinstance(node, c_ast.Continue):
            raise _Continue()
        elif isinstance(node, c_ast.EmptyStatement):
            return
        else:
            yield from self._expr(node, env, lane, dims)

    def _decl(self, node: c_ast.Decl, env, lane, dims):
        t = type_of(node)
        if isinstance(node.type, c_ast.ArrayDecl):
            size = 1
            dim = node.type
            while isinstance(dim, c_ast.ArrayDecl):
                n = yield from self._expr(dim.dim, env, lane, dims)
                size *= n.v
                dim = dim.type
            if "extern" in node.storage:  # __shared__: one buffer per block
                key = (node.name, node.coord.line if node.coord else 0)
                buf = lane.shared.setdefault(key, Buf(t, [POISON] * size))
            else:
                buf = Buf(t, [POISON] * size)
            env[-1][node.name] = (T("p", elem=t), buf)
            return
        if "extern" in node.storage:
            key = (node.name, node.coord.line if node.coord else 0)
            env[-1][node.name] = (t, lane.shared.setdefault(key, Buf(t, [POISON])))
            return
        value = POISON
        if node.init is not None:
            value = convert((yield from self._expr(node.init, env, lane, dims)), t).v
        env[-1][node.name] = (t, Buf(t, [value]))

    def _lvalue(self, node, env, lane, dims):
        """(Buf, index, type) of an assignable expression."""
        if isinstance(node, c_ast.ID):
            t, buf = self._lookup(env, node.name)
            if t.kind == "p" and len(buf.data) != 1:
                raise Trap(f"assignment to array {node.name}")
            return buf, 0, t
        if isinstance(node, c_ast.ArrayRef):
            base = yield from self._expr(node.name, env, lane, dims)
            index = yield from self._expr(node.subscript, env, lane, dims)
            if index.v is POISON:
                raise Trap("index is an undefined value")
            buf, off = base.v
            if not 0 <= off + index.v < len(buf.data):
                raise Trap(f"index {off + index.v} out of bounds ({len(buf.data)})")
            return buf, off + index.v, base.t.elem
        if isinstance(node, c_ast.UnaryOp) and node.op == "*":
            base = yield from self._expr(node.expr, env, lane, dims)
            buf, off = base.v
            return buf, off, base.t.elem
        raise Trap(f"not assignable: {type(node).__name__}")

    def _expr(self, node, env, lane, dims):
        if isinstance(node, c_ast.Constant):
            return _constant(node)
        if isinstance(node, c_ast.ID):
            if node.name == "warpSize":
                return V(I32, self.wave)
            t, buf = self._lookup(env, node.name)
            if t.kind == "p" and (len(buf.data) != 1 or buf.t != t):
                return V(t, (buf, 0))  # an array decays to a pointer to its first element
            return V(t, buf.data[0])
        if isinstance(node, c_ast.StructRef):
            block, grid = dims
            axis = "xyz".index(node.field.name)
            table = {"threadIdx": lane.tid, "blockIdx": lane.bid, "blockDim": (block, 1, 1), "gridDim": (grid, 1, 1)}
            return V(U32, table[node.name.name][axis])
        if isinstance(node, c_ast.ArrayRef) or (isinstance(node, c_ast.UnaryOp) and node.op == "*"):
            buf, index, t = yield from self._lvalue(node, env, lane, dims)
            return V(t, buf.data[index])
        if isinstance(node, c_ast.Cast):
            value = yield from self._expr(node.expr, env, lane, dims)
            return convert(value, type_of(node.to_type))
        if isinstance(node, c_ast.TernaryOp):
            cond = yield from self._expr(node.cond, env, lane, dims)
            if cond.v is POISON:
                raise Trap("?: on an undefined value")
            return (yield from self._expr(node.iftrue if cond.v else node.iffalse, env, lane, dims))
        if isinstance(node, c_ast.Assignment):
            buf, index, t = yield from self._lvalue(node.lvalue, env, lane, dims)
            rhs = yield from self._expr(node.rvalue, env, lane, dims)
            if node.op != "=":
                rhs = _binary(node.op[:-1], V(t, buf.data[index]), rhs)
            buf.data[index] = convert(rhs, t).v
            return V(t, buf.data[index])
        if isinstance(node, c_ast.UnaryOp):
            if node.op in ("++", "--", "p++", "p--"):
                buf, index, t = yield from self._lvalue(node.expr, env, lane, dims)
                old = V(t, buf.data[index])
                buf.data[index] = convert(_binary("+" if "+" in node.op else "-", old, V(I32, 1)), t).v
                return old if node.op.startswith("p") else V(t, buf.data[index])
            if node.op == "&":
                buf, index, t = yield from self._lvalue(node.expr, env, lane, dims)
                return V(T("p", elem=t), (buf, index))
            if node.op == "sizeof":
                return V(U64, 4)
            value = yield from self._expr(node.expr, env, lane, dims)
            return _unary(node.op, value)
        if isinstance(node, c_ast.BinaryOp):
            left = yield from self._expr(node.left, env, lane, dims)
            if node.op in ("&&", "||"):
                if left.v is POISON:
                    raise Trap("&&/|| on an undefined value")
                if bool(left.v) == (node.op == "||"):
                    return V(I32, int(node.op == "||"))
                right = yield from self._expr(node.right, env, lane, dims)
                return V(I32, POISON if right.v is POISON else int(bool(right.v)))
            right = yield from self._expr(node.right, env, lane, dims)
            return _binary(node.op, left, right)
        if isinstance(node, c_ast.FuncCall):
            return (yield from self._funccall(node, env, lane, dims))
        if isinstance(node, c_ast.ExprList):
            value = V(I32, 0)
            for e in node.exprs:
                value = yield from self._expr(e, env, lane, dims)
            return value
        raise Trap(f"unsupported expression {type(node).__name__}")

    WARP_OPS = frozenset({"__shfl", "__shfl_up", "__shfl_down", "__shfl_xor", "__ballot", "__ballot64", "__any", "__all",
                          "__activemask", "__match_any"}
                         | {n + "_sync" for n in ("__shfl", "__shfl_up", "__shfl_down", "__shfl_xor", "__ballot",
                                                   "__any", "__all", "__match_any")})

    def _funccall(self, node, env, lane, dims):
        name = node.name.name
        args = []
        for e in (node.args.exprs if node.args else []):
            args.append((yield from self._expr(e, env, lane, dims)))
        if name in self.WARP_OPS:
            return (yield ("warp", id(node), name, args))
        if name == "__syncthreads":
            yield ("sync",)
            return V(I32, 0)
        if name == "__syncwarp":
            return V(I32, 0)
        if name == "__lane_id":
            if self.mode == "cuda":
                raise Trap("__lane_id is HIP's")
            return V(U32, self.lane_id(lane))
        if name in ("rocmig_lane_mask", "rocmig_lane_width", "rocmig_ballot_sync"):
            return (yield from self._typed_mask(name, args, lane, id(node)))
        if name in ("atomicAdd", "atomicMax", "atomicOr"):
            (buf, off), value = args[0].v, args[1]
            old = V(args[0].t.elem, buf.data[off])
            op = {"atomicAdd": "+", "atomicOr": "|"}.get(name)
            new = _binary(op, old, value) if op else (old if _binary(">", old, value).v else value)
            buf.data[off] = convert(new, args[0].t.elem).v
            return old
        if name in ("__popc", "__popcll", "__ffs", "__ffsll"):
            t = U64 if name.endswith("ll") else U32
            x = convert(args[0], t).v
            if x is POISON:
                return V(I32, POISON)
            if name.startswith("__popc"):
                return V(I32, x.bit_count())
            return V(I32, (x & -x).bit_length())
        if name in self.funcs:
            return (yield from self._call(self.funcs[name], args, lane, dims))
        raise Trap(f"unknown function {name}")


    def _typed_mask(self, name: str, args: list[V], lane: Lane, site: int):
        """The recipe's warp.TYPED_HELPER templates, instantiated for the mask argument's type: a mask of
        32 bits or less goes on the lane's 32-lane group (width 32, the group's 32 ballot bits), a 64-bit
        one is passed on (width warpSize, the 64-bit ballot)."""
        if self.mode == "cuda":
            raise Trap(f"{name} is the recipe's HIP helper")
        mask, narrow = args[0], args[0].t.bits <= 32
        group = self.lane_id(lane) & 32
        if name == "rocmig_lane_width":
            return V(I32, 32 if narrow else self.wave)
        value = convert(convert(mask, U32), U64) if narrow else convert(mask, U64)
        placed = V(U64, POISON if value.v is POISON else value.v << group) if narrow else value
        if name == "rocmig_lane_mask":
            return placed
        ballot = yield ("warp", site, "__ballot_sync", [placed, args[1]])
        if not narrow or ballot.v is POISON:
            return ballot if not narrow else V(U32, POISON)
        return V(U32, (ballot.v >> group) & 0xFFFFFFFF)


def _constant(node: c_ast.Constant) -> V:
    text = node.value.lower()
    if node.type in ("float", "double"):
        return V(F32 if text.endswith("f") else F64, float(text.rstrip("f")))
    if node.type == "char":
        return V(I32, ord(node.value.strip("'")))
    digits = text.rstrip("ul")
    value = int(digits, 16) if digits.startswith("0x") else int(digits, 8) if digits.startswith("0") and len(digits) > 1 else int(digits)
    suffix = text[len(digits):]
    wide = "ll" in suffix or value >= 1 << 32
    unsigned = "u" in suffix
    if not unsigned and not wide and value >= 1 << 31:  # C: a hex literal that does not fit int is unsigned
        unsigned = digits.startswith("0x")
        wide = not unsigned
    t = T("i", 64 if wide else 32, not unsigned)
    return convert(V(t, value), t)


def _unary(op: str, value: V) -> V:
    if op == "+":
        return value
    if op == "!":
        return V(I32, POISON if value.v is POISON else int(not value.v))
    t = value.t if value.t.kind == "f" or value.t.bits == 64 else common(value.t, I32)
    if value.v is POISON:
        return V(t, POISON)
    if op == "-":
        return convert(V(t, -value.v), t)
    if op == "~":
        return convert(V(t, ~int(value.v)), t)
    raise Trap(f"unsupported unary {op}")


def _binary(op: str, a: V, b: V) -> V:
    if a.t.kind == "p" and op in ("+", "-"):
        buf, off = a.v
        return V(a.t, (buf, off + (b.v if op == "+" else -b.v)))
    if op in ("<<", ">>"):
        t = a.t if a.t.bits == 64 else common(a.t, I32)
        if a.v is POISON or b.v is POISON:
            return V(t, POISON)
        if not 0 <= b.v < t.bits:
            raise Trap(f"shift by {b.v} of a {t.bits}-bit value is undefined")
        x = convert(a, t).v
        if op == "<<":
            return convert(V(t, (x % (1 << t.bits)) << b.v), t)
        return convert(V(t, x >> b.v), t)
    t = common(common(a.t, I32) if a.t.kind == "i" else a.t, common(b.t, I32) if b.t.kind == "i" else b.t)
    compare = op in ("<", ">", "<=", ">=", "==", "!=")
    if a.v is POISON or b.v is POISON:
        return V(I32 if compare else t, POISON)
    x, y = convert(a, t).v, convert(b, t).v
    if compare:
        return V(I32, int({"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y, "==": x == y, "!=": x != y}[op]))
    if op in ("/", "%") and y == 0:
        raise Trap("division by zero")
    if op == "/":
        r = x / y if t.kind == "f" else int(x / y)
    elif op == "%":
        r = x - int(x / y) * y
    else:
        r = {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y, "&": lambda: x & y, "|": lambda: x | y,
             "^": lambda: x ^ y}[op]()
    return convert(V(t, r), t)
