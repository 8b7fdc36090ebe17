"""One `buildctl bench serve` run: probe the server, run each concurrency level under the load generator
(AIPerf, or GuideLLM where AIPerf is not installed: buildctl/bench/generators.py) while a memory sampler
runs, capture the environment, write one run file atomically.

Nothing is written to `out` until every level has finished: a run killed midway leaves the previous file
(or none), never a partial one. The generator's own artifacts and logs go to a temporary folder
(kept as `<out>.<generator>/`, e.g. `run.json.aiperf/`, with --keep-artifacts).
"""

from __future__ import annotations

import datetime
import importlib.util
import io
import json
import shutil
import signal
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from buildctl.bench import environment, generators, loadgen, memory, probe
from buildctl.bench.runfile import Run, Server, Workload, write_atomic
from buildctl.errors import InputError

if TYPE_CHECKING:
    import docker
    from docker.models.containers import Container


@dataclass(frozen=True)
class BenchOptions:
    """The command's flags. `levels`: concurrency levels in the order run."""

    url: str
    out: Path
    model: str | None
    tokenizer: str | None
    endpoint: str
    input_len: int
    output_len: int
    levels: tuple[int, ...]
    num_prompts: int
    seed: int
    memory: str
    server_kind: str
    label: str
    dtype: str
    quantization: str
    server_pid: int | None
    container: str | None
    keep_artifacts: bool
    load_generator: str = "auto"


def parse_levels(text: str) -> tuple[int, ...]:
    """`1,4,16` -> (1, 4, 16). Raises InputError naming --concurrency unless all are distinct integers >= 1."""
    try:
        levels = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError as exc:
        raise InputError(f"--concurrency {text}: allowed: comma-separated integers >= 1, e.g. 1,4,16") from exc
    if not levels or min(levels) < 1 or len(set(levels)) != len(levels):
        raise InputError(f"--concurrency {text}: allowed: distinct integers >= 1, e.g. 1,4,16")
    return levels


def _base_url(url: str) -> tuple[str, int]:
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise InputError(f"--url {url}: allowed: http://HOST:PORT (the server's base URL)")
    return f"{parsed.scheme}://{parsed.netloc}", parsed.port or (443 if parsed.scheme == "https" else 80)


def _container(client: docker.DockerClient, name: str | None, port: int) -> Container | None:
    """The named container, or the running one that publishes `port` on the host (None if none does)."""
    import docker.errors

    if name:
        try:
            return client.containers.get(name)
        except docker.errors.NotFound as exc:
            raise InputError(f"--container {name}: no such container") from exc
    for cont in client.containers.list():
        for bindings in (cont.ports or {}).values():
            if any(str(b.get("HostPort")) == str(port) for b in bindings or []):
                return cont
    return None


def _find_container(opts: BenchOptions, port: int) -> Container | None:
    """--container, or (without --server-pid) the running container that publishes the URL's port.

    Without a Docker engine only --container is an error (EngineError); the port lookup is skipped. Where
    the Docker SDK is not installed (the serve image's own Python) there is no container to find.

    Raises:
        InputError: --container where the Docker SDK is not installed.
    """
    if opts.server_pid is not None and not opts.container:
        return None
    if importlib.util.find_spec("docker") is None:
        if opts.container:
            raise InputError(f"--container {opts.container}: the Docker SDK (PyPI docker) is not installed in "
                             "this Python; give --server-pid or run bench serve where it is")
        return None
    from buildctl.engine import docker_client
    from buildctl.errors import EngineError

    if opts.container:
        return _container(docker_client(), opts.container, port)
    try:
        return _container(docker_client(), None, port)
    except EngineError:
        return None


# Files AutoTokenizer reads from a model folder (config.json names the model type).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model",
                   "vocab.json", "vocab.txt", "merges.txt", "chat_template.jinja", "config.json",
                   "generation_config.json")


def _tokenizer(name: str, cont: Container | None, work: Path) -> str:
    """The tokenizer AIPerf loads: `name` when it exists here (or is a hub name), else, when the server runs
    in container `cont` and `name` is a folder there, its tokenizer files copied out of the container."""
    if cont is None or not name.startswith("/") or Path(name).exists():
        return name
    import docker.errors

    dest = work / "tokenizer"
    dest.mkdir()
    for file in TOKENIZER_FILES:
        try:
            stream, _ = cont.get_archive(f"{name.rstrip('/')}/{file}")
        except docker.errors.NotFound:
            continue
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.getmembers()[0]
            extracted = tar.extractfile(member) if member.isfile() else None
            if extracted:
                (dest / file).write_bytes(extracted.read())
    if not (dest / "tokenizer_config.json").exists():
        raise InputError(f"--tokenizer: {name} is neither on this host nor a tokenizer folder in container "
                         f"{cont.name}; give --tokenizer PATH")
    _say(f"bench serve: tokenizer {name} copied out of container {cont.name}")
    return str(dest)


