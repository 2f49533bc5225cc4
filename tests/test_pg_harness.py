"""The test harness's own PostgreSQL server (tests/pg.py) stops what it started.

A restart replaces the postmaster. A CI run once deleted the data directory under the
replacement, which was still running, and failed at the end of an otherwise green run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs in its own process so that it starts, restarts and stops a server of its own,
# not the one the rest of the session shares.
_SCRIPT = """
import ctypes, json, os, sys
sys.path.insert(0, sys.argv[1])
# Be the reaper of the server's orphaned processes (PR_SET_CHILD_SUBREAPER), as an init
# process is on CI: a postmaster that exits there leaves no zombie behind.
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
os.environ.pop("SGAM_TEST_PG_URI", None)
from tests import pg
import psycopg

pg.base_uri()
data = pg._server.pgdata
pg.restart()
# Reap the replaced postmaster, as that init process would.
try:
    while os.waitpid(-1, os.WNOHANG)[0]:
        pass
except ChildProcessError:
    pass
pid = int((data / "postmaster.pid").read_text().split()[0])
with psycopg.connect(pg.base_uri(), autocommit=True) as conn:
    conn.execute("SELECT 1")
pg.stop()
print(json.dumps({"pid": pid, "data": str(data)}))
"""


def _serving(pid: int) -> bool:
    """Whether `pid` is a live process (an exited, unreaped child does not count)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


def test_stop_after_restart_stops_the_new_server_and_deletes_its_directory() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert not _serving(report["pid"]), "the restarted server outlived stop()"
    assert not Path(report["data"]).exists()
