"""The defines a PyTorch extension's setup.py passes in the build that migrate ports: its GPU build.

torch.utils.cpp_extension builds a CUDAExtension on ROCm as it does on CUDA (torch.cuda.is_available()
is true on ROCm, CUDA_HOME's role is ROCM_HOME's), so a define that setup.py gives in its GPU branch -
`if CPU_ONLY: ... else: macro = [("USE_CUDA", None)]` (spatial-correlation-sampler 0.5.0), `if
torch.cuda.is_available() or FORCE_CUDA: define_macros += [("WITH_CUDA", None)]` - is one the project's
ROCm build compiles with. Without it the GPU half of a unit (`#ifdef USE_CUDA`) is never compiled and a
unit reads "ok" on code that was not checked. The file is read with Python's ast, not run.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

NAME = re.compile(r"[A-Za-z_]\w*")
D_FLAG = re.compile(r"-D([A-Za-z_]\w*)(?:=(\S*))?")
# a test of the GPU build (body taken on it) and of the CPU-only one (its else is the GPU build)
GPU_TEST = re.compile(r"cuda|gpu|rocm|hip\b|is_available|CUDA_HOME|ROCM_HOME", re.I)
CPU_TEST = re.compile(r"cpu", re.I)
GPU_EXTENSION = re.compile(r"\bCUDAExtension\b")


def _branch_is_gpu(node: ast.If, in_body: bool, source: str) -> bool:
    """Whether the branch of `node` (its body when in_body, else its orelse) is taken by the GPU build:
    a body under a test that names the GPU without negating it or naming the CPU, the else of a test
    of the CPU-only build or of a negated GPU test, or a branch that builds a CUDAExtension."""
    test = ast.get_source_segment(source, node.test) or ""
    negated = isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
    branch = node.body if in_body else node.orelse
    if any(GPU_EXTENSION.search(ast.get_source_segment(source, stmt) or "") for stmt in branch):
        return True
    gpu, cpu = bool(GPU_TEST.search(test)), bool(CPU_TEST.search(test))
    if in_body:
        return gpu and not cpu and not negated
    return (cpu and not gpu and not negated) or (gpu and negated)


def _formatted(node: ast.AST) -> bool:
    """Whether `node` builds a string when the build runs: `"-DV=%s" % v` or `"-DV={}".format(v)` (an
    f-string is an ast.JoinedStr): its literal part is not the define's value."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"


def _defines(node: ast.AST) -> Iterator[tuple[str, str]]:
    """(NAME, VALUE or "") of the define_macros entries (`("NAME", None)`, `("NAME", "1")`) and -D flags
    (`"-DNAME=1"`) written literally in `node`."""
    if isinstance(node, ast.Tuple) and len(node.elts) == 2 and isinstance(node.elts[0], ast.Constant) \
            and isinstance(node.elts[0].value, str) and NAME.fullmatch(node.elts[0].value) \
            and isinstance(node.elts[1], ast.Constant) and (node.elts[1].value is None or isinstance(node.elts[1].value, (str, int))):
        value = node.elts[1].value
        yield node.elts[0].value, "" if value is None else str(value)
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        m = D_FLAG.fullmatch(node.value.strip())
        if m:
            yield m.group(1), m.group(2) or ""


# a function, class, keyword or dict key whose name says its flags are the GPU compiler's
GPU_CONTEXT = re.compile(r"cuda|nvcc|gpu|hip|rocm", re.I)


def _gpu_context(node: ast.AST) -> bool:
    """Whether `node` opens a part of a build helper whose flags are the GPU compiler's: a function or
    class named for it (ColossalAI 0.5.0's `_CudaExtension.nvcc_flags`), a keyword argument
    (`extra_cuda_cflags=`), or a dict entry keyed "nvcc" (`extra_compile_args={"nvcc": [...]}`)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return bool(GPU_CONTEXT.search(node.name))
    if isinstance(node, ast.keyword):
        return bool(node.arg and GPU_CONTEXT.search(node.arg))
    return False


def gpu_build_defines(source: str, helper: bool = False) -> list[tuple[str, str, int]]:
    """[(NAME, VALUE or "", line)] of the defines a setup.py (its text) passes in its GPU build: those
    written outside every `if`, or whose every enclosing `if` branch is one the GPU build takes
    (_branch_is_gpu); a define under any other condition (a debug switch, an environment variable), or
    inside a conditional expression, is left out, and so are a string formatted when the build runs
    (_formatted, an f-string) and a reserved name (`__HIP_PLATFORM_AMD__`). For a `helper` (a build module setup.py imports, a JIT
    loader) the define must also lie in a part of it that names the GPU compiler (_gpu_context; a dict
    entry keyed "nvcc"), since such modules hold the CPU build's flags too. [] for a file Python cannot
    parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found: list[tuple[str, str, int]] = []

    def visit(node: ast.AST, gpu: bool, context: bool) -> None:
        if isinstance(node, (ast.IfExp, ast.JoinedStr)) or _formatted(node):
            return
        context = context or _gpu_context(node)
        if gpu and context:
            found.extend((name, value, getattr(node, "lineno", 0)) for name, value in _defines(node)
                         if not name.startswith("__"))  # reserved: the compiler's and HIP's own macros
        if isinstance(node, ast.If):
            visit(node.test, gpu, context)
            for stmt in node.body:
                visit(stmt, gpu and _branch_is_gpu(node, True, source), context)
            for stmt in node.orelse:
                visit(stmt, gpu and _branch_is_gpu(node, False, source), context)
            return
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                nvcc = isinstance(key, ast.Constant) and isinstance(key.value, str) and bool(GPU_CONTEXT.search(key.value))
                if key is not None:
                    visit(key, gpu, context)
                visit(value, gpu, context or nvcc)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, gpu, context)

    visit(tree, True, not helper)
    return found
