"""An agent with hot-path memory: remember, correct, forget and recall tools
(`sgam_store.tools`), and the user's current facts in its system prompt on every model call.

    START -> capture -> respond <-> tools
                        respond -> schedule_memory -> END

- capture: records the turn's user message as an episode (the provenance the tools cite),
  or takes `episode_id` from the run's configuration when the application recorded the
  turn itself; the run's scope is checked here, first: a run without tenant_id/user_id
  fails before any model call.
- respond: read path. `store.recall(tenant, subjects=[user])` -> cited context in the
  system prompt, then the model (with the memory tools bound).
- tools: write path, now. remember/correct build a `MemoryUpdate` from the tool call with
  the tenant, subject, episode and current value taken from the run, never from the model,
  and send it through `consolidate` -> `apply_updates` -> the ledger; forget closes the
  open fact (history kept). A fact written here is in the very next model call's prompt.
- schedule_memory: after the turn, the background manager (graphs.manager) is scheduled
  deferred and debounced per thread (graphs.scheduling), locally or on the server.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, NotRequired

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import SystemMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime, get_runtime

from graphs.models import chat_model
from graphs.scheduling import LocalMemoryScheduler, ServerMemoryScheduler, forwarded_settings
from sgam_store import (
    ConflictPolicy,
    ConsolidationConfig,
    MemorySchema,
)
from sgam_store.tools import (
    MemoryContext,
    ScopeError,
    episode_for,
    memory_tools,
    require_store,
    resolve_scope,
    setting,
)

logger = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = """\
You are a helpful assistant with long-term memory about the user ({user_id}).

{memory}

The known facts above are current and authoritative; history lines are superseded values. \
When you rely on a fact, cite its source in brackets. When the user asks you to remember, \
correct or forget something, call remember, correct or forget now, quoting the user's \
exact words as evidence. Use recall_memory to see what was true at another time."""

Scheduler = LocalMemoryScheduler | ServerMemoryScheduler


class AgentState(MessagesState):
    episode_id: NotRequired[str | None]  # the turn's user message, as a recorded episode


# ---------------------------------------------------------------- the graph


def build_agent(
    model: BaseChatModel | None = None,
    *,
    scheduler: Scheduler | None = None,
    schema: MemorySchema | None = None,
    policy: ConflictPolicy | None = None,
    consolidation: ConsolidationConfig | None = None,
    extra_tools: Sequence[BaseTool] = (),
    system_prompt: str = DEFAULT_SYSTEM_PROMPT,
    store: Any = None,
    checkpointer: Any = None,
    name: str = "agent",
) -> Any:
    """The agent graph. `model=None` takes the run's `model` setting (or env SGAM_MODEL).

    `scheduler` runs the background manager after each turn (none by default); a run can
    switch it with `memory_scheduler` ("none", "server", or "local" if one was given here).
    `system_prompt` is formatted with `memory` (the cited facts) and `user_id`.
    """
    tools = [*memory_tools(schema=schema, policy=policy, consolidation=consolidation)]
    tools += list(extra_tools)

    def capture(
        state: AgentState, config: RunnableConfig, runtime: Runtime[MemoryContext]
    ) -> dict[str, Any]:
        scope = resolve_scope(config, runtime.context)  # a missing tenant fails here, first
        store = require_store(runtime.store)
        given = setting("episode_id", config, runtime.context)
        if given is not None:  # the application recorded this turn's episode itself
            if store.get_episode(str(given), tenant_id=scope.tenant_id) is None:
                raise ScopeError(
                    f"episode_id {given!r} is not recorded for tenant {scope.tenant_id!r}: "
                    "record it with store.record_episode first, or leave episode_id unset"
                )
            return {"episode_id": str(given)}
        last = state["messages"][-1] if state.get("messages") else None
        if last is None or last.type != "human" or not last.text.strip():
            return {"episode_id": None}
        return {"episode_id": episode_for(store, scope, last).episode_id}

    def respond(
        state: AgentState, config: RunnableConfig, runtime: Runtime[MemoryContext]
    ) -> dict[str, Any]:
        scope = resolve_scope(config, runtime.context)
        store = require_store(runtime.store)
        llm = model or chat_model(config, runtime.context)
        memory = store.recall(scope.tenant_id, subjects=[scope.subject]).text
        system = SystemMessage(system_prompt.format(memory=memory, user_id=scope.user_id))
        reply = llm.bind_tools(tools).invoke([system, *state["messages"]], config)
        return {"messages": [reply]}

    def route(state: AgentState) -> str:
        last = state["messages"][-1]
        return "tools" if getattr(last, "tool_calls", None) else "schedule_memory"

    def pick(config: RunnableConfig, context: Any) -> Scheduler | None:
        mode = setting("memory_scheduler", config, context, env="SGAM_MEMORY_SCHEDULER")
        if mode == "none":
            return None
        if mode == "server" and not isinstance(scheduler, ServerMemoryScheduler):
            return ServerMemoryScheduler()
        if mode == "local" and not isinstance(scheduler, LocalMemoryScheduler):
            raise ValueError(
                "memory_scheduler='local' needs build_agent(scheduler=LocalMemoryScheduler(...))"
            )
        if mode not in (None, "none", "server", "local"):
            raise ValueError(f"memory_scheduler must be none, local or server, got {mode!r}")
        return scheduler

    def plan(state: AgentState, config: RunnableConfig) -> tuple[Scheduler, dict] | None:
        runtime = get_runtime()
        chosen = pick(config, runtime.context)
        if chosen is None:
            return None
        delay = setting("memory_delay_seconds", config, runtime.context, env="SGAM_MEMORY_DELAY")
        return chosen, {
            "messages": state["messages"],
            "scope": resolve_scope(config, runtime.context),
            "settings": forwarded_settings(config, runtime.context),
            "delay_seconds": None if delay is None else float(delay),
        }

    def schedule_memory(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        planned = plan(state, config)
        if planned is not None:
            chosen, request = planned
            try:
                chosen.submit(**request)
            except Exception:  # memory must not fail the user's turn; make it loud instead
                logger.exception("could not schedule the background memory manager")
        return {}

    async def aschedule_memory(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        planned = plan(state, config)
        if planned is not None:
            chosen, request = planned
            try:
                await chosen.asubmit(**request)
            except Exception:
                logger.exception("could not schedule the background memory manager")
        return {}

    graph = StateGraph(AgentState, context_schema=MemoryContext)
    graph.add_node("capture", capture)
    graph.add_node("respond", respond)
    graph.add_node("tools", ToolNode(tools))
    # Both forms: the server runs graphs async (in-process SDK client), scripts often sync.
    graph.add_node(
        "schedule_memory", RunnableLambda(schedule_memory, afunc=aschedule_memory, name="schedule")
    )
    graph.add_edge(START, "capture")
    graph.add_edge("capture", "respond")
    graph.add_conditional_edges("respond", route, ["tools", "schedule_memory"])
    graph.add_edge("tools", "respond")
    graph.add_edge("schedule_memory", END)
    return graph.compile(store=store, checkpointer=checkpointer, name=name)


# langgraph.json: "agent": "./graphs/agent.py:agent". On a server the manager runs as a
# delayed run of the "memory_manager" graph (set memory_scheduler="none" to switch it off).
agent = build_agent(scheduler=ServerMemoryScheduler())
