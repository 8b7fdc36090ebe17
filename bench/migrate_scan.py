"""Fixups + findings of the migrate recipe over a CUDA tree, on the host (no hipify-perl, no hipcc):
time and counts. The hipify output is taken to be the input itself, so the numbers cover the recipe's
own Python work (advice.migrate_tree), which runs once per tree inside the dev image.

    .venv/bin/python bench/migrate_scan.py DIR [DIR ...]

Prints per tree: files, seconds of CPU and wall, fixes by id, findings by (rule, status).
"""

from __future__ import annotations

import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "recipes" / "migrate"))

from migrate import advice, rules, tree  # noqa: E402
from migrate.archs import Arch  # noqa: E402

ARCHS = [Arch("gfx942", "CDNA3", 64, 65536), Arch("gfx1100", "RDNA3", 32, 65536)]


def main(paths: list[str]) -> int:
    for path in paths:
        root = Path(path)
        wall, cpu = time.perf_counter(), time.process_time()
        found = tree.discover(root)
        migrated = advice.migrate_tree({f.rel: (f.text, f.text) for f in found.files}, rules.load_rules(), ARCHS)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        statuses = collections.Counter((f.rule, f.status) for fs in migrated.findings.values() for f in fs)
        fixes = collections.Counter(x.id for fl in migrated.fixes.values() for x in fl)
        print(f"{root.name}: {len(found.files)} files, {cpu:.1f} s CPU, {wall:.1f} s wall, skipped {len(found.skipped)}")
        print(f"  fixes: {dict(sorted(fixes.items()))}")
        for (rule, status), n in sorted(statuses.items()):
            print(f"  {rule} {status}: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
