"""Reading LangGraph's SqliteStore file, to bring its items in (`sgam import`).

The file is opened read-only and read in key order, in one snapshot; nothing in it is
changed. Its `store` table is LangGraph's documented schema: namespace labels joined by
'.', the value as JSON text, SQLite's CURRENT_TIMESTAMP (UTC, to the second).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import sqlean

from sgam_store.core import clock
from sgam_store.core.errors import ForeignDatabaseError
from sgam_store.core.models import ForeignItem


def langgraph_items(path: str, batch: int) -> Iterator[list[ForeignItem]]:
    """The items of a SqliteStore file, `batch` at a time, in (namespace, key) order."""
    if not Path(path).is_file():
        raise ForeignDatabaseError(f"no such file: {path}")
    conn = sqlean.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True)
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(store)")}
        if not {"prefix", "key", "value"} <= columns:
            raise ForeignDatabaseError(f"{path} holds no LangGraph SqliteStore (no store table)")
        expires = "expires_at" if "expires_at" in columns else "NULL"
        conn.execute("BEGIN")  # one snapshot for the whole read
        cur = conn.execute(
            f"SELECT prefix, key, value, created_at, updated_at, {expires} FROM store "
            "ORDER BY prefix, key"
        )
        while rows := cur.fetchmany(batch):
            yield [_item(*row) for row in rows]
    finally:
        conn.close()


def _item(
    prefix: str, key: str, value: str, created: str | None, updated: str | None, expires: str | None
) -> ForeignItem:
    return ForeignItem(
        tuple(prefix.split(".")),
        key,
        json.loads(value),
        _utc(created),
        _utc(updated),
        _utc(expires),
    )


def _utc(text: str | None) -> str | None:
    """SQLite's 'YYYY-MM-DD HH:MM:SS', which is UTC, as the ledger's timestamp text."""
    if text is None:
        return None
    moment = datetime.fromisoformat(str(text))
    return clock.normalize(moment if moment.tzinfo else moment.replace(tzinfo=UTC))
