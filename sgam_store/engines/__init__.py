"""Database engines: where SQL and each database's features live.

`open_engine` picks one from the connection target, so the store never names an engine:
a PostgreSQL connection string opens `engines.postgres` (installed with the `postgres`
extra), anything else a SQLite file, ':memory:' or an open sqlite3 connection.
"""

from __future__ import annotations

import re
from typing import Any

MASK = "***"
# The password of a URI's user info (up to the last "@" of the authority), a password
# query parameter, and libpq's key=value form (quoted or not).
_URI_PASSWORD = re.compile(r"^([a-z][a-z0-9+.-]*://[^:@/?#]*:)([^/?#]*)@", re.I)
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#]*", re.I)
_KEYWORD_PASSWORD = re.compile(r"\b(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.I)


def is_postgres_target(target: object) -> bool:
    """True for PostgreSQL URIs (postgresql://, postgres://) and libpq key=value strings."""
    if not isinstance(target, str):
        return False
    if target.startswith(("postgresql://", "postgres://")):
        return True
    return "://" not in target and any(
        part.startswith(("host=", "dbname=")) for part in target.split()
    )


def mask_uri(target: object) -> str:
    """`target` as it may be shown (titles, logs, errors, repr): a connection string
    with its password replaced by ***; a file path unchanged."""
    text = str(target)
    if "://" in text:
        text = _URI_PASSWORD.sub(rf"\g<1>{MASK}@", text, count=1)
        return _QUERY_PASSWORD.sub(rf"\g<1>{MASK}", text)
    if is_postgres_target(text):
        return _KEYWORD_PASSWORD.sub(rf"\g<1>{MASK}", text)
    return text


def open_engine(
    target: Any,
    *,
    dims: int | None,
    tenant_at: int | None = None,
    read_only: bool = False,
    **options: Any,
) -> Any:
    """The engine for `target`; `tenant_at` is the namespace layout's (None: as the
    database says); `read_only`: an existing store, opened to read (nothing created,
    upgraded or written); `options` are engine settings (PostgreSQL: schema, pool_size,
    prepare_threshold, connect_timeout)."""
    if is_postgres_target(target):
        try:
            from sgam_store.engines.postgres.engine import PostgresEngine
        except ImportError as exc:  # psycopg missing: say which extra brings it
            raise ImportError(
                f"PostgreSQL needs the postgres extra: pip install 'sgam-store[postgres]' ({exc})"
            ) from exc
        return PostgresEngine(
            target, dims=dims, tenant_at=tenant_at, read_only=read_only, **options
        )
    from sgam_store.engines.sqlite.engine import SQLiteEngine

    if options:
        raise TypeError(f"unknown options for a SQLite store: {', '.join(sorted(options))}")
    return SQLiteEngine(target, dims=dims, tenant_at=tenant_at, read_only=read_only)


def langgraph_items(source: str, *, batch: int, schema: str = "public") -> Any:
    """Batches of the items of LangGraph's own store at `source`: a SqliteStore file, or a
    PostgresStore database (its `schema`), read-only and in key order."""
    if is_postgres_target(source):
        from sgam_store.engines.postgres import foreign as pg_foreign

        return pg_foreign.langgraph_items(source, batch, schema)
    from sgam_store.engines.sqlite import foreign

    return foreign.langgraph_items(source, batch)
