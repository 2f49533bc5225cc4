"""The agent graph: hot-path memory tools through the write service, the user's facts in the
system prompt on every model call, and a scope that comes from configuration only."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver

from graphs.agent import build_agent
from graphs.scripted import ScriptedChatModel, call_tool, say
from sgam_store import SGAMStore
from sgam_store.tools import ScopeError, memory_tools


def run_config(thread: str = "t1", **scope: Any) -> dict[str, Any]:
    return {
        "configurable": {"thread_id": thread, **({"tenant_id": "acme", "user_id": "mira"} | scope)}
    }


def turn(agent: Any, text: str, config: dict[str, Any] | None = None, **kw: Any) -> dict:
    return agent.invoke({"messages": [("user", text)]}, config or run_config(), **kw)


def test_remember_changes_the_very_next_turn(store: SGAMStore) -> None:
    model = ScriptedChatModel(
        replies=[
            call_tool(
                "remember",
                attribute="answer_style",
                value="short",
                evidence="I prefer short answers",
            ),
            say("Noted."),
            say("Paris."),
        ]
    )
    agent = build_agent(model, store=store, checkpointer=InMemorySaver())  # no scheduler at all
    out = turn(agent, "Remember that I prefer short answers.")
    assert out["messages"][2].content.startswith("Saved mira.answer_style = 'short'")
    turn(agent, "What is the capital of France?")

    before, _, next_turn = model.system_prompts()
    fact = store.fact_at("acme", "mira", "answer_style")
    assert "answer_style" not in before
    assert "mira.answer_style = 'short'" in next_turn
    assert f"[source: {fact.source_episode_id}; fact {fact.fact_id}]" in next_turn  # cited
    assert store.who_said(fact).content == "Remember that I prefer short answers."


def test_correct_and_forget_keep_history_and_provenance(store: SGAMStore) -> None:
    model = ScriptedChatModel(
        replies=[
            call_tool(
                "remember",
                attribute="Passport Deadline",
                value="2026-07-15",
                evidence="my passport deadline is 2026-07-15",
            ),
            say("Noted."),
            call_tool(
                "correct",
                attribute="passport_deadline",
                value="2026-06-30",
                evidence="it is 2026-06-30",
            ),
            say("Updated."),
            call_tool("forget", attribute="passport_deadline"),
            say("Forgotten."),
        ]
    )
    agent = build_agent(model, store=store, checkpointer=InMemorySaver())
    turn(agent, "Please note: my passport deadline is 2026-07-15.")
    out = turn(agent, "Sorry, it is 2026-06-30.")
    assert "replaces fact" in out["messages"][-2].content
    old, new = store.history("acme", "mira", "passport_deadline")
    assert "mira.passport_deadline = '2026-06-30'" in model.system_prompts()[3]
    turn(agent, "Forget my passport deadline.")

    assert store.fact_at("acme", "mira", "passport_deadline") is None
    assert "- (none)" in model.system_prompts()[5]
    closed_old, closed_new = store.history("acme", "mira", "passport_deadline")
    assert closed_new.supersedes_fact_id == closed_old.fact_id == old.fact_id
    assert closed_old.valid_to == new.valid_from and closed_new.valid_to is not None
    assert store.who_said(closed_old).content == "Please note: my passport deadline is 2026-07-15."
    assert store.who_said(closed_new).content == "Sorry, it is 2026-06-30."


def test_a_write_the_service_rejects_is_reported_to_the_model(store: SGAMStore) -> None:
    model = ScriptedChatModel(
        replies=[
            call_tool("remember", attribute="city", value="Oslo", evidence="I moved to Oslo"),
            say("Sorry."),
        ]
    )
    agent = build_agent(model, store=store, checkpointer=InMemorySaver())
    out = turn(agent, "I live in Porto.")
    assert (
        "Not saved: evidence: evidence 'I moved to Oslo' does not occur"
        in out["messages"][2].content
    )
    assert store.fact_at("acme", "mira", "city") is None


def test_the_model_cannot_name_the_scope(store: SGAMStore) -> None:
    for tool in memory_tools():
        params = convert_to_openai_tool(tool)["function"]["parameters"]["properties"]
        assert not {"tenant_id", "user_id", "subject", "episode_id", "runtime"} & set(params)


def test_scope_from_the_runtime_context_and_tenants_stay_apart(store: SGAMStore) -> None:
    model = ScriptedChatModel(
        replies=[
            call_tool("remember", attribute="city", value="Porto", evidence="I live in Porto"),
            say("Noted."),
            say("Hello."),
        ]
    )
    agent = build_agent(model, store=store, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    turn(agent, "I live in Porto.", config, context={"tenant_id": "globex", "user_id": "Mira"})
    assert store.fact_at("globex", "mira", "city").value == "Porto"
    turn(
        agent, "Hi.", {"configurable": {"thread_id": "t2", "tenant_id": "acme", "user_id": "mira"}}
    )
    assert "Porto" not in model.system_prompts()[2]


def test_a_run_without_a_tenant_fails_before_any_model_call(store: SGAMStore) -> None:
    model = ScriptedChatModel(replies=[say("never")])
    agent = build_agent(model, store=store, checkpointer=InMemorySaver())
    with pytest.raises(ScopeError, match="missing tenant_id"):
        turn(agent, "Remember this.", {"configurable": {"thread_id": "t1", "user_id": "mira"}})
    assert model.prompts == []
    assert store.conn.execute("SELECT COUNT(*) FROM episodes").fetchone() == (0,)


def test_recall_memory_answers_as_of_an_instant(store: SGAMStore) -> None:
    model = ScriptedChatModel(
        replies=[
            call_tool(
                "remember",
                attribute="city",
                value="Porto",
                evidence="I live in Porto",
                valid_from="2026-01-01T00:00:00Z",
            ),
            say("Noted."),
            call_tool("recall_memory", as_of="2025-06-01T00:00:00Z"),
            call_tool("recall_memory", as_of="2026-06-01T00:00:00Z", call_id="second"),
            say("Done."),
        ]
    )
    agent = build_agent(model, store=store, checkpointer=InMemorySaver())
    turn(agent, "I live in Porto since January.")
    out = turn(agent, "Where did I live?")
    then, now = [m.content for m in out["messages"] if m.type == "tool"][-2:]
    assert "- (none)" in then and "mira.city = 'Porto'" in now


def test_an_episode_the_application_recorded_is_the_one_the_tools_cite(store: SGAMStore) -> None:
    event = store.record_episode(
        "acme", "Order 42 ships on 2026-07-01.", source_kind="business_event", episode_id="ev42"
    )
    model = ScriptedChatModel(
        replies=[
            call_tool(
                "remember",
                attribute="order_42_ship_date",
                value="2026-07-01",
                evidence="ships on 2026-07-01",
            ),
            say("Noted."),
        ]
    )
    agent = build_agent(model, store=store, checkpointer=InMemorySaver())
    turn(agent, "When does my order ship?", run_config(episode_id="ev42"))
    fact = store.fact_at("acme", "mira", "order_42_ship_date")
    assert store.who_said(fact) == event
    with pytest.raises(ScopeError, match="'nope' is not recorded"):
        turn(agent, "Hi.", run_config(thread="t2", episode_id="nope"))
