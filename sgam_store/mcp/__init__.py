"""`sgam mcp`: one tenant's memory for any Model Context Protocol client (the `mcp` extra).

    from sgam_store.mcp import create_server
    create_server(store, "acme").run()          # stdio, as `sgam mcp --db F --tenant acme`

- `create_server(store, tenant, read_only=...)`: the tools remember, recall, search,
  history, what_changed and forget, the resources `sgam://SUBJECT`, the prompt
  `correct_a_fact` (`server`);
- `TenantMemory`: the same operations as plain calls returning dicts (`memory`).
"""

from sgam_store.mcp.memory import FieldError, TenantMemory
from sgam_store.mcp.server import create_server

__all__ = ["FieldError", "TenantMemory", "create_server"]
