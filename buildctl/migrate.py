"""`buildctl migrate`: run the in-image `migrate` recipe (recipes/migrate) in a dev image.

The CUDA tree is mounted read-only at /src, the output folder (created here, so owned by the calling
user) at /out, and the container runs as the calling user's UID:GID. The recipe's messages and report
name /src and /out; the host relabels them with the paths the user gave.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker

from buildctl.console import UI
from buildctl.doctor import diagnose
from buildctl.engine import image_exists
from buildctl.errors import BuildError, ConfigError, InputError
from buildctl.load import Project
from buildctl.plan import Cell, _arch_name, split_values

RECIPE_DIR = "/opt/rocmig/recipes/migrate"
# The recipe's archs.OTHER_ARCHS, the same words in the recipe's own --arch error (tests compare them)
OTHER_ARCHS = ("or any other processor hipcc compiles for, such as gfx908, gfx1030, gfx11-generic: "
               "`clang --target=amdgcn-amd-amdhsa -mcpu=help` lists them")
OFFLOAD_ARCH = re.compile(r"gfx[0-9a-f]{3,4}|gfx[0-9]+(-[0-9]+)?-generic")

def split_archs(project: Project, values: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(archs of the matrix, every requested arch) for `--arch` values: matrix archs and products map to
    their gfx name; another gfx offload arch (gfx908, gfx1030, gfx11-generic, ...) is passed on for the
    recipe to check against the toolchain. A value may be a comma list (`--arch gfx942,gfx1100`), as the
    other subcommands' flags. Raises ConfigError for anything else, an empty item of a comma list included."""
    matrix: list[str] = []
    every: list[str] = []
    for value in split_values("--arch", values):
        try:
            names = _arch_name(project, value)
            matrix += names
        except ConfigError as exc:
            if not OFFLOAD_ARCH.fullmatch(value):
                listed, hint, rest = str(exc).partition("; did you mean")
                raise ConfigError(f"{listed.removesuffix(')')}; {OTHER_ARCHS}){hint}{rest}") from None
            names = [value]
        every += names
    return tuple(dict.fromkeys(matrix)), tuple(dict.fromkeys(every))


def pick_dev_image(client: docker.DockerClient, dev_cells: list[Cell], archs: list[str]) -> Cell:
    """A dev cell of the selected ROCm release whose image is in the local image store.

    dev_cells: every dev cell of that (source, ROCm) release. hipcc in any of them compiles for every
    offload arch, so a requested arch's own image is preferred but not needed. Raises BuildError naming
    the image to build when none exists.
    """
    ordered = sorted(dev_cells, key=lambda c: c.arch_name not in archs)
    for cell in ordered:
        if image_exists(client, cell.ref):
            return cell
    first = ordered[0]
    raise BuildError(
        f"no dev image for ROCm {first.release.version} ({first.release.source}) is built: build one with "
        f"`make images SOURCE={first.release.source} ROCM={first.release.version} ARCH={first.arch_name}`")


RECIPE_IN_IMAGE = "/opt/rocmig/recipes/migrate"
RECIPE_SUFFIXES = (".py", ".h", ".yaml")


