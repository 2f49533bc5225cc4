"""SGAM's hot-path memory tools: remember, correct, forget and recall_memory.

Each tool takes the tenant, the subject and the episode from the run (its configuration
and state), never from the model, and writes through the same write service as the
background manager (`consolidate` -> `apply_updates`), so a fact written here is in the
very next model call's context. Bind them to any agent whose graph has an SGAMStore:
`build_agent` in `graphs/agent.py`, LangGraph's `create_react_agent`, or next to
LangMem's tools.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import ToolRuntime

from sgam_store import (
    ConflictPolicy,
    ConsolidationConfig,
    Episode,
    InvalidCandidateError,
    InvalidTimestampError,
    MemorySchema,
    SGAMStore,
    consolidate,
    normalize_attribute,
)
from sgam_store.tools.episodes import episode_for, user_messages
from sgam_store.tools.scope import MemoryScope, require_store, resolve_scope, setting


def consolidation_config(
    base: ConsolidationConfig | None, config: RunnableConfig | None, context: Any
) -> ConsolidationConfig:
    """The builder's consolidation settings, overridden per run by configuration keys."""
    cfg = base or ConsolidationConfig()

    def get(name: str, cast: Callable[[Any], Any], default: Any) -> Any:
        value = setting(name, config, context)
        return default if value is None else cast(value)

    return ConsolidationConfig(
        min_confidence=get("min_confidence", float, cfg.min_confidence),
        recurrence=get("recurrence", int, cfg.recurrence),
        repeat_memory_types=get("repeat_memory_types", _names, cfg.repeat_memory_types),
        repeat_attributes=get("repeat_attributes", _names, cfg.repeat_attributes),
        candidate_ttl=cfg.candidate_ttl,
    )


def _names(value: Any) -> frozenset[str]:
    """A list of names, or one name, or a comma-separated string of names (env, Studio)."""
    items = value.split(",") if isinstance(value, str) else value
    return frozenset(str(v).strip() for v in items if str(v).strip())


def turn_episode(state: Any, store: SGAMStore, scope: MemoryScope) -> Episode | None:
    """The episode this turn's memories cite: the state's `episode_id` where the graph
    records one (`build_agent`'s capture node), else the latest user message, recorded
    now (any other agent, e.g. `create_react_agent`)."""
    state = state if isinstance(state, Mapping) else vars(state or {})
    if "episode_id" in state:
        episode_id = state["episode_id"]
        return (episode_id and store.get_episode(episode_id, tenant_id=scope.tenant_id)) or None
    users = user_messages(state.get("messages") or [])
    return episode_for(store, scope, users[-1]) if users else None


