"""A run's memory scope and settings: from its configuration, never from the model.

The memory tools and the graphs read the tenant, the user (the facts' subject) and the
thread from the run's runtime context first (`context={...}`, LangGraph >= 0.6), then from
`config["configurable"]`. The model's tool calls and structured output have no field for
them. A run without a tenant (or user) fails in its first node, before any model call.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from langchain_core.runnables import RunnableConfig

from sgam_store import InvalidCandidateError, SGAMStore, fact_namespace, normalize_subject


class ScopeError(ValueError):
    """The run's configuration does not say whose memory this is (or says it badly)."""


class MemoryContext(TypedDict, total=False):
    """Configuration keys of the tools and graphs (runtime context or `configurable`; Studio
    shows them)."""

    tenant_id: str  # required: whose memory (namespace[0] of every fact)
    user_id: str  # required: the user, subject of the facts the agent remembers
    thread_id: str  # conversation id recorded on episodes (default: configurable.thread_id)
    episode_id: str  # agent: an episode the application recorded for this turn (optional)
    model: str  # chat model, init_chat_model name or "scripted:<name>" (env SGAM_MODEL)
    memory_model: str  # extraction model of the background manager (env SGAM_MEMORY_MODEL)
    memory_scheduler: Literal["none", "local", "server"]  # after-turn background manager
    memory_delay_seconds: float  # defer (and debounce) the manager this long after a turn
    min_confidence: float  # consolidation: below this a candidate waits for recurrence
    recurrence: int  # consolidation: distinct episodes that promote a waiting candidate
    repeat_memory_types: list[str]  # consolidation: memory types that always need repetition
    repeat_attributes: list[str]  # consolidation: attributes that always need repetition


SCOPE_KEYS = ("tenant_id", "user_id", "thread_id")


def setting(
    name: str,
    config: RunnableConfig | None = None,
    context: Any = None,
    *,
    env: str | None = None,
    default: Any = None,
) -> Any:
    """A setting from the runtime context, else `configurable`, else `env`, else `default`."""
    if context is not None:
        value = context.get(name) if isinstance(context, Mapping) else getattr(context, name, None)
        if value is not None:
            return value
    configurable = (config or {}).get("configurable") or {}
    if configurable.get(name) is not None:
        return configurable[name]
    if env and os.environ.get(env):
        return os.environ[env]
    return default


@dataclass(frozen=True)
class MemoryScope:
    """Whose memory a run reads and writes."""

    tenant_id: str
    user_id: str
    thread_id: str | None

    @property
    def subject(self) -> str:
        """The user's facts' subject: the user id, normalized ('Mira' -> 'mira')."""
        return normalize_subject(self.user_id)

    @property
    def namespace(self) -> tuple[str, ...]:
        """The BaseStore namespace of the user's facts: (tenant_id, *subject path)."""
        return fact_namespace(self.tenant_id, self.subject)

    def as_context(self) -> dict[str, str]:
        out = {"tenant_id": self.tenant_id, "user_id": self.user_id}
        return {**out, "thread_id": self.thread_id} if self.thread_id else out


def resolve_scope(config: RunnableConfig | None, context: Any = None) -> MemoryScope:
    """The run's scope, or a ScopeError that says which key is missing and where to set it."""
    missing = [k for k in ("tenant_id", "user_id") if not setting(k, config, context)]
    if missing:
        raise ScopeError(
            f"missing {' and '.join(missing)} for this run: set "
            + ", ".join(f"{k!r}" for k in missing)
            + " in the run's context (context={...}) or in config['configurable']; "
            "the memory scope comes from configuration, never from the model"
        )
    scope = MemoryScope(
        tenant_id=str(setting("tenant_id", config, context)),
        user_id=str(setting("user_id", config, context)),
        thread_id=_optional_str(setting("thread_id", config, context)),
    )
    try:
        _ = scope.namespace  # checks the tenant label and the normalized subject
    except (ValueError, InvalidCandidateError) as exc:
        raise ScopeError(f"invalid memory scope {scope.as_context()}: {exc}") from None
    return scope


def require_store(store: Any) -> SGAMStore:
    """The run's store, which must be an SGAMStore (compile(store=...) or langgraph.json)."""
    if not isinstance(store, SGAMStore):
        raise TypeError(
            f"these memory graphs need an SGAMStore as the graph's store, got "
            f"{type(store).__name__}: compile the graph with store=SGAMStore(...), or set "
            '"store": {"path": "./graphs/store.py:generate_store"} in langgraph.json'
        )
    return store


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)
