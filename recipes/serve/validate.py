"""SGLang's own parser over a command line (sglang.srt.server_args.ServerArgs.add_cli_args).

Only parsing runs (flag names, value types, choices): building a ServerArgs inspects the GPU, which a
CPU host or a dry run does not have. Importing server_args needs SGLang's import-time dependencies,
triton among them, and takes 12-90 s; known_flags() reads the flag names from server_args.py's source
(its `add_argument` calls) without importing it, in well under a second, for the check that runs
before the preflight.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import io
import warnings
from pathlib import Path

from recipes.serve.errors import BAD_FLAG, ServeError

# sglang/srt/layers/attention/fla/utils.py warns at import when triton has no GPU backend (the CPU
# lane); the entrypoint imports SGLang only for its parser, where that is noise.
_IMPORT_NOISE = "Triton is not supported on current platform"


def server_args_source() -> Path | None:
    """Path of the installed sglang/srt/server_args.py, found without importing SGLang; None when
    SGLang is not installed."""
    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "srt" / "server_args.py"
    return path if path.is_file() else None


def known_flags(source: Path) -> frozenset[str]:
    """Every option string of the `add_argument` calls in the Python file `source` (with the `--no-X`
    twin argparse adds for action=BooleanOptionalAction), plus -h/--help. Raises OSError when the file
    cannot be read, SyntaxError when it is not Python."""
    names = {"-h", "--help"}
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"), str(source))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                 and a.value.startswith("-")]
        names.update(flags)
        if any(k.arg == "action" and ast.unparse(k.value).endswith("BooleanOptionalAction") for k in node.keywords):
            names.update("--no-" + f[2:] for f in flags if f.startswith("--"))
    return frozenset(names)


def check_known(argv: list[str], known: frozenset[str]) -> None:
    """Raise ServeError(BAD_FLAG) naming the first `--flag` of argv that no known flag starts with (argparse
    takes unambiguous prefixes, so `--tp` stands for --tp-size; the full parser judges the rest). Tokens
    after a bare `--` are not read."""
    for arg in argv:
        if arg == "--":
            return
        name = arg.partition("=")[0]
        if name.startswith("--") and not any(k.startswith(name) for k in known):
            raise ServeError(BAD_FLAG, f"unrecognized argument {name}: not a flag of SGLang's server "
                             "(sglang/srt/server_args.py); docker run's own options go before the image name")


def sglang_parser() -> argparse.ArgumentParser:
    """SGLang's `sglang serve` argument parser. Raises ImportError when SGLang cannot be imported."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_IMPORT_NOISE, category=UserWarning)
        from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve", exit_on_error=False)
    ServerArgs.add_cli_args(parser)
    return parser


def check(args: tuple[str, ...] | list[str], parser: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    """Parse `args` with SGLang's parser; returns the namespace. Raises ServeError(BAD_FLAG) with
    argparse's message for an unknown flag, a bad value or a missing required one."""
    parser = parser or sglang_parser()
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(list(args))
    except (argparse.ArgumentError, SystemExit) as exc:
        text = str(exc) if isinstance(exc, argparse.ArgumentError) else err.getvalue().strip().splitlines()[-1]
        raise ServeError(BAD_FLAG, f"SGLang's parser refused the command line: {text}") from None
