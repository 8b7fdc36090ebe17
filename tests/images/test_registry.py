"""Registry push/pull/promote against real registries: Debian's docker-registry (distribution 2.8) started
here on 127.0.0.1 with storage in the test's tmp folder (one open, one with htpasswd auth).

Small images are made with `docker import` from a tar built in Python. The staged promotion of the real
base/dev images of the default slice pushes ~4.5 GB; it runs when ROCMIG_PUSH_E2E=1.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
import uuid
from pathlib import Path

import bcrypt
import docker
import pytest

from buildctl.registry import Credentials, CredentialsError, DigestMismatchError, Registry, RegistryError, RetryPolicy

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_engine")]
REGISTRY_BIN = shutil.which("docker-registry")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_registry(tmp: Path, auth_file: Path | None = None):
    if REGISTRY_BIN is None:
        pytest.fail("docker-registry is not installed: run scripts/setup-docker.sh (Debian package docker-registry)")
    port = _free_port()
    storage = tmp / "storage"
    storage.mkdir(parents=True, exist_ok=True)
    auth = f"auth:\n  htpasswd:\n    realm: rocmig-test\n    path: {auth_file}\n" if auth_file else ""
    cfg = tmp / "config.yml"
    cfg.write_text(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {storage}\n"
                   f"  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n{auth}")
    log = (tmp / "registry.log").open("w")
    proc = subprocess.Popen([REGISTRY_BIN, "serve", str(cfg)], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1)
            break
        except urllib.error.HTTPError:
            break  # 401: it answers
        except OSError:
            time.sleep(0.1)
    return proc, f"127.0.0.1:{port}", storage


@pytest.fixture
def open_registry(tmp_path):
    """(host, storage folder) of a fresh registry without auth."""
    proc, host, storage = _start_registry(tmp_path / "open")
    yield host, storage
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def auth_registry(tmp_path):
    """(host, storage folder, user, password) of a fresh registry with htpasswd (bcrypt) auth."""
    user, password = "rocmig", uuid.uuid4().hex
    htpasswd = tmp_path / "htpasswd"
    htpasswd.write_text(f"{user}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode()}\n")
    proc, host, storage = _start_registry(tmp_path / "auth", htpasswd)
    yield host, storage, user, password
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def client():
    return docker.from_env()


@pytest.fixture
def tiny_image(client):
    """Factory: tiny_image(text) -> local ref of a one-file image made by `docker import`; removed after."""
    made = []

    def make(text: str) -> str:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            data = text.encode()
            info = tarfile.TarInfo("hello.txt")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        ref = f"rocmig-test/tiny:{uuid.uuid4().hex[:10]}"
        subprocess.run(["docker", "import", "-", ref], input=buf.getvalue(), check=True, capture_output=True)
        made.append(ref)
        return ref

    yield make
    for ref in made:
        subprocess.run(["docker", "image", "rm", ref], capture_output=True)


def _rmi(*refs: str) -> None:
    for ref in refs:
        subprocess.run(["docker", "image", "rm", ref], capture_output=True)


def test_push_then_pull_gives_the_pushed_digest(open_registry, client, tiny_image):
    host, _ = open_registry
    reg = Registry(host)
    reg.ping()
    local = tiny_image("one")
    remote = f"{host}/rocmig/tiny:t1"
    digest = reg.push(client, local, remote)
    assert digest.startswith("sha256:") and len(digest) == 71
    assert reg.manifest("rocmig/tiny", "t1")[2] == digest
    try:
        assert reg.pull_verified(client, remote, digest) == digest
        assert f"{host}/rocmig/tiny@{digest}" in client.images.get(remote).attrs["RepoDigests"]
        facts = reg.lookup("rocmig/tiny:t1")
        assert facts.image_id == client.images.get(local).id  # image ID survives the round trip
    finally:
        _rmi(remote)


def test_promotion_puts_the_tested_manifest_under_final_tags(open_registry, client, tiny_image):
    host, _ = open_registry
    reg = Registry(host)
    digest = reg.push(client, tiny_image("two"), f"{host}/rocmig/tiny:x-staging")
    for tag in ("x", "x-alias", "latest"):
        reg.put_tag("rocmig/tiny", tag, digest)
        assert reg.manifest("rocmig/tiny", tag)[2] == digest
    assert reg.manifest("rocmig/tiny", "never-pushed") is None


def test_staging_by_digest_leaves_no_staging_tag(open_registry, client, tiny_image):
    """stage(): the image lands in rocmig/<role> untagged (by digest), the scratch repository's manifest is
    deleted, the digest pulls back; promotion then puts only the final tags on that digest."""
    from buildctl.promote import STAGING_REPOSITORY, stage

    host, _ = open_registry
    reg = Registry(host)
    local = tiny_image("staged")
    cell_ref = f"rocmig/tiny:{local.rsplit(':', 1)[1]}"
    subprocess.run(["docker", "tag", local, cell_ref], check=True)
    try:
        digest, note = stage(reg, client, cell_ref)
        assert note == ""
        assert reg.tags("rocmig/tiny") == [] and reg.tags(f"{STAGING_REPOSITORY}/tiny") == []
        assert reg.manifest(f"{STAGING_REPOSITORY}/tiny", digest) is None
        assert reg.manifest("rocmig/tiny", digest)[2] == digest
        assert reg.pull_verified(client, f"{host}/rocmig/tiny@{digest}", digest) == digest
        for tag in ("t", "t-alias"):
            reg.put_tag("rocmig/tiny", tag, digest)
        assert reg.tags("rocmig/tiny") == ["t", "t-alias"]
    finally:
        _rmi(cell_ref, f"{host}/rocmig/tiny@{digest}")


def test_moved_tag_is_a_digest_mismatch(open_registry, client, tiny_image):
    host, _ = open_registry
    reg = Registry(host)
    remote = f"{host}/rocmig/tiny:moving"
    first = reg.push(client, tiny_image("A"), remote)
    second = reg.push(client, tiny_image("B"), remote)  # someone moved the tag after our push
    assert first != second
    try:
        with pytest.raises(DigestMismatchError, match="differs from pushed"):
            reg.pull_verified(client, remote, first)
    finally:
        _rmi(remote)


def test_wrong_credentials_fail_before_anything_is_pushed(auth_registry, client, tiny_image):
    host, storage, user, password = auth_registry
    Registry(host, Credentials(user, password)).ping()  # the right password works: the registry is real
    bad = Registry(host, Credentials(user, "wrong"), RetryPolicy(attempts=1))
    with pytest.raises(CredentialsError, match=f"refused the credentials of user '{user}'"):
        bad.ping()
    with pytest.raises(CredentialsError, match="requires credentials"):
        Registry(host).ping()
    with pytest.raises(CredentialsError):
        bad.push(client, tiny_image("secret"), f"{host}/rocmig/tiny:nope")
    assert not (storage / "docker" / "registry" / "v2" / "repositories").exists()


def buildctl(*args: str, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "buildctl", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "COLUMNS": "250", **(env or {})}, timeout=timeout)


def test_cli_push_to_unreachable_registry_exits_4_quickly():
    start = time.monotonic()
    result = buildctl("push", "--registry", f"127.0.0.1:{_free_port()}", "--retries", "2")
    assert result.returncode == 4, result.stderr
    assert time.monotonic() - start < 30
    assert "failed after 2 attempt(s)" in result.stderr and "Traceback" not in result.stderr


def test_cli_push_with_wrong_password_exits_2_and_pushes_nothing(auth_registry):
    host, storage, user, _ = auth_registry
    result = buildctl("push", "--registry", host, "--username", user, env={"ROCMIG_REGISTRY_PASSWORD": "wrong"})
    assert result.returncode == 2, result.stderr
    assert "refused the credentials" in result.stderr and "Traceback" not in result.stderr
    assert not (storage / "docker" / "registry" / "v2" / "repositories").exists()


def test_cli_bad_registry_value_names_the_flag():
    result = buildctl("push", "--registry", "http://127.0.0.1:5000")
    assert result.returncode == 2 and "--registry:" in result.stderr


def _snapshot(tmp: Path, name: str, failing_dev_test: bool = False) -> Path:
    """A copy of the project (immune to edits others make meanwhile); with failing_dev_test, its dev role
    lists an image test that fails on the real dev image."""
    root = tmp / name
    for folder in ("images", "templates", "recipes", "kernels", "tests"):
        if (ROOT / folder).exists():
            shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for file in ("matrix.yaml", "pyproject.toml"):
        shutil.copy(ROOT / file, root / file)
    if failing_dev_test:
        (root / "tests" / "images" / "test_dev_broken.py").write_text(
            "from tests.images.conftest import slice_cells\n\n"
            "def test_dev_has_a_file_it_lacks(container_for):\n"
            "    host = container_for(slice_cells('dev')[0])\n"
            "    assert host.file('/opt/rocmig/never-installed').exists\n")
        spec = root / "images" / "dev" / "image.yaml"
        spec.write_text(spec.read_text().replace("tests/images/test_dev.py", "tests/images/test_dev_broken.py"))
    return root


@pytest.mark.skipif(os.environ.get("ROCMIG_PUSH_E2E") != "1", reason="pushes ~4.5 GB: set ROCMIG_PUSH_E2E=1")
def test_staged_promotion_of_the_default_slice(open_registry, tmp_path):
    """push: staged by digest, pulled back, image tests on the copy, then final tags at the tested digests.
    A failing image test (dev) blocks promotion of the whole selection; with --keep-going the cells that
    passed (base) are promoted and the failed one never gets a final tag."""
    host, _ = open_registry
    reg = Registry(host)
    full, alias = "rocm7.2.4-gfx942-debian", "rocm7.2-gfx942-debian"
    # The images must match the tree's inputs (others may have built other inputs under the same tags).
    good = _snapshot(tmp_path, "good")
    settle = buildctl("--root", str(good), "build", "--image", "dev", "--no-apt-check-valid-until",
                      "--out", str(tmp_path / "settle"), timeout=3000)
    assert settle.returncode == 0, settle.stderr[-3000:]
    broken = _snapshot(tmp_path, "broken", failing_dev_test=True)
    out = tmp_path / "out"

    failed = buildctl("--root", str(broken), "push", "--registry", host, "--image", "dev", "--out", str(out), timeout=3000)
    assert failed.returncode == 6, failed.stderr[-3000:]
    assert "not promoted" in failed.stderr
    for role in ("base", "dev"):
        assert reg.tags(f"rocmig/{role}") == [] and reg.tags(f"rocmig-staging/{role}") == []
        for tag in (full, alias, "latest"):
            assert reg.manifest(f"rocmig/{role}", tag) is None, f"{role}:{tag} moved although dev failed"

    kept = buildctl("--root", str(broken), "push", "--registry", host, "--image", "dev", "--out", str(out), "--keep-going",
                    timeout=3000)
    assert kept.returncode == 6, kept.stderr[-3000:]
    assert reg.tags("rocmig/base") == [full, alias]  # the debian lane never gets latest in a registry
    assert reg.manifest("rocmig/dev", full) is None

    result = buildctl("--root", str(good), "push", "--registry", host, "--image", "dev", "--out", str(out),
                      timeout=3000)
    assert result.returncode == 0, result.stderr[-3000:]
    for role in ("base", "dev"):
        name = f"rocmig/{role}"
        assert reg.tags(name) == [full, alias] and reg.tags(f"rocmig-staging/{role}") == []
        assert reg.manifest(name, full)[2] == reg.manifest(name, alias)[2]
        log = (out / "logs" / f"push-{role}_rocm7_2_4-gfx942-debian.log").read_text()
        assert " passed" in log and "failed" not in log
    pulled = buildctl("--root", str(good), "pull", "--registry", host, "--image", "dev", timeout=600)
    assert pulled.returncode == 0, pulled.stderr
    assert f"{host}/rocmig/dev:{full}@sha256:" in pulled.stdout

    # A local dev built from changed inputs; back on the real inputs, the registry has the key: pulled.
    recipe = sorted((broken / "recipes" / "migrate").rglob("*.py"))[0]
    recipe.write_text(recipe.read_text() + "\n# changed for the registry-skip test\n")
    changed = buildctl("--root", str(broken), "build", "--image", "dev", "--no-apt-check-valid-until",
                       "--out", str(tmp_path / "changed"), timeout=1200)
    assert changed.returncode == 0, changed.stderr[-3000:]
    plan = buildctl("--root", str(good), "plan", "--json", "--image", "dev", "--no-apt-check-valid-until", "--registry", host,
                    "--out", str(tmp_path / "plan"))
    assert plan.returncode == 0, plan.stderr
    import json
    dev = [c for c in json.loads(plan.stdout)["cells"] if c["ref"].startswith("rocmig/dev:")][0]
    assert (dev["action"], dev["where"]) == ("skip", host), dev
    back = buildctl("--root", str(good), "build", "--image", "dev", "--no-apt-check-valid-until", "--registry", host,
                    "--out", str(tmp_path / "back"), timeout=1200)
    assert back.returncode == 0, back.stderr[-3000:]
    assert f"rocmig/dev:{full}: pulled" in back.stderr
    assert _image_id(f"rocmig/dev:{full}") == reg.lookup(f"rocmig/dev:{full}").image_id


def test_registry_with_a_full_disk_gives_a_clear_error_and_no_tag(tmp_path, client, tiny_image):
    """Registry storage on a 2 MiB tmpfs; an 8 MiB layer fills it (the registry answers HTTP 500)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        proc, host, _ = _start_registry(mnt)
        try:
            local = tiny_image(os.urandom(4 << 20).hex())  # 8 MiB of incompressible text
            reg = Registry(host, retry=RetryPolicy(attempts=2, base_s=0.1, max_s=0.2))
            with pytest.raises(RegistryError, match="fails on its side .full disk"):
                reg.push(client, local, f"{host}/rocmig/tiny:full")
            assert reg.manifest("rocmig/tiny", "full") is None
            assert "no space left on device" in (mnt / "registry.log").read_text()
        finally:
            proc.terminate()
            proc.wait(10)
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def _image_id(ref: str) -> str:
    return subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", ref], capture_output=True,
                          text=True, check=True).stdout.strip()


