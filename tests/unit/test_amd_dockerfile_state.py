"""Every rendered Dockerfile is checked for state a later step cannot satisfy (buildctl.dockerfile_state):
a config naming a secret mount, a uid/gid/name the base image already has, an unquoted version specifier.

The amd lane cannot be built here (no repo.radeon.com, no Docker Hub): these faults were found by review,
so each kind is shown caught on the text that had it (the pre-fix apt setup, the pre-fix useradd).
"""

from pathlib import Path

import pytest

from buildctl.dockerfile_state import (
    Accounts,
    account_problems,
    check_rendered,
    secret_problems,
    specifier_problems,
)
from buildctl.load import load_project
from buildctl.plan import Selection, make_plan
from buildctl.render import render_cell

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def project():
    return load_project(ROOT)


def _render_chain(project, tmp_path, selection):
    """Render the selection's cells; yield (cell, folder, problems) with parents' accounts carried on."""
    plan = make_plan(project, selection)
    final: dict[str, Accounts] = {}
    for cell in plan.cells:
        folder = render_cell(project, cell, tmp_path)
        accounts = Accounts.of(cell.os) if cell.parent_ref is None else final[cell.parent_ref].copy()
        problems = check_rendered(folder, accounts)
        final[cell.ref] = accounts
        yield cell, folder, problems


def test_every_rendered_cell_leaves_no_state_a_later_step_cannot_satisfy(project, tmp_path):
    checked, problems = 0, []
    for _cell, _folder, found in _render_chain(project, tmp_path, Selection()):
        checked += 1
        problems += found
    assert checked > 200
    assert not problems, "\n".join(problems[:20])


def test_ubuntu_2404_facts_hold_its_uid_1000_user(project):
    """The fact the amd 24.04 base depends on: ubuntu:24.04 ships user `ubuntu` at uid 1000 (22.04 does not)."""
    facts = project.matrix.os_images
    assert facts["ubuntu:24.04"].users["ubuntu"] == 1000
    assert 1000 not in facts["ubuntu:22.04"].users.values()
    assert all(f.groups["video"] == 44 for f in facts.values())


def test_the_uid_1000_clash_of_ubuntu_2404_is_caught_on_the_rendered_base(project, tmp_path):
    """Without its `userdel --remove ubuntu`, the 24.04 base's useradd --uid 1000 is reported."""
    cell, folder, problems = next(_render_chain(project, tmp_path, Selection(("amd",), ("7.2",), ("gfx942",),
                                                                           ("base",))))
    assert not problems
    dockerfile = folder / "Dockerfile"
    text = dockerfile.read_text()
    assert "userdel --remove ubuntu && " in text
    dockerfile.write_text(text.replace("userdel --remove ubuntu && ", ""))
    found = check_rendered(folder, Accounts.of(cell.os))
    assert any("uid 1000 is user ubuntu" in p for p in found), found


def test_group_and_user_clashes_are_each_named():
    accounts = Accounts({"root": 0}, {"root": 0, "video": 44})
    found = account_problems("groupadd --gid 44 render && groupadd video && useradd --groups video,kfd x",
                             accounts, "Dockerfile:3")
    assert any("gid 44 is group video" in p for p in found)
    assert any("already has group video" in p for p in found)
    assert any("group kfd does not exist" in p for p in found)
    assert account_problems("userdel --remove x", accounts, "D") == []
    assert accounts.groups["render"] == 44 and "x" not in accounts.users


PRE_FIX_DEBIAN_BASE = ("groupadd -f video && groupadd -f render "
                       "&& useradd --create-home --uid 1000 --shell /bin/bash --groups video,render rocm")


def test_ids_left_for_groupadd_and_useradd_to_pick_are_caught():
    """The debian base before the fix: render took the first free gid (1000), so rocm's own group got
    1001 (read in the built image: `id rocm` gave gid=1001(rocm) groups=...,1000(render))."""
    accounts = Accounts({"root": 0}, {"root": 0, "video": 44})
    found = account_problems(PRE_FIX_DEBIAN_BASE, accounts, "D:9")
    assert any("groupadd -f video: -f hides a clash" in p for p in found)
    assert any("groupadd render without --gid takes whichever gid is free" in p for p in found)
    assert any("useradd rocm: its own group cannot get gid 1000 (group render)" in p for p in found)
    assert accounts.groups["render"] == 1000 and accounts.groups["rocm"] == 1001
    assert any("useradd x without --uid" in p for p in account_problems("useradd x", Accounts(), "D"))
    fixed = Accounts({"root": 0}, {"root": 0, "video": 44})
    assert account_problems("groupadd --gid 109 render && groupadd --gid 1000 rocm "
                            "&& useradd --create-home --uid 1000 --gid rocm --groups video,render rocm",
                            fixed, "D") == []
    assert fixed.groups == {"root": 0, "video": 44, "render": 109, "rocm": 1000} and fixed.users["rocm"] == 1000
    assert any("group wheel does not exist" in p for p in account_problems("useradd --uid 7 --gid wheel y",
                                                                           Accounts(), "D"))


PRE_FIX_APT_SETUP = """#!/bin/sh
set -eu
ca=/run/secrets/ca_bundle
echo 'APT::Install-Recommends "false";' > /etc/apt/apt.conf.d/90rocmig
if [ -s "$ca" ]; then
  echo "Acquire::https::CaInfo \\"$ca\\";" > /etc/apt/apt.conf.d/91rocmig-ca
fi
"""


def test_an_apt_config_naming_the_secret_mount_is_caught():
    """The apt setup before the fix wrote CaInfo=/run/secrets/ca_bundle into apt.conf.d (through $ca)."""
    found = secret_problems(PRE_FIX_APT_SETUP, "apt-setup.sh")
    assert len(found) == 1 and "/etc/apt/apt.conf.d/91rocmig-ca" in found[0]
    fixed = 'ca=/run/secrets/ca_bundle\nset -- -o "Acquire::https::CaInfo=$ca"\napt-get "$@" update\n'
    assert secret_problems(fixed, "apt-setup.sh") == []


def test_an_env_naming_the_secret_mount_is_caught(tmp_path):
    (tmp_path / "rocmig").mkdir()
    (tmp_path / "Dockerfile").write_text("FROM debian:trixie\nENV PIP_CERT=/run/secrets/ca_bundle\n")
    assert any("ENV names a secret mount" in p for p in check_rendered(tmp_path, Accounts()))


def test_an_unquoted_version_specifier_is_caught():
    assert specifier_problems("pip install numpy pyzmq>=25.1.2 && ls 2>/dev/null", "D")
    assert specifier_problems("pip install numpy 'pyzmq>=25.1.2' && ls 2>/dev/null", "D") == []