def memory_tools(
    *,
    schema: MemorySchema | None = None,
    policy: ConflictPolicy | None = None,
    consolidation: ConsolidationConfig | None = None,
) -> list[BaseTool]:
    """remember, correct, forget, recall_memory: scoped by the run, written by the service."""

    def write(
        runtime: ToolRuntime[Any, Any],
        attribute: str,
        value: Any,
        evidence: str,
        valid_from: str | None,
        memory_type: str | None,
        *,
        correction: bool,
    ) -> str:
        scope = resolve_scope(runtime.config, runtime.context)
        store = require_store(runtime.store)
        episode = turn_episode(runtime.state, store, scope)
        if episode is None:
            return "Not saved: this turn has no user message to cite as evidence."
        try:
            attr = normalize_attribute(attribute)
        except InvalidCandidateError as exc:
            return f"Not saved: {exc}"
        current = store.fact_at(scope.tenant_id, scope.subject, attr)
        if correction and current is None:
            return f"Not saved: nothing is stored for {attr!r} to correct; use remember."
        same = current is not None and current.value == value
        change = "new" if current is None else ("no_change" if same else "update")
        payload = {
            "evidence": evidence,
            "subject": scope.subject,
            "attribute": attr,
            "current_value": None if current is None else current.value,
            "change": change,
            "value": value,
            "valid_from": valid_from or episode.occurred_at.isoformat(),
            "memory_type": memory_type,
            "confidence": 1.0,  # the user said it and asked for it: no recurrence needed
        }
        result = consolidate(
            store,
            [payload],
            tenant_id=scope.tenant_id,
            episode_id=episode.episode_id,
            schema=schema,
            policy=policy,
            config=consolidation_config(consolidation, runtime.config, runtime.context),
        )
        if result.rejected:
            return f"Not saved: {result.rejected[0].reason}"
        if not result.written:
            return f"Already stored: {scope.subject}.{attr} = {value!r}."
        fact = result.written[0]
        replaced = (
            f"; it replaces fact {fact.supersedes_fact_id} ({current.value!r})"
            if fact.supersedes_fact_id is not None and current is not None
            else ""
        )
        return (
            f"Saved {scope.subject}.{attr} = {fact.value!r} (fact {fact.fact_id}, "
            f"source {fact.source_episode_id}){replaced}."
        )

    @tool(parse_docstring=True)
    def remember(
        attribute: str,
        value: str,
        evidence: str,
        runtime: ToolRuntime[Any, Any],
        valid_from: str | None = None,
        memory_type: str | None = None,
    ) -> str:
        """Save a fact about the user to long-term memory now.

        Use it when the user asks you to remember something, or states something the next
        answers depend on (a preference, a deadline, a name).

        Args:
            attribute: What about the user, in snake_case, e.g. answer_style or passport_deadline.
            value: The value to remember.
            evidence: The user's exact words from their latest message that state it.
            valid_from: When it starts to hold (ISO-8601 with Z), only if the user says so.
            memory_type: Optional kind, e.g. preference, profile, task_state.
        """
        return write(runtime, attribute, value, evidence, valid_from, memory_type, correction=False)

    @tool(parse_docstring=True)
    def correct(
        attribute: str,
        value: str,
        evidence: str,
        runtime: ToolRuntime[Any, Any],
        valid_from: str | None = None,
    ) -> str:
        """Correct a stored fact about the user now; the old value is kept as history.

        Args:
            attribute: The stored attribute to correct, in snake_case.
            value: The corrected value.
            evidence: The user's exact words from their latest message that correct it.
            valid_from: When the new value starts to hold (ISO-8601 with Z), if the user says.
        """
        return write(runtime, attribute, value, evidence, valid_from, None, correction=True)

    @tool(parse_docstring=True)
    def forget(attribute: str, runtime: ToolRuntime[Any, Any]) -> str:
        """Stop treating a fact about the user as current (history is kept).

        Args:
            attribute: The stored attribute to forget, in snake_case.
        """
        scope = resolve_scope(runtime.config, runtime.context)
        store = require_store(runtime.store)
        try:
            attr = normalize_attribute(attribute)
        except InvalidCandidateError as exc:
            return f"Nothing forgotten: {exc}"
        current = store.fact_at(scope.tenant_id, scope.subject, attr)
        if current is None:
            return f"Nothing is stored for {attr!r}."
        namespace = store.layout.fact_namespace(scope.tenant_id, scope.subject)
        store.delete(namespace, attr)  # closes the open fact at now; history kept
        return f"Forgot {scope.subject}.{attr} (fact {current.fact_id}, was {current.value!r})."

    @tool(parse_docstring=True)
    def recall_memory(runtime: ToolRuntime[Any, Any], as_of: str | None = None) -> str:
        """Look up what long-term memory holds about the user, now or at a past instant.

        Args:
            as_of: An ISO-8601 instant with Z (e.g. 2026-06-02T00:00:00Z); omit for now.
        """
        scope = resolve_scope(runtime.config, runtime.context)
        store = require_store(runtime.store)
        try:
            return store.recall(scope.tenant_id, subjects=[scope.subject], at=as_of).text
        except InvalidTimestampError as exc:
            return f"Cannot look that up: {exc}"

    return [remember, correct, forget, recall_memory]
