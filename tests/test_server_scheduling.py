"""The server scheduler's guarantees against a real `langgraph dev` on loopback, through its
public API (`ServerMemoryScheduler(url=...)`), with the server's own manager graph and a
scripted extraction model:

- re-submissions inside the delay run the manager once per conversation, on the latest
  messages; the replaced (pending) runs never run;
- a submission while the manager is inside a model call does not extract an episode twice
  ("rollback" cancels the running run, but its node's thread finishes that call);
- `close()` is bounded, even with a submission stuck on a server that does not answer, and
  says what it left; a submission after it raises `SchedulerClosedError` and creates no run.

Facts are counted per source episode after the server stops: an episode extracted twice
leaves two facts, since every scripted reply names another attribute.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from graphs.scheduling import SchedulerClosedError, ServerMemoryScheduler, memory_thread_id
from sgam_store import SGAMStore
from sgam_store.tools import MemoryScope

from .test_langgraph_server import langgraph_server

httpx = pytest.importorskip("httpx")
pytest.importorskip("langgraph_api")
pytestmark = pytest.mark.slow

SAID = "I like green tea."
MARGIN = 1.0  # seconds a bounded close may take beyond its timeout on a loaded machine


def extraction(attribute: str, seconds: float = 0) -> dict[str, Any]:
    """A reply that writes one fact, `attribute`, quoting what every message says."""
    update = {
        "evidence": SAID,
        "subject": "mira",
        "attribute": attribute,
        "current_value": None,
        "change": "new",
        "value": "yes",
        "valid_from": "2026-06-01T09:00:00Z",
    }
    reply = {"tool_calls": [{"name": "MemoryUpdates", "args": {"updates": [update]}}]}
    return {**reply, "seconds": seconds}


def said(thread: str, count: int) -> list[HumanMessage]:
    """A conversation's first `count` user messages (each submission carries all so far)."""
    return [HumanMessage(f"Turn {n}: {SAID}", id=f"{thread}-m{n}") for n in range(count)]


def scope(thread: str) -> MemoryScope:
    return MemoryScope(tenant_id="acme", user_id="mira", thread_id=thread)


def settings(script: str) -> dict[str, str]:
    return {"memory_model": f"scripted:{script}"}


def runs_of(http: Any, thread: str) -> list[dict[str, Any]]:
    answer = http.get(f"/threads/{memory_thread_id(scope(thread))}/runs")
    return answer.json() if answer.status_code == 200 else []


def settled(http: Any, thread: str) -> list[dict[str, Any]] | None:
    """The memory thread's runs once none is pending or running, else None."""
    runs = runs_of(http, thread)
    busy = any(r["status"] in ("pending", "running") for r in runs)
    return None if busy or not runs else runs


def wait_for(check: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := check()):
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for the server")
        time.sleep(0.2)
    return result


def facts_per_episode(target: str) -> Counter[str]:
    with SGAMStore.from_conn_string(target) as store:
        return Counter(f.source_episode_id for f in store.ledger("acme") if f.valid_to is None)


def test_resubmits_inside_the_delay_run_the_manager_once_per_conversation_on_its_latest_state(
    tmp_path: Path, db_path: str
) -> None:
    scripts = {"debounce": [extraction(f"a{n}") for n in range(6)]}
    with (
        langgraph_server(tmp_path, db_path, scripts) as (url, _),
        httpx.Client(base_url=url, timeout=30) as http,
    ):
        scheduler = ServerMemoryScheduler(url=url, delay_seconds=2)
        for count in (1, 2, 3):  # two conversations, turns interleaved, inside the delay
            for thread in ("c1", "c2"):
                scheduler.submit(said(thread, count), scope(thread), settings("debounce"))
        for thread in ("c1", "c2"):
            (run,) = wait_for(lambda t=thread: settled(http, t))  # the replaced ones are gone
            assert run["status"] == "success"
        assert scheduler.close(timeout=5).complete
    counts = facts_per_episode(db_path)
    assert counts == {f"msg:{t}-m{n}": 1 for t in ("c1", "c2") for n in range(3)}


def test_a_submission_while_the_manager_is_in_a_model_call_extracts_no_episode_twice(
    tmp_path: Path, db_path: str
) -> None:
    scripts = {"busy": [extraction("first", seconds=3), extraction("second"), extraction("third")]}
    with (
        langgraph_server(tmp_path, db_path, scripts) as (url, _),
        httpx.Client(base_url=url, timeout=30) as http,
    ):
        scheduler = ServerMemoryScheduler(url=url)
        scheduler.submit(said("c1", 1), scope("c1"), settings("busy"), delay_seconds=0)
        wait_for(lambda: any(r["status"] == "running" for r in runs_of(http, "c1")))
        time.sleep(1)  # inside the first extraction's 3-second model call
        scheduler.submit(said("c1", 2), scope("c1"), settings("busy"), delay_seconds=0)
        wait_for(lambda: settled(http, "c1"))
        time.sleep(3)  # what the first run's model call still had to do, and then some
        scheduler.close(timeout=5)
    assert facts_per_episode(db_path) == {"msg:c1-m0": 1, "msg:c1-m1": 1}


def test_submit_after_close_raises_and_creates_no_run(tmp_path: Path, db_path: str) -> None:
    with (
        langgraph_server(tmp_path, db_path, {"unused": []}) as (url, _),
        httpx.Client(base_url=url, timeout=30) as http,
    ):
        scheduler = ServerMemoryScheduler(url=url, delay_seconds=60)
        assert scheduler.close(timeout=5).complete
        started = time.monotonic()
        with pytest.raises(SchedulerClosedError):
            scheduler.submit(said("c1", 1), scope("c1"), settings("unused"))
        assert scheduler.close(timeout=5).complete  # closing again returns at once
        assert time.monotonic() - started < MARGIN
        assert runs_of(http, "c1") == []


def test_close_is_bounded_while_a_submission_waits_on_a_server_that_does_not_answer(
    tmp_path: Path, db_path: str
) -> None:
    with langgraph_server(tmp_path, db_path, {"unused": []}) as (url, server):
        scheduler = ServerMemoryScheduler(url=url, delay_seconds=60, request_timeout=3)
        outcome: dict[str, BaseException] = {}

        def submit() -> None:
            try:
                scheduler.submit(said("c1", 1), scope("c1"), settings("unused"))
            except BaseException as error:  # what the stuck submission ended with
                outcome["error"] = error

        os.killpg(server.pid, signal.SIGSTOP)  # accepts connections, answers nothing
        try:
            sender = threading.Thread(target=submit)
            sender.start()
            time.sleep(0.5)
            started = time.monotonic()
            report = scheduler.close(timeout=1)
            assert time.monotonic() - started < 1 + MARGIN
            assert report.running == ("acme/c1",) and not report.complete
            sender.join(timeout=3 + 5)  # the request's own timeout ends it
            assert not sender.is_alive()
            assert isinstance(outcome.get("error"), httpx.TimeoutException)
        finally:
            os.killpg(server.pid, signal.SIGCONT)
