"""The run file of `buildctl bench serve`: a versioned pydantic schema, an atomic writer and a strict reader.

One file holds one run: the environment it ran on, the workload (model, dtype, quantization, lengths,
concurrency levels, prompts, seed) and, per concurrency level, TTFT / ITL / end-to-end latency (mean, p50,
p99, milliseconds), output tokens/s, requests/s, peak and mean memory (MiB) and the error count.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from buildctl.errors import InputError

SchemaName = Literal["rocmig.bench.serve/1"]
SCHEMA: SchemaName = "rocmig.bench.serve/1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Stat(_Model):
    """Distribution of one latency over a level's requests, in milliseconds (None: not measured)."""

    mean: float | None = None
    p50: float | None = None
    p99: float | None = None


class Memory(_Model):
    """Memory sampled while a level ran, MiB. `source`: amd-smi, rocm-smi, nvidia-smi, process, container."""

    source: str
    peak_mib: float | None = None
    mean_mib: float | None = None
    samples: int = 0


class Level(_Model):
    """Results of one concurrency level."""

    concurrency: int
    completed: int
    errors: int
    duration_s: float | None = None
    ttft_ms: Stat
    itl_ms: Stat
    e2e_ms: Stat
    output_tok_s: float | None = None
    request_s: float | None = None
    output_len_mean: float | None = None
    memory: Memory | None = None


class Workload(_Model):
    """What was asked of the server. Two runs compare only when these agree (see `compare.WORKLOAD_KEYS`).

    `output_len_enforced`: how the server was made to emit exactly `output_len` tokens ("ignore_eos" for
    SGLang, "min_new_tokens" for transformers serve, "" when the server offered no way).
    """

    model: str
    dtype: str
    quantization: str
    input_len: int
    output_len: int
    concurrency: list[int]
    num_prompts: int
    seed: int
    endpoint: str
    output_len_enforced: str


class Gpu(_Model):
    """One accelerator as its vendor tool reports it. `arch`: gfx arch (AMD) or sm_XY compute capability."""

    vendor: str
    name: str
    arch: str = ""
    vram_mib: float | None = None


class Environment(_Model):
    """What the run ran on. Empty strings: not found on this host (never guessed)."""

    host: str
    os: str
    cpu: str
    cpu_count: int
    memory_mib: float
    gpus: list[Gpu]
    driver: str = ""
    rocm: str = ""
    cuda: str = ""
    torch: str = ""
    sglang: str = ""
    transformers: str = ""
    image: str = ""
    image_digest: str = ""


class Server(_Model):
    """The endpoint: its kind (sglang, transformers, openai), what it reports about itself (SGLang's
    server info: KV cache size and dtype, memory use) and the load generator that drove it."""

    url: str
    kind: str
    info: dict[str, str | int | float | bool | None] = {}
    load_generator: str


class Run(_Model):
    """One `buildctl bench serve` run."""

    schema_: SchemaName = Field(default=SCHEMA, validation_alias="schema", serialization_alias="schema")
    label: str
    created: str
    environment: Environment
    workload: Workload
    server: Server
    levels: list[Level]

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def to_json(self) -> str:
        """The file's text: `schema` first, two-space indented, newline at the end."""
        return json.dumps(self.model_dump(mode="json", by_alias=True), indent=2) + "\n"


def _umask() -> int:
    """The process umask (os.umask can only be read by setting it; it is set straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader sees the old file, or the whole new one, never a part.

    The text goes to a temporary file beside `path`, is flushed to disk, then renamed over `path`
    (os.replace is atomic on POSIX within a filesystem). The file keeps the mode of the one it replaces
    (a new one gets 0666 less the umask, as open() would give). On any error the temporary file is removed.

    Raises:
        InputError: the folder of `path` does not exist or cannot be written.
    """
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"--out {path}: folder {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=folder)
    except OSError as exc:
        raise InputError(f"--out {path}: cannot write in {folder} ({exc.strerror})") from exc
    try:
        os.fchmod(fd, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_run(path: Path) -> Run:
    """Read and validate one run file.

    Raises:
        InputError: one line naming `path` and the fault: missing, not JSON (truncated: where it ends),
            not a rocmig run (its `schema` key, if any), or the first key that breaks the schema.
    """
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON, truncated or damaged at line {exc.lineno} column {exc.colno} "
                         f"({exc.msg}); expected a `buildctl bench serve` run ({SCHEMA})") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise InputError(f"{path}: not a `buildctl bench serve` run: key `schema` is {found!r}, "
                         f"allowed: {SCHEMA!r}")
    try:
        return Run.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise InputError(f"{path}: key `{where}`: {err['msg']} ({exc.error_count()} error(s) in all)") from exc
