"""Launch `llamafactory-cli train` on a config after checking it against the disk and the environment.

    python -m recipes.finetune.launch CONFIG.yaml [--device gpu|cpu] [--dry-run] [key=value ...]

1. Load CONFIG.yaml; `dataset_dir` and `deepspeed` given as relative paths are taken relative to the
   config file (they ship beside it); `model_name_or_path` and `output_dir` relative to the working
   directory. key=value overrides (YAML values) are applied last, as llamafactory-cli accepts them.
2. preflight.check_config + preflight.check_env (--device gpu asks for a ROCm PyTorch with a GPU; cpu
   sets use_cpu: true). Any error: one line on stderr, exit 2, within seconds and before any model load.
3. Write the resolved config to a temporary YAML and run [llamafactory-cli, train, that file].
4. Read output_dir/trainer_state.json: print the loss trend and seconds per step, and the AMP advice
   when the loss diverged (exit 4).
Exit codes: 0 ok, 2 bad config or environment, 3 llamafactory-cli failed, 4 loss diverged.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from . import preflight

CONFIG_RELATIVE_KEYS = ("dataset_dir", "deepspeed")


class LaunchError(Exception):
    """A one-line reason to stop before training."""


def load_config(path: Path, overrides: list[str]) -> dict:
    """Load `path` (a YAML mapping), resolve CONFIG_RELATIVE_KEYS against its directory, apply overrides.

    Raises LaunchError for a missing/unreadable file, a non-mapping document or an override without '='.
    """
    try:
        conf = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LaunchError(f"config {path} does not exist") from None
    except (OSError, yaml.YAMLError) as exc:
        raise LaunchError(f"config {path}: cannot read YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(conf, dict):
        raise LaunchError(f"config {path}: expected a YAML mapping of LLaMA-Factory arguments")
    for key in CONFIG_RELATIVE_KEYS:
        if key in conf and not Path(str(conf[key])).is_absolute():
            conf[key] = str((path.parent / str(conf[key])).resolve())
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise LaunchError(f"override {item!r}: expected key=value (e.g. learning_rate=1e-4)")
        conf[key] = yaml.safe_load(value) if value else ""
    return conf


def parse_args(argv: list[str]) -> argparse.Namespace:
    """CONFIG, --device, --dry-run and key=value overrides."""
    p = argparse.ArgumentParser(prog="python -m recipes.finetune.launch", description=__doc__.splitlines()[0])
    p.add_argument("config", type=Path)
    p.add_argument("overrides", nargs="*", metavar="key=value")
    p.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    p.add_argument("--dry-run", action="store_true", help="check only, do not train")
    return p.parse_intermixed_args(argv)


def training_command(resolved: Path) -> list[str]:
    """[llamafactory-cli, 'train', resolved]; raises LaunchError if llamafactory-cli is not on PATH."""
    exe = shutil.which("llamafactory-cli") or shutil.which("llamafactory-cli", path=str(Path(sys.executable).parent))
    if not exe:
        raise LaunchError("llamafactory-cli not found on PATH: pip install llamafactory (with the image's torch constraints)")
    return [exe, "train", str(resolved)]


def report_run(output_dir: Path) -> tuple[dict, str | None]:
    """Summary of a finished run from output_dir/trainer_state.json: losses, steps, seconds per step.

    Returns (summary, divergence message or None). Raises LaunchError if the state file is missing.
    """
    state_path = output_dir / "trainer_state.json"
    if not state_path.is_file():
        raise LaunchError(f"{state_path} missing: the run did not finish")
    state = json.loads(state_path.read_text(encoding="utf-8"))
    losses, diverged = preflight.loss_verdict(state.get("log_history", []))
    runtime = next((e["train_runtime"] for e in state.get("log_history", []) if "train_runtime" in e), None)
    steps = state.get("global_step", 0)
    summary = {"steps": steps, "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
               "train_runtime_s": runtime, "s_per_step": (runtime / steps) if runtime and steps else None}
    return summary, diverged


def run(argv: list[str]) -> int:
    """Check, train, report; returns the exit code (see module doc)."""
    a = parse_args(argv)
    try:
        conf = load_config(a.config, a.overrides)
        rep = preflight.check_config(conf, a.config)
        if not rep.errors:
            rep.findings += preflight.check_env(conf, a.config, a.device, preflight.probe_env()).findings
        for w in rep.warnings:
            print(f"rocmig-finetune: warning: {w}", file=sys.stderr)
        if rep.errors:
            extra = f" (+{len(rep.errors) - 1} more)" if len(rep.errors) > 1 else ""
            raise LaunchError(rep.errors[0] + extra)
        if a.device == "cpu":
            conf["use_cpu"] = True
        print(f"rocmig-finetune: preflight ok: {a.config} on {a.device}; {preflight.DIVERGENCE_ADVICE}", flush=True)
        if a.dry_run:
            return 0
        with tempfile.TemporaryDirectory(prefix="rocmig-ft-") as tmp:
            resolved = Path(tmp) / "train.yaml"
            resolved.write_text(yaml.safe_dump(conf, sort_keys=False), encoding="utf-8")
            rc = subprocess.run(training_command(resolved), check=False).returncode
        if rc != 0:
            print(f"rocmig-finetune: error: llamafactory-cli train exited {rc} for {a.config} (see above)", file=sys.stderr)
            return 3
        summary, diverged = report_run(Path(str(conf["output_dir"])))
        print("rocmig-finetune: result: " + json.dumps(summary), flush=True)
        if diverged:
            print(f"rocmig-finetune: error: {diverged}", file=sys.stderr)
            return 4
        return 0
    except LaunchError as exc:
        print(f"rocmig-finetune: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
