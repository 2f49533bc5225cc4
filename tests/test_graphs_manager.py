"""The background memory manager: standalone graph and node; records episodes, extracts with
structured output against current values, consolidates through the write service."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

from graphs.manager import build_memory_manager, memory_manager_node
from graphs.scripted import ScriptedChatModel, extract
from sgam_store import SGAMStore
from sgam_store.managers.consolidation import list_candidates
from sgam_store.tools import ScopeError

SCOPE = {"tenant_id": "acme", "user_id": "mira", "thread_id": "t1"}
DEADLINE_TEXT = "My passport deadline is 2026-07-15."
CORRECTION_TEXT = "Correction: the deadline is now 2026-06-30."


def deadline(value: str = "2026-07-15", **fields: Any) -> dict[str, Any]:
    return {
        "evidence": DEADLINE_TEXT,
        "subject": "mira",
        "attribute": "passport_deadline",
        "current_value": None,
        "change": "new",
        "value": value,
        "valid_from": "2026-06-01T09:00:00Z",
        **fields,
    }


def test_the_manager_records_extracts_against_current_values_and_writes(store: SGAMStore) -> None:
    model = ScriptedChatModel(
        replies=[
            extract(deadline()),
            extract(
                deadline(
                    "2026-06-30",
                    evidence="the deadline is now 2026-06-30",
                    current_value="2026-07-15",
                    change="update",
                    valid_from="2026-06-03T10:00:00Z",
                )
            ),
        ]
    )
    manager = build_memory_manager(model, store=store)
    first = manager.invoke({"messages": [HumanMessage(DEADLINE_TEXT, id="m1")]}, context=SCOPE)
    (report,) = first["memory_report"]
    assert report["episode_id"] == "msg:m1" and report["written"][0]["value"] == "2026-07-15"

    messages = [HumanMessage(DEADLINE_TEXT, id="m1"), HumanMessage(CORRECTION_TEXT, id="m2")]
    second = manager.invoke({"messages": messages}, context=SCOPE)
    assert [r["episode_id"] for r in second["memory_report"]] == ["msg:m2"]  # m1 is done
    assert len(model.prompts) == 2
    shown = model.prompts[1][-1].content
    assert "attribute 'passport_deadline': current_value \"2026-07-15\"" in shown
    assert shown.endswith(CORRECTION_TEXT)

    now = store.fact_at("acme", "mira", "passport_deadline")
    assert now.value == "2026-06-30" and store.who_said(now).content == CORRECTION_TEXT
    episode = store.get_episode("msg:m2", tenant_id="acme")
    assert (episode.speaker, episode.thread_id, episode.source_kind) == (
        "mira",
        "t1",
        "user_message",
    )


def test_the_manager_is_a_node_in_your_own_graph(store: SGAMStore) -> None:
    model = ScriptedChatModel(replies=[extract(deadline())])

    def answer(state: MessagesState) -> dict:
        return {"messages": [("ai", "Got it.")]}

    graph = (
        StateGraph(MessagesState)
        .add_node("answer", answer)
        .add_node("memory", memory_manager_node(model))
        .add_edge(START, "answer")
        .add_edge("answer", "memory")
        .compile(store=store)
    )
    out = graph.invoke({"messages": [("user", DEADLINE_TEXT)]}, {"configurable": SCOPE})
    assert [m.type for m in out["messages"]] == ["human", "ai"]  # no state of its own
    assert store.fact_at("acme", "mira", "passport_deadline").value == "2026-07-15"


def test_weak_signals_wait_for_recurrence_set_by_the_run(store: SGAMStore) -> None:
    texts = ["Send it as CSV please.", "CSV again please.", "As CSV, like always."]
    model = ScriptedChatModel(
        replies=[
            extract(
                {
                    "evidence": evidence,
                    "subject": "mira",
                    "attribute": "export_format",
                    "current_value": None,
                    "change": "new",
                    "value": "CSV",
                    "valid_from": f"2026-06-0{n}T09:00:00Z",
                    "memory_type": "habit",
                    "confidence": 0.95,
                }
            )
            for n, evidence in enumerate(["as CSV", "CSV again", "As CSV"], start=1)
        ]
    )
    manager = build_memory_manager(model, store=store)
    context = {**SCOPE, "recurrence": 2, "repeat_memory_types": ["habit"]}
    reports = []
    for n in range(1, len(texts) + 1):
        messages = [HumanMessage(t, id=f"m{i}") for i, t in enumerate(texts[:n], start=1)]
        reports += manager.invoke({"messages": messages}, context=context)["memory_report"]

    first, second, third = reports
    assert first["written"] == [] and first["held"][0]["reason"] == "needs_repetition"
    assert second["promoted"][0]["support"] == ["msg:m1", "msg:m2"]
    assert second["written"][0]["value"] == "CSV"
    assert third["unchanged"] == 1 and third["held"] == []  # evidence of what holds already
    fact = store.fact_at("acme", "mira", "export_format")
    assert fact.source_episode_id == "msg:m2"
    assert [c.status for c in list_candidates(store, "acme", status=None)] == ["promoted"]


def test_the_manager_needs_a_tenant_before_anything_else(store: SGAMStore) -> None:
    model = ScriptedChatModel(replies=[])
    manager = build_memory_manager(model, store=store)
    with pytest.raises(ScopeError, match="missing tenant_id"):
        manager.invoke({"messages": [("user", DEADLINE_TEXT)]}, context={"user_id": "mira"})
    assert model.prompts == []
    assert store.conn.execute("SELECT COUNT(*) FROM episodes").fetchone() == (0,)


def test_the_manager_refuses_a_store_that_is_not_sgam() -> None:
    from langgraph.store.memory import InMemoryStore

    manager = build_memory_manager(ScriptedChatModel(replies=[]), store=InMemoryStore())
    with pytest.raises(TypeError, match="need an SGAMStore"):
        manager.invoke({"messages": [("user", "hi")]}, context=SCOPE)
