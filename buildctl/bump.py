"""`buildctl matrix bump SOURCE VERSION [--from VERSION]`: add a ROCm release to matrix.yaml.

The new entry is a copy of the nearest release of the source (the newest line below VERSION, or --from),
with its versions and the pins that follow from them updated; everything else of matrix.yaml (comments,
key order, flow style, quoting) is kept byte for byte (ruamel.yaml round trip). Comments of the copied entry
that name the old line are dropped from the copy and quoted in what to confirm; anchored values stay aliases. The result is validated
as `buildctl` loads it before matrix.yaml is replaced; what was copied and needs a human's confirmation
(package names, torch pins, OS, rules naming the old line) is returned for printing.

A patch release of a line matrix.yaml has (7.2.4 -> 7.2.5) updates that line's `full`; a version that is
there already is refused (ConfigError, exit 2).
"""

from __future__ import annotations

import copy
import io
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.representer import RoundTripRepresenter

from buildctl.console import buildctl_command
from buildctl.errors import ConfigError
from buildctl.load import load_project
from buildctl.model import version_tuple

FULL = re.compile(r"^\d+\.\d+\.\d+$")
LINE = re.compile(r"^\d+\.\d+$")


class _Representer(RoundTripRepresenter):
    """matrix.yaml writes `null`, not an empty value."""


