"""Typed models of matrix.yaml and images/<role>/image.yaml (pydantic v2, unknown keys refused).

The models hold data only; `buildctl.load` reads the files and turns validation errors into one-line
`ConfigError`s that name the file, the key path and what is allowed.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from buildctl.kinds import (
    ArchName,
    DebianPackage,
    DebianSuite,
    Family,
    Identifier,
    ModuleName,
    OsImage,
    Pep440Version,
    Product,
    ProjectPath,
    PypiName,
    RelPath,
    Requirement508,
    RoleName,
    Text,
    Url,
    WheelIndex,
    git_ref,
    pep440,
)


def version_tuple(version: str) -> tuple[int, ...]:
    """'6.4.1' -> (6, 4, 1). Raises ValueError on a non-numeric part."""
    return tuple(int(part) for part in version.split("."))


class Strict(BaseModel):
    """Frozen model that names the allowed keys when it meets an unknown one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(str(k) for k in data if k not in cls.model_fields)
            if unknown:
                raise ValueError(f"unknown key {unknown[0]!r} (allowed: {', '.join(cls.model_fields)})")
        return data


SourceName = Literal["amd", "debian", "therock"]


class Source(Strict):
    """Where ROCm comes from. Templates: os_image takes {ubuntu}/{suite}, apt_repo takes {full}.

    files: files of templates/files/ copied into the rocmig/ folder of every cell of this source (the
    therock source's device_guard.py), on top of those its image roles list.
    """

    description: Text
    os_image: OsImage
    apt_repo: Url
    apt_key: Url | None = None
    registry_probe: Url | None = None
    files: list[RelPath] = []


SupportStatus = Literal["supported", "maintenance", "deprecated", "end-of-life"]
SUPPORT_ORDER = ("supported", "maintenance", "deprecated", "end-of-life")


class Support(Strict):
    """Support lifecycle of a ROCm release or a gfx arch (docs/support.md, docs/maintenance.md).

    status: supported (built and fixed), maintenance (rebuilt for security and pin fixes only), deprecated
    (still built until end_of_life; `plan` warns), end-of-life (not built unless --allow-eol).
    since: the date the status began; end_of_life: the announced end-of-life date (required when deprecated:
    the deprecation window users plan by).
    """

    status: SupportStatus = "supported"
    since: date | None = None
    end_of_life: date | None = None
    note: Text | None = None

    @model_validator(mode="after")
    def _dates(self) -> Self:
        if self.status == "deprecated" and self.end_of_life is None:
            raise ValueError("end_of_life: required when status is deprecated (announce the window)")
        if self.status == "end-of-life" and self.since is None:
            raise ValueError("since: required when status is end-of-life (the date it ended)")
        if self.since and self.end_of_life and self.end_of_life < self.since:
            raise ValueError(f"end_of_life: {self.end_of_life} is before since {self.since}")
        return self


class TorchPins(Strict):
    """PyTorch ROCm wheel pins of one ROCm release (index: the path under download.pytorch.org/whl/).

    triton: the version of the ROCm Triton that torch's own metadata requires; triton_dist: its
    distribution name on that index (`pytorch-triton-rocm` up to torch 2.9, `triton-rocm` from 2.10).
    tools: pinned requirements installed in the venv before torch (pip, setuptools, wheel, ...: what
    source builds under --no-build-isolation import; an OS venv holds only the OS's pip).
    """

    index: WheelIndex
    torch: Pep440Version
    torchvision: Pep440Version
    torchaudio: Pep440Version
    triton: Pep440Version | None = None
    triton_dist: Literal["pytorch-triton-rocm", "triton-rocm"] = "pytorch-triton-rocm"
    tools: list[Requirement508] = []


class TheRockPins(Strict):
    """TheRock's Python packages of one release on AMD's wheel index (source therock).

    sdk: rocm-sdk-core, rocm-sdk-libraries, rocm-sdk-devel and rocm-sdk-device-<arch>; torch, torchvision:
    also the versions of amd-torch-device-<arch> and amd-torchvision-device-<arch>; triton: AMD's Triton
    build. Versions are the full local versions the index serves (2.11.0+rocm10.0.0). Source: SGLang's
    docker/rocm.Dockerfile (rocm1000-base stage), TheRock docs/packaging/python_packaging.md.
    """

    index: Url
    sdk: Pep440Version
    torch: Pep440Version
    torchvision: Pep440Version
    torchaudio: Pep440Version
    triton: Pep440Version


class RocmRelease(Strict):
    """One ROCm minor line of one source, with its full release, OS and package sets per image role."""

    source: SourceName
    version: str = Field(pattern=r"^\d+\.\d+$")
    full: str = Field(pattern=r"^\d+\.\d+\.\d+$")
    ubuntu: Literal["22.04", "24.04"] | None = None
    suite: DebianSuite | None = None
    apt_suite: DebianSuite | None = None
    torch: TorchPins | None = None
    torch_note: Text | None = None
    therock: TheRockPins | None = None
    packages: dict[RoleName, list[DebianPackage]]
    support: Support = Support()

    @model_validator(mode="after")
    def _os_fits_source(self) -> Self:
        if self.source in ("amd", "therock") and self.ubuntu is None:
            raise ValueError(f"ubuntu: required for source {self.source} (allowed: 22.04, 24.04)")
        if (self.source == "therock") != (self.therock is not None):
            raise ValueError("therock: the package pins of TheRock's index, required for source therock only")
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
        return f"debian-{self.suite}" if self.source == "debian" else f"ubuntu-{self.ubuntu}"


