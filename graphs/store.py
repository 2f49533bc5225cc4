"""The LangGraph server's store: `"store": {"path": "./graphs/store.py:generate_store"}`.

`langgraph dev` / `langgraph up` call `generate_store()` and keep the yielded SGAMStore
for the server's life: graphs get it as their store, and the Store API (`/store/items`,
`/store/items/search`, `/store/namespaces`) reads and writes the same SGAM ledger, so a
PUT is a new fact version with history kept, and a GET shows the current one.

Environment:
- SGAM_PG_URI: a PostgreSQL connection string; when set, the store lives there, in its
  own schema (SGAM_PG_SCHEMA, default "sgam") beside LangGraph's tables, so several
  server replicas share one memory. On LangGraph Platform this can be the deployment's
  own DATABASE_URI;
- SGAM_DB_PATH: the SQLite file when SGAM_PG_URI is unset (default: sgam-memory.db in
  the project directory);
- SGAM_EMBEDDING: "local" (default when the `local` extra is installed: bundled
  all-MiniLM-L6-v2, offline) or "none" (keyword search only, and a faster start);
- SGAM_TENANT_AT: which namespace label names the tenant, e.g. 1 for LangMem's
  ("memories", "{langgraph_user_id}"); unset: the database's (0 for a new one).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sgam_store import SGAMStore, default_index

PROJECT_DIR = Path(__file__).resolve().parent.parent
DEFAULT_DB_PATH = PROJECT_DIR / "sgam-memory.db"


def db_path() -> str:
    return os.environ.get("SGAM_DB_PATH") or str(DEFAULT_DB_PATH)


def open_store() -> SGAMStore:
    """PostgreSQL when SGAM_PG_URI is set, else the SQLite file."""
    uri = os.environ.get("SGAM_PG_URI")
    if uri:
        schema = os.environ.get("SGAM_PG_SCHEMA", "sgam")
        return SGAMStore(uri, index=index_config(), schema=schema, tenant_at=tenant_at())
    return SGAMStore(db_path(), index=index_config(), tenant_at=tenant_at())


def tenant_at() -> int | None:
    """SGAM_TENANT_AT as an int, or None (the database's own setting) when unset."""
    text = os.environ.get("SGAM_TENANT_AT", "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise ValueError(f"SGAM_TENANT_AT must be a label index (0, 1, ...), got {text!r}")
    return int(text)


def index_config() -> dict[str, Any] | None:
    """The local embedding when installed and not switched off, else None (keyword search)."""
    choice = os.environ.get("SGAM_EMBEDDING", "local").strip().lower()
    if choice in ("none", "off", "keyword"):
        return None
    if choice != "local":
        raise ValueError(f"SGAM_EMBEDDING must be 'local' or 'none', got {choice!r}")
    return default_index()


@asynccontextmanager
async def generate_store() -> AsyncIterator[SGAMStore]:
    """Open the SGAM store for the server; migrations run once here, off the event loop."""
    store = await asyncio.to_thread(open_store)
    try:
        await asyncio.to_thread(store.setup)
        yield store
    finally:
        store.close()
