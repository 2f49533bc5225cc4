"""A LangGraph agent using `sgam mcp`'s tools through langchain-mcp-adapters, with the
scripted chat model: what it remembers over MCP is in the store for Python to read, what
Python wrote is what it recalls, and a refused argument reaches the model as an error
message naming the field."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("langchain_mcp_adapters")

from langchain_core.messages import ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from langgraph.prebuilt import create_react_agent

from sgam_store import MemoryFact, SGAMStore
from sgam_store.testing import ScriptedChatModel, call_tool, say
from tests.test_mcp import server_env, sgam_mcp

DEADLINE = "My passport renewal deadline is 2026-07-15."


def tool_messages(state: dict) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


async def test_an_agent_remembers_and_recalls_through_mcp(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with SGAMStore.from_conn_string(str(db)) as store:  # written in Python, read over MCP
        store.setup()
        said = store.record_episode(
            "acme", "Keep your answers short, please.", source_kind="user_message", speaker="mira"
        )
        store.replace_fact(
            MemoryFact(tenant_id="acme", subject="mira", attribute="answer_style", value="short",
                       valid_from="2026-05-01T00:00:00Z", source_episode_id=said.episode_id)
        )  # fmt: skip

    deadline = {"subject": "mira", "attribute": "passport_deadline", "value": "2026-07-15"}
    model = ScriptedChatModel(
        replies=[
            call_tool("remember", **deadline, evidence=DEADLINE, valid_from="2026-06-01"),
            call_tool(
                "remember",
                "call_2",
                **deadline,
                evidence=DEADLINE,
                valid_from="2026-06-01T09:00:00Z",
            ),
            say("Saved: your passport deadline is 2026-07-15."),
            call_tool("recall", subject="mira"),
            say("Short answers, and your deadline is 2026-07-15."),
        ]
    )
    client = MultiServerMCPClient(
        {
            "memory": {
                "transport": "stdio",
                "command": sys.executable,
                "args": sgam_mcp(db),
                "env": server_env(),
            }
        }
    )
    async with client.session("memory") as session:
        tools = await load_mcp_tools(session)
        assert {t.name for t in tools} == {
            "remember", "recall", "search", "history", "what_changed", "forget"
        }  # fmt: skip
        agent = create_react_agent(model, tools)
        first = await agent.ainvoke({"messages": [("user", DEADLINE)]})
        refused, saved = tool_messages(first)
        assert refused.status == "error" and "valid_from" in str(refused.content)
        assert "nothing written" in str(refused.content)
        assert saved.status != "error" and '"2026-07-15"' in str(saved.content)

        second = await agent.ainvoke({"messages": [("user", "How should you answer me?")]})
        (recalled,) = tool_messages(second)
        facts = recalled.artifact["structured_content"]["facts"]
        assert {f["attribute"]: f["value"] for f in facts} == {
            "answer_style": "short", "passport_deadline": "2026-07-15"
        }  # fmt: skip
        assert {f["source"]["said"] for f in facts} == {said.content, DEADLINE}

    with SGAMStore.from_conn_string(str(db)) as store:  # written over MCP, read in Python
        store.setup()
        fact = store.fact_at("acme", "mira", "passport_deadline")
        assert fact is not None and fact.value == "2026-07-15"
        assert store.who_said(fact, tenant_id="acme").content == DEADLINE  # type: ignore[union-attr]
        assert len(store.history("acme", "mira", "passport_deadline")) == 1  # the refusal: none
