"""rocmig doctor: map ROCm build and runtime logs to a known cause, its fix and a check.

Public API (used by ``buildctl build``, ``migrate`` and the image tests on failure):
  diagnose(text, limit=3) -> list[Match]   best matches of the catalog for a log text
  format_matches(matches) -> str           short human text for those matches
The catalog is data: buildctl/doctor/catalog/*.yaml, validated by buildctl.doctor.models.
"""

from __future__ import annotations

from pathlib import Path

from buildctl.doctor.format import format_matches
from buildctl.doctor.matcher import Evidence, Match, cached_catalog, rank
from buildctl.doctor.models import CATALOG_DIR, CatalogError, Entry, load_catalog

__all__ = ["CatalogError", "Entry", "Evidence", "Match", "diagnose", "format_matches", "load_catalog"]


def diagnose(text: str, limit: int = 3, catalog_dir: Path = CATALOG_DIR) -> list[Match]:
    """Return at most ``limit`` catalog matches for ``text`` (a log, any length), best first.

    An empty list means no known failure was recognised. Raises ValueError if ``limit`` < 1 and
    CatalogError if the catalog in ``catalog_dir`` is invalid.
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    return rank(text, cached_catalog(catalog_dir))[:limit]
