"""`buildctl base bootstrap SUITE`: make a `debian:SUITE` image without a registry.

debootstrap --variant=minbase into a temporary folder, then `tar | docker import` (about 40 s here,
docs/design.md). For hosts that reach no registry (air-gapped, or this workplace).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from buildctl.errors import BuildError, EngineError, InputError

DEFAULT_MIRROR = "http://deb.debian.org/debian"
SCRIPTS = Path("/usr/share/debootstrap/scripts")


def check_suite(suite: str, scripts: Path = SCRIPTS) -> None:
    """Refuse a SUITE debootstrap has no script for (InputError, exit 2) before anything runs.

    debootstrap reads /usr/share/debootstrap/scripts/<suite>; without that folder (debootstrap not
    installed) only the name's shape is checked and bootstrap() says what is missing.
    """
    if not re.fullmatch(r"[a-z][a-z0-9.-]*", suite):
        raise InputError(f"SUITE: {suite!r} is not a Debian suite name (e.g. trixie, bookworm)")
    if scripts.is_dir() and not (scripts / suite).exists():
        known = sorted(p.name for p in scripts.iterdir() if p.name in ("bookworm", "trixie", "forky", "sid"))
        raise InputError(f"SUITE: {suite!r} is not a suite this debootstrap knows (no {scripts / suite}; "
                         f"e.g. {', '.join(known) or 'trixie'})")


def bootstrap(suite: str, tag: str, mirror: str = DEFAULT_MIRROR, workdir: Path | None = None) -> str:
    """Create the Docker image `tag` from a minbase debootstrap of `suite`; returns the image ID.

    Raises EngineError when debootstrap is missing and BuildError when debootstrap or the import fails
    (the temporary root filesystem is removed either way).
    """
    if shutil.which("debootstrap") is None:
        raise EngineError("debootstrap is not installed: `apt-get install debootstrap` (needs root)")
    root = Path(tempfile.mkdtemp(prefix=f"rocmig-{suite}-", dir=workdir))
    try:
        result = subprocess.run(["debootstrap", "--variant=minbase", suite, str(root), mirror],
                                capture_output=True, text=True)
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-5:])
            raise BuildError(f"debootstrap {suite} from {mirror} failed (exit {result.returncode}):\n{tail}")
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        assert tar.stdout is not None
        imported = subprocess.run(["docker", "import", "-", tag], stdin=tar.stdout, capture_output=True, text=True)
        tar.stdout.close()
        if tar.wait() != 0 or imported.returncode != 0:
            raise BuildError(f"docker import of {suite} as {tag} failed: {imported.stderr.strip()}")
        return imported.stdout.strip()
    finally:
        shutil.rmtree(root, ignore_errors=True)
