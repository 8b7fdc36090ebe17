"""Read matrix.yaml and images/*/image.yaml into validated models (first arrow of the flow).

Every problem becomes one `ConfigError` line: `FILE: KEY.PATH: what is wrong (allowed: ...)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic

from buildctl.errors import ConfigError
from buildctl.model import ImageSpec, Matrix, version_tuple
from buildctl.yamlfile import read_yaml


@dataclass(frozen=True)
class Project:
    """The loaded project: its root folder, the matrix and the image roles (in dependency order)."""

    root: Path
    matrix: Matrix
    images: dict[str, ImageSpec]


def _validation_message(path: Path, exc: pydantic.ValidationError, data: Any) -> str:
    err = exc.errors()[0]
    loc = list(err["loc"])
    # Name list items by their key where they have one (rocm[2] -> rocm[amd 6.2]).
    parts: list[str] = []
    node: Any = data
    for key in loc:
        if isinstance(key, int):
            label = str(key)
            if isinstance(node, list) and key < len(node) and isinstance(node[key], dict):
                item = node[key]
                if "version" in item:
                    label = f"{item.get('source', '?')} {item['version']}"
                elif "id" in item:
                    label = str(item["id"])
            parts[-1] = f"{parts[-1]}[{label}]" if parts else f"[{label}]"
        elif key == "[key]":
            parts[-1] = f"{parts[-1]} (a key)" if parts else "(a key)"
            continue
        else:
            parts.append(str(key))
        node = node[key] if isinstance(node, (dict, list)) and _has(node, key) else None  # type: ignore[index]
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "literal_error":
        msg = f"{err['input']!r} is not allowed (allowed: {err['ctx']['expected']})"
        if isinstance(err["input"], float):
            msg += f"; YAML read {err['input']} as a number: quote it"
    elif err["type"] == "missing":
        msg = "required key is missing"
    elif err["type"] == "string_pattern_mismatch":
        msg = f"{err['input']!r} does not match {err['ctx']['pattern']}"
    key_path = ".".join(parts) or "(top level)"
    return f"{path}: {key_path}: {msg}"


def _has(node: Any, key: Any) -> bool:
    if isinstance(node, dict):
        return key in node
    return isinstance(key, int) and key < len(node)


def _check_references(path: Path, matrix: Matrix, roles: set[str]) -> None:
    """Cross-checks pydantic cannot do alone: names used in default, rules and packages must exist."""
    archs = sorted(matrix.archs)
    versions = sorted({r.version for r in matrix.rocm}, key=version_tuple)
    seen = set()
    for release in matrix.rocm:
        key = (release.source, release.version)
        if key in seen:
            raise ConfigError(f"{path}: rocm[{release.source} {release.version}]: listed twice")
        seen.add(key)
        if release.source not in matrix.sources:
            raise ConfigError(
                f"{path}: rocm[{release.source} {release.version}].source: {release.source!r} is not "
                f"declared under sources (allowed: {', '.join(matrix.sources)})")
        for role in release.packages:
            if role.removesuffix("-build") not in roles:
                raise ConfigError(
                    f"{path}: rocm[{release.source} {release.version}].packages.{role}: unknown image role "
                    f"(allowed: {', '.join(sorted(roles))}, or <role>-build for a role's builder stage)")
    for rule in matrix.rules:
        where = f"{path}: rules[{rule.id}].when"
        for arch in rule.when.arch or []:
            if arch not in matrix.archs:
                raise ConfigError(f"{where}.arch: unknown arch {arch!r} (allowed: {', '.join(archs)})")
        for version in rule.when.rocm or []:
            if version not in versions:
                raise ConfigError(f"{where}.rocm: unknown ROCm version {version!r} (allowed: {', '.join(versions)})")
        for role in rule.when.images or []:
            if role not in roles:
                raise ConfigError(f"{where}.images: unknown image role {role!r} (allowed: {', '.join(sorted(roles))})")
    frameworks = sorted(matrix.frameworks)
    for rule in matrix.rules:
        if rule.component is not None and rule.component not in matrix.frameworks:
            raise ConfigError(f"{path}: rules[{rule.id}].component: unknown framework {rule.component!r} "
                              f"(allowed: {', '.join(frameworks)})")
    for name, fw in matrix.frameworks.items():
        for arch in fw.archs or []:
            if arch not in matrix.archs:
                raise ConfigError(f"{path}: frameworks.{name}.archs: unknown arch {arch!r} (allowed: {', '.join(archs)})")
    d = matrix.default
    if d.arch not in matrix.archs:
        raise ConfigError(f"{path}: default.arch: unknown arch {d.arch!r} (allowed: {', '.join(archs)})")
    if (d.source, d.rocm) not in seen:
        raise ConfigError(f"{path}: default.rocm: source {d.source} has no ROCm {d.rocm!r}")
    for role in d.images:
        if role not in roles:
            raise ConfigError(f"{path}: default.images: unknown image role {role!r} (allowed: {', '.join(sorted(roles))})")


def _order_images(images: dict[str, ImageSpec], images_dir: Path) -> dict[str, ImageSpec]:
    """Parents before children; raises ConfigError on an unknown parent or a cycle."""
    ordered: dict[str, ImageSpec] = {}

    def visit(role: str, chain: tuple[str, ...]) -> None:
        if role in ordered:
            return
        if role in chain:
            raise ConfigError(f"{images_dir / role / 'image.yaml'}: parent: cycle {' -> '.join(chain + (role,))}")
        spec = images[role]
        if spec.parent is not None:
            if spec.parent not in images:
                raise ConfigError(
                    f"{images_dir / role / 'image.yaml'}: parent: unknown image role {spec.parent!r} "
                    f"(allowed: {', '.join(sorted(images))})")
            visit(spec.parent, chain + (role,))
        ordered[role] = spec

    for role in sorted(images):
        visit(role, ())
    return ordered


def validate_image(spec_path: Path, data: object, templates: Path) -> ImageSpec:
    """One images/<role>/image.yaml's content as an ImageSpec; its folder name must be its role and its
    template must exist under `templates`. Raises ConfigError naming the file and key."""
    try:
        spec = ImageSpec.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ConfigError(_validation_message(spec_path, exc, data)) from None
    if spec.role != spec_path.parent.name:
        raise ConfigError(f"{spec_path}: role: {spec.role!r} must equal its folder name {spec_path.parent.name!r}")
    if not (templates / spec.template).is_file():
        raise ConfigError(f"{spec_path}: template: templates/{spec.template} does not exist")
    return spec


def validate_matrix(matrix_path: Path, data: object, images: dict[str, ImageSpec]) -> Matrix:
    """matrix.yaml's content as a Matrix, cross-checked against the image roles. Raises ConfigError
    naming the file, the key path and what is allowed."""
    if not isinstance(data, dict):
        raise ConfigError(f"{matrix_path}: (top level): expected a mapping of keys (allowed: {', '.join(Matrix.model_fields)})")
    try:
        matrix = Matrix.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ConfigError(_validation_message(matrix_path, exc, data)) from None
    _check_references(matrix_path, matrix, set(images))
    for role, spec in images.items():
        for component in spec.components:
            if component not in matrix.frameworks:
                raise ConfigError(f"{matrix_path.parent / 'images' / role / 'image.yaml'}: components: unknown "
                                  f"framework {component!r} (allowed: {', '.join(sorted(matrix.frameworks))})")
    return matrix


def load_project(root: Path) -> Project:
    """Load and validate `root/matrix.yaml` and `root/images/*/image.yaml`.

    Raises ConfigError (exit 2) with one line naming the file, the key path and what is allowed.
    """
    if not (root / "matrix.yaml").is_file():
        raise ConfigError(f"{root / 'matrix.yaml'}: not found (--root names the project folder holding "
                          "matrix.yaml, images/ and templates/)")
    images_dir = root / "images"
    images: dict[str, ImageSpec] = {}
    for spec_path in sorted(images_dir.glob("*/image.yaml")):
        spec = validate_image(spec_path, read_yaml(spec_path), root / "templates")
        images[spec.role] = spec
    if not images:
        raise ConfigError(f"{images_dir}: no image roles found (expected images/<role>/image.yaml)")
    matrix_path = root / "matrix.yaml"
    matrix = validate_matrix(matrix_path, read_yaml(matrix_path), images)
    return Project(root=root, matrix=matrix, images=_order_images(images, images_dir))
