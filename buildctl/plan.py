"""Expand the matrix into cells and apply the exclusion rules (second arrow of the flow).

A cell is one point of the matrix: image role × (source, ROCm release) × GPU arch. Excluded cells keep
the id and the reason of the rule that excluded them.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, replace
from typing import Any

from buildctl.errors import ConfigError
from buildctl.load import Project
from buildctl.model import (
    SUPPORT_ORDER,
    Arch,
    ImageSpec,
    OsFacts,
    RocmRelease,
    Rule,
    Source,
    Support,
    version_tuple,
)

ARCH_FIRST_ROCM = "arch-first-rocm"
END_OF_LIFE = "end-of-life"
PARENT_EXCLUDED = "parent-excluded"
NO_PACKAGES = "no-packages"
NEEDS_ROCM_TORCH = "needs-rocm-torch"
FRAMEWORK_ARCHS = "framework-archs"
REQUIRES_PYTHON = "requires-python"
REPOSITORY = "rocmig"


@dataclass(frozen=True)
class Cell:
    """One image of the matrix. `tag` is `rocm<full>-<arch>`, suffixed `-debian` for the debian source."""

    image: ImageSpec
    release: RocmRelease
    source: Source
    arch_name: str
    arch: Arch
    components: tuple[str, ...] = ()
    excluded_components: tuple[tuple[str, str, str], ...] = ()  # (component, rule id, reason)
    os: OsFacts | None = None  # matrix.yaml's facts of os_image (users, groups, python), when listed

    def has(self, component: str) -> bool:
        """True when `component` (a matrix.yaml framework) is part of this cell's image."""
        return component in self.components

    @property
    def role(self) -> str:
        return self.image.role

    @property
    def tag(self) -> str:
        suffix = "" if self.release.source == "amd" else f"-{self.release.source}"
        return f"rocm{self.release.full}-{self.arch_name}{suffix}"

    @property
    def alias_tags(self) -> tuple[str, ...]:
        """Moving aliases: the ROCm minor line instead of the full release."""
        suffix = "" if self.release.source == "amd" else f"-{self.release.source}"
        return (f"rocm{self.release.version}-{self.arch_name}{suffix}",)

    @property
    def local_refs(self) -> list[str]:
        """The references a build gives the image: the full tag, then the moving aliases."""
        return [self.ref] + [f"{REPOSITORY}/{self.role}:{t}" for t in self.alias_tags]

    @property
    def ref(self) -> str:
        """Full image reference, e.g. rocmig/dev:rocm7.2.4-gfx942-debian."""
        return f"{REPOSITORY}/{self.role}:{self.tag}"

    @property
    def parent_ref(self) -> str | None:
        return None if self.image.parent is None else f"{REPOSITORY}/{self.image.parent}:{self.tag}"

    @property
    def name(self) -> str:
        """Bake target name: letters, digits, '-' and '_' only."""
        return f"{self.role}_{self.tag}".replace(".", "_")

    @property
    def support(self) -> tuple[str, Support]:
        """(what, lifecycle) of the cell: its ROCm release's or its arch's (matrix.yaml `support`), whichever
        is further along supported < maintenance < deprecated < end-of-life; what names it, e.g. 'amd 6.1'."""
        release = (f"{self.release.source} {self.release.version}", self.release.support)
        arch = (self.arch_name, self.arch.support)
        return max(release, arch, key=lambda x: SUPPORT_ORDER.index(x[1].status))

    @property
    def os_image(self) -> str:
        """The OS base image of the source, e.g. ubuntu:22.04 or debian:trixie."""
        return self.source.os_image.format(ubuntu=self.release.ubuntu, suite=self.release.suite)

    def coordinates(self) -> dict[str, Any]:
        """The cell as plain data (JSON, labels, /etc/rocmig/cell.json)."""
        return {
            "image": self.role,
            "source": self.release.source,
            "rocm": self.release.version,
            "rocm_full": self.release.full,
            "arch": self.arch_name,
            "family": self.arch.family,
            "wavefront": self.arch.wavefront,
            "lds_bytes": self.arch.lds_bytes,
            "os": self.release.os_version,
            "ref": self.ref,
            "tag": self.tag,
            "parent": self.parent_ref,
            "components": list(self.components),
            "excluded_components": [{"component": c, "rule": r, "reason": why}
                                    for c, r, why in self.excluded_components],
        }


@dataclass(frozen=True)
class Excluded:
    """A cell left out of the plan, with the rule id and the reason."""

    cell: Cell
    rule: str
    reason: str


