"""Atomic, checksummed training checkpoints (torch-free: callers hand in bytes).

Layout under a checkpoint root::

    step-00000040/            one committed checkpoint
        manifest.json         {"format": 1, "step": 40, "meta": {...}, "files": {name: {"bytes": n, "sha256": hex}}}
        model.pt, optim.pt, ...
    .tmp-step-00000040-<pid>/ a checkpoint being written (ignored by readers)

A checkpoint is written into a temporary directory, every file and the manifest are fsync'ed, then the
directory is renamed to ``step-<N>`` (rename(2) is atomic within one filesystem, POSIX) and the parent
directory is fsync'ed. A crash therefore leaves either a complete checkpoint or a ``.tmp-*`` directory,
never a half-written ``step-*``. Readers verify the manifest (sizes and SHA-256 of every file) and refuse
anything that does not match: a resume never silently starts from scratch.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

FORMAT = 1
MANIFEST = "manifest.json"
_STEP_RE = re.compile(r"^step-(\d{8})$")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


class CheckpointError(Exception):
    """A checkpoint is missing, partial or corrupt; the message is one line naming the path."""


@dataclass(frozen=True)
class Checkpoint:
    """A verified checkpoint: its directory, step, metadata and the names of its payload files."""

    path: Path
    step: int
    meta: dict
    files: tuple[str, ...]

    def file(self, name: str) -> Path:
        """Path of payload file `name`; raises CheckpointError if the manifest does not list it."""
        if name not in self.files:
            raise CheckpointError(f"{self.path}: no file '{name}' in manifest (has: {', '.join(self.files)})")
        return self.path / name


def step_dir_name(step: int) -> str:
    """Directory name of the checkpoint of `step` (a non-negative int): 'step-%08d'."""
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    return f"step-{step:08d}"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save(root: Path, step: int, payload: dict[str, bytes], meta: dict | None = None) -> Path:
    """Write `payload` (file name -> bytes) as the checkpoint of `step` under `root`, atomically.

    Returns the committed directory. Raises CheckpointError if that step is already committed, and
    ValueError for a file name outside [A-Za-z0-9_.-] or the reserved name manifest.json.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final = root / step_dir_name(step)
    if final.exists():
        raise CheckpointError(f"{final}: checkpoint for step {step} already exists; refusing to overwrite")
    tmp = root / f".tmp-{step_dir_name(step)}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    files = {}
    for name, data in payload.items():
        if not _NAME_RE.match(name) or name == MANIFEST:
            raise ValueError(f"checkpoint file name '{name}' not allowed (use [A-Za-z0-9_.-], not {MANIFEST})")
        with open(tmp / name, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        files[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    manifest = {"format": FORMAT, "step": step, "meta": meta or {}, "files": files}
    with open(tmp / MANIFEST, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    _fsync_dir(tmp)
    os.rename(tmp, final)
    _fsync_dir(root)
    return final


def verify(path: Path) -> Checkpoint:
    """Check the checkpoint directory `path` against its manifest and return it as a Checkpoint.

    Raises CheckpointError (one line, naming the file) when the manifest is missing or unreadable, its
    step disagrees with the directory name, a listed file is missing, has another size or SHA-256, or an
    unlisted file is present.
    """
    path = Path(path)
    m = _STEP_RE.match(path.name)
    if not path.is_dir() or not m:
        raise CheckpointError(f"{path}: not a checkpoint directory (expected step-NNNNNNNN)")
    mpath = path / MANIFEST
    if not mpath.is_file():
        raise CheckpointError(f"{mpath}: manifest missing: partial checkpoint, refusing to resume from it")
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
        files = manifest["files"]
        step = int(manifest["step"])
        fmt = manifest["format"]
    except (ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{mpath}: manifest unreadable ({exc.__class__.__name__}: {exc})") from None
    if fmt != FORMAT:
        raise CheckpointError(f"{mpath}: format {fmt!r} not supported (allowed: {FORMAT})")
    if step != int(m.group(1)):
        raise CheckpointError(f"{mpath}: manifest says step {step} but directory is {path.name}")
    present = {p.name for p in path.iterdir()} - {MANIFEST}
    extra = present - set(files)
    if extra:
        raise CheckpointError(f"{path}: files not in manifest: {', '.join(sorted(extra))}")
    for name, want in files.items():
        fpath = path / name
        if not fpath.is_file():
            raise CheckpointError(f"{fpath}: listed in manifest but missing: partial checkpoint")
        size = fpath.stat().st_size
        if size != want["bytes"]:
            raise CheckpointError(f"{fpath}: {size} bytes, manifest says {want['bytes']}: truncated or corrupt")
        h = hashlib.sha256()
        with open(fpath, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        if h.hexdigest() != want["sha256"]:
            raise CheckpointError(f"{fpath}: SHA-256 {h.hexdigest()[:12]}... does not match manifest "
                                  f"{want['sha256'][:12]}...: corrupt")
    return Checkpoint(path=path, step=step, meta=dict(manifest.get("meta", {})), files=tuple(sorted(files)))


def committed_steps(root: Path) -> list[int]:
    """Steps that have a `step-*` directory under `root`, ascending (unverified; `.tmp-*` ignored)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(int(m.group(1)) for p in root.iterdir() if (m := _STEP_RE.match(p.name)) and p.is_dir())


def latest(root: Path) -> Checkpoint:
    """Verify and return the newest checkpoint under `root`.

    The newest `step-*` directory must verify: if it is corrupt or partial this raises CheckpointError
    naming it (and the newest older step, which the user may pass explicitly) instead of falling back
    silently. Raises CheckpointError when `root` holds no checkpoint.
    """
    steps = committed_steps(root)
    if not steps:
        raise CheckpointError(f"{root}: no checkpoint (step-NNNNNNNN directory) to resume from")
    newest = Path(root) / step_dir_name(steps[-1])
    try:
        return verify(newest)
    except CheckpointError as exc:
        hint = f"; the previous one is {Path(root) / step_dir_name(steps[-2])}" if len(steps) > 1 else ""
        raise CheckpointError(f"{exc}{hint} (pass it to --resume explicitly, or delete the bad one)") from None
