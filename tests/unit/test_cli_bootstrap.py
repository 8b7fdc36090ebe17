"""`buildctl base bootstrap SUITE`: a suite debootstrap has no script for is bad input (exit 2) before
debootstrap or Docker run; a known one passes the check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from buildctl.bootstrap import SCRIPTS, check_suite
from buildctl.errors import InputError


def test_suite_is_checked_against_debootstraps_scripts(tmp_path: Path) -> None:
    (tmp_path / "trixie").write_text("# a debootstrap script\n")
    check_suite("trixie", tmp_path)
    with pytest.raises(InputError, match=r"SUITE: 'trixy' is not a suite this debootstrap knows .*e\.g\. trixie"):
        check_suite("trixy", tmp_path)
    with pytest.raises(InputError, match="not a Debian suite name"):
        check_suite("trixie; rm -rf /", tmp_path)


def test_without_debootstrap_only_the_shape_is_checked(tmp_path: Path) -> None:
    check_suite("trixie", tmp_path / "none")


@pytest.mark.skipif(not SCRIPTS.is_dir(), reason="debootstrap is not installed (scripts/setup-docker.sh installs it)")
def test_command_refuses_an_unknown_suite_before_docker() -> None:
    proc = subprocess.run([sys.executable, "-m", "buildctl", "base", "bootstrap", "nosuchsuite"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"buildctl: error: SUITE: 'nosuchsuite' is not a suite this debootstrap knows (no {SCRIPTS}/nosuchsuite; "
        f"e.g. {', '.join(sorted(n for n in ('bookworm', 'trixie', 'forky', 'sid') if (SCRIPTS / n).exists()))})"]