@dataclass(frozen=True)
class Selection:
    """Filters; an empty tuple selects everything on that axis."""

    sources: tuple[str, ...] = ()
    rocm: tuple[str, ...] = ()
    archs: tuple[str, ...] = ()
    images: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    """Cells to build (parents before children) and excluded cells with their reasons."""

    cells: tuple[Cell, ...]
    excluded: tuple[Excluded, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "cells": [{**c.coordinates(), "full": c.release.full, "support": c.support[1].status} for c in self.cells],
            "excluded": [{**e.cell.coordinates(), "full": e.cell.release.full, "rule": e.rule, "reason": e.reason}
                         for e in self.excluded],
        }


@dataclass(frozen=True)
class Resolved:
    """A selection with the matrix default filled into the axes no flag named.

    defaulted: the flags the default supplied, as a user would type them (e.g. ('--rocm 7.2',)).
    """

    selection: Selection
    defaulted: tuple[str, ...] = ()

    def note(self) -> str:
        """One line saying which defaults were used, '' when none were."""
        if not self.defaulted:
            return ""
        return (f"selection: {' '.join(self.defaulted)} (matrix.yaml default; name the flag to change it, "
                "--all for every cell)")


def split_values(flag: str, values: tuple[str, ...]) -> list[str]:
    """Repeated flags and comma lists alike: ('gfx942,gfx90a', 'gfx1100') -> ['gfx942', 'gfx90a', 'gfx1100'].

    Raises ConfigError naming `flag` for an empty value or an empty item of a comma list ('gfx942,,gfx1100'),
    which would otherwise select less than was typed without a word."""
    items = [v.strip() for value in values for v in value.split(",")]
    if "" in items:
        bad = next(value for value in values if "" in (v.strip() for v in value.split(",")))
        raise ConfigError(f"{flag}: empty value in {bad!r} (allowed: one value, or a comma list without empty items)")
    return items


def closest(value: str, candidates: list[str], cutoff: float = 0.6) -> list[str]:
    """The candidates most similar to `value` (difflib.SequenceMatcher ratio, case ignored, at least
    `cutoff`), every one that ties for the best ratio, in the order given; [] when none is close enough."""
    scores = [(difflib.SequenceMatcher(None, value.lower(), c.lower()).ratio(), c) for c in candidates]
    best = max((score for score, _ in scores), default=0.0)
    if best < cutoff:
        return []
    return list(dict.fromkeys(c for score, c in scores if score == best))


def nearest_versions(value: str, lines: list[str]) -> list[str]:
    """The ROCm lines ('7.2') numerically nearest to `value` ('7.3', '7.2.9'): least major distance, then
    least minor distance; every tie, in the order given. Falls back to `closest` when `value` is not a
    dotted number (a text similarity says nothing about which version is near)."""
    try:
        want = (version_tuple(value) + (0,))[:2]
    except ValueError:
        return closest(value, lines)
    def distance(line: str) -> tuple[int, int]:
        have = (version_tuple(line) + (0,))[:2]
        return abs(have[0] - want[0]), abs(have[1] - want[1])
    best = min((distance(line) for line in lines), default=None)
    return [line for line in lines if distance(line) == best]


def _did_you_mean(flag: str, value: str, allowed: list[str], extra: str = "",
                  also: list[str] | None = None, close: list[str] | None = None) -> ConfigError:
    """ConfigError listing `allowed` (and `extra`), with `close` as the hint; by default every closest
    one of allowed + also (all that tie on difflib's similarity ratio, case ignored: 'gfx90a or gfx950')."""
    if close is None:
        close = closest(value, allowed + (also or []))
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return ConfigError(f"{flag}: unknown value {value!r} (allowed: {', '.join(allowed)}{extra}){hint}")


def _rocm_line(project: Project, value: str, sources: tuple[str, ...]) -> str:
    """A ROCm minor line for `--rocm VALUE`: the line itself (7.2) or a full release (7.2.4) when every
    release with that full version is on one line."""
    releases = [r for r in project.matrix.rocm if not sources or r.source in sources]
    lines = sorted({r.version for r in project.matrix.rocm}, key=version_tuple)
    if value in lines:
        return value
    matches = sorted({r.version for r in releases if r.full == value})
    if len(matches) == 1:
        return matches[0]
    fulls = sorted({r.full for r in releases}, key=version_tuple)
    raise _did_you_mean("--rocm", value, lines, f"; full releases: {', '.join(fulls)}",
                        close=nearest_versions(value, lines))


