"""Benchmark regression checks against stored figures (the pr workflow's `bench` job).

  python bench/regression.py NAME [--results bench/results/regression.json] [--update]

NAME is a check of the results file: {"<name>": {"command": [argv...], "figures": {"<figure>": {"regex":
"...(number)...", "stored": X, "direction": "higher" | "lower", "tolerance": T}}}}. The command runs from
the project root with this Python; each figure is the first group of its regex in the output. A figure
worse than stored by more than tolerance (lower for "higher is better", higher for "lower is better")
is a regression: one line each, exit 1. --update writes the fresh figures as the stored ones (review the
diff). Exit 2: unknown check, a figure missing from the output, the command failing.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "regression.json"


def measure(check: dict, root: Path = ROOT) -> tuple[dict[str, float], str]:
    """Run the check's command; ({figure: value}, output). Raises ValueError naming a figure the output lacks,
    RuntimeError when the command fails."""
    argv = [sys.executable if a == "{python}" else a for a in check["command"]]
    proc = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(check['command'])}: exit {proc.returncode}: {output.strip()[-500:]}")
    values = {}
    for name, figure in check["figures"].items():
        m = re.search(figure["regex"], output)
        if m is None:
            raise ValueError(f"figure {name}: /{figure['regex']}/ not in the output of {' '.join(check['command'])}")
        values[name] = float(m.group(1))
    return values, output


def regressions(check: dict, values: dict[str, float]) -> list[str]:
    """One line per figure worse than stored by more than its tolerance."""
    found = []
    for name, figure in check["figures"].items():
        stored, value, tol = figure["stored"], values[name], figure.get("tolerance", 0.0)
        worse = stored - value if figure["direction"] == "higher" else value - stored
        if worse > tol:
            found.append(f"{name}: {value:g} against stored {stored:g} ({figure['direction']} is better, "
                         f"tolerance {tol:g})")
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="regression.py")
    parser.add_argument("name")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--update", action="store_true")
    args = parser.parse_args(argv)
    data = json.loads(args.results.read_text())
    if args.name not in data:
        print(f"regression.py: {args.results}: no check {args.name!r} (checks: {', '.join(data)})", file=sys.stderr)
        return 2
    check = data[args.name]
    try:
        values, _ = measure(check)
    except (ValueError, RuntimeError) as exc:
        print(f"regression.py: {args.name}: {exc}", file=sys.stderr)
        return 2
    for name, value in values.items():
        print(f"{args.name} {name}: {value:g} (stored {check['figures'][name]['stored']:g})")
    if args.update:
        for name, value in values.items():
            check["figures"][name]["stored"] = value
        args.results.write_text(json.dumps(data, indent=2) + "\n")
        print(f"regression.py: stored figures of {args.name} updated in {args.results}")
        return 0
    found = regressions(check, values)
    for line in found:
        print(f"regression.py: {args.name} regressed: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
