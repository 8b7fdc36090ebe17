"""Make TileLang's HIP templates compile against Debian's ROCm packages.

TileLang 0.1.15's ``src/tl_templates/hip/common.h`` includes
``<rocwmma/rocwmma.hpp>`` although it uses no rocWMMA symbol; it only needs the
``hip_bfloat16`` type that header pulls in. Debian experimental's
``librocwmma-dev 7.2.4-1~exp1`` ships ``rocwmma.hpp`` without its ``internal/``
headers (a packaging bug), and without the package the header is missing
altogether, so every TileLang HIP compile fails with "rocwmma/rocwmma.hpp file
not found". This script replaces that one include by ``<hip/hip_bfloat16.h>``
(HIP's own header for the type). Measured in this project: after it, GEMM,
FlashAttention and RMSNorm compile for gfx90a, gfx942, gfx950 and gfx1100.

Idempotent: a second run finds the marker and changes nothing. Run at image
build time, after ``pip install tilelang``:

    python3 patch_tilelang_hip.py            # finds tilelang via the running python
    python3 patch_tilelang_hip.py --common-h PATH

Exit status: 0 patched or already patched; 2 the file or the include line is
not found (TileLang changed: check whether the workaround is still needed).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

INCLUDE = "#include <rocwmma/rocwmma.hpp>"
MARKER = "rocmig: was <rocwmma/rocwmma.hpp>"
REPLACEMENT = f"#include <hip/hip_bfloat16.h>  // {MARKER}, used only for hip_bfloat16"
RELATIVE = Path("src") / "tl_templates" / "hip" / "common.h"


class PatchError(Exception):
    """The header or the include line to replace is not where expected."""


def find_common_h() -> Path:
    """Path of ``common.h`` inside the installed tilelang package (found without importing it).

    Raises:
        PatchError: tilelang is not installed for this interpreter, or the file is missing.
    """
    spec = importlib.util.find_spec("tilelang")
    if spec is None or not spec.submodule_search_locations:
        raise PatchError(f"tilelang is not installed for {sys.executable}; pass --common-h PATH")
    path = Path(next(iter(spec.submodule_search_locations))) / RELATIVE
    if not path.is_file():
        raise PatchError(f"{path} not found: this tilelang has no HIP templates at the expected place")
    return path


def patch_text(text: str) -> tuple[str, bool]:
    """Return ``(new_text, changed)``.

    Raises:
        PatchError: neither the rocWMMA include nor the marker of an earlier patch is present.
    """
    if MARKER in text:
        return text, False
    lines = text.splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if line.strip() == INCLUDE]
    if not hits:
        raise PatchError(f"line {INCLUDE!r} not found; TileLang changed: check whether the workaround is needed")
    for i in hits:
        newline = "\n" if lines[i].endswith("\n") else ""
        lines[i] = REPLACEMENT + newline
    return "".join(lines), True


def patch_file(path: Path) -> bool:
    """Patch ``path`` in place; True when it changed, False when it was already patched.

    Raises:
        PatchError: as ``patch_text``, naming ``path``.
    """
    try:
        new, changed = patch_text(path.read_text())
    except PatchError as exc:
        raise PatchError(f"{path}: {exc}") from None
    if changed:
        path.write_text(new)
    return changed


def main(argv: list[str] | None = None) -> int:
    """CLI entry; see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--common-h", type=Path, help="path of tl_templates/hip/common.h (default: found via tilelang)")
    args = ap.parse_args(argv)
    try:
        path = args.common_h or find_common_h()
        if args.common_h is not None and not path.is_file():
            raise PatchError(f"--common-h {path}: no such file")
        changed = patch_file(path)
    except PatchError as exc:
        print(f"patch_tilelang_hip: {exc}", file=sys.stderr)
        return 2
    print(f"patch_tilelang_hip: {'patched' if changed else 'already patched'} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
