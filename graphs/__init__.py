"""LangGraph graphs over SGAMStore: a hot-path memory agent and a background memory manager.
They assemble `sgam_store.tools` (the memory tools, and where tenant, user and thread come
from) into the graphs Studio serves.

- `graphs.agent`: `build_agent(...)`, and `agent` for langgraph.json;
- `graphs.manager`: `build_memory_manager(...)`, `memory_manager_node(...)`, and
  `memory_manager` for langgraph.json;
- `graphs.scheduling`: `LocalMemoryScheduler` (deferred, debounced, in-process) and
  `ServerMemoryScheduler` (delayed server runs);
- `graphs.models`: chat models by name (`init_chat_model`, or `scripted:<name>`);
- `graphs.store`: `generate_store` for langgraph.json's "store".
"""