AccountName = Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_-]*$")]


class OsFacts(Strict):
    """Facts of an OS base image that later build steps depend on (matrix.yaml `os_images`).

    python: the version of its python3 package (what a venv gets); glibc: its C library's version (the
    newest manylinux_2_<minor> wheel tag it runs); users / groups: name -> uid / gid of
    its /etc/passwd and /etc/group, so a step that adds a user or group can be checked before a build.
    """

    python: str = Field(pattern=r"^3\.\d+$")
    glibc: str = Field(pattern=r"^2\.\d+$")
    users: dict[AccountName, int]
    groups: dict[AccountName, int]


class Arch(Strict):
    """A GPU arch (offload arch). wavefront: lanes per wavefront; lds_bytes: LDS per workgroup."""

    family: Family
    products: list[Product]
    wavefront: Literal[32, 64]
    lds_bytes: int = Field(gt=0)
    first_rocm: str = Field(pattern=r"^\d+(\.\d+){1,2}$")
    support: Support = Support()


class Framework(Strict):
    """A framework or extension an image role installs (a component of the image).

    needs_rocm_torch: it compiles against ROCm PyTorch (absent in the debian lane) and is excluded where
    the release has no torch pins. archs: the GPU archs its release supports (None: every arch).
    runtime_deps: what it needs at import time when installed without its own dependency set.
    overrides: requirements installed with --no-deps after it, replacing pins of its own that are broken
    (the image then sets DISABLE_VERSION_CHECK=1 for LLaMA-Factory's run-time version check).
    backend: flash-attention's ROCm backend: ck (Composable Kernel, compiled per arch) or triton
    (FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE at build and at run time).
    requires_python: the lowest Python minor line its release accepts (its Requires-Python); cells whose
    OS image has an older python3 leave it out, with the reason.
    ops: DeepSpeed-style op names built ahead of time (DS_BUILD_<OP>=1), all others left to JIT.
    no_deps: requirements installed with --no-deps beside it (their own metadata names a CUDA package).
    build_deps: what its source build imports and does not declare (installed in the builder stage).
    entry_modules: the modules its entry point imports on the default path; the third-party modules of
    their import closure (buildctl.import_closure) must each come from something the image installs.
    """

    pypi: PypiName | None = None
    git: Url | None = None
    version: str
    needs_rocm_torch: bool = False
    archs: list[ArchName] | None = None
    runtime_deps: list[Requirement508] = []
    backend: Literal["ck", "triton"] | None = None
    overrides: list[Requirement508] = []
    requires_python: str | None = Field(default=None, pattern=r"^3\.\d+$")
    ops: list[Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9_]*$")]] = []
    no_deps: list[Requirement508] = []
    build_deps: list[Requirement508] = []
    entry_modules: list[ModuleName] = []
    note: Text = ""

    @field_validator("version")
    @classmethod
    def _version_of_its_kind(cls, value: str, info: ValidationInfo) -> str:
        """A git framework's version is a git ref (a tag), a PyPI one's a PEP 440 version."""
        return git_ref(value) if info.data.get("git") else pep440(value)


class RuleWhen(Strict):
    """Conditions of a rule; an absent key matches every value, a list matches any of its values."""

    source: list[SourceName] | None = None
    rocm: list[str] | None = None
    arch: list[ArchName] | None = None
    images: list[RoleName] | None = None


class Rule(Strict):
    """An exclusion rule: cells matching `when` are excluded and keep `id` and `reason`.

    With `component`, only that component of the matching cells is left out (the cell still builds).
    """

    id: Identifier
    when: RuleWhen
    reason: Text
    component: Identifier | None = None


class Default(Strict):
    """The cell `make images` builds when nothing is selected."""

    source: SourceName
    rocm: str
    arch: ArchName
    images: list[RoleName]


class Matrix(Strict):
    """The whole matrix.yaml."""

    default: Default
    sources: dict[SourceName, Source]
    rocm: list[RocmRelease]
    archs: dict[ArchName, Arch]
    os_images: dict[OsImage, OsFacts] = {}
    frameworks: dict[Identifier, Framework] = {}
    rules: list[Rule] = []


class ImageSpec(Strict):
    """images/<role>/image.yaml: one image role, its parent role and template.

    context_dirs: project folders copied into the context at the same relative path (e.g. recipes/migrate).
    files: files of templates/files/ copied into the context's rocmig/ folder.
    rendered: templates/partials/<name>.j2 rendered with the cell into the context's rocmig/<name>.
    components: matrix.yaml frameworks the image installs (some may be excluded per cell, with reason).
    """

    role: RoleName
    parent: RoleName | None
    template: RelPath
    description: Text
    context_dirs: list[ProjectPath] = []
    files: list[RelPath] = []
    rendered: list[RelPath] = []
    components: list[Identifier] = []
    tests: list[ProjectPath] = []
