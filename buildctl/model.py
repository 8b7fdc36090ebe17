"""Typed models of matrix.yaml and images/<role>/image.yaml (pydantic v2, unknown keys refused).

The models hold data only; `buildctl.load` reads the files and turns validation errors into one-line
`ConfigError`s that name the file, the key path and what is allowed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


def version_tuple(version: str) -> tuple[int, ...]:
    """'6.4.1' -> (6, 4, 1). Raises ValueError on a non-numeric part."""
    return tuple(int(part) for part in version.split("."))


class Strict(BaseModel):
    """Frozen model that names the allowed keys when it meets an unknown one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data):
        if isinstance(data, dict):
            unknown = sorted(str(k) for k in data if k not in cls.model_fields)
            if unknown:
                raise ValueError(f"unknown key {unknown[0]!r} (allowed: {', '.join(cls.model_fields)})")
        return data


SourceName = Literal["amd", "debian"]


class Source(Strict):
    """Where ROCm comes from. Templates: os_image takes {ubuntu}/{suite}, apt_repo takes {full}."""

    description: str
    os_image: str
    apt_repo: str
    apt_key: str | None = None
    registry_probe: str | None = None


class TorchPins(Strict):
    """PyTorch ROCm wheel pins of one ROCm release (index: the path under download.pytorch.org/whl/)."""

    index: str
    torch: str
    torchvision: str
    torchaudio: str
    triton: str | None = None


class RocmRelease(Strict):
    """One ROCm minor line of one source, with its full release, OS and package sets per image role."""

    source: SourceName
    version: str = Field(pattern=r"^\d+\.\d+$")
    full: str = Field(pattern=r"^\d+\.\d+\.\d+$")
    ubuntu: Literal["22.04", "24.04"] | None = None
    suite: str | None = None
    apt_suite: str | None = None
    torch: TorchPins | None = None
    torch_note: str | None = None
    packages: dict[str, list[str]]

    @model_validator(mode="after")
    def _os_fits_source(self):
        if self.source == "amd" and self.ubuntu is None:
            raise ValueError("ubuntu: required for source amd (allowed: 22.04, 24.04)")
        if self.source == "debian" and (self.suite is None or self.apt_suite is None):
            raise ValueError("suite and apt_suite: required for source debian (e.g. trixie, experimental)")
        if not self.full.startswith(self.version + "."):
            raise ValueError(f"full: {self.full} is not a release of the {self.version} line")
        if self.torch is None and not self.torch_note:
            raise ValueError("torch_note: required when torch is null (say why there are no pins)")
        return self

    @property
    def os_version(self) -> str:
        """'ubuntu-22.04' or 'debian-trixie'."""
        return f"ubuntu-{self.ubuntu}" if self.source == "amd" else f"debian-{self.suite}"


class Arch(Strict):
    """A GPU arch (offload arch). wavefront: lanes per wavefront; lds_bytes: LDS per workgroup."""

    family: str
    products: list[str]
    wavefront: Literal[32, 64]
    lds_bytes: int = Field(gt=0)
    first_rocm: str = Field(pattern=r"^\d+(\.\d+){1,2}$")


class Framework(Strict):
    """A framework or extension an image role installs (a component of the image).

    needs_rocm_torch: it compiles against ROCm PyTorch (absent in the debian lane) and is excluded where
    the release has no torch pins. archs: the GPU archs its release supports (None: every arch).
    runtime_deps: what it needs at import time when installed without its own dependency set.
    overrides: requirements installed with --no-deps after it, replacing pins of its own that are broken
    (the image then sets DISABLE_VERSION_CHECK=1 for LLaMA-Factory's run-time version check).
    backend: flash-attention's ROCm backend: ck (Composable Kernel, compiled per arch) or triton
    (FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE at build and at run time).
    """

    version: str
    pypi: str | None = None
    git: str | None = None
    needs_rocm_torch: bool = False
    archs: list[str] | None = None
    runtime_deps: list[str] = []
    backend: Literal["ck", "triton"] | None = None
    overrides: list[str] = []
    note: str = ""


class RuleWhen(Strict):
    """Conditions of a rule; an absent key matches every value, a list matches any of its values."""

    source: list[SourceName] | None = None
    rocm: list[str] | None = None
    arch: list[str] | None = None
    images: list[str] | None = None


class Rule(Strict):
    """An exclusion rule: cells matching `when` are excluded and keep `id` and `reason`.

    With `component`, only that component of the matching cells is left out (the cell still builds).
    """

    id: str
    when: RuleWhen
    reason: str
    component: str | None = None


class Default(Strict):
    """The cell `make images` builds when nothing is selected."""

    source: SourceName
    rocm: str
    arch: str
    images: list[str]


class Matrix(Strict):
    """The whole matrix.yaml."""

    default: Default
    sources: dict[SourceName, Source]
    rocm: list[RocmRelease]
    archs: dict[str, Arch]
    frameworks: dict[str, Framework] = {}
    rules: list[Rule] = []


class ImageSpec(Strict):
    """images/<role>/image.yaml: one image role, its parent role and template.

    context_dirs: project folders copied into the context at the same relative path (e.g. recipes/migrate).
    files: files of templates/files/ copied into the context's rocmig/ folder.
    rendered: templates/partials/<name>.j2 rendered with the cell into the context's rocmig/<name>.
    components: matrix.yaml frameworks the image installs (some may be excluded per cell, with reason).
    """

    role: str
    parent: str | None
    template: str
    description: str
    context_dirs: list[str] = []
    files: list[str] = []
    rendered: list[str] = []
    components: list[str] = []
    tests: list[str] = []
