"""Several LangGraph server replicas on loopback, all on one PostgreSQL database.

Each replica is `langgraph dev` in a working directory of its own (its `.langgraph_api/`
state, its log), with the repository's langgraph.json anchored at the repository, and
`SGAM_PG_URI` naming the same database: the deployment issue 28 asks about, on one
machine. All replicas are started before any is waited for, so on a fresh database their
`setup()` calls race, as they would when a deployment scales out. Used by
tests/test_replicas.py and benchmarks/bench_replicas.py.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
LANGGRAPH = Path(sys.executable).parent / "langgraph"
START_TIMEOUT = 120.0  # seconds for every replica to answer /ok (all start at once)
STOP_TIMEOUT = 15.0
JOBS = 4  # runs a replica executes at once (`langgraph dev` runs one by default)


class ReplicaError(RuntimeError):
    """A replica did not start, or exited on its own."""


@dataclass
class Replica:
    """One `langgraph dev` process group, its URL and its log."""

    index: int
    url: str
    proc: subprocess.Popen
    log: Path

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole process group (the CLI and its server), as a crashed host would."""
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=STOP_TIMEOUT)

    def stop(self) -> None:
        """SIGTERM the process group, then SIGKILL it if it has not exited in time."""
        if not self.alive():
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def anchored_config() -> dict[str, Any]:
    """langgraph.json with every path made absolute, so a replica can run from any directory."""
    config = json.loads((ROOT / "langgraph.json").read_text())
    return {
        **config,
        "dependencies": [str(ROOT / d) for d in config["dependencies"]],
        "graphs": {k: str(ROOT / v) for k, v in config["graphs"].items()},
        "store": {**config["store"], "path": str(ROOT / config["store"]["path"])},
    }


def launch(index: int, workdir: Path, env: dict[str, str]) -> Replica:
    """Start one replica in `workdir` (created); it is not ready until /ok answers."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "langgraph.json").write_text(json.dumps(anchored_config()))
    port = free_port()
    command = [str(LANGGRAPH), "dev", "--no-browser", "--port", str(port)]
    command += ["--host", "127.0.0.1", "--no-reload", "--config", "langgraph.json"]
    command += ["--n-jobs-per-worker", str(JOBS)]
    log = workdir / "server.log"
    with log.open("w") as out:  # the child keeps its own descriptor
        proc = subprocess.Popen(
            command, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    return Replica(index, f"http://127.0.0.1:{port}", proc, log)


def wait_ready(replicas: list[Replica], timeout: float = START_TIMEOUT) -> None:
    """Return once every replica answers /ok; ReplicaError if one exits or time runs out."""
    deadline = time.monotonic() + timeout
    waiting = list(replicas)
    while waiting:
        for replica in list(waiting):
            if not replica.alive():
                raise ReplicaError(f"replica {replica.index} exited:\n{replica.log_tail()}")
            try:
                if httpx.get(f"{replica.url}/ok", timeout=1, trust_env=False).status_code == 200:
                    waiting.remove(replica)
            except httpx.TransportError:
                pass
        if waiting and time.monotonic() > deadline:
            raise ReplicaError(f"no /ok in {timeout:.0f} s:\n{waiting[0].log_tail()}")
        if waiting:
            time.sleep(0.2)


@contextmanager
def replicas(
    count: int,
    uri: str,
    workdir: Path,
    *,
    embedding: str = "none",
    scripts: dict[str, list[dict[str, Any]]] | None = None,
) -> Iterator[list[Replica]]:
    """`count` replicas on the database `uri`, started at once; all stopped on exit.

    `embedding` is SGAM_EMBEDDING ("none": keyword search, and a start without loading
    MiniLM in every process); `scripts` feeds the scripted chat models (graphs/scripted.py).
    """
    if not LANGGRAPH.exists():
        raise ReplicaError("langgraph-cli[inmem] is not installed (pip install -e '.[dev]')")
    env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "SGAM_PG_URI": uri,
        "SGAM_EMBEDDING": embedding,
    }
    if scripts is not None:
        (workdir / "scripts.json").write_text(json.dumps(scripts))
        env["SGAM_SCRIPTS"] = str(workdir / "scripts.json")
    started: list[Replica] = []
    try:
        for index in range(count):
            started.append(launch(index, workdir / f"replica-{index}", env))
        wait_ready(started)
        yield started
    finally:
        for replica in started:
            if replica.alive():
                os.killpg(replica.proc.pid, signal.SIGCONT)  # in case a test paused it
            replica.stop()
