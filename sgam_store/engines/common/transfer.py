"""Whole-store export and import for `sgam copy`, the parts both engines share: whether a
target is empty, the vector dimensions, and the neutral tables that are plain tables on
both (`core.engine.TRANSFER_COLUMNS`). Keyword and vector rows, and what an import must
move afterwards, are each engine's.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from sgam_store.core.engine import TRANSFER_COLUMNS, TRANSFER_ORDER
from sgam_store.engines.common.dialect import Dialect

BATCH = 1000


def is_empty(d: Dialect, conn: Any) -> bool:
    """True when the store holds no fact and no episode (a safe copy target)."""
    sql = "SELECT EXISTS (SELECT 1 FROM facts) OR EXISTS (SELECT 1 FROM episodes)"
    return not conn.execute(sql).fetchone()[0]


def vector_dims(d: Dialect, conn: Any) -> int | None:
    """The vector table's dimensions, or None when the store has no vectors."""
    row = conn.execute("SELECT value FROM sgam_meta WHERE key = 'vector_dims'").fetchone()
    return int(row[0]) if row else None


def select_plain(table: str) -> str:
    """The export statement of a neutral table stored as it travels."""
    return (
        f"SELECT {TRANSFER_COLUMNS[table]} FROM {table} ORDER BY {TRANSFER_ORDER.get(table, '1')}"
    )


def insert_plain(d: Dialect, cur: Any, table: str, rows: list[tuple[Any, ...]]) -> None:
    """Insert one batch of a neutral table stored as it travels."""
    columns = TRANSFER_COLUMNS[table]
    marks = ", ".join("?" * len(columns.split(",")))
    cur.executemany(d.sql(f"INSERT INTO {table} ({columns}) VALUES ({marks})"), rows)


def load(
    d: Dialect, cur: Any, indexing: ModuleType, table: str, rows: list[tuple[Any, ...]]
) -> None:
    """Insert one batch of a neutral table's rows: keyword and vector rows through the
    engine's `indexing` (each engine's own tables), the others as they travel."""
    if table == "keywords":
        indexing.flush_keywords(cur, rows)
    elif table == "vectors":
        for fact_id, field, tenant, current, blob in rows:
            indexing.write_vectors(cur, fact_id, tenant, [(field, bytes(blob))], bool(current))
    else:
        insert_plain(d, cur, table, rows)
