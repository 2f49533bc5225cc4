"""Extraction: the model sees stored values; its tool calls become candidates for the service.

The only test double in the suite: a scripted chat model that replays tool calls.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from sgam_store import (
    InvalidCandidateError,
    SGAMStore,
    extract_candidates,
    extract_updates,
    extraction_messages,
)

from .seed import DEADLINE, E1_CANDIDATES, E2_CANDIDATES, E2_TEXT, candidate, record_seed
from .test_schemas import SCHEMA

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine


class ScriptedChatModel(BaseChatModel):
    """Replays one scripted reply per call and keeps what it was sent."""

    replies: list[AIMessage]
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    tool_kwargs: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=tools, **kwargs)  # a RunnableBinding, as trustcall expects

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any) -> ChatResult:
        self.prompts.append(list(messages))
        self.tool_kwargs.append({k: v for k, v in kwargs.items() if k != "run_manager"})
        reply = self.replies[len(self.prompts) - 1]
        return ChatResult(generations=[ChatGeneration(message=reply)])


def calls(*updates: list[dict[str, Any]]) -> list[AIMessage]:
    return [
        AIMessage(
            content="",
            tool_calls=[{"name": "MemoryUpdates", "args": {"updates": u}, "id": f"call{i}"}],
        )
        for i, u in enumerate(updates)
    ]


def test_the_seed_through_a_model_ends_in_the_expected_ledger(store: SGAMStore) -> None:
    e1, e2 = record_seed(store)
    model = ScriptedChatModel(replies=calls(E1_CANDIDATES, E2_CANDIDATES))
    for episode in (e1, e2):
        payloads = extract_candidates(model, store, episode)
        result = store.apply_updates(payloads, tenant_id="acme", episode_id=episode.episode_id)
        assert result.rejected == []
    now = store.fact_at(*DEADLINE)
    assert now.value == "2026-06-30" and store.who_said(now).content == E2_TEXT
    assert now.supersedes_fact_id == store.fact_at(*DEADLINE, at="2026-06-02T00:00:00Z").fact_id
    first, second = (prompt[-1].content for prompt in model.prompts)
    assert "(nothing stored yet)" in first
    assert "attribute 'passport_deadline': current_value \"2026-07-15\"" in second
    assert second.endswith(E2_TEXT)


def test_the_model_is_offered_the_candidate_schema_in_sgr_order(store: SGAMStore) -> None:
    e1, _ = record_seed(store)
    model = ScriptedChatModel(replies=calls([]))
    assert extract_candidates(model, store, e1) == []
    (tool,) = model.tool_kwargs[0]["tools"]
    item = tool["function"]["parameters"]["properties"]["updates"]["items"]
    assert list(item["properties"])[:7] == [
        "evidence",
        "subject",
        "attribute",
        "current_value",
        "change",
        "value",
        "valid_from",
    ]
    assert model.tool_kwargs[0]["tool_choice"] == "any"


def test_stored_values_shown_are_the_tenants_own(store: SGAMStore) -> None:
    e1, e2 = record_seed(store)
    store.apply_updates([candidate()], tenant_id="acme", episode_id=e1.episode_id)
    g1, _ = record_seed(store, tenant="globex")
    store.apply_updates(
        [candidate(value="2031-01-01")], tenant_id="globex", episode_id=g1.episode_id
    )
    store.put(("acme", "leo"), "city", {"value": "Porto"})
    text = extraction_messages(store, e2, subjects=["Leo"])[-1].content
    assert '"2026-07-15"' in text and '"Porto"' in text
    assert "2031-01-01" not in text


def test_the_schema_is_part_of_the_instructions(store: SGAMStore) -> None:
    e1, _ = record_seed(store)
    system = extraction_messages(store, e1, schema=SCHEMA)[0].content
    assert "Memory schema v3" in system and "Never set a tenant or an episode" in system


def test_model_output_stays_untrusted_until_the_service(store: SGAMStore) -> None:
    e1, _ = record_seed(store)
    sneaky = candidate(attribute="city", value="Oslo", tenant_id="globex")
    model = ScriptedChatModel(replies=calls([candidate(), sneaky]))
    payloads = extract_candidates(model, store, e1)
    result = store.apply_updates(payloads, tenant_id="acme", episode_id=e1.episode_id)
    assert [f.attribute for f in result.written] == ["passport_deadline"]
    assert result.rejected[0].candidate == sneaky
    assert store.fact_at("globex", "mira", "city") is None


def test_extract_updates_returns_typed_candidates_or_fails_whole(store: SGAMStore) -> None:
    e1, _ = record_seed(store)
    fabricated = candidate(evidence="Mira moved to Oslo.", attribute="city", value="Oslo")
    model = ScriptedChatModel(replies=calls(E1_CANDIDATES, [candidate(), fabricated]))
    updates = extract_updates(model, store, e1)
    assert [(u.subject, u.attribute) for u in updates] == [
        ("mira", "answer_style"),
        ("mira", "passport_deadline"),
    ]
    with pytest.raises(InvalidCandidateError, match="candidate 1: evidence"):
        extract_updates(model, store, e1)


def test_a_reply_without_the_tool_call_yields_nothing(store: SGAMStore) -> None:
    e1, _ = record_seed(store)
    model = ScriptedChatModel(replies=[AIMessage(content="nothing to remember")])
    assert extract_candidates(model, store, e1) == []
