"""Roll call over real localhost sockets: agreement, world size mismatch, missing node, unreachable master."""

import socket
import threading
import time

import pytest

from recipes.distributed import rollcall as rc


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_host(me, port, timeout, out):
    try:
        out["decls"] = rc.host(me, port, timeout, bind="127.0.0.1")
    except rc.RollCallError as exc:
        out["error"] = str(exc)


def test_two_nodes_agree():
    port, out = _free_port(), {}
    t = threading.Thread(target=_run_host, args=(rc.Declaration(0, 2, 1, "a"), port, 10, out))
    t.start()
    rc.join(rc.Declaration(1, 2, 1, "b"), "127.0.0.1", port, 5, 10)
    t.join(10)
    assert [d.host for d in out["decls"]] == ["a", "b"]


def test_world_size_mismatch_fails_fast_on_both_sides():
    port, out = _free_port(), {}
    t = threading.Thread(target=_run_host, args=(rc.Declaration(0, 2, 1, "a"), port, 30, out))
    t.start()
    start = time.monotonic()
    with pytest.raises(rc.RollCallError, match="world size mismatch: node 1 \\(b\\) declares --nnodes 3"):
        rc.join(rc.Declaration(1, 3, 1, "b"), "127.0.0.1", port, 5, 30)
    t.join(10)
    assert time.monotonic() - start < 5
    assert "world size mismatch" in out["error"]


def test_nproc_mismatch_named():
    port, out = _free_port(), {}
    t = threading.Thread(target=_run_host, args=(rc.Declaration(0, 2, 2, "a"), port, 30, out))
    t.start()
    with pytest.raises(rc.RollCallError, match="--nproc-per-node 1"):
        rc.join(rc.Declaration(1, 2, 1, "b"), "127.0.0.1", port, 5, 30)
    t.join(10)


def test_missing_node_reported_after_join_timeout():
    start = time.monotonic()
    with pytest.raises(rc.RollCallError, match="only 1 of 2 nodes joined within 1 s \\(missing node ranks: 1\\)"):
        rc.host(rc.Declaration(0, 2, 1, "a"), _free_port(), 1, bind="127.0.0.1")
    assert time.monotonic() - start < 3


def test_unreachable_master_within_connect_timeout():
    start = time.monotonic()
    with pytest.raises(rc.RollCallError, match="unreachable for 1 s"):
        rc.join(rc.Declaration(1, 2, 1, "b"), "127.0.0.1", _free_port(), 1, 5)
    assert time.monotonic() - start < 3


def test_unresolvable_master():
    with pytest.raises(rc.RollCallError, match="does not resolve"):
        rc.join(rc.Declaration(1, 2, 1, "b"), "no-such-host.invalid", 29501, 1, 1)


def test_node_rank_out_of_range():
    with pytest.raises(rc.RollCallError, match="allowed: 0..1"):
        rc.join(rc.Declaration(2, 2, 1, "b"), "127.0.0.1", 29501, 1, 1)


def test_duplicate_node_rank():
    port, out = _free_port(), {}
    t = threading.Thread(target=_run_host, args=(rc.Declaration(0, 3, 1, "a"), port, 30, out))
    t.start()
    errs = []

    def j(h):
        try:
            rc.join(rc.Declaration(1, 3, 1, h), "127.0.0.1", port, 5, 30)
        except rc.RollCallError as exc:
            errs.append(str(exc))

    th = [threading.Thread(target=j, args=(h,)) for h in ("b", "c")]
    for x in th:
        x.start()
    for x in th:
        x.join(15)
    t.join(10)
    assert "claimed twice" in out["error"] and len(errs) == 2 and all("claimed twice" in e for e in errs)


def test_a_foreign_service_on_the_port_is_named():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]

    def answer():
        conn, _ = srv.accept()
        conn.recv(1024)
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        conn.close()

    t = threading.Thread(target=answer)
    t.start()
    with pytest.raises(rc.RollCallError, match="not with a roll call verdict"):
        rc.join(rc.Declaration(1, 2, 1, "b"), "127.0.0.1", port, 2, 2)
    t.join(5)
    srv.close()