def _arch_name(project: Project, value: str) -> list[str]:
    """gfx arch names for `--arch VALUE`: an arch name, or a product name of matrix.yaml (MI300X, mi300x,
    'RX 7900 XTX', rx7900xtx; case and spaces ignored) that names exactly one arch."""
    archs = project.matrix.archs
    if value in archs:
        return [value]
    key = value.lower().replace(" ", "").replace("-", "")
    if key in {a.lower() for a in archs}:
        return [a for a in archs if a.lower() == key]
    by_product = [name for name, arch in archs.items()
                  if any(p.lower().replace(" ", "").replace("-", "") == key for p in arch.products)]
    if len(by_product) == 1:
        return by_product
    products = sorted({p for arch in archs.values() for p in arch.products})
    raise _did_you_mean("--arch", value, sorted(archs), f"; or a product: {', '.join(products)}", products)


def _plain_axis(flag: str, values: list[str], allowed: list[str]) -> list[str]:
    out = []
    for value in values:
        match = [a for a in allowed if a.lower() == value.lower()]
        if not match:
            raise _did_you_mean(flag, value, allowed)
        out.append(match[0])
    return out


def normalize(project: Project, selection: Selection) -> Selection:
    """The selection as the matrix names it: comma lists split, ROCm full releases mapped to their line,
    product names to their gfx arch, case ignored; duplicates dropped, order kept.

    Raises ConfigError naming the flag, the allowed values and the closest one ("did you mean").
    """
    m = project.matrix
    sources = tuple(dict.fromkeys(_plain_axis("--source", split_values("--source", selection.sources), sorted(m.sources))))
    rocm = tuple(dict.fromkeys(_rocm_line(project, v, sources) for v in split_values("--rocm", selection.rocm)))
    archs = tuple(dict.fromkeys(a for v in split_values("--arch", selection.archs) for a in _arch_name(project, v)))
    images = tuple(dict.fromkeys(_plain_axis("--image", split_values("--image", selection.images), list(project.images))))
    return Selection(sources, rocm, archs, images)


def resolve(project: Project, selection: Selection, everything: bool = False) -> Resolved:
    """The one default selection of every command (matrix, render, plan, build, push, pull, migrate).

    The selection is normalized first (see normalize). Without `everything`, each axis no flag named takes
    matrix.yaml's `default`: ROCm line, arch and image roles; the source is the default source when it has
    every selected ROCm line (`--rocm 7.2`: debian), else left open (`--rocm 6.2`: only amd has it). With
    `everything` (--all) an unnamed axis selects all its values. Raises ConfigError for unknown values.
    """
    sel = normalize(project, selection)
    if everything:
        return Resolved(sel)
    d = project.matrix.default
    used: list[str] = []
    rocm, archs, images, sources = sel.rocm, sel.archs, sel.images, sel.sources
    if not sources:
        have = {r.version for r in project.matrix.rocm if r.source == d.source}
        if all(v in have for v in (rocm or (d.rocm,))):
            sources = (d.source,)
            used.append(f"--source {d.source}")
    if not rocm:
        rocm = (d.rocm,)
        used.append(f"--rocm {d.rocm}")
    if not archs:
        archs = (d.arch,)
        used.append(f"--arch {d.arch}")
    if not images:
        images = tuple(d.images)
        used.append(f"--image {','.join(d.images)}")
    return Resolved(Selection(sources, rocm, archs, images), tuple(used))


def require_cells(project: Project, plan: Plan, selection: Selection) -> Plan:
    """`plan` when it has a cell of a selected image role (parents alone do not count); else raise
    ConfigError saying why nothing matched (each excluded cell's reason, or the releases there are)."""
    wanted = set(selection.images) or {c.role for c in plan.cells} | {e.cell.role for e in plan.excluded}
    if any(c.role in wanted for c in plan.cells):
        return plan
    excluded = [e for e in plan.excluded if e.cell.role in wanted]
    if excluded:
        raise ConfigError("nothing to build: " + "; ".join(f"{e.cell.ref}: {e.reason}" for e in excluded))
    lines = ", ".join(f"{r.source} {r.version}" for r in project.matrix.rocm)
    raise ConfigError(f"nothing matches --source {','.join(selection.sources) or '(any)'} --rocm "
                      f"{','.join(selection.rocm) or '(any)'} (releases: {lines})")


def check_selection(project: Project, selection: Selection) -> None:
    """Raise ConfigError naming the flag and the valid values for any unknown value in `selection`."""
    m = project.matrix
    axes: list[tuple[str, tuple[str, ...], list[str]]] = [
        ("--source", selection.sources, sorted(m.sources)),
        ("--rocm", selection.rocm, sorted({r.version for r in m.rocm}, key=version_tuple)),
        ("--arch", selection.archs, sorted(m.archs)),
        ("--image", selection.images, list(project.images)),
    ]
    for flag, values, allowed in axes:
        for value in values:
            if value not in allowed:
                raise ConfigError(f"{flag}: unknown value {value!r} (allowed: {', '.join(allowed)})")