def recipe_drift(client: docker.DockerClient, ref: str, root: Path) -> list[str]:
    """Files of recipes/migrate (.py, .h, .yaml) that differ between the checkout at `root` and the image
    `ref`, whose copy (RECIPE_IN_IMAGE) is the one `buildctl migrate` runs: [] when they agree, or when
    the image cannot be read (the run itself then says why)."""
    local_dir = root / "recipes" / "migrate"
    mine = {p.relative_to(local_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in local_dir.rglob("*") if p.is_file() and p.suffix in RECIPE_SUFFIXES and "__pycache__" not in p.parts}
    script = (f"cd {RECIPE_IN_IMAGE} && find . -type f \\( " + " -o ".join(f"-name '*{s}'" for s in RECIPE_SUFFIXES)
              + " \\) -not -path '*/__pycache__/*' -exec sha256sum {} +")
    try:
        listing = client.containers.run(ref, ["sh", "-c", script], remove=True, network_disabled=True).decode()
    except docker.errors.DockerException:
        return []
    theirs = {name.removeprefix("./"): digest for digest, name in (line.split(None, 1) for line in listing.splitlines() if line)}
    return sorted(name for name in mine.keys() | theirs.keys() if mine.get(name) != theirs.get(name))


def check_paths(src: Path, out: Path) -> tuple[Path, Path]:
    """Absolute (src, out). Raises InputError when src does not exist, when one contains the other (the
    report would land in the input, or the next run would scan its own output), or when out cannot be
    created or written by this user (the recipe runs as this uid). Nothing is left on disk: folders made
    to try are removed again."""
    if not src.exists() and str(src).startswith("-"):
        raise InputError(f"{src}: not an option of migrate, and no such file or folder (buildctl's own options, "
                         f"such as -q and -v, go before the command: buildctl {src} migrate SRC ...)")
    if not src.exists():
        raise InputError(f"{src}: no such file or folder (give a CUDA source tree or a .cu file)")
    src, out = src.resolve(), out.resolve()
    inside_src = src.is_dir() and (out == src or src in out.parents)
    if inside_src or out in src.parents:
        raise InputError(f"--out {out}: must lie outside the source {src} (and not contain it)")
    made = [p for p in (out, *out.parents) if not p.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--out {out}: cannot create it: {exc.strerror or exc}") from None
    writable = os.access(out, os.W_OK | os.X_OK)
    for folder in made:
        folder.rmdir()
    if not writable:
        raise InputError(f"--out {out}: not writable by uid {os.getuid()} (the recipe writes the report as this user)")
    return src, out


@dataclass(frozen=True)
class Mounts:
    """Host paths and where the container sees them."""

    src: Path
    out: Path
    compile_commands: Path | None = None  # --compile-commands on the host; its folder is mounted at FLAGS_DIR

    @property
    def target(self) -> str:
        return f"/src/{self.src.name}" if self.src.is_file() else "/src"

    def relabel(self, text: str) -> str:
        """Replace the container's /src, /out and FLAGS_DIR paths in `text` by the host paths."""
        src_host = str(self.src.parent if self.src.is_file() else self.src)
        pairs = [("/src", src_host), ("/out", str(self.out))]
        if self.compile_commands is not None:
            pairs.append((FLAGS_DIR, str(self.compile_commands.resolve().parent)))
        for container, host in pairs:
            text = re.sub(rf"(?:(?<![\w/.])|(?<=-I)){container}(?=/|\b)", host.replace("\\", "\\\\"), text)
        return text


FLAGS_DIR = "/project-flags"


def host_files(extra_args: list[str]) -> tuple[list[str], dict[str, dict[str, str]]]:
    """Recipe arguments with host files moved into the container: for `--compile-commands PATH` (also
    `--compile-commands=PATH`) the file's folder is mounted read-only at FLAGS_DIR, since CMake writes
    compile_commands.json into its build folder, where the response files its entries name
    (`--options-file CMakeFiles/<target>.dir/includes_CUDA.rsp`) lie. Returns (arguments, extra docker
    volumes). Raises InputError when the file does not exist."""
    args, volumes, i = [], {}, 0
    while i < len(extra_args):
        arg = extra_args[i]
        value = None
        if arg == "--compile-commands" and i + 1 < len(extra_args):
            value, i = extra_args[i + 1], i + 1
        elif arg.startswith("--compile-commands="):
            value = arg.split("=", 1)[1]
        if value is None:
            args.append(arg)
        else:
            path = Path(value).resolve()
            if not path.is_file():
                raise InputError(f"--compile-commands {value}: no such file (give the compile_commands.json of a CMake or bear build)")
            volumes[str(path.parent)] = {"bind": FLAGS_DIR, "mode": "ro"}
            args += ["--compile-commands", f"{FLAGS_DIR}/{path.name}"]
        i += 1
    return args, volumes


PROGRESS = "migrate: progress: "  # recipes/migrate/migrate/cli.py: the recipe's progress lines


def run_migrate(client: docker.DockerClient, cell: Cell, mounts: Mounts, archs: list[str],
                extra_args: list[str], ui: UI) -> tuple[int, list[str]]:
    """Run the recipe for `archs`, writing the report into mounts.out; its progress lines (PROGRESS ...)
    go to `ui` as they come (a spinner's text in a terminal, plain lines in a pipe, none with quiet).

    Returns (the recipe's exit code, its other output lines, relabelled, for the caller to print or turn
    into its error). An output folder this call created is removed again when the run leaves nothing in
    it (bad input).
    """
    recipe_args, volumes = host_files(extra_args)
    created = not mounts.out.exists()
    mounts.out.mkdir(parents=True, exist_ok=True)
    command = ["python3", "-m", "migrate", mounts.target]
    for arch in archs:
        command += ["--arch", arch]
    command += ["--out", "/out", *recipe_args]
    container = client.containers.run(
        cell.ref, command, detach=True,
        user=f"{os.getuid()}:{os.getgid()}",
        environment={"PYTHONPATH": RECIPE_DIR, "HOME": "/tmp", "PYTHONUNBUFFERED": "1"},
        volumes={str(mounts.src): {"bind": mounts.target, "mode": "ro"},
                 str(mounts.out): {"bind": "/out", "mode": "rw"}, **volumes},
        working_dir="/tmp")
    lines: list[str] = []
    try:
        with ui.status(f"migrate: running the recipe in {cell.ref}", defer=True) as update:
            pending = ""
            for chunk in container.logs(stream=True, follow=True):
                pending += chunk.decode(errors="replace")
                *complete, pending = pending.split("\n")
                for line in complete:
                    _route(mounts.relabel(line), lines, update)
            if pending:
                _route(mounts.relabel(pending), lines, update)
        code = container.wait()["StatusCode"]
    finally:
        container.remove(force=True)
    if created and not any(mounts.out.iterdir()):
        shutil.rmtree(mounts.out)
    return code, lines


def _route(line: str, lines: list[str], update: Callable[[str], None]) -> None:
    """A progress line to `update` (without its prefix), any other line to `lines`."""
    if line.startswith(PROGRESS):
        update("migrate: " + line[len(PROGRESS):])
    else:
        lines.append(line)


def recipe_error(lines: list[str]) -> str:
    """The recipe's one error line (its last `migrate: ` line, prefix removed), or "" when it printed none."""
    for line in reversed(lines):
        if line.startswith("migrate: "):
            return line[len("migrate: "):].strip()
    return ""


def relabel_logs(mounts: Mounts) -> None:
    """Rewrite the compiler logs under OUT/build with the host's paths (the recipe wrote /src and /out)."""
    build = mounts.out / "build"
    if not build.is_dir():
        return
    for log in build.rglob("*.log"):
        text = log.read_text(encoding="utf-8", errors="replace")
        relabelled = mounts.relabel(text)
        if relabelled != text:
            log.write_text(relabelled, encoding="utf-8")


def annotate_report(root: Path, mounts: Mounts) -> tuple[int, int]:
    """Relabel the report's container paths, match each failed unit's first compiler error against the
    error case library (buildctl.doctor) and rewrite the report; returns (failed compile results with a
    first error, how many of them matched).

    The recipe runs inside the image, where the catalog is not; its own report writer (recipes/migrate,
    loaded from the project root) renders the result into report.md and report.html. A report without
    "complete": true (an interrupted run) is left as it is.
    """
    relabel_logs(mounts)
    path = mounts.out / "report.json"
    if not path.exists():
        return 0, 0
    data = json.loads(mounts.relabel(path.read_text()))
    if not data.get("complete"):
        return 0, 0
    handbook = (root / "docs" / "troubleshooting.md").resolve().as_uri()
    failed = matched = 0
    for entry in data["files"]:
        for finding in entry.get("findings", []):
            finding["doc"] = f"{handbook}#{finding['rule']}"
        for result in entry.get("compile", {}).values():
            if result.get("status") == "failed" and result.get("first_error"):
                failed += 1
                matches = diagnose(result["first_error"], limit=1)
                result["doctor"] = [{"id": m.entry.id, "title": m.entry.title, "fix": m.entry.fix[0],
                                     "doc": f"{handbook}#{m.entry.id}"} for m in matches]
                matched += bool(matches)
    writer = root / "recipes" / "migrate" / "migrate" / "report.py"
    spec = importlib.util.spec_from_file_location("rocmig_migrate_report", writer)
    if spec is None or spec.loader is None:
        raise BuildError(f"{writer}: the migrate recipe's report writer cannot be loaded")
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    report.write_all(mounts.out, data)
    return failed, matched
