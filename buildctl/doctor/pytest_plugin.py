"""pytest plugin: on a failing test, run the failure text through the doctor and add its matches.

Enable with ``pytest_plugins = ["buildctl.doctor.pytest_plugin"]`` in tests/conftest.py (or
``-p buildctl.doctor.pytest_plugin``). For each failed report (setup, call or teardown) the text of
the failure (longrepr) and the captured stdout/stderr/log sections are diagnosed; when something
matches, a report section named "rocmig doctor" is added, which pytest prints under the failure.
"""

from __future__ import annotations

from collections.abc import Generator

import pluggy
import pytest

from buildctl.doctor import diagnose, format_matches

SECTION = "rocmig doctor"
TAIL_LINES = 400  # only the end of very long failure texts is diagnosed (the error is at the end)


def failure_text(report: pytest.TestReport) -> str:
    """longrepr plus every captured section of ``report``, last TAIL_LINES lines."""
    parts = [report.longreprtext] + [content for _, content in report.sections]
    lines = "\n".join(parts).splitlines()
    return "\n".join(lines[-TAIL_LINES:])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    """After pytest builds the report, append the doctor's section to failed ones."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not report.failed:
        return
    matches = diagnose(failure_text(report))
    if matches:
        report.sections.append((SECTION, format_matches(matches)))
