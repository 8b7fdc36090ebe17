"""docs/troubleshooting.md is generated from the catalog (+ migrate scanner rules) and kept up to date."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from buildctl.doctor.docs import (
    DOC_PATH,
    REPO_ROOT,
    RULES_PATH,
    generate,
    load_rules,
    render,
)
from buildctl.doctor.models import Category, load_catalog
from buildctl.errors import ConfigError

ENTRIES = load_catalog()


def test_committed_troubleshooting_md_is_up_to_date():
    committed = (REPO_ROOT / DOC_PATH).read_text(encoding="utf-8")
    assert committed == generate(REPO_ROOT), "docs/troubleshooting.md is stale: run python3 -m buildctl.doctor.docs"


def test_generation_is_deterministic():
    assert generate(REPO_ROOT) == generate(REPO_ROOT)


def test_every_entry_has_an_anchor_and_all_five_fields():
    text = render(ENTRIES, None)
    for entry in ENTRIES:
        block = text.split(f'<a id="{entry.id}"></a>', 1)[1].split("<a id=", 1)[0]
        for field in ("**Symptom:**", "**Trigger:**", "**Root cause:**", "**Fix:**", "**Check:**", "**Reports:**"):
            assert field in block, f"{entry.id}: {field} missing"


def test_categories_appear_in_order_as_sections():
    text = render(ENTRIES, None)
    positions = [text.index(f"\n## {cat.value}\n") for cat in Category]
    assert positions == sorted(positions)


def test_markdown_specials_in_prose_are_escaped():
    text = render(ENTRIES, None)
    assert "\\_\\_shared\\_\\_" in text  # from lds-static-over-limit, would render bold otherwise
    assert "rocmig/\\<role\\>" in text  # would vanish as an HTML tag otherwise


def _root_with_rules(tmp_path: Path, rules_yaml: str | None) -> Path:
    if rules_yaml is not None:
        path = tmp_path / RULES_PATH
        path.parent.mkdir(parents=True)
        path.write_text(rules_yaml)
    return tmp_path


RULES = """rules:
  - id: inline-ptx-asm
    severity: error
    message: "Inline PTX assembly."
    hint: "Use a HIP builtin."
    patterns: ['\\basm\\s*\\(']
    doc: |
      PTX is NVIDIA's virtual ISA.
  - id: warp-size-literal
    severity: warning
    message: "Literal 32 used as warp size."
    hint: "Use warpSize."
"""


def test_rules_section_is_added_only_when_the_rules_file_exists(tmp_path):
    without = generate(_root_with_rules(tmp_path / "a", None))
    assert "Migration scanner rules" not in without
    with_rules = generate(_root_with_rules(tmp_path / "b", RULES))
    section = with_rules.split("\n## Migration scanner rules\n", 1)[1]
    assert '<a id="inline-ptx-asm"></a>' in section and '<a id="warp-size-literal"></a>' in section
    assert "- **Severity:** error" in section and "PTX is NVIDIA's virtual ISA." in section
    assert section.index("inline-ptx-asm") < section.index("warp-size-literal")  # file order kept


def test_real_rules_file_is_rendered_when_present():
    rules = load_rules(REPO_ROOT / RULES_PATH)
    if rules is None:
        pytest.skip(f"{RULES_PATH} does not exist yet")
    text = (REPO_ROOT / DOC_PATH).read_text(encoding="utf-8")
    for rule in rules:
        assert f'<a id="{rule.id}"></a>' in text


@pytest.mark.parametrize(
    ("rules_yaml", "expected"),
    [
        ("rules: {}", r"rules: expected a list"),
        ("rules:\n  - id: x\n    severity: error\n    message: m\n", r"rules\[0\]\.hint: missing or not a string"),
        ("rules:\n  - just-a-string\n", r"rules\[0\]: expected a mapping"),
    ],
)
def test_bad_rules_file_is_a_one_line_error_naming_the_file(tmp_path, rules_yaml, expected):
    root = _root_with_rules(tmp_path, rules_yaml)
    with pytest.raises(ConfigError, match=expected) as info:
        generate(root)
    assert str(root / RULES_PATH) in str(info.value) and "\n" not in str(info.value)


def test_rule_id_equal_to_catalog_id_is_refused(tmp_path):
    clash = RULES.replace("id: warp-size-literal", "id: hip-no-binary-for-gpu")
    with pytest.raises(ConfigError, match="anchors would collide"):
        generate(_root_with_rules(tmp_path, clash))


def test_check_mode_detects_stale_file(tmp_path):
    from click.testing import CliRunner

    from buildctl.doctor.docs import main

    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    shutil.copy(REPO_ROOT / DOC_PATH, root / DOC_PATH)
    (root / DOC_PATH).write_text("stale\n")
    runner = CliRunner()
    assert runner.invoke(main, ["--root", str(root), "--check"]).exit_code == 1
    assert runner.invoke(main, ["--root", str(root)]).exit_code == 0
    assert runner.invoke(main, ["--root", str(root), "--check"]).exit_code == 0
