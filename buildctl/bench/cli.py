"""`buildctl bench serve` and `buildctl compare` (docs/compare.md)."""

from __future__ import annotations

from pathlib import Path

import click

from buildctl.bench import generators, memory, probe


@click.group("bench")
def bench() -> None:
    """Benchmarks of running servers (one JSON run file each; `buildctl compare` puts two side by side)."""


@bench.command("serve")
@click.option("--url", required=True, help="base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:30000")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="run file to write")
@click.option("--model", help="model name to request [default: the first of the server's /v1/models]")
@click.option("--tokenizer", help="tokenizer path or name for prompt lengths [default: the model]")
@click.option("--endpoint", type=click.Choice(["completions", "chat"]), default="completions", show_default=True)
@click.option("--input-len", type=click.IntRange(min=1), default=128, show_default=True, help="prompt tokens")
@click.option("--output-len", type=click.IntRange(min=1), default=128, show_default=True, help="output tokens")
@click.option("--concurrency", "levels", default="1,4,16", show_default=True, help="comma list of levels")
@click.option("--num-prompts", type=click.IntRange(min=1), default=64, show_default=True,
              help="requests per level")
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the synthetic prompts")
@click.option("--memory", type=click.Choice(memory.KINDS), default="auto", show_default=True,
              help="auto: amd-smi/rocm-smi, else nvidia-smi, else the server process's RSS")
@click.option("--server-kind", type=click.Choice(probe.KINDS), default="auto", show_default=True,
              help="how output length is held fixed (auto: ask the server)")
@click.option("--label", default="", help="name of this run on reports [default: GPU or CPU and server kind]")
@click.option("--dtype", default="auto", show_default=True, help="model dtype, when the server does not say")
@click.option("--quantization", default="none", show_default=True, help="quantization, when the server does not say")
@click.option("--server-pid", type=int, help="server process for --memory cpu (with its children)")
@click.option("--container", help="container the server runs in (image, versions, memory)")
@click.option("--keep-artifacts", is_flag=True, help="keep the load generator's artifacts in OUT.<generator>/")
@click.option("--load-generator", type=click.Choice(generators.NAMES), default="auto", show_default=True,
              help="auto: AIPerf where installed, else GuideLLM (the serve image)")
def serve_cmd(url: str, out: Path, model: str | None, tokenizer: str | None, endpoint: str, input_len: int,
              output_len: int, levels: str, num_prompts: int, seed: int, memory: str, server_kind: str, label: str,
              dtype: str, quantization: str, server_pid: int | None, container: str | None,
              keep_artifacts: bool, load_generator: str) -> None:
    """Run one workload against --url at each --concurrency level; write the run to --out (atomically)."""
    from buildctl.bench.serve import BenchOptions, parse_levels, run_bench

    opts = BenchOptions(url, out, model, tokenizer, endpoint, input_len, output_len, parse_levels(levels),
                        num_prompts, seed, memory, server_kind, label, dtype, quantization, server_pid, container,
                        keep_artifacts, load_generator)
    run = run_bench(opts)
    click.echo(f"{out}: {len(run.levels)} level(s), {run.label}")


@click.command("compare")
@click.argument("before", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("after", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="report folder")
@click.option("--allow-different-workload", is_flag=True,
              help="compare runs whose workloads differ (the report lists the differences)")
def compare(before: Path, after: Path, out: Path, allow_different_workload: bool) -> None:
    """Put two `bench serve` runs side by side: OUT/report.md, OUT/report.html and plots."""
    from buildctl.bench.compare import write_report

    path = write_report(before, after, out, allow_different_workload)
    click.echo(f"report: {path}")
