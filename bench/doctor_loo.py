"""Leave-one-out generalisation of `buildctl doctor`: how often a fixture the catalog never saw ranks its
entry first.

For every fixture f of entry E (buildctl/doctor/fixtures/<id>.log and variants/<id>.<n>.log):
  - f is removed from the similarity index (E's document is built from its other fixtures only);
  - every ``any``/``also`` pattern of E that hits f but neither E's symptom line nor another fixture of E
    is dropped (the patterns f alone justified); when such a pattern is an ``all`` pattern, or no ``any``
    pattern is left, E has no pattern route in this fold and can be found by signatures and similarity only;
  - f is diagnosed; the fold counts when E ranks first (top-1) or within the first three (top-3).
The healthy logs (tests/unit/doctor_logs/healthy) are diagnosed with the full catalog; the goal is 0 matches.

Run: .venv/bin/python bench/doctor_loo.py [--misses]
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import click

from buildctl.doctor.matcher import (
    FIXTURES_DIR,
    Log,
    Matcher,
    cached_catalog,
    load_fixtures,
    rank_log,
)
from buildctl.doctor.models import Entry, MatchSpec, Pattern

HEALTHY_DIR = Path(__file__).resolve().parents[1] / "tests" / "unit" / "doctor_logs" / "healthy"
_NEVER = Pattern(re=r"(?!x)x")


def _hits(pattern: Pattern, text: str) -> bool:
    return re.search(pattern.re, text, re.IGNORECASE | re.MULTILINE) is not None


def without_fixture(entry: Entry, held_out: str, others: list[str]) -> Entry:
    """``entry`` with the patterns that only ``held_out`` justifies removed (module docstring)."""
    def justified(p: Pattern) -> bool:
        return not _hits(p, held_out) or _hits(p, entry.symptom) or any(_hits(p, o) for o in others)

    spec = entry.match
    any_kept = tuple(p for p in spec.any if justified(p))
    also_kept = tuple(p for p in spec.also if justified(p))
    route = bool(any_kept) and all(justified(p) for p in spec.all)
    new = MatchSpec.model_validate({
        "any": [p.model_dump() for p in (any_kept if route else (_NEVER,))],
        "all": [p.model_dump() for p in spec.all] if route else [],
        "also": [p.model_dump() for p in also_kept],
        "not": [p.model_dump() for p in spec.not_],
        "min_score": spec.min_score,
    })
    return entry.model_copy(update={"match": new})


@click.command()
@click.option("--misses", is_flag=True, help="print every fold whose entry did not rank first")
def main(misses: bool) -> None:
    """Print the leave-one-out top-1 / top-3 rates and the healthy-log matches."""
    start = time.perf_counter()
    entries = cached_catalog()
    fixtures = load_fixtures(FIXTURES_DIR)
    folds = top1 = top3 = no_route = 0
    for position, entry in enumerate(entries):
        texts = fixtures.get(entry.id, [])
        for k, held_out in enumerate(texts):
            others = texts[:k] + texts[k + 1:]
            fold_entry = without_fixture(entry, held_out, others)
            no_route += fold_entry.match.any == (_NEVER,)
            fold_entries = entries[:position] + (fold_entry,) + entries[position + 1:]
            fold_fixtures = {**fixtures, entry.id: others}
            ranked = [m.entry.id for m in rank_log(Log.of(held_out), Matcher.build(fold_entries, fold_fixtures))]
            folds += 1
            top1 += ranked[:1] == [entry.id]
            top3 += entry.id in ranked[:3]
            if misses and ranked[:1] != [entry.id]:
                click.echo(f"miss {entry.id}#{k}: got {ranked[:3]}")
    full = Matcher.build(entries, fixtures)
    healthy = sorted(HEALTHY_DIR.glob("*.log"))
    healthy_matched = [p.name for p in healthy if rank_log(Log.of(p.read_text()), full)]
    seconds = time.perf_counter() - start
    click.echo(f"entries {len(entries)}, fixtures {folds} (folds without a pattern route: {no_route})")
    click.echo(f"leave-one-out top-1 {top1}/{folds} = {top1 / max(folds, 1):.1%}, "
               f"top-3 {top3}/{folds} = {top3 / max(folds, 1):.1%}")
    click.echo(f"healthy logs matched: {len(healthy_matched)}/{len(healthy)} {healthy_matched}")
    click.echo(f"time {seconds:.1f} s")
    sys.exit(0)


if __name__ == "__main__":
    main()
