"""Reading LangGraph's PostgresStore tables, to bring their items in (`sgam import`).

Read in key order in one read-only REPEATABLE READ snapshot; nothing is changed. The
`store` table is LangGraph's documented schema: namespace labels joined by '.', the
value as jsonb, timestamptz.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import sql

from sgam_store.core import clock
from sgam_store.core.errors import ForeignDatabaseError
from sgam_store.core.models import ForeignItem


def langgraph_items(
    conninfo: str, batch: int, schema: str = "public"
) -> Iterator[list[ForeignItem]]:
    """The items of a PostgresStore database, `batch` at a time, in (namespace, key) order."""
    with psycopg.connect(conninfo) as conn:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        found = conn.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = %s AND table_name = 'store'",
            (schema,),
        ).fetchall()
        columns = {name for (name,) in found}
        if not {"prefix", "key", "value"} <= columns:
            raise ForeignDatabaseError(f"schema {schema!r} holds no LangGraph PostgresStore")
        expires = sql.SQL("expires_at" if "expires_at" in columns else "NULL::timestamptz")
        query = sql.SQL(
            "SELECT prefix, key, value, created_at, updated_at, {} FROM {}.store "
            "ORDER BY prefix, key"
        ).format(expires, sql.Identifier(schema))
        with conn.cursor(name="sgam_import") as cur:  # server-side: never all rows in memory
            cur.execute(query)
            while rows := cur.fetchmany(batch):
                yield [_item(*row) for row in rows]


def _item(
    prefix: str, key: str, value: Any, created: Any, updated: Any, expires: Any
) -> ForeignItem:
    return ForeignItem(
        tuple(prefix.split(".")),
        key,
        value,
        *(None if t is None else clock.normalize(t) for t in (created, updated, expires)),
    )
