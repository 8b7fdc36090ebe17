"""Expand the matrix into cells and apply the exclusion rules (second arrow of the flow).

A cell is one point of the matrix: image role × (source, ROCm release) × GPU arch. Excluded cells keep
the id and the reason of the rule that excluded them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from buildctl.errors import ConfigError
from buildctl.load import Project
from buildctl.model import Arch, ImageSpec, RocmRelease, Rule, Source, version_tuple

ARCH_FIRST_ROCM = "arch-first-rocm"
PARENT_EXCLUDED = "parent-excluded"
NO_PACKAGES = "no-packages"
NEEDS_ROCM_TORCH = "needs-rocm-torch"
FRAMEWORK_ARCHS = "framework-archs"
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
    def os_image(self) -> str:
        """The OS base image of the source, e.g. ubuntu:22.04 or debian:trixie."""
        return self.source.os_image.format(ubuntu=self.release.ubuntu, suite=self.release.suite)

    def coordinates(self) -> dict:
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

    def to_json(self) -> dict:
        return {
            "cells": [c.coordinates() for c in self.cells],
            "excluded": [{**e.cell.coordinates(), "rule": e.rule, "reason": e.reason} for e in self.excluded],
        }


def check_selection(project: Project, selection: Selection) -> None:
    """Raise ConfigError naming the flag and the valid values for any unknown value in `selection`."""
    m = project.matrix
    axes = [
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
    if fw.needs_rocm_torch and cell.release.torch is None:
        return NEEDS_ROCM_TORCH, f"{name} compiles against ROCm PyTorch: {cell.release.torch_note}"
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


def _exclusion(project: Project, cell: Cell) -> tuple[str, str] | None:
    if version_tuple(cell.arch.first_rocm) > version_tuple(cell.release.full):
        return ARCH_FIRST_ROCM, (f"{cell.arch_name} ({cell.arch.family}) needs ROCm {cell.arch.first_rocm} or "
                                 f"newer; this cell has {cell.release.full}")
    for rule in project.matrix.rules:
        if rule.component is None and _rule_matches(rule, cell):
            return rule.id, rule.reason
    if cell.role not in cell.release.packages and cell.image.parent is None:
        return NO_PACKAGES, f"matrix.yaml lists no {cell.role} packages for {cell.release.source} {cell.release.version}"
    return None


def make_plan(project: Project, selection: Selection, with_parents: bool = False) -> Plan:
    """Expand the selected cells in image dependency order and apply the rules.

    with_parents: also plan the parent cells a selected cell builds on (for `build`).
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
                cell = _with_components(project, Cell(spec, release, m.sources[release.source], arch_name, arch))
                why = _exclusion(project, cell)
                if why is None and cell.parent_ref in excluded_refs:
                    why = PARENT_EXCLUDED, f"parent {cell.parent_ref} is excluded: {excluded_refs[cell.parent_ref]}"
                if why is None:
                    cells.append(cell)
                else:
                    excluded.append(Excluded(cell, *why))
                    excluded_refs[cell.ref] = why[1]
    return Plan(tuple(cells), tuple(excluded))