def _rule_matches(rule: Rule, cell: Cell) -> bool:
    w = rule.when
    return ((w.source is None or cell.release.source in w.source)
            and (w.rocm is None or cell.release.version in w.rocm)
            and (w.arch is None or cell.arch_name in w.arch)
            and (w.images is None or cell.role in w.images))


def _component_exclusion(project: Project, cell: Cell, name: str) -> tuple[str, str] | None:
    fw = project.matrix.frameworks[name]
    if fw.needs_rocm_torch and cell.release.torch is None and cell.release.therock is None:
        return NEEDS_ROCM_TORCH, f"{name} compiles against ROCm PyTorch: {cell.release.torch_note}"
    if fw.requires_python and cell.os is not None \
            and version_tuple(cell.os.python) < version_tuple(fw.requires_python):
        return REQUIRES_PYTHON, (f"{name} {fw.version} requires Python >= {fw.requires_python}; "
                                 f"{cell.os_image} has Python {cell.os.python}")
    if fw.archs is not None and cell.arch_name not in fw.archs:
        return FRAMEWORK_ARCHS, f"{name} {fw.version} supports {', '.join(fw.archs)}, not {cell.arch_name}"
    for rule in project.matrix.rules:
        if rule.component == name and _rule_matches(rule, cell):
            return rule.id, rule.reason
    return None


def _with_components(project: Project, cell: Cell) -> Cell:
    kept, dropped = [], []
    for name in cell.image.components:
        why = _component_exclusion(project, cell, name)
        if why is None:
            kept.append(name)
        else:
            dropped.append((name, *why))
    return replace(cell, components=tuple(kept), excluded_components=tuple(dropped))


def _exclusion(project: Project, cell: Cell, allow_eol: bool = False) -> tuple[str, str] | None:
    if version_tuple(cell.arch.first_rocm) > version_tuple(cell.release.full):
        return ARCH_FIRST_ROCM, (f"{cell.arch_name} ({cell.arch.family}) needs ROCm {cell.arch.first_rocm} or "
                                 f"newer; this cell has {cell.release.full}")
    for rule in project.matrix.rules:
        if rule.component is None and _rule_matches(rule, cell):
            return rule.id, rule.reason
    if cell.role not in cell.release.packages and cell.image.parent is None:
        return NO_PACKAGES, f"matrix.yaml lists no {cell.role} packages for {cell.release.source} {cell.release.version}"
    what, support = cell.support
    if support.status == END_OF_LIFE and not allow_eol:
        return END_OF_LIFE, (f"{what} is end-of-life since {support.since} (docs/support.md); "
                             "--allow-eol builds it anyway")
    return None


def make_plan(project: Project, selection: Selection, with_parents: bool = False, allow_eol: bool = False) -> Plan:
    """Expand the selected cells in image dependency order and apply the rules.

    with_parents: also plan the parent cells a selected cell builds on (for `build`).
    allow_eol: plan cells whose ROCm release or arch is end-of-life (excluded, with the reason, otherwise).
    Raises ConfigError for unknown selection values.
    """
    check_selection(project, selection)
    m = project.matrix
    wanted = set(selection.images or project.images)
    if with_parents:
        for role in list(wanted):
            parent = project.images[role].parent
            while parent is not None:
                wanted.add(parent)
                parent = project.images[parent].parent
    cells: list[Cell] = []
    excluded: list[Excluded] = []
    excluded_refs: dict[str, str] = {}
    for role, spec in project.images.items():
        if role not in wanted:
            continue
        for release in m.rocm:
            if selection.sources and release.source not in selection.sources:
                continue
            if selection.rocm and release.version not in selection.rocm:
                continue
            for arch_name, arch in m.archs.items():
                if selection.archs and arch_name not in selection.archs:
                    continue
                source = m.sources[release.source]
                os_facts = m.os_images.get(source.os_image.format(ubuntu=release.ubuntu, suite=release.suite))
                cell = _with_components(project, Cell(spec, release, source, arch_name, arch, os=os_facts))
                why = _exclusion(project, cell, allow_eol)
                if why is None and cell.parent_ref in excluded_refs:
                    why = PARENT_EXCLUDED, f"parent {cell.parent_ref} is excluded: {excluded_refs[cell.parent_ref]}"
                if why is None:
                    cells.append(cell)
                else:
                    excluded.append(Excluded(cell, *why))
                    excluded_refs[cell.ref] = why[1]
    return Plan(tuple(cells), tuple(excluded))
