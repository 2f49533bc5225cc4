"""The background memory manager: record episodes, extract candidates, consolidate, and
review new memories that may correct old ones.

For each user message not yet extracted: record it as an episode (or reuse the one the
agent's hot path recorded), show the model the episode and the subject's current values
(`sgam_store.managers.extraction`, structured output into `MemoryUpdate`), and hand the candidates
to `sgam_store.managers.consolidation.consolidate`, which holds weak ones as candidates and sends
the rest through the write service (`apply_updates`) in one transaction, marking the
episode extracted. Nothing here calls `put`; the model never names a tenant or episode.
Then memories written by `put` under new keys (LangMem's tools write a correction that
way) are reviewed against the current ones they resemble
(`sgam_store.managers.supersession`); the model is asked only when one resembles another.

Two forms:
- `memory_manager_node(...)`: a node for your own graph (any state with `messages`);
- `build_memory_manager(...)`: a standalone graph, `memory_manager` in langgraph.json,
  which the agent's scheduler runs deferred and debounced after each turn.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.runtime import Runtime

from graphs.models import chat_model, model_label
from sgam_store import (
    ConflictPolicy,
    ConsolidationConfig,
    ConsolidationResult,
    Episode,
    MemorySchema,
    SGAMStore,
    consolidate,
    extract_candidates,
    is_extracted,
    resolve_supersessions,
    sweep_candidates,
)
from sgam_store.tools import (
    MemoryContext,
    MemoryScope,
    consolidation_config,
    episode_for,
    require_store,
    resolve_scope,
    user_messages,
)


class ManagerState(MessagesState, total=False):
    episode_ids: list[str]  # episodes of this run still to extract
    memory_report: list[dict[str, Any]]  # per episode: written, held, promoted, rejected
    supersession_report: dict[str, Any]  # new memories reviewed, and the decisions


# ---------------------------------------------------------------- the manager's steps


def pending_episodes(
    store: SGAMStore, scope: MemoryScope, messages: Sequence[AnyMessage]
) -> list[Episode]:
    """Episodes of the user messages that no manager run has extracted yet."""
    episodes = [episode_for(store, scope, m) for m in user_messages(messages)]
    unique = {e.episode_id: e for e in episodes}
    return [
        e for e in unique.values() if not is_extracted(store, e.episode_id, tenant_id=e.tenant_id)
    ]


def extract_episode(
    store: SGAMStore,
    scope: MemoryScope,
    episode: Episode,
    model: BaseChatModel,
    *,
    schema: MemorySchema | None = None,
    policy: ConflictPolicy | None = None,
    consolidation: ConsolidationConfig | None = None,
) -> ConsolidationResult | None:
    """One episode: structured-output candidates -> consolidation -> write service; None
    when another run extracted it first.

    Runs of one conversation can overlap in a process: a server's "rollback" cancels a
    running manager run, but the thread of its node goes on with the model call it was in
    and writes what it gets, while the newer run starts. Extracting under the episode's
    lock, and only if it is still unextracted, makes the newer run wait for that write and
    skip the episode, so no episode is extracted twice. (Across processes the extraction
    mark, written with the facts, narrows this to runs that overlap in time.)
    """
    with _EPISODE_LOCKS[hash(episode.episode_id) % len(_EPISODE_LOCKS)]:
        if is_extracted(store, episode.episode_id, tenant_id=episode.tenant_id):
            return None
        return _extract(store, scope, episode, model, schema, policy, consolidation)


# Striped, not one lock per episode: a fixed set that never grows, and two episodes rarely
# share one long enough to matter.
_EPISODE_LOCKS = tuple(threading.Lock() for _ in range(64))


def _extract(
    store: SGAMStore,
    scope: MemoryScope,
    episode: Episode,
    model: BaseChatModel,
    schema: MemorySchema | None,
    policy: ConflictPolicy | None,
    consolidation: ConsolidationConfig | None,
) -> ConsolidationResult:
    payloads = extract_candidates(model, store, episode, schema=schema, subjects=[scope.subject])
    return consolidate(
        store,
        payloads,
        tenant_id=scope.tenant_id,
        episode_id=episode.episode_id,
        schema=schema,
        policy=policy,
        config=consolidation,
        extractor=model_label(model),
    )


def report(episode: Episode, result: ConsolidationResult) -> dict[str, Any]:
    """A JSON-ready summary of what one episode changed (the standalone graph's output)."""
    return {
        "episode_id": episode.episode_id,
        "written": [
            {
                "fact_id": f.fact_id,
                "subject": f.subject,
                "attribute": f.attribute,
                "value": f.value,
                "valid_from": f.valid_from.isoformat(),
                "supersedes_fact_id": f.supersedes_fact_id,
            }
            for f in result.written
        ],
        "held": [_candidate(c) for c in result.held],
        "promoted": [_candidate(c) for c in result.promoted],
        "rejected": [{"kind": r.kind, "reason": r.reason} for r in result.rejected],
        "unchanged": len(result.write.unchanged),
    }


def _candidate(c: Any) -> dict[str, Any]:
    return {
        "candidate_id": c.candidate_id,
        "subject": c.subject,
        "attribute": c.attribute,
        "value": c.value,
        "reason": c.reason,
        "support": c.episode_ids,
        "promoted_fact_id": c.promoted_fact_id,
        "promoted_by": c.promoted_by,
    }


def run_manager(
    store: SGAMStore,
    scope: MemoryScope,
    messages: Sequence[AnyMessage],
    model: BaseChatModel,
    *,
    schema: MemorySchema | None = None,
    policy: ConflictPolicy | None = None,
    consolidation: ConsolidationConfig | None = None,
) -> list[dict[str, Any]]:
    """The whole manager for one batch of messages; returns one report per episode."""
    out = []
    for episode in pending_episodes(store, scope, messages):
        result = extract_episode(
            store,
            scope,
            episode,
            model,
            schema=schema,
            policy=policy,
            consolidation=consolidation,
        )
        if result is not None:
            out.append(report(episode, result))
    sweep_candidates(store, tenant_id=scope.tenant_id)
    return out


# ---------------------------------------------------------------- as a node, as a graph


def memory_manager_node(
    model: BaseChatModel | None = None,
    *,
    schema: MemorySchema | None = None,
    policy: ConflictPolicy | None = None,
    consolidation: ConsolidationConfig | None = None,
    report_key: str | None = None,
) -> Callable[..., dict[str, Any]]:
    """A node for your own graph: consolidates the state's user messages into memory.

    The graph must be compiled with an SGAMStore and run with tenant_id and user_id in its
    context or configurable. `model=None` takes the run's memory_model/model setting.
    Returns `{report_key: [...]}` if `report_key` is given, else no state update.
    """

    def manage_memory(
        state: dict[str, Any], config: RunnableConfig, runtime: Runtime[MemoryContext]
    ) -> dict[str, Any]:
        scope = resolve_scope(config, runtime.context)
        store = require_store(runtime.store)
        llm = model or chat_model(config, runtime.context, memory=True)
        cfg = consolidation_config(consolidation, config, runtime.context)
        out = run_manager(
            store,
            scope,
            state.get("messages", []),
            llm,
            schema=schema,
            policy=policy,
            consolidation=cfg,
        )
        return {report_key: out} if report_key else {}

    return manage_memory


def build_memory_manager(
    model: BaseChatModel | None = None,
    *,
    schema: MemorySchema | None = None,
    policy: ConflictPolicy | None = None,
    consolidation: ConsolidationConfig | None = None,
    store: SGAMStore | None = None,
    checkpointer: Any = None,
    name: str = "memory_manager",
) -> Any:
    """The standalone manager: record_episodes -> extract -> review_new_memories ->
    sweep_candidates.

    Input: `{"messages": [...]}` (the conversation, or just new user messages); output
    `memory_report`. On a server, the store comes from langgraph.json; locally pass
    `store=` (or run it through `LocalMemoryScheduler`, which supplies it).
    """

    def record_episodes(
        state: ManagerState, config: RunnableConfig, runtime: Runtime[MemoryContext]
    ) -> dict[str, Any]:
        scope = resolve_scope(config, runtime.context)  # a missing tenant fails here, first
        store = require_store(runtime.store)
        pending = pending_episodes(store, scope, state.get("messages", []))
        return {"episode_ids": [e.episode_id for e in pending], "memory_report": []}

    def extract(
        state: ManagerState, config: RunnableConfig, runtime: Runtime[MemoryContext]
    ) -> dict[str, Any]:
        scope = resolve_scope(config, runtime.context)
        store = require_store(runtime.store)
        if not state.get("episode_ids"):
            return {"memory_report": []}
        llm = model or chat_model(config, runtime.context, memory=True)
        cfg = consolidation_config(consolidation, config, runtime.context)
        out = []
        for episode_id in state["episode_ids"]:
            episode = store.get_episode(episode_id, tenant_id=scope.tenant_id)
            if episode is None:
                continue  # erased meanwhile
            result = extract_episode(
                store, scope, episode, llm, schema=schema, policy=policy, consolidation=cfg
            )
            if result is not None:  # None: an overlapping run extracted it
                out.append(report(episode, result))
        return {"memory_report": out}

    def review(
        state: ManagerState, config: RunnableConfig, runtime: Runtime[MemoryContext]
    ) -> dict[str, Any]:
        scope = resolve_scope(config, runtime.context)
        store = require_store(runtime.store)
        llm = model or (lambda: chat_model(config, runtime.context, memory=True))
        done = resolve_supersessions(store, llm, tenant_id=scope.tenant_id)
        decisions = [(d.decision, d.new_fact_id, d.old_fact_id) for d in done.decisions]
        return {"supersession_report": {"reviewed": done.reviewed, "decisions": decisions}}

    def sweep(
        state: ManagerState, config: RunnableConfig, runtime: Runtime[MemoryContext]
    ) -> dict[str, Any]:
        scope = resolve_scope(config, runtime.context)
        sweep_candidates(require_store(runtime.store), tenant_id=scope.tenant_id)
        return {}

    graph = StateGraph(ManagerState, context_schema=MemoryContext)
    graph.add_node("record_episodes", record_episodes)
    graph.add_node("extract", extract)
    graph.add_node("review_new_memories", review)
    graph.add_node("sweep_candidates", sweep)
    graph.add_edge(START, "record_episodes")
    graph.add_edge("record_episodes", "extract")
    graph.add_edge("extract", "review_new_memories")
    graph.add_edge("review_new_memories", "sweep_candidates")
    graph.add_edge("sweep_candidates", END)
    return graph.compile(store=store, checkpointer=checkpointer, name=name)


# langgraph.json: "memory_manager": "./graphs/manager.py:memory_manager"
memory_manager = build_memory_manager()
