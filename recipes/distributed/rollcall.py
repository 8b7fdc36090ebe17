"""Roll call before torchrun: every node declares its rank and sizes to node 0, which checks them (torch-free).

torchrun's static rendezvous waits (up to its own timeout, minutes) when a node never comes or
declares another world size, and reports neither cause. The roll call makes those mistakes fail within
seconds with a one-line message: node 0 listens on MASTER_PORT+1 (by default), each other node
connects, sends {"node_rank", "nnodes", "nproc_per_node", "host"} as one JSON line and gets back one
verdict line {"ok": true} or {"ok": false, "error": "..."}. Node 0 answers as soon as every rank in
[0, nnodes) has checked in, or at the first disagreement, or when the join timeout passes.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import asdict, dataclass


class RollCallError(Exception):
    """The nodes do not agree, a node is missing, or the master is unreachable; one-line message."""


@dataclass(frozen=True)
class Declaration:
    """What one node says about the job: its node rank, the node count and processes per node."""

    node_rank: int
    nnodes: int
    nproc_per_node: int
    host: str

    def check(self) -> None:
        """Raise RollCallError if this declaration is inconsistent on its own."""
        if self.nnodes < 1 or self.nproc_per_node < 1:
            raise RollCallError(f"--nnodes {self.nnodes} / --nproc-per-node {self.nproc_per_node}: both must be >= 1")
        if not 0 <= self.node_rank < self.nnodes:
            raise RollCallError(f"--node-rank {self.node_rank} not allowed with --nnodes {self.nnodes} "
                                f"(allowed: 0..{self.nnodes - 1})")


def _mismatch(mine: Declaration, other: Declaration) -> str | None:
    for key in ("nnodes", "nproc_per_node"):
        a, b = getattr(mine, key), getattr(other, key)
        if a != b:
            flag = "--" + key.replace("_", "-")
            return (f"world size mismatch: node {other.node_rank} ({other.host}) declares {flag} {b}, "
                    f"node {mine.node_rank} ({mine.host}) declares {a}")
    return None


def _send(conn: socket.socket, obj: dict) -> None:
    try:
        conn.sendall((json.dumps(obj) + "\n").encode())
    except OSError:
        pass


def _read_line(conn: socket.socket, deadline: float) -> str:
    buf = b""
    while not buf.endswith(b"\n"):
        conn.settimeout(max(0.05, deadline - time.monotonic()))
        chunk = conn.recv(4096)
        if not chunk:
            break
        buf += chunk
    return buf.decode(errors="replace").strip()


def host(me: Declaration, port: int, join_timeout_s: float, bind: str = "0.0.0.0") -> list[Declaration]:
    """Run the roll call as node 0 on `port`; returns all declarations ordered by node rank.

    Raises RollCallError (and tells every connected node why) on a declaration that disagrees with
    `me`, a node rank claimed twice, a bad declaration, or fewer than me.nnodes nodes within
    `join_timeout_s` seconds. Raises RollCallError if `port` cannot be bound.
    """
    me.check()
    if me.nnodes == 1:
        return [me]
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        srv.bind((bind, port))
    except OSError as exc:
        srv.close()
        raise RollCallError(f"roll call port {port} cannot be bound on this node ({exc.strerror}): "
                            f"choose another --master-port") from None
    srv.listen(64)
    seen: dict[int, tuple[Declaration, socket.socket | None]] = {0: (me, None)}
    deadline = time.monotonic() + join_timeout_s
    error = None
    try:
        while len(seen) < me.nnodes and error is None:
            left = deadline - time.monotonic()
            if left <= 0:
                missing = sorted(set(range(me.nnodes)) - set(seen))
                error = (f"only {len(seen)} of {me.nnodes} nodes joined within {join_timeout_s:g} s "
                         f"(missing node ranks: {', '.join(map(str, missing))}): check --nnodes and that "
                         f"every node was started")
                break
            srv.settimeout(left)
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            try:
                raw = json.loads(_read_line(conn, min(deadline, time.monotonic() + 10)))
                other = Declaration(**{k: raw[k] for k in ("node_rank", "nnodes", "nproc_per_node", "host")})
            except (OSError, ValueError, KeyError, TypeError) as exc:
                _send(conn, {"ok": False, "error": f"bad roll call message ({exc.__class__.__name__})"})
                conn.close()
                continue
            if other.node_rank in seen:
                prev = seen[other.node_rank][0]
                error = f"node rank {other.node_rank} claimed twice (by {prev.host} and {other.host}): check --node-rank"
                seen.setdefault(-1 - len(seen), (other, conn))
                break
            seen[other.node_rank] = (other, conn)
            error = _mismatch(me, other)
            if error is None:
                try:
                    other.check()
                except RollCallError as exc:
                    error = f"node {other.node_rank} ({other.host}): {exc}"
        verdict = {"ok": error is None, "error": error}
        for _, conn in seen.values():
            if conn is not None:
                _send(conn, verdict)
                conn.close()
    finally:
        srv.close()
    if error:
        raise RollCallError(error)
    return [seen[r][0] for r in range(me.nnodes)]


def join(me: Declaration, master_addr: str, port: int, connect_timeout_s: float, join_timeout_s: float) -> None:
    """Check in with node 0 at `master_addr`:`port` and wait for its verdict.

    Retries refused connections until `connect_timeout_s`; then waits up to `join_timeout_s` + 10 s
    for the verdict. Raises RollCallError when the address does not resolve, the master stays
    unreachable, the verdict is negative (its message is passed on) or never comes.
    """
    me.check()
    try:
        socket.getaddrinfo(master_addr, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise RollCallError(f"--master-addr {master_addr!r} does not resolve ({exc.strerror})") from None
    deadline = time.monotonic() + connect_timeout_s
    last = "no attempt"
    while True:
        try:
            conn = socket.create_connection((master_addr, port), timeout=max(0.5, deadline - time.monotonic()))
            break
        except OSError as exc:
            last = exc.strerror or exc.__class__.__name__
            if time.monotonic() >= deadline:
                raise RollCallError(f"master {master_addr}:{port} unreachable for {connect_timeout_s:g} s ({last}): "
                                    f"is node rank 0 started, and is the port open between the nodes?") from None
            time.sleep(0.25)
    with conn:
        _send(conn, asdict(me))
        try:
            line = _read_line(conn, time.monotonic() + join_timeout_s + 10)
        except OSError:
            line = ""
    if not line:
        raise RollCallError(f"master {master_addr}:{port} gave no roll call verdict within {join_timeout_s:g} s")
    try:
        verdict = json.loads(line)
        verdict.get("ok")
    except (ValueError, AttributeError):
        raise RollCallError(f"master {master_addr}:{port} answered, but not with a roll call verdict "
                            f"({line[:60]!r}): is another service on that port, or a proxy in the way?") from None
    if not verdict.get("ok"):
        raise RollCallError(verdict.get("error") or "roll call refused by node 0")
