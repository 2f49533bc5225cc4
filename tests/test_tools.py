"""`sgam_store.tools` outside the project's own graphs: bound to LangGraph's prebuilt
ReAct agent, next to LangMem's tools, with the scope from configuration only."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from langmem import create_manage_memory_tool

from graphs.scripted import ScriptedChatModel, call_tool, say
from sgam_store import SGAMStore
from sgam_store.tools import ScopeError, memory_tools

with warnings.catch_warnings():  # moved to langchain.agents in LangGraph 1.x; still shipped
    warnings.simplefilter("ignore", DeprecationWarning)
    from langgraph.prebuilt import create_react_agent

CONFIG = {"configurable": {"thread_id": "t1", "tenant_id": "acme", "user_id": "Mira"}}


def react_agent(model: ScriptedChatModel, store: SGAMStore) -> Any:
    langmem_tool = create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}"))
    return create_react_agent(model, [*memory_tools(), langmem_tool], store=store)


def test_remember_in_a_react_agent_cites_the_users_message(store: SGAMStore) -> None:
    model = ScriptedChatModel(
        replies=[
            call_tool("remember", attribute="home_city", value="Lima", evidence="I live in Lima"),
            say("Noted."),
            call_tool("recall_memory"),
            say("You live in Lima."),
        ]
    )
    agent = react_agent(model, store)
    out = agent.invoke({"messages": [("user", "I live in Lima, remember it.")]}, CONFIG)
    assert out["messages"][2].content.startswith("Saved mira.home_city = 'Lima'")
    fact = store.fact_at("acme", "mira", "home_city")
    assert fact is not None and fact.value == "Lima"
    assert store.who_said(fact).content == "I live in Lima, remember it."

    out = agent.invoke({"messages": [("user", "Where do I live?")]}, CONFIG)
    assert "mira.home_city = 'Lima'" in out["messages"][2].content  # recall_memory's answer
    assert store.search(("memories",)) == []  # LangMem's tool was bound, never called


def test_the_same_message_is_one_episode_however_many_tools_cite_it(store: SGAMStore) -> None:
    model = ScriptedChatModel(
        replies=[
            call_tool("remember", "c1", attribute="home_city", value="Lima", evidence="Lima"),
            call_tool("remember", "c2", attribute="pet", value="cat", evidence="a cat"),
            say("Noted both."),
        ]
    )
    react_agent(model, store).invoke(
        {"messages": [("user", "I live in Lima and have a cat.")]}, CONFIG
    )
    city, pet = store.fact_at("acme", "mira", "home_city"), store.fact_at("acme", "mira", "pet")
    assert city.source_episode_id == pet.source_episode_id


def test_a_run_without_a_tenant_fails_and_saves_nothing(store: SGAMStore) -> None:
    model = ScriptedChatModel(
        replies=[
            call_tool("remember", attribute="home_city", value="Lima", evidence="Lima"),
            say("Could not save."),
        ]
    )
    config = {"configurable": {"thread_id": "t1", "user_id": "mira"}}
    with pytest.raises(ScopeError, match="tenant_id"):
        react_agent(model, store).invoke({"messages": [("user", "I live in Lima.")]}, config)
    assert store.search(()) == []
