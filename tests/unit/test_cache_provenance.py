"""Provenance pieces that need no engine: build labels, dpkg parsing, the CycloneDX document, and the
failure detail a full disk gets."""

import json
from pathlib import Path

import pytest

from buildctl.build import failure_detail
from buildctl.cache import CACHE_KEY_LABEL
from buildctl.load import load_project
from buildctl.plan import Selection, make_plan
from buildctl.provenance import Package, build_labels, parse_dpkg, sbom_json

ROOT = Path(__file__).resolve().parents[2]
KEY = "sha256:" + "1" * 64


@pytest.fixture
def dev_cell():
    project = load_project(ROOT)
    return make_plan(project, Selection(("debian",), ("7.2",), ("gfx942",), ("dev",))).cells[0]


def test_build_labels_carry_oci_keys_cell_and_key(dev_cell):
    labels = build_labels(dev_cell, KEY, "a" * 40, "https://example.invalid/rocmig.git", "2026-01-02T03:04:05Z")
    assert labels["org.opencontainers.image.created"] == "2026-01-02T03:04:05Z"
    assert labels["org.opencontainers.image.revision"] == "a" * 40
    assert labels["org.opencontainers.image.version"] == dev_cell.tag
    assert labels[CACHE_KEY_LABEL] == KEY
    assert json.loads(labels["io.rocmig.cell"])["arch"] == "gfx942"
    assert "hipcc" in json.loads(labels["io.rocmig.pins"])["packages"]
    bare = build_labels(dev_cell, KEY, None, None, "2026-01-02T03:04:05Z")
    assert "org.opencontainers.image.revision" not in bare and "org.opencontainers.image.source" not in bare


def test_parse_dpkg_keeps_installed_packages_and_rejects_garbage():
    text = "bash\t5.2.37-2\tamd64\tii \nold\t1.0\tamd64\trc \nhipcc\t7.2.4-1~exp1\tamd64\tii \n"
    assert [p.name for p in parse_dpkg(text)] == ["bash", "hipcc"]
    with pytest.raises(ValueError, match="expected 4"):
        parse_dpkg("bash 5.2\n")


def test_sbom_is_cyclonedx_with_purls_and_deterministic(dev_cell):
    pkgs = [Package("deb", "hipcc", "7.2.4-1~exp1", "amd64"), Package("pypi", "PyYAML", "6.0.2")]
    doc = json.loads(sbom_json(dev_cell, pkgs, "2026-01-02T03:04:05Z"))
    assert doc["bomFormat"] == "CycloneDX" and doc["specVersion"] == "1.6"
    purls = {c["purl"] for c in doc["components"]}
    assert purls == {"pkg:deb/debian/hipcc@7.2.4-1~exp1?arch=amd64", "pkg:pypi/pyyaml@6.0.2"}
    assert doc["metadata"]["component"]["name"] == "rocmig/dev"
    assert sbom_json(dev_cell, pkgs, "2026-01-02T03:04:05Z") == sbom_json(dev_cell, pkgs, "2026-01-02T03:04:05Z")


def test_disk_full_gets_its_own_message(tmp_path):
    log = tmp_path / "cell.log"
    log.write_text("#7 12.3 E: Write error - write (28: No space left on device)\n")
    assert failure_detail(log, 1).startswith("disk full during the build")
    log.write_text("#7 ERROR: process did not complete successfully: exit code: 100\n")
    assert failure_detail(log, 1) == "docker buildx bake exited 1"
