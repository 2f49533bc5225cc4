"""Memory tools and run scoping for LangGraph agents over an SGAMStore.

    from sgam_store.tools import memory_tools
    agent = create_react_agent(model, memory_tools(), store=SGAMStore("memory.db"))

- `memory_tools(...)`: remember, correct, forget and recall_memory (`hot_path`);
- `resolve_scope`, `MemoryScope`, `MemoryContext`: whose memory a run reads and writes,
  from its configuration, never from the model (`scope`);
- `episode_for`: a user message recorded as the episode memories cite (`episodes`).
"""

from sgam_store.tools.episodes import episode_for, episode_id_for, user_messages
from sgam_store.tools.hot_path import consolidation_config, memory_tools
from sgam_store.tools.scope import (
    MemoryContext,
    MemoryScope,
    ScopeError,
    require_store,
    resolve_scope,
    setting,
)

__all__ = [
    "MemoryContext",
    "MemoryScope",
    "ScopeError",
    "consolidation_config",
    "episode_for",
    "episode_id_for",
    "memory_tools",
    "require_store",
    "resolve_scope",
    "setting",
    "user_messages",
]
