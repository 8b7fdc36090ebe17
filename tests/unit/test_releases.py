"""`buildctl matrix releases` against real HTTP servers on 127.0.0.1 that serve the three index formats
(an apt repository's directory listing, PyTorch's PEP 503 torch page with %2B-encoded local versions,
TheRock's package page): newer releases are found, older and known ones are not, a silent index is
reported as not checked, and the command exits 1 only when something is new."""

from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from buildctl.load import load_project
from buildctl.releases import markdown, newer_releases

ROOT = Path(__file__).resolve().parents[2]
PAGES = {
    "/rocm/apt/": "".join(f'<a href="{v}/">{v}/</a>\n' for v in ("6.4.4", "7.2.3", "7.2.4", "7.3", "7.3.1", "latest")),
    "/whl/torch/": "".join(f'<a href="/whl/rocm{r}/torch-{t}%2Brocm{r}-cp312-cp312-manylinux_2_28_x86_64.whl">x</a>\n'
                           for t, r in (("2.10.0", "7.1"), ("2.11.0", "7.2"), ("2.12.0", "7.4"))),
    "/therock/rocm-sdk-core/": '<a href="rocm_sdk_core-10.0.0-py3-none-linux_x86_64.whl">a</a>\n'
                               '<a href="rocm_sdk_core-10.1.0-py3-none-linux_x86_64.whl">b</a>\n',
}


class _Pages(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = PAGES.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.end_headers()
        self.wfile.write((body or "").encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def indexes(tmp_path, monkeypatch):
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    root = tmp_path / "project"
    for part in ("images", "templates"):
        shutil.copytree(ROOT / part, root / part)
    text = (ROOT / "matrix.yaml").read_text()
    text = text.replace("https://repo.radeon.com/rocm/apt/{full}", f"{base}/rocm/apt/{{full}}")
    text = text.replace("https://stable.repo.amd.com/rocm/whl-next/", f"{base}/therock/")
    (root / "matrix.yaml").write_text(text)
    yield root, base
    server.shutdown()
    server.server_close()


def test_newer_releases_on_each_index(indexes):
    root, base = indexes
    found, unchecked = newer_releases(load_project(root), f"{base}/whl/torch/")
    assert unchecked == []
    got = {(f.source, f.version, f.where.removeprefix(base)) for f in found}
    assert got == {("amd", "7.3", "/rocm/apt/"), ("amd", "7.3.1", "/rocm/apt/"), ("amd", "7.4", "/whl/torch/"),
                   ("therock", "10.1.0", "/therock/rocm-sdk-core/")}
    body = markdown(found, unchecked)
    assert body.startswith("# amd 7.3, amd 7.3.1, amd 7.4, therock 10.1.0\n")
    assert "`python -m buildctl matrix bump amd 7.3.0 --dry-run`" in body
    assert "`python -m buildctl matrix bump therock 10.1.0 --dry-run`" in body


def test_a_silent_index_is_not_checked_rather_than_empty(indexes):
    root, base = indexes
    found, unchecked = newer_releases(load_project(root), f"{base}/missing/")
    assert [u.url.removeprefix(base) for u in unchecked] == ["/missing/"] and "HTTP 404" in unchecked[0].reason
    assert "Not checked (the index did not answer)" in markdown(found, unchecked)


def test_command_exits_1_and_writes_the_issue_body(indexes, tmp_path):
    root, _ = indexes
    out = tmp_path / "releases.md"
    proc = subprocess.run([sys.executable, "-m", "buildctl", "--root", str(root), "matrix", "releases", "--markdown",
                           str(out)], capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert out.read_text().startswith("# amd 7.3, amd 7.3.1") and "therock 10.1.0" in proc.stderr


def test_json_result_has_the_envelope(indexes):
    root, _ = indexes
    proc = subprocess.run([sys.executable, "-m", "buildctl", "--root", str(root), "matrix", "releases", "--json"],
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["schema_version"], doc["kind"]) == (1, "releases")
    assert {(f["source"], f["version"]) for f in doc["found"]} >= {("therock", "10.1.0")}
