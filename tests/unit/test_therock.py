"""The therock source (ROCm 10.0 from TheRock's per-arch Python packages): golden Dockerfiles of every role,
only the cell arch's device packages, the device guard on real distribution metadata, and its pins on an
index (a local PEP 503 page here; AMD's index is not reachable from this machine)."""

from __future__ import annotations

import http.server
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from buildctl.load import load_project
from buildctl.pins import check_pins, therock_pins
from buildctl.plan import Selection, make_plan
from buildctl.render import render_cell
from tests.unit.golden_files import assert_golden

ROOT = Path(__file__).resolve().parents[2]
GUARD = ROOT / "templates" / "files" / "device_guard.py"
ROLES = ["base", "dev", "torch", "kernels", "serve", "train"]


def therock_plan(arch: str = "gfx942"):
    project = load_project(ROOT)
    return project, make_plan(project, Selection(("therock",), ("10.0",), (arch,)))


def test_every_role_is_planned_for_the_confirmed_archs():
    for arch in ("gfx942", "gfx950"):
        _, plan = therock_plan(arch)
        assert sorted(c.role for c in plan.cells) == sorted(ROLES)
        assert all(c.tag == f"rocm10.0.0-{arch}-therock" for c in plan.cells)
    _, plan = therock_plan("gfx1100")
    assert not plan.cells and {e.rule for e in plan.excluded} == {"therock-device-archs"}


def test_golden_dockerfiles(tmp_path):
    project, plan = therock_plan()
    for cell in plan.cells:
        out = render_cell(project, cell, tmp_path)
        assert_golden(out, cell)
        assert (out / "rocmig" / "device_guard.py").read_bytes() == GUARD.read_bytes()


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_only_the_cell_arch_device_packages_and_the_guard_after_each_install(tmp_path, arch):
    project, plan = therock_plan(arch)
    for cell in plan.cells:
        text = (render_cell(project, cell, tmp_path) / "Dockerfile").read_text()
        devices = set(re.findall(r"-device-(gfx[0-9a-z]+)", text))
        assert devices <= {arch}, (cell.ref, devices)
        installs = text.count("--index-url https://stable.repo.amd.com/rocm/whl-next/")
        if cell.role in ("base", "torch"):
            assert f"device_guard.py {arch} --require" in text and installs == 1
        if cell.role in ("dev", "serve", "train", "kernels"):
            assert "rocm-sdk-devel==10.0.0" in text and "rocm-sdk init" in text
        assert "download.pytorch.org" not in text and "repo.radeon.com" not in text
        if cell.role != "torch":
            assert not re.search(r"\btriton==", text), f"{cell.ref}: TheRock's torch brings its Triton"


def _dist(site: Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def _guard(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(GUARD), *args], capture_output=True, text=True, check=False)


def test_device_guard_on_real_distribution_metadata(tmp_path):
    site = tmp_path / "site"
    _dist(site, "rocm-sdk-core", "10.0.0")
    _dist(site, "rocm-sdk-device-gfx942", "10.0.0")
    _dist(site, "amd-torch-device-gfx942", "2.11.0+rocm10.0.0")
    ok = _guard("gfx942", "--require", "rocm-sdk-device-gfx942", "amd-torch-device-gfx942", "--path", str(site))
    assert ok.returncode == 0 and "gfx942 only" in ok.stdout
    missing = _guard("gfx942", "--require", "amd-torchvision-device-gfx942", "--path", str(site))
    assert missing.returncode == 1 and "amd-torchvision-device-gfx942 is not installed" in missing.stderr
    _dist(site, "rocm_sdk_device_gfx950", "10.0.0")
    other = _guard("gfx942", "--require", "rocm-sdk-device-gfx942", "--path", str(site))
    assert other.returncode == 1
    assert "rocm-sdk-device-gfx950 10.0.0 is the device code of gfx950, not gfx942" in other.stderr


def test_therock_pins_per_role():
    _, plan = therock_plan()
    pins = {c.role: therock_pins(c) for c in plan.cells}
    assert ("rocm-sdk-device-gfx942", "10.0.0") in pins["base"]
    assert ("amd-torch-device-gfx942", "2.11.0+rocm10.0.0") in pins["torch"]
    assert ("triton", "3.8.0+git4cff872c.rocm10.0.0") in pins["torch"]
    assert all(p == [("rocm-sdk-devel", "10.0.0")] for r, p in pins.items() if r in ("dev", "serve", "train", "kernels"))
    amd = make_plan(load_project(ROOT), Selection(("amd",), ("7.2",), ("gfx942",)))
    assert all(therock_pins(c) == [] for c in amd.cells)


class _Index(http.server.BaseHTTPRequestHandler):
    """A PEP 503 index serving TheRock's file names the way index pages write them (%2B for '+')."""

    files = {"torch": ["torch-2.11.0%2Brocm10.0.0-cp312-cp312-manylinux_2_28_x86_64.whl"],
             "rocm-sdk-device-gfx942": ["rocm_sdk_device_gfx942-10.0.0-py3-none-linux_x86_64.whl"]}

    def do_GET(self) -> None:
        package = self.path.strip("/").split("/")[-1]
        if package not in self.files:
            self.send_response(404)
            self.end_headers()
            return
        body = "".join(f'<a href="{f}">{f}</a>\n' for f in self.files[package]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_pins_found_missing_and_unchecked_on_an_index(tmp_path, monkeypatch):
    monkeypatch.setenv("no_proxy", "127.0.0.1")  # straight to the local index, not through a proxy
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        root = tmp_path / "project"
        for part in ("images", "templates"):
            shutil.copytree(ROOT / part, root / part)
        url = f"http://127.0.0.1:{server.server_port}/simple/"
        text = (ROOT / "matrix.yaml").read_text().replace("https://stable.repo.amd.com/rocm/whl-next/", url)
        (root / "matrix.yaml").write_text(text)
        project = load_project(root)
        plan = make_plan(project, Selection(("therock",), ("10.0",), ("gfx942",), ("base", "torch")))
        checks = {c.package: c for c in check_pins(project, plan) if c.index.startswith(url)}
        assert checks["torch"].found is True, "a %2B-encoded local version is found"
        assert checks["rocm-sdk-device-gfx942"].found is True
        assert checks["amd-torch-device-gfx942"].found is False and "HTTP 404" in checks["amd-torch-device-gfx942"].detail
    finally:
        server.shutdown()
        server.server_close()
    gone = check_pins(project, plan)
    assert all(c.found is None for c in gone if c.index.startswith(url)), "an index that does not answer: unchecked"
