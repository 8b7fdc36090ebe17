"""The parts of `buildctl bench serve` that need no server: the run file's atomic write and strict read,
the memory samplers' parsers (on the JSON shapes amd-smi, ROCm SMI and nvidia-smi print), the KFD gfx
names, the process sampler on a real process, and the command's bad flags (one line, README's codes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from buildctl.bench import generators, guidellm, memory
from buildctl.bench.environment import gfx_name
from buildctl.bench.loadgen import LevelRequest
from buildctl.bench.runfile import read_run, write_atomic
from buildctl.cli import exit_code
from buildctl.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "docs" / "compare" / "h200.json"


def test_run_file_round_trips():
    run = read_run(RUN)
    assert json.loads(run.to_json()) == json.loads(RUN.read_text())
    assert run.to_json().startswith('{\n  "schema": "rocmig.bench.serve/1"')


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    path = tmp_path / "run.json"
    path.write_text("old\n")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(path, "new \ud800 text")  # a lone surrogate cannot be encoded: the write fails midway
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]
    write_atomic(path, "new\n")
    assert path.read_text() == "new\n"


def test_atomic_write_into_a_missing_folder_is_bad_input(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        write_atomic(tmp_path / "no" / "run.json", "x")


def test_amd_smi_shapes():
    per_gpu = [{"gpu": i, "mem_usage": {"total_vram": {"value": 196592, "unit": "MB"},
                                        "used_vram": {"value": 283 + i, "unit": "MB"}}} for i in range(2)]
    assert memory.parse_amd_smi(json.dumps(per_gpu)) == 283 + 284
    assert memory.parse_amd_smi(json.dumps({"gpu_data": per_gpu[:1]})) == 283
    assert memory.parse_amd_smi(json.dumps([{"gpu": 0, "mem_usage": {"used_vram": {"value": 2, "unit": "GB"}}}])) \
        == 2048
    assert memory.parse_amd_smi("not json") is None
    assert memory.parse_amd_smi("[]") is None


SMI = Path(__file__).parent / "smi_samples"


def test_amd_smi_real_output():
    text = (SMI / "amd-smi-metric-rx6600.json").read_text()
    assert memory.parse_amd_smi(text) == 202  # mem_usage.used_vram, among the blocks amd-smi writes as "N/A"
    # ROCm 7 wraps the list in gpu_data; a partition whose block amd-smi cannot read is "N/A" and left out.
    gpu = json.loads(text)[0]
    wrapped = {"gpu_data": [gpu, {**gpu, "gpu": 1, "mem_usage": "N/A"},
                            {**gpu, "gpu": 2, "mem_usage": {**gpu["mem_usage"], "used_vram": "N/A"}}]}
    assert memory.parse_amd_smi(json.dumps(wrapped)) == 202
    assert memory.parse_amd_smi(json.dumps({"gpu_data": [{"gpu": 0, "mem_usage": "N/A"}]})) is None
    assert memory.parse_amd_smi(json.dumps({"gpu_data": "N/A"})) is None


def test_rocm_smi_real_output():
    assert memory.parse_rocm_smi((SMI / "rocm-smi-7900xt.json").read_text()) == pytest.approx(27856896 / 2**20)
    assert memory.parse_rocm_smi((SMI / "rocm-smi-showmemuse-2x6800.json").read_text()) is None
    assert memory.parse_rocm_smi("[]") is None


def test_rocm_smi_shape():
    text = json.dumps({"card0": {"VRAM Total Memory (B)": "21458059264", "VRAM Total Used Memory (B)": "27856896"},
                       "card1": {"VRAM Total Memory (B)": "21458059264", "VRAM Total Used Memory (B)": "1048576"}})
    assert memory.parse_rocm_smi(text) == pytest.approx(27856896 / 2**20 + 1)


def test_nvidia_smi_lines():
    assert memory.parse_nvidia_smi("753\n1024\n") == 1777
    assert memory.parse_nvidia_smi("[N/A]\n") is None


def test_kfd_gfx_names():
    # KFD's gfx_target_version is major*10000 + minor*100 + stepping; minor and stepping are hex digits.
    assert [gfx_name(v) for v in (90010, 90402, 90500, 110000, 110001, 120001)] == \
        ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1201"]


def test_process_sampler_sees_a_child_grow():
    code = "import sys, time; b = bytearray(96 * 2**20); print('ready', flush=True); sys.stdin.read()"
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout and child.stdout.readline().strip() == "ready"
        parent = memory.process_sampler(os.getpid())
        alone = memory.process_sampler(child.pid)
        reading, child_rss = parent.read(), alone.read()
        assert child_rss is not None and child_rss > 96
        assert reading is not None and reading > child_rss
    finally:
        child.communicate("")


def test_cpu_memory_without_a_server_process_is_bad_input():
    with pytest.raises(InputError, match="--server-pid"):
        memory.pick_sampler("cpu", lambda: None)
    with pytest.raises(InputError, match="no such process"):
        memory.process_sampler(2**22 + 12345)
    assert memory.pick_sampler("none", lambda: None) is None




@pytest.mark.parametrize("flags, code, words", [
    (("--concurrency", "1,x"), 2, "--concurrency 1,x"),
    (("--concurrency", "4,4"), 2, "distinct"),
    (("--url", "ftp://127.0.0.1:1"), 2, "--url ftp://127.0.0.1:1"),
    (("--out", "/nonexistent-dir/run.json"), 2, "/nonexistent-dir"),
    ((), 4, "no OpenAI-compatible server answers"),
])
def test_bench_serve_bad_input(tmp_path, capsys, flags, code, words):
    args = {"--url": "http://127.0.0.1:9", "--out": str(tmp_path / "run.json")}
    extra = list(flags)
    for key in list(args):
        if key in extra:
            del args[key]
    got = exit_code(["bench", "serve", *[x for kv in args.items() for x in kv], *extra])
    err = capsys.readouterr().err
    assert got == code, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and words in lines[0], err
    assert not (tmp_path / "run.json").exists()


GUIDELLM = Path(__file__).parent / "guidellm_samples"


def _request(extra: dict[str, object]) -> LevelRequest:
    return LevelRequest("http://127.0.0.1:30000", "m", "/models/m", "completions", 16, 4, 2, 8, 0, extra)


def test_guidellm_scenario_sends_ignore_eos_only_to_servers_that_take_it(tmp_path):
    sglang = guidellm.scenario(_request({"ignore_eos": True}), tmp_path / "b.json")["spec"]
    assert sglang["data"] == [{"kind": "synthetic_text", "prompt_tokens": 16, "output_tokens": 4}]
    assert "max_tokens" not in sglang["backend"] and "extras" not in sglang["backend"]
    config = '{"min_new_tokens": 4}'
    tf = guidellm.scenario(_request({"generation_config": config}), tmp_path / "b.json")["spec"]
    assert tf["data"] == [{"kind": "synthetic_text", "prompt_tokens": 16}]  # no output_tokens: no ignore_eos
    assert tf["backend"]["max_tokens"] == 4 and tf["backend"]["extras"] == {"body": {"generation_config": config}}
    assert tf["profile"] == {"kind": "concurrent", "streams": [2]}
    assert tf["constraints"] == [{"kind": "max_requests", "count": 8}]
    assert tf["tokenizer"] == {"kind": "huggingface_auto", "model": "/models/m"}


def test_guidellm_output_parses():
    data = json.loads((GUIDELLM / "benchmarks-cpu-c1.json").read_text())
    level = guidellm.parse_export(data, 1, None)
    metrics = data["benchmarks"][0]["metrics"]
    assert (level.completed, level.errors, level.output_len_mean) == (4, 0, 4.0)
    assert level.ttft_ms.p50 == metrics["time_to_first_token_ms"]["successful"]["percentiles"]["p50"]
    assert level.e2e_ms.p99 == pytest.approx(metrics["request_latency"]["successful"]["percentiles"]["p99"] * 1000)
    assert level.output_tok_s == metrics["output_tokens_per_second"]["successful"]["mean"]
    assert 0 < level.ttft_ms.p50 <= level.e2e_ms.p50


def test_guidellm_accounting_counts_finished_requests_only():
    """A level whose output accounts for fewer requests than were asked for is the one run again: cancelled
    (`incomplete`) requests are not finished; errored ones are (the server answered)."""
    data = json.loads((GUIDELLM / "benchmarks-cpu-c1.json").read_text())
    assert guidellm.accounted(data) == 4
    totals = data["benchmarks"][0]["metrics"]["request_totals"]
    totals.update(successful=3, incomplete=1)
    assert guidellm.accounted(data) == 3
    totals.update(successful=2, errored=1, incomplete=0)
    assert guidellm.accounted(data) == 3


def test_load_generator_choice():
    gen, tool = generators.pick("auto")
    assert gen.name == "aiperf" and tool.startswith("aiperf ")  # the host has the bench extra
    with pytest.raises(InputError, match="GuideLLM is not installed"):
        generators.pick("guidellm")
