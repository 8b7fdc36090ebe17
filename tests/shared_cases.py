"""Where the shared case set (inputs from real bug reports, ../shared/cases) is: next to the checkout (the
project layout), else $ROCMIG_CASES_DIR, else the workplace's copy. Tests that need it skip, naming it,
when none exists."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_CANDIDATES = [ROOT.parent / "shared" / "cases", Path(os.environ.get("ROCMIG_CASES_DIR", "/nonexistent")),
               Path("/work/shared/cases")]
CASES_DIR = next((p for p in _CANDIDATES if (p / "cases.json").exists()), _CANDIDATES[0])