_Representer.add_representer(type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null"))


def _yaml() -> YAML:
    y = YAML()
    y.Representer = _Representer
    y.preserve_quotes = True
    y.width = 4096
    y.indent(mapping=2, sequence=4, offset=2)
    return y


@dataclass(frozen=True)
class Bump:
    """The outcome: the new matrix.yaml text, what changed, and what a human must confirm."""

    text: str
    summary: str
    confirm: list[str]


def _quoted_like(old: Any, value: str) -> Any:
    """`value` with the quoting style of `old` (a ruamel scalar keeps its quotes)."""
    return type(old)(value) if isinstance(old, str) and type(old) is not str else value


def plan_bump(matrix_text: str, source: str, version: str, from_line: str | None = None) -> Bump:
    """Compute the bump on matrix.yaml's text (nothing is written). version: the full release X.Y.Z.

    Raises ConfigError when version is not X.Y.Z, the source has no release to copy, --from names no line
    of the source, or the version is in matrix.yaml already.
    """
    if not FULL.match(version):
        raise ConfigError(f"VERSION: {version!r} is not a full release X.Y.Z (e.g. 7.2.5)")
    if from_line is not None and not LINE.match(from_line):
        raise ConfigError(f"--from: {from_line!r} is not a ROCm line X.Y (e.g. 7.2)")
    y = _yaml()
    data = y.load(matrix_text)
    releases: CommentedSeq = data["rocm"]
    own = [r for r in releases if r["source"] == source]
    if not own:
        sources = sorted({str(r["source"]) for r in releases})
        raise ConfigError(f"SOURCE: {source!r} has no release in matrix.yaml to copy (sources: {', '.join(sources)})")
    line = ".".join(version.split(".")[:2])
    for r in own:
        if str(r["full"]) == version:
            raise ConfigError(f"matrix.yaml: rocm[{source} {r['version']}] is already ROCm {version}; nothing to bump")
    existing = next((r for r in own if str(r["version"]) == line), None)
    confirm: list[str] = []
    if existing is not None:
        old_full = str(existing["full"])
        if version_tuple(version) < version_tuple(old_full):
            raise ConfigError(f"VERSION: {version} is older than rocm[{source} {line}].full {old_full}")
        existing["full"] = _quoted_like(existing["full"], version)
        summary = f"rocm[{source} {line}].full: {old_full} -> {version}"
        confirm.append(f"packages of {source} {line} still fit {version} (same names on the repository)")
        if existing.get("torch"):
            confirm.append(f"torch pins of {source} {line} ({_pins(existing['torch'])}) are the ones for {version}")
    else:
        base = _nearest(own, line, from_line, source)
        # Anchored values (`tools: *venv_tools`) stay shared, so the copy writes the alias again.
        entry = copy.deepcopy(base, {id(node): node for node in _anchored(base)})
        for dropped in _drop_comments_naming(entry, str(base["version"])):
            confirm.append(f"dropped a comment copied from {source} {base['version']} that names it "
                           f"({dropped!r}): say again what holds for {version}")
        entry["version"] = _quoted_like(base["version"], line)
        entry["full"] = _quoted_like(base["full"], version)
        if "support" in entry:
            entry["support"] = _flow({"status": "supported"})
        if entry.get("torch"):
            entry["torch"]["index"] = f"rocm{line}"
            confirm.append(f"torch pins copied from {source} {base['version']} ({_pins(entry['torch'])}): the "
                           f"PyTorch index rocm{line} must have them (`{buildctl_command(f'plan --check-pins --source {source} --rocm {line} --all')}`)")
        confirm.append(f"packages copied from {source} {base['version']}: the same package names exist for {version}")
        if entry.get("therock"):
            confirm.append(f"therock pins copied from {source} {base['version']} ({_pins(entry['therock'])}): "
                           f"set the {version} ones TheRock's index serves")
        for key in ("ubuntu", "suite", "apt_suite"):
            if key in entry and entry[key] is not None:
                confirm.append(f"{key}: {entry[key]} (copied) is the OS {version} ships for")
        releases.insert(releases.index(own[-1]) + 1 if version_tuple(line) > version_tuple(str(own[-1]["version"]))
                        else releases.index(_first_newer(own, line)), entry)
        summary = f"rocm[{source} {line}]: new release {version}, copied from {source} {base['version']}"
        for rule in data.get("rules") or []:
            when = rule.get("when", {})
            if source in (when.get("source") or [source]) and str(base["version"]) in [str(v) for v in when.get("rocm") or []]:
                confirm.append(f"rule {rule['id']} names {source} {base['version']}: does it apply to {line} too?")
    out = io.StringIO()
    y.dump(data, out)
    return Bump(out.getvalue(), summary, confirm)


def _anchored(node: Any) -> list[Any]:
    """The values below `node` that carry a YAML anchor (`&name`), depth first."""
    children = node.values() if isinstance(node, CommentedMap) else node if isinstance(node, CommentedSeq) else []
    found = []
    for child in children:
        anchor = getattr(child, "anchor", None)
        if anchor is not None and anchor.value:
            found.append(child)
        else:
            found += _anchored(child)
    return found


def _drop_comments_naming(node: Any, line: str) -> list[str]:
    """Remove from `node` (a copied release, in place) every comment block that names ROCm `line` or a
    release of it (`7.2`, `7.2.4`, `rocm7.2`): copied to a new release it would state the old one's facts.
    Returns the dropped blocks' text, each joined to one line.

    ruamel.yaml keeps a mapping's or sequence's comments in its `.ca.items`: per key, one-line tokens of the
    lines before it (index 1) and one token after its value (index 2) whose first line ends the value's own
    line (an inline comment or just a newline) and whose further lines are comment lines.
    """
    names = re.compile(rf"(?<![\d.]){re.escape(line)}(?!\d)")
    dropped: list[str] = []

    def kept(text: str, post: bool) -> str:
        lines = text.splitlines(keepends=True)
        head = lines[:1] if post else []
        out: list[str] = []
        block: list[str] = []
        for part in (lines[1:] if post else lines) + [""]:
            if part.lstrip().startswith("#"):
                block.append(part)
                continue
            if names.search("".join(block)):
                dropped.append(" ".join(b.strip().lstrip("#").strip() for b in block))
            else:
                out += block
            block = []
            out.append(part)
        if head and names.search(head[0]):
            dropped.append(head[0].strip().lstrip("#").strip())
            head = ["\n"]
        return "".join(head + out)

    if isinstance(node, (CommentedMap, CommentedSeq)):
        for tokens in node.ca.items.values():
            if len(tokens) > 1 and isinstance(tokens[1], list):
                for token in tokens[1]:
                    token.value = kept(token.value, post=False)
                tokens[1] = [token for token in tokens[1] if token.value] or None
            if len(tokens) > 2 and tokens[2] is not None:
                tokens[2].value = kept(tokens[2].value, post=True)
                if tokens[2].value == "\n":
                    tokens[2] = None
        for child in node.values() if isinstance(node, CommentedMap) else node:
            dropped += _drop_comments_naming(child, line)
    return dropped


def _flow(values: dict[str, Any]) -> CommentedMap:
    m = CommentedMap(values)
    m.fa.set_flow_style()
    return m


def _pins(torch: CommentedMap) -> str:
    return ", ".join(f"{k} {v}" for k, v in torch.items() if k != "index")


def _nearest(own: list[CommentedMap], line: str, from_line: str | None, source: str) -> CommentedMap:
    if from_line is not None:
        found = next((r for r in own if str(r["version"]) == from_line), None)
        if found is None:
            lines = ", ".join(str(r["version"]) for r in own)
            raise ConfigError(f"--from: {source} has no line {from_line} (lines: {lines})")
        return found
    older = [r for r in own if version_tuple(str(r["version"])) < version_tuple(line)]
    return max(older or own, key=lambda r: version_tuple(str(r["version"])))


def _first_newer(own: list[CommentedMap], line: str) -> CommentedMap:
    return min((r for r in own if version_tuple(str(r["version"])) > version_tuple(line)),
               key=lambda r: version_tuple(str(r["version"])))


def validate(project_root: Path, matrix_text: str) -> None:
    """Load `matrix_text` as buildctl does, beside project_root's images/ and templates/.

    Raises ConfigError (naming the key) when the bumped matrix does not validate.
    """
    with tempfile.TemporaryDirectory(prefix="rocmig-bump-") as tmp:
        root = Path(tmp)
        (root / "matrix.yaml").write_text(matrix_text)
        for part in ("images", "templates"):
            (root / part).symlink_to((project_root / part).resolve())
        try:
            load_project(root)
        except ConfigError as exc:
            raise ConfigError(f"the bumped matrix.yaml does not validate: {exc}".replace(str(root) + "/", "")) from None


def apply_bump(project_root: Path, source: str, version: str, from_line: str | None = None) -> Bump:
    """Bump project_root/matrix.yaml in place (validated first; on any error the file is unchanged)."""
    path = project_root / "matrix.yaml"
    bump = plan_bump(path.read_text(), source, version, from_line)
    validate(project_root, bump.text)
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(bump.text)
    tmp.replace(path)
    return bump
