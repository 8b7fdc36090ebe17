"""Run the engine as a child, wait for its /health, forward SIGTERM / SIGINT, exit cleanly.

The entrypoint is PID 1 in the container, where a signal without a handler is ignored: the handlers
here pass SIGTERM (docker stop) and SIGINT (Ctrl-C) to the engine's whole process group (SGLang runs
its scheduler and detokenizer as child processes), wait GRACE_S seconds, then SIGKILL the group, so
`docker stop` (10 s before its own SIGKILL) ends with the entrypoint's exit status 0.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping

from recipes.serve.errors import NOT_HEALTHY, OK, ServeError

GRACE_S = 5.0
POLL_S = 0.25
PROGRESS_S = 30.0


def health_url(host: str, port: int) -> str:
    """URL of the engine's /health as seen from inside the container (a wildcard host becomes loopback)."""
    local = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"http://[{local}]:{port}/health" if ":" in local else f"http://{local}:{port}/health"


def healthy(url: str) -> bool:
    """True when GET url answers 200 within 1 s (no proxy is used: the engine is local)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=1) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _reap_orphans() -> None:
    """As PID 1, collect exited processes the engine left behind (they are reparented to us)."""
    if os.getpid() != 1:
        return
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


class Supervisor:
    """Start `argv` with `env` in its own process group and supervise it (see the module doc)."""

    def __init__(self, argv: tuple[str, ...], env: Mapping[str, str], log: Callable[[str], None]) -> None:
        self.argv, self.env, self.log = argv, dict(env), log
        self.proc: subprocess.Popen[bytes] | None = None
        self.stopping = False
        self.stop_at = 0.0

    def _on_signal(self, signum: int, _frame: object) -> None:
        if self.proc is None or self.stopping:
            return
        self.stopping = True
        self.stop_at = time.monotonic()
        self.log(f"{signal.Signals(signum).name}: stopping the engine")
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass

    def _stop_group(self) -> None:
        """SIGKILL what is left of the engine's process group after GRACE_S seconds."""
        assert self.proc is not None
        try:
            self.proc.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            self.log(f"engine still running {GRACE_S:.0f} s after SIGTERM: SIGKILL")
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def run(self, url: str, timeout_s: float) -> int:
        """Start the engine, log the seconds to a 200 from `url`, then wait until it exits or a signal
        stops it. Returns 0 after a signal, else the engine's exit code. Raises ServeError(NOT_HEALTHY)
        when the engine exits before it is healthy or is not healthy within timeout_s seconds."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)
        start = time.monotonic()
        self.proc = subprocess.Popen(self.argv, env=self.env, start_new_session=True)
        next_note = start + PROGRESS_S
        while not healthy(url):
            code = self.proc.poll()
            if self.stopping:
                self._stop_group()
                self.log(f"engine stopped {time.monotonic() - self.stop_at:.2f} s after the signal")
                return OK
            if code is not None:
                raise ServeError(NOT_HEALTHY, f"the engine exited with code {code} before {url} answered "
                                 "(its log is above)")
            now = time.monotonic()
            if now - start > timeout_s:
                self.stopping = True
                os.killpg(self.proc.pid, signal.SIGTERM)
                self._stop_group()
                raise ServeError(NOT_HEALTHY, f"{url} did not answer within {timeout_s:.0f} s "
                                 "(ROCMIG_SERVE_HEALTH_TIMEOUT raises the limit)")
            if now >= next_note:
                self.log(f"waiting for {url}: {now - start:.0f} s")
                next_note += PROGRESS_S
            time.sleep(POLL_S)
        self.log(f"healthy after {time.monotonic() - start:.2f} s ({url})")
        while True:
            try:
                code = self.proc.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                if self.stopping:
                    self._stop_group()
                    code = OK
                    break
        _reap_orphans()
        if self.stopping:
            self.log(f"engine stopped {time.monotonic() - self.stop_at:.2f} s after the signal")
            return OK
        return code
