"""After each agent turn the background manager runs deferred and debounced per thread
(`LocalMemoryScheduler` in-process, delayed runs on a server), and the end-to-end deadline
correction. The scheduler's races are in test_scheduler_races.py."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from graphs import scheduling
from graphs.agent import build_agent
from graphs.manager import build_memory_manager
from graphs.scheduling import (
    LocalMemoryScheduler,
    SchedulerClosedError,
    ServerMemoryScheduler,
    memory_thread_id,
)
from graphs.scripted import ScriptedChatModel, extract, say
from sgam_store import SGAMStore
from sgam_store.tools import MemoryScope

SCOPE = MemoryScope(tenant_id="acme", user_id="mira", thread_id="t1")
CONFIG = {"configurable": {"thread_id": "t1", "tenant_id": "acme", "user_id": "mira"}}
STATED = "My passport deadline is 2026-07-15."
ASKED = "Thanks. What should I prepare?"
CORRECTED = "Sorry, I misread: the deadline is now 2026-06-30."


def candidate(**fields: Any) -> dict[str, Any]:
    return {
        "evidence": "My passport deadline is 2026-07-15.",
        "subject": "mira",
        "attribute": "passport_deadline",
        "current_value": None,
        "change": "new",
        "value": "2026-07-15",
        "valid_from": "2026-06-01T09:00:00Z",
        **fields,
    }


def turn(agent: Any, text: str) -> dict:
    return agent.invoke({"messages": [("user", text)]}, CONFIG)


def test_deadline_stated_then_corrected_across_three_turns(store: SGAMStore) -> None:
    chat = ScriptedChatModel(replies=[say("Noted."), say("Photos and a form."), say("Updated.")])
    extractor = ScriptedChatModel(
        replies=[
            extract(candidate()),
            extract(),  # the question states nothing
            extract(
                candidate(
                    evidence="the deadline is now 2026-06-30",
                    current_value="2026-07-15",
                    change="update",
                    value="2026-06-30",
                    valid_from="2026-06-03T10:00:00Z",
                )
            ),
        ]
    )
    with LocalMemoryScheduler(
        build_memory_manager(extractor), store, delay_seconds=0.1
    ) as scheduler:
        agent = build_agent(chat, scheduler=scheduler, store=store, checkpointer=InMemorySaver())
        for text in (STATED, ASKED, CORRECTED):
            turn(agent, text)
            scheduler.wait(timeout=30)  # the user takes longer than the delay to type

    old, new = store.history("acme", "mira", "passport_deadline")
    assert store.fact_at("acme", "mira", "passport_deadline").fact_id == new.fact_id
    assert (old.value, new.value) == ("2026-07-15", "2026-06-30")
    assert old.valid_to == new.valid_from and new.valid_to is None
    assert new.supersedes_fact_id == old.fact_id
    assert (store.who_said(old).content, store.who_said(new).content) == (STATED, CORRECTED)
    assert store.who_said(new).thread_id == "t1"
    # The read path saw the background write on the next turn; the extractor saw the
    # stored value when the correction came.
    assert "mira.passport_deadline = '2026-07-15'" in chat.system_prompts()[1]
    assert 'current_value "2026-07-15"' in extractor.prompts[2][-1].content


def test_a_burst_of_turns_runs_the_manager_once_over_all_of_them(store: SGAMStore) -> None:
    chat = ScriptedChatModel(replies=[say("Noted."), say("Sure.")])
    extractor = ScriptedChatModel(replies=[extract(candidate()), extract()])
    with LocalMemoryScheduler(
        build_memory_manager(extractor), store, delay_seconds=1.5
    ) as scheduler:
        agent = build_agent(chat, scheduler=scheduler, store=store, checkpointer=InMemorySaver())
        turn(agent, STATED)
        turn(agent, ASKED)
        assert extractor.prompts == []  # deferred: nothing ran during the turns
        first, second = scheduler.submitted
        (output,) = scheduler.wait(timeout=30)

    assert first.cancelled() and not second.cancelled()  # debounced: the first was replaced
    assert [r["episode_id"].startswith("msg:") for r in output["memory_report"]] == [True, True]
    assert len(extractor.prompts) == 2  # one manager run, one extraction per episode
    assert store.fact_at("acme", "mira", "passport_deadline").value == "2026-07-15"


def test_closing_the_scheduler_runs_what_is_still_waiting(store: SGAMStore) -> None:
    extractor = ScriptedChatModel(replies=[extract(candidate()), extract()])
    scheduler = LocalMemoryScheduler(build_memory_manager(extractor), store, delay_seconds=600)
    started = time.monotonic()
    first = scheduler.submit([HumanMessage(STATED, id="m1")], SCOPE)
    time.sleep(0.2)  # the worker now holds the first task while it waits for its time
    scheduler.submit([HumanMessage(STATED, id="m1"), HumanMessage(ASKED, id="m2")], SCOPE)
    assert scheduler.close(timeout=20).complete  # runs the waiting one now, not in 600 s
    assert time.monotonic() - started < 10
    assert first.cancelled() and len(extractor.prompts) == 2
    assert store.fact_at("acme", "mira", "passport_deadline").value == "2026-07-15"


def test_an_agent_used_after_its_scheduler_closed_answers_and_logs_why_memory_waits(
    store: SGAMStore, caplog: pytest.LogCaptureFixture
) -> None:
    chat = ScriptedChatModel(replies=[say("Noted."), say("Photos and a form.")])
    extractor = ScriptedChatModel(replies=[extract(candidate())])
    manager = build_memory_manager(extractor)
    with LocalMemoryScheduler(manager, store, delay_seconds=0.1) as scheduler:
        agent = build_agent(chat, scheduler=scheduler, store=store, checkpointer=InMemorySaver())
        turn(agent, STATED)
    # a re-run notebook cell: the agent outlives its `with` block
    started = time.monotonic()
    with caplog.at_level(logging.ERROR, logger="graphs.agent"):
        assert turn(agent, ASKED)["messages"][-1].content == "Photos and a form."
    scheduler.close(timeout=5)  # closing again returns at once: nothing was queued
    assert time.monotonic() - started < 3
    (logged,) = [r for r in caplog.records if r.name == "graphs.agent"]
    assert logged.exc_info is not None and logged.exc_info[0] is SchedulerClosedError
    assert len(scheduler.submitted) == 1 and len(extractor.prompts) == 1


def test_a_long_running_scheduler_keeps_a_bounded_record_of_its_submissions(
    store: SGAMStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scheduling, "RECENT", 8)
    extractor = ScriptedChatModel(replies=[extract()] * 20)
    with LocalMemoryScheduler(build_memory_manager(extractor), store, delay_seconds=0) as sched:
        futures = []
        for n in range(20):  # 20 conversations, one turn each
            scope = MemoryScope(tenant_id="acme", user_id="mira", thread_id=f"t{n}")
            futures.append(sched.submit([HumanMessage(f"Note {n}.", id=f"m{n}")], scope))
            futures[-1].result(timeout=30)
        assert list(sched.submitted) == futures[-8:]  # the latest, in order
        assert len(sched.wait(timeout=30)) == 8  # the latest 8 threads' outputs
    assert len(extractor.prompts) == 20


def test_a_server_submission_is_a_delayed_rollback_run_on_a_memory_thread() -> None:
    scheduler = ServerMemoryScheduler(delay_seconds=30)
    request = scheduler._request(
        [HumanMessage(STATED, id="m1"), AIMessage("Noted.")], SCOPE, {"memory_model": "x"}, None
    )
    assert request["thread_id"] == memory_thread_id(SCOPE) != "t1"
    assert uuid.UUID(request["thread_id"]).version == 5
    assert request["assistant_id"] == "memory_manager"
    assert (request["multitask_strategy"], request["after_seconds"]) == ("rollback", 30)
    assert request["if_not_exists"] == "create"
    assert request["input"] == {"messages": [{"type": "human", "content": STATED, "id": "m1"}]}
    assert request["context"] == {
        "memory_model": "x",
        "tenant_id": "acme",
        "user_id": "mira",
        "thread_id": "t1",
    }
    with pytest.raises(RuntimeError, match="only inside a LangGraph server"):
        scheduler.submit([HumanMessage(STATED, id="m1")], SCOPE)
