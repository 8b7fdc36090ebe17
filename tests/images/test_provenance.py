"""Provenance of the built slice: OCI labels from the build, the content key, and an SBOM in the image
that lists exactly the Debian packages installed in it."""

import json

import pytest

from buildctl.cache import CACHE_KEY_LABEL
from tests.images.conftest import inspect_image, slice_cells

CELLS = slice_cells("base") + slice_cells("dev")
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_engine")]


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: c.ref)
def test_build_labels(cell):
    labels = inspect_image(cell.ref)["Config"]["Labels"]
    assert labels["org.opencontainers.image.version"] == cell.tag
    assert labels["org.opencontainers.image.created"].endswith("Z")
    assert labels[CACHE_KEY_LABEL].startswith("sha256:") and len(labels[CACHE_KEY_LABEL]) == 71
    assert json.loads(labels["io.rocmig.cell"])["ref"] == cell.ref
    assert labels["io.rocmig.sbom"] == "/usr/share/rocmig/sbom.cdx.json"


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: c.ref)
def test_sbom_in_the_image_lists_its_debian_packages(cell, container_for):
    host = container_for(cell)
    doc = json.loads(host.file("/usr/share/rocmig/sbom.cdx.json").content_string)
    assert doc["bomFormat"] == "CycloneDX" and doc["metadata"]["component"]["version"] == cell.tag
    in_sbom = {c["name"]: c["version"] for c in doc["components"] if c["purl"].startswith("pkg:deb/")}
    installed = dict(line.split("\t") for line in host.check_output(
        "dpkg-query -W -f '${db:Status-Abbrev}\\t${Package}\\t${Version}\\n' | awk -F'\\t' '$1 ~ /^ii/ {print $2\"\\t\"$3}'"
    ).splitlines())
    assert in_sbom == installed
    if cell.role == "dev":
        assert "hipcc" in in_sbom and any(c["purl"].startswith("pkg:pypi/") for c in doc["components"])
