"""SGLang's own parser over a command line (sglang.srt.server_args.ServerArgs.add_cli_args).

Only parsing runs (flag names, value types, choices): building a ServerArgs inspects the GPU, which a
CPU host or a dry run does not have. Importing server_args needs SGLang's import-time dependencies,
triton among them.
"""

from __future__ import annotations

import argparse
import contextlib
import io

from recipes.serve.errors import BAD_FLAG, ServeError


def sglang_parser() -> argparse.ArgumentParser:
    """SGLang's `sglang serve` argument parser. Raises ImportError when SGLang cannot be imported."""
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
