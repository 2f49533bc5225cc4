"""`langgraph dev` on loopback, offline: the graphs run on the server with the scripted model,
the agent schedules the manager as a delayed server run, and the server's Store API reads
and writes the SGAM ledger with history kept."""

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
from pathlib import Path
from typing import Any

import pytest

from graphs.scheduling import memory_thread_id
from sgam_store import SGAMStore
from sgam_store.tools import MemoryScope

httpx = pytest.importorskip("httpx")
pytest.importorskip("langgraph_api")
pytestmark = pytest.mark.slow
ENGINES = ("sqlite", "postgres")  # the server runs on either engine

ROOT = Path(__file__).resolve().parent.parent
LANGGRAPH = Path(sys.executable).parent / "langgraph"
STATED = "My passport deadline is 2026-07-15."
PREFERENCE = "I prefer short answers."
SCOPE = {"tenant_id": "acme", "user_id": "mira"}


def extraction(evidence: str, attribute: str, value: str, valid_from: str) -> dict[str, Any]:
    update = {
        "evidence": evidence,
        "subject": "mira",
        "attribute": attribute,
        "current_value": None,
        "change": "new",
        "value": value,
        "valid_from": valid_from,
    }
    return {"tool_calls": [{"name": "MemoryUpdates", "args": {"updates": [update]}}]}


SCRIPTS = {
    "server-agent": [{"content": "Noted."}],
    "server-extract": [  # one reply per manager run, in the order the test runs them
        extraction(STATED, "passport_deadline", "2026-07-15", "2026-06-01T09:00:00Z"),
        extraction("I prefer short answers", "answer_style", "short", "2026-06-02T09:00:00Z"),
    ],
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def langgraph_dev(tmp_path: Path, target: str) -> Iterator[str]:
    """`langgraph_server` with this module's scripts; yields its URL."""
    with langgraph_server(tmp_path, target, SCRIPTS) as (url, _):
        yield url


@contextmanager
def langgraph_server(
    tmp_path: Path,
    target: str,
    scripts: dict[str, list[dict[str, Any]]],
    extra: dict[str, Any] | None = None,
) -> Iterator[tuple[str, subprocess.Popen]]:
    """Start `langgraph dev` on a free loopback port; always stop its whole process group.

    It runs from tmp_path, with the repo's langgraph.json anchored at the repo, so the dev
    server's own state directory (.langgraph_api/) never lands in the repository. The
    store lives at `target`: a SQLite file, or PostgreSQL through SGAM_PG_URI. Its scripted
    models replay `scripts`; `extra` adds settings to langgraph.json (an auth handler).
    """
    if not LANGGRAPH.exists():
        pytest.skip("langgraph-cli[inmem] is not installed")
    config = json.loads((ROOT / "langgraph.json").read_text())
    anchored = {
        **config,
        "dependencies": [str(ROOT / d) for d in config["dependencies"]],
        "graphs": {k: str(ROOT / v) for k, v in config["graphs"].items()},
        "store": {**config["store"], "path": str(ROOT / config["store"]["path"])},
        **(extra or {}),
    }
    (tmp_path / "langgraph.json").write_text(json.dumps(anchored))
    (tmp_path / "scripts.json").write_text(json.dumps(scripts))
    env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "SGAM_DB_PATH" if target.endswith(".db") else "SGAM_PG_URI": target,
        "SGAM_SCRIPTS": str(tmp_path / "scripts.json"),
    }
    port = free_port()
    log = (tmp_path / "server.log").open("w")
    command = [str(LANGGRAPH), "dev", "--no-browser", "--port", str(port)]
    command += ["--host", "127.0.0.1", "--no-reload", "--config", "langgraph.json"]
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited:\n{(tmp_path / 'server.log').read_text()}")
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"no /ok in 60 s:\n{(tmp_path / 'server.log').read_text()}")
            time.sleep(0.2)
        yield url, proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGCONT)  # a test may have paused it
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)
        log.close()


def wait_for(check: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := check()):
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for the server")
        time.sleep(0.25)
    return result


def test_langgraph_dev_serves_the_graphs_and_the_sgam_store_api(
    tmp_path: Path, target: str
) -> None:
    with langgraph_dev(tmp_path, target) as url, httpx.Client(base_url=url, timeout=60) as http:
        # The standalone background manager, with the scripted model chosen by config.
        thread = http.post("/threads", json={}).json()["thread_id"]
        message = {"role": "user", "content": STATED, "id": "m1"}
        context = {**SCOPE, "memory_model": "scripted:server-extract"}
        out = http.post(
            f"/threads/{thread}/runs/wait",
            json={
                "assistant_id": "memory_manager",
                "input": {"messages": [message]},
                "context": context,
            },
        ).json()
        (report,) = out["memory_report"]
        assert report["episode_id"] == "msg:m1"
        assert report["written"][0]["value"] == "2026-07-15"

        # A run without a tenant fails at its start, with the reason.
        broken = http.post(
            f"/threads/{thread}/runs/wait",
            json={
                "assistant_id": "memory_manager",
                "input": {"messages": [message]},
                "context": {"user_id": "mira"},
            },
        )
        assert "missing tenant_id" in broken.text

        # The agent: its turn schedules the manager as a delayed run on a memory thread.
        chat = http.post("/threads", json={}).json()["thread_id"]
        agent_context = {
            **context,
            "model": "scripted:server-agent",
            "memory_delay_seconds": 0,
        }
        turn = http.post(
            f"/threads/{chat}/runs/wait",
            json={
                "assistant_id": "agent",
                "input": {"messages": [{"role": "user", "content": PREFERENCE}]},
                "context": agent_context,
            },
        ).json()
        assert turn["messages"][-1]["content"] == "Noted."
        memory_thread = memory_thread_id(MemoryScope("acme", "mira", chat))
        runs = wait_for(
            lambda: [
                r
                for r in http.get(f"/threads/{memory_thread}/runs").json()
                if r["status"] == "success"
            ]
        )
        assert runs[0]["multitask_strategy"] == "rollback"

        # The Store API is the SGAM ledger: PUT twice, GET shows the latest.
        item = {"namespace": ["acme", "mira"], "key": "tone"}
        for text in ("friendly", "formal"):
            put = http.put("/store/items", json={**item, "value": {"text": text}})
            assert put.status_code == 204
        got = http.get("/store/items", params={"namespace": "acme.mira", "key": "tone"}).json()
        assert got["value"] == {"text": "formal"}
        found = http.post("/store/items/search", json={"namespace_prefix": ["acme"]}).json()
        assert {i["key"] for i in found["items"]} == {"tone", "passport_deadline", "answer_style"}
        answer = http.get("/store/items", params={"namespace": "acme.mira", "key": "answer_style"})
        assert answer.json()["value"] == {"value": "short"}
        listed = http.post("/store/namespaces", json={}).json()
        assert listed["namespaces"] == [["acme", "mira"]]

    # The server is gone; the database it wrote holds the history.
    with SGAMStore.from_conn_string(target) as store:
        first, second = store.history("acme", "mira", "tone")
        assert (first.value, second.value) == ({"text": "friendly"}, {"text": "formal"})
        assert first.valid_to == second.valid_from and second.supersedes_fact_id == first.fact_id
        deadline = store.fact_at("acme", "mira", "passport_deadline")
        said = store.who_said(deadline)
        assert (said.content, said.thread_id, said.speaker) == (STATED, thread, "mira")
        preference = store.who_said(store.fact_at("acme", "mira", "answer_style"))
        assert (preference.content, preference.thread_id) == (PREFERENCE, chat)
