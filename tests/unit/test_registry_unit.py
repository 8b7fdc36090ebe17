"""Registry client pieces that need no registry: host validation, error classes, retries on a closed port."""

import socket
import time

import pytest

from buildctl.errors import UnreachableError
from buildctl.registry import (
    CredentialsError,
    Registry,
    RegistryError,
    RetryPolicy,
    TransientError,
    classify,
    parse_host,
)


@pytest.mark.parametrize("value", ["127.0.0.1:5000", "localhost", "registry.example.com:443", "[::1]:5000"])
def test_valid_hosts(value):
    assert parse_host(value) == value


@pytest.mark.parametrize("value", ["", "http://127.0.0.1:5000", "127.0.0.1:99999", "host/path", "a b"])
def test_invalid_hosts_name_the_flag(value):
    with pytest.raises(Exception, match="--registry: .* is not HOST\\[:PORT\\]"):
        parse_host(value)


def test_scheme_is_http_only_for_loopback():
    assert Registry("127.0.0.1:5000").base_url == "http://127.0.0.1:5000"
    assert Registry("localhost:5000").base_url == "http://localhost:5000"
    assert Registry("registry.example.com").base_url == "https://registry.example.com"


@pytest.mark.parametrize("message,kind", [
    ("Put http://h/v2/x/blobs/uploads/: dial tcp 127.0.0.1:5000: connect: connection refused", TransientError),
    ("received unexpected HTTP status: 503 Service Unavailable", TransientError),
    ("unauthorized: authentication required", CredentialsError),
    ("filesystem: write /var/lib/registry/x: no space left on device", RegistryError),
    ("manifest invalid: manifest invalid", RegistryError),
])
def test_engine_errors_are_classified(message, kind):
    err = classify(message, "127.0.0.1:5000")
    assert type(err) is kind
    if kind is RegistryError and "space" in message:
        assert "out of disk space" in str(err) and "nothing was promoted" in str(err)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_registry_is_retried_with_backoff_then_one_clear_error():
    reg = Registry(f"127.0.0.1:{_closed_port()}", retry=RetryPolicy(attempts=3, base_s=0.05, max_s=0.1))
    start = time.monotonic()
    with pytest.raises(UnreachableError) as exc:
        reg.ping()
    took = time.monotonic() - start
    assert "failed after 3 attempt(s)" in str(exc.value) and "refused" in str(exc.value).lower()
    assert exc.value.exit_code == 4
    assert 0.1 <= took < 5  # two backoff sleeps happened, and it gave up quickly


def test_server_side_failures_are_not_called_unreachable():
    err = classify("received unexpected HTTP status: 500 Internal Server Error", "h:5000")
    assert isinstance(err, TransientError) and err.server_side
    assert not classify("dial tcp: connect: connection refused", "h:5000").server_side