def _container_versions(cont: Container) -> Callable[[tuple[str, ...]], dict[str, str]]:
    def read(names: tuple[str, ...]) -> dict[str, str]:
        for python in ("python3", "python"):
            code, out = cont.exec_run([python, "-c", environment.versions_script(), *names])
            if code == 0 and isinstance(out, bytes) and out.strip():
                found = json.loads(out.decode().strip().splitlines()[-1])
                return {str(k): str(v) for k, v in found.items()}
        return {}
    return read


def _image_of(cont: Container) -> tuple[str, str]:
    image = cont.image
    tag = image.tags[0] if image and image.tags else str(cont.attrs.get("Config", {}).get("Image", ""))
    digests = image.attrs.get("RepoDigests") if image else None
    return str(tag), str(digests[0].split("@", 1)[1] if digests else (image.id if image else ""))


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_bench(opts: BenchOptions) -> Run:
    """Run the benchmark described by `opts` and write `opts.out`; returns the run.

    Raises:
        InputError: a bad flag or path, or no load generator installed; UnreachableError: no server at
            --url; BuildError: the load generator failed.
    """
    base, port = _base_url(opts.url)
    if not opts.out.parent.is_dir():
        raise InputError(f"--out {opts.out}: folder {opts.out.parent} does not exist")
    gen, tool = generators.pick(opts.load_generator)
    facts = probe.probe(base, opts.server_kind, opts.model)
    model = opts.model or (facts.models[0] if facts.models else "")
    if not model:
        raise InputError(f"--model: the server at {base} lists no model; name one")
    enforced, extra = probe.length_control(facts.kind, opts.output_len)
    cont = _find_container(opts, port)
    env = environment.capture(_container_versions(cont) if cont else None, _image_of(cont) if cont else ("", ""))

    def server_pid() -> int | None:
        if opts.server_pid is not None:
            return opts.server_pid
        if cont is not None:
            return int(cont.attrs["State"]["Pid"]) or None
        return memory.listening_pid(port)
    sampler = memory.pick_sampler(opts.memory, server_pid)
    _say(f"bench serve: {facts.kind} server at {base}, model {model}, {tool}, memory "
         f"{sampler.source if sampler else 'not sampled'}, output length held by {enforced or 'nothing'}")
    levels = []
    work = Path(tempfile.mkdtemp(prefix="rocmig-bench-"))
    temp = work / "tmp"
    temp.mkdir()
    # SIGTERM (a CI step's timeout, `kill`) ends the run like Ctrl-C: the load generator stopped, the temporary folder
    # removed, no run file written (exit 130).
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        tokenizer = _tokenizer(opts.tokenizer or str(facts.info.get("model_path") or model), cont, work)
        for n, conc in enumerate(opts.levels, 1):
            _say(f"[{n}/{len(opts.levels)}] concurrency {conc}: {opts.num_prompts} requests of "
                 f"{opts.input_len} in / {opts.output_len} out tokens")
            req = loadgen.LevelRequest(base, model, tokenizer, opts.endpoint, opts.input_len, opts.output_len,
                                       conc, opts.num_prompts, opts.seed, extra)
            loop = memory.SampleLoop(sampler) if sampler else None
            if loop:
                loop.start()
            try:
                data = gen.run_level(req, work / f"c{conc}", work / f"c{conc}.log", temp)
            finally:
                mem = loop.stop() if loop else None
            level = gen.parse_export(data, conc, mem)
            levels.append(level)
            _say(f"      TTFT p50 {_ms(level.ttft_ms.p50)}, ITL p50 {_ms(level.itl_ms.p50)}, "
                 f"{level.output_tok_s or 0:.1f} tok/s, {level.errors} error(s)"
                 + (f", peak {mem.peak_mib} MiB" if mem and mem.peak_mib is not None else ""))
    except BaseException:
        signal.signal(signal.SIGTERM, previous)
        raise
    finally:
        if opts.keep_artifacts:
            kept = opts.out.with_name(f"{opts.out.name}.{gen.name}")
            shutil.rmtree(kept, ignore_errors=True)
            shutil.move(str(work), kept)
        else:
            shutil.rmtree(work, ignore_errors=True)
    workload = Workload(model=model, dtype=str(facts.info.get("dtype") or opts.dtype),
                        quantization=str(facts.info.get("quantization") or opts.quantization),
                        input_len=opts.input_len, output_len=opts.output_len, concurrency=list(opts.levels),
                        num_prompts=opts.num_prompts, seed=opts.seed, endpoint=opts.endpoint,
                        output_len_enforced=enforced)
    label = opts.label or f"{env.gpus[0].name if env.gpus else 'CPU ' + env.cpu} ({facts.kind})"
    run = Run(label=label, created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
              environment=env, workload=workload, server=Server(url=base, kind=facts.kind, info=facts.info,
                                                                 load_generator=tool), levels=levels)
    try:
        write_atomic(opts.out, run.to_json())
    finally:
        # restored only now: a SIGTERM while the run file is made still ends the run with exit 130, no file
        signal.signal(signal.SIGTERM, previous)
    return run


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _ms(value: float | None) -> str:
    return f"{value:.1f} ms" if value is not None else "n/a"
