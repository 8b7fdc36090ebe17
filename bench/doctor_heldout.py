"""Held-out score of `buildctl doctor`: real public reports the catalog was not written from.

Each batch folder under tests/unit/doctor_heldout/ holds verbatim log excerpts and a SOURCES.yaml naming,
per log, the report's URL, its cause and the catalog entries that are a right first answer (``expect``).
A log's top-1 is classed as
  right          the first match is one of ``expect``;
  wrong-generic  the first match is an entry marked generic or harmless (a symptom, not the cause);
  wrong          the first match is another specific entry;
  nothing        no entry matched;
  right-none     no entry matched and ``expect`` is empty (the catalog has no entry for that cause).
A wrong answer misleads more than none; the score is the share of right top-1 answers (right-none is
counted apart).

Run: .venv/bin/python bench/doctor_heldout.py [BATCH ...] [--details]
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import click

from buildctl.doctor import diagnose
from buildctl.doctor.models import Entry
from buildctl.errors import ConfigError
from buildctl.yamlfile import read_yaml

HELDOUT_DIR = Path(__file__).resolve().parents[1] / "tests" / "unit" / "doctor_heldout"


def verdict(top: Entry | None, expect: list[str]) -> str:
    """right / wrong-generic / wrong / nothing for the first match ``top`` (module docstring)."""
    if top is None:
        return "nothing" if expect else "right-none"
    if top.id in expect:
        return "right"
    return "wrong-generic" if top.generic or top.harmless else "wrong"


def score_batch(folder: Path) -> list[tuple[str, str, str]]:
    """(log file, verdict, top-1 id or '-') for every report in ``folder``/SOURCES.yaml, in file order.
    Raises ConfigError when SOURCES.yaml is unreadable or names a log that is not there."""
    sources = read_yaml(folder / "SOURCES.yaml", ConfigError)
    out: list[tuple[str, str, str]] = []
    for report in sources["reports"]:
        log = folder / report["file"]
        if not log.is_file():
            raise ConfigError(f"{folder / 'SOURCES.yaml'}: {report['file']}: no such log")
        matches = diagnose(log.read_text(encoding="utf-8"), limit=1)
        top = matches[0].entry if matches else None
        out.append((report["file"], verdict(top, list(report["expect"])), top.id if top else "-"))
    return out


@click.command()
@click.argument("batches", nargs=-1)
@click.option("--details", is_flag=True, help="print every report's verdict and top-1 entry")
def main(batches: tuple[str, ...], details: bool) -> None:
    """Print the held-out top-1 score of each batch (default: every folder in tests/unit/doctor_heldout)."""
    folders = [HELDOUT_DIR / b for b in batches] or sorted(p for p in HELDOUT_DIR.iterdir() if p.is_dir())
    for folder in folders:
        rows = score_batch(folder)
        counts = Counter(v for _, v, _ in rows)
        if details:
            for name, v, top in rows:
                click.echo(f"  {v:13} {top:40} {name}")
        click.echo(f"{folder.name}: top-1 right {counts['right']}/{len(rows)} = {counts['right'] / len(rows):.1%}; "
                   f"wrong-generic {counts['wrong-generic']}, wrong {counts['wrong']}, nothing {counts['nothing']}, "
                   f"right-none {counts['right-none']} (no entry for the cause, none reported)")
    sys.exit(0)


if __name__ == "__main__":
    main()
