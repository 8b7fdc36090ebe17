"""rocmig doctor: map ROCm build and runtime logs to a known cause, its fix and a check.

Public API (used by ``buildctl build``, ``migrate`` and the image tests on failure):
  diagnose(text, limit=3) -> list[Match]   best matches of the catalog for a log text
  format_matches(matches) -> str           short human text for those matches
The catalog is data: buildctl/doctor/catalog/*.yaml, validated by buildctl.doctor.models.
"""

from __future__ import annotations

from pathlib import Path

from buildctl.doctor.format import format_matches
from buildctl.doctor.matcher import Evidence, Log, Match, cached_matcher, rank_log
from buildctl.doctor.models import CATALOG_DIR, CatalogError, Entry, load_catalog
from buildctl.doctor.reading import LogText

__all__ = ["CatalogError", "Entry", "Evidence", "Match", "diagnose", "format_matches", "load_catalog"]


def diagnose(text: str | LogText, limit: int = 3, catalog_dir: Path = CATALOG_DIR) -> list[Match]:
    """Return at most ``limit`` catalog matches for ``text`` (a log text, or a LogText from
    buildctl.doctor.reading.read_stream for a file of any size), best first.

    An empty list means no known failure was recognised. Raises ValueError if ``limit`` < 1 and
    CatalogError if the catalog in ``catalog_dir`` is invalid.
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    return rank_log(Log.of(text), cached_matcher(catalog_dir))[:limit]
