"""Command line of the migrate recipe (run inside the dev image):

    python3 -m migrate SRC --arch gfx942 [--arch gfx90a ...] --out DIR [--jobs N] [--baseline]
        [--fail-on error|warning|never] [--arch-table /etc/rocmig/archs.json] [--opt O0|O1|O2|O3]
        [--max-file-bytes N] [--timeout S] [--hipcc-flag FLAG ...] [--compile-commands FILE]
        [--include-dir DIR ...] [--define NAME[=VALUE] ...] [--undefine NAME ...]

Exit codes: 0 done (nothing at or above --fail-on), 1 findings or compile failures at or above
--fail-on, 2 bad input or flag, 3 hipify-perl / hipcc missing, 5 the recipe crashed (a bug: the
traceback is on stderr, no report), 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from . import archs, pipeline, report, rules, tree
from .compile import find_hipcc
from .errors import InputError, MigrateError, ToolError

PROGRESS = "migrate: progress: "
CRASHED = 5


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        raise InputError(f"usage: {message}")


def parser() -> argparse.ArgumentParser:
    """The recipe's argument parser (buildctl.migrate_options mirrors its options on the host)."""
    p = _Parser(prog="python3 -m migrate", description="Migrate a CUDA tree to HIP and compile it per offload arch.")
    p.add_argument("src", type=Path, help="CUDA source tree or one source file (read only)")
    p.add_argument("--arch", action="append", required=True, help="offload arch (repeat), e.g. gfx942")
    p.add_argument("--out", type=Path, required=True, help="output folder (created; a previous run's output is replaced)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel hipify / hipcc processes")
    p.add_argument("--baseline", action="store_true", help="also compile plain hipify-perl output, report the delta")
    p.add_argument("--fail-on", choices=("error", "warning", "never"), default="error")
    p.add_argument("--arch-table", type=Path, default=archs.DEFAULT_TABLE)
    p.add_argument("--max-file-bytes", type=int, default=tree.DEFAULT_MAX_BYTES)
    p.add_argument("--timeout", type=int, default=900, help="seconds per hipcc call")
    p.add_argument("--hipcc-flag", action="append", default=[], help="extra hipcc flag (repeat), e.g. -DBF16_AVAILABLE")
    p.add_argument("--opt", choices=("O0", "O1", "O2", "O3"), default="O0",
                   help="optimization level of the compile check (back-end failures are retried at O2)")
    p.add_argument("--compile-commands", type=Path, default=None,
                   help="compile_commands.json (CMake, bear): each unit's include folders and defines")
    p.add_argument("--include-dir", action="append", default=[],
                   help="include folder for every unit, relative to SRC (repeat)")
    p.add_argument("--define", action="append", default=[], help="NAME or NAME=VALUE for every unit (repeat)")
    p.add_argument("--only", action="append", default=[], metavar="GLOB",
                   help="compile only the units whose path in SRC matches (repeat); the whole tree stays for includes")
    p.add_argument("--undefine", action="append", default=[],
                   help="NAME undefined for every unit and never inferred, e.g. the project's own ROCm switch (repeat)")
    return p


def parse(argv: list[str]) -> argparse.Namespace:
    """Parse the command line; raises InputError (exit 2) on a bad flag."""
    args = parser().parse_args(argv)
    if args.jobs < 1:
        raise InputError(f"--jobs {args.jobs}: must be 1 or more")
    if args.max_file_bytes < 1:
        raise InputError(f"--max-file-bytes {args.max_file_bytes}: must be 1 or more")
    return args


def _probe(name: str) -> archs.Arch | None:
    """An offload arch outside the arch table, as the image's hipcc compiles for it (None without hipcc)."""
    try:
        return archs.toolchain_arch(name, find_hipcc())
    except ToolError:
        return None


def main(argv: list[str] | None = None) -> int:
    """Run the recipe; returns the exit code (see module doc). Errors print one line to stderr."""
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
        table = archs.load_table(args.arch_table)
        selected = archs.select(table, args.arch, _probe)
        opts = pipeline.Options(src=args.src, out=args.out, archs=tuple(selected), jobs=args.jobs,
                                baseline=args.baseline, max_file_bytes=args.max_file_bytes, timeout=args.timeout,
                                extra_flags=tuple(args.hipcc_flag), opt=f"-{args.opt}",
                                compile_commands=args.compile_commands, include_dirs=tuple(args.include_dir),
                                defines=tuple(args.define), undefines=tuple(args.undefine), only=tuple(args.only))
        if (args.out / pipeline.MARKER).exists():
            report.remove_reports(args.out)
        data = pipeline.run(opts, rules.load_rules(), progress)
        data["summary"] = report.summarize(data, args.fail_on)
        report.write_all(args.out, data)
    except MigrateError as exc:
        print(f"migrate: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("migrate: interrupted; no report written", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: exit 5, so that no caller reads Python's exit 1 as --fail-on met
        traceback.print_exc(file=sys.stderr)
        print(f"migrate: internal error, no report written: {type(exc).__name__}: {exc}", file=sys.stderr)
        return CRASHED
    print(report.summary_line(data["summary"], args.out / "report.html"), flush=True)
    return data["summary"]["exit_code"]


def progress(text: str) -> None:
    """Print one progress line (PROGRESS + text) to stderr at once; `buildctl migrate` shows these lines
    live in a terminal, as plain lines in a pipe, and drops them with -q."""
    print(PROGRESS + text, file=sys.stderr, flush=True)
