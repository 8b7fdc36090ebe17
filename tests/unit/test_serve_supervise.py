"""recipes.serve.supervise with real processes: a child HTTP server, SIGTERM forwarded to its group."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from recipes.serve import errors
from recipes.serve.supervise import health_url

ROOT = Path(__file__).resolve().parents[2]
ENGINE = textwrap.dedent("""
    import http.server, os, sys
    open(sys.argv[2], "w").write(str(os.getpid()))
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
        def log_message(self, *a):
            pass
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")
SUPERVISOR = textwrap.dedent("""
    import sys
    from recipes.serve.errors import ServeError
    from recipes.serve.supervise import Supervisor, health_url
    log = lambda m: print("rocmig-serve: " + m, file=sys.stderr, flush=True)
    try:
        sys.exit(Supervisor(tuple(sys.argv[3:]), {}, log).run(health_url("0.0.0.0", int(sys.argv[1])), float(sys.argv[2])))
    except ServeError as e:
        log("error: " + str(e)); sys.exit(e.code)
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _supervise(tmp_path, port, timeout, *engine):
    return subprocess.Popen([sys.executable, "-c", SUPERVISOR, str(port), str(timeout), *engine],
                            cwd=ROOT, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_health_url_maps_wildcards_to_loopback():
    assert health_url("0.0.0.0", 30000) == "http://127.0.0.1:30000/health"
    assert health_url("::", 8000) == "http://[::1]:8000/health"
    assert health_url("10.0.0.5", 1) == "http://10.0.0.5:1/health"


def test_sigterm_stops_engine_and_exits_zero(tmp_path):
    port, pidfile = _free_port(), tmp_path / "engine.pid"
    proc = _supervise(tmp_path, port, 30, sys.executable, "-c", ENGINE, str(port), str(pidfile))
    line = ""
    while "healthy after" not in line:
        line = proc.stderr.readline()
        assert line, "supervisor ended before reporting health"
    engine = int(pidfile.read_text())
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    rest = proc.communicate(timeout=15)[1]
    assert proc.returncode == 0, rest
    assert time.monotonic() - start < 5
    assert "SIGTERM: stopping the engine" in rest and "engine stopped " in rest
    assert not Path(f"/proc/{engine}").exists() or "zombie" in Path(f"/proc/{engine}/status").read_text().lower()


def test_engine_dying_before_health_is_reported(tmp_path):
    proc = _supervise(tmp_path, _free_port(), 30, sys.executable, "-c", "import sys; sys.exit(3)")
    err = proc.communicate(timeout=30)[1]
    assert proc.returncode == errors.NOT_HEALTHY
    assert "exited with code 3 before" in err


def test_health_timeout_stops_the_engine(tmp_path):
    proc = _supervise(tmp_path, _free_port(), 1, sys.executable, "-c", "import time; time.sleep(60)")
    err = proc.communicate(timeout=30)[1]
    assert proc.returncode == errors.NOT_HEALTHY and "did not answer within 1 s" in err
