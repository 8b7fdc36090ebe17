"""Reading SGLang flags from the user's command line without SGLang's parser (which needs the GPU stack).

Spellings are SGLang 0.5.10.post1's (sglang/srt/server_args.py, ServerArgs.add_cli_args) plus `--tp`,
the abbreviation of --tp-size that argparse accepts and SGLang's docs use. Both `--flag value` and
`--flag=value` are read; as in argparse, the last occurrence wins.
"""

from __future__ import annotations

SPELLINGS: dict[str, tuple[str, ...]] = {
    "model": ("--model-path", "--model"),
    "tp": ("--tensor-parallel-size", "--tp-size", "--tp"),
    "host": ("--host",),
    "port": ("--port",),
    "device": ("--device",),
    "attention": ("--attention-backend",),
    "dtype": ("--dtype",),
    "seed": ("--random-seed",),
    "log_level": ("--log-level",),
    "trust_remote_code": ("--trust-remote-code",),
}


def value(argv: list[str], key: str) -> str | None:
    """The value given for `key` (a SPELLINGS key) in argv, or None when absent. Raises KeyError for an
    unknown key, ValueError naming the flag when it is last in argv with no value."""
    found = None
    names = SPELLINGS[key]
    for i, arg in enumerate(argv):
        name, eq, inline = arg.partition("=")
        if name not in names:
            continue
        if eq:
            found = inline
        elif i + 1 < len(argv):
            found = argv[i + 1]
        else:
            raise ValueError(f"{name} needs a value")
    return found


def present(argv: list[str], key: str) -> bool:
    """Whether any spelling of `key` occurs in argv (switches such as --trust-remote-code)."""
    names = SPELLINGS[key]
    return any(arg.partition("=")[0] in names for arg in argv)


def int_value(argv: list[str], key: str, default: int) -> int:
    """value() as an int, `default` when absent. Raises ValueError naming the flag for a non-integer."""
    raw = value(argv, key)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{SPELLINGS[key][0]} {raw!r}: expected an integer") from None