def test_build_leaf_on_parent_by_image_id_builds_no_parent_cell():
    base = "rocmig/base:rocm7.2.4-gfx942-debian"
    before = _image_id(base)
    result = buildctl("build", "--image", "dev", "--no-apt-check-valid-until", "--parent", before, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "no parent cell is built" in result.stderr
    # One cell (dev) is built; BuildKit's step lines of that cell may name the parent it is FROM.
    cells = [line for line in result.stderr.splitlines() if re.match(r"\[\d+/\d+\] ", line)]
    assert all(line.startswith("[1/1] rocmig/dev:") for line in cells), cells
    assert _image_id(base) == before


def test_parent_of_another_cell_or_not_a_digest_is_refused():
    dev_id = _image_id("rocmig/dev:rocm7.2.4-gfx942-debian")
    wrong = buildctl("build", "--image", "dev", "--parent", dev_id)
    assert wrong.returncode == 2 and "io.rocmig.role='dev' (need 'base')" in wrong.stderr
    loose = buildctl("build", "--image", "dev", "--parent", "rocmig/base:latest")
    assert loose.returncode == 2 and "is not IMAGE@sha256:<digest> or an image ID" in loose.stderr
    short = buildctl("build", "--image", "dev", "--parent", dev_id.removeprefix("sha256:")[:12])
    assert short.returncode == 2 and "io.rocmig.role='dev' (need 'base')" in short.stderr  # short IDs resolve
    roots = buildctl("build", "--image", "base", "--parent", dev_id)
    assert roots.returncode == 2 and "root cells" in roots.stderr
