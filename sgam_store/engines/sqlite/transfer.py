"""Whole-store export and import on SQLite, for `sgam copy` between engines.

Rows travel in the neutral shapes of `core.engine.TRANSFER_TABLES`: timestamps as stored
text, keyword rows as (fact_id, tenant_id, text as written, which the target analyzes),
vectors as (fact_id, field, tenant_id, is_current, float32 bytes). What only SQLite has
(keyword rowid slots) is rebuilt on import; tenant and is_current come from `facts` here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sgam_store.core.engine import TRANSFER_COLUMNS, TRANSFER_ORDER
from sgam_store.engines.sqlite import indexing

# (table, columns) in an order that satisfies the foreign keys on import.
BATCH = 1000


def is_empty(conn: Any) -> bool:
    """True when the store holds no fact and no episode (a safe copy target)."""
    facts = conn.execute("SELECT EXISTS (SELECT 1 FROM facts)").fetchone()[0]
    return not facts and not conn.execute("SELECT EXISTS (SELECT 1 FROM episodes)").fetchone()[0]


def vector_dims(conn: Any) -> int | None:
    """The vector table's dimensions, or None when the store has no vectors."""
    row = conn.execute("SELECT value FROM sgam_meta WHERE key = 'vector_dims'").fetchone()
    return int(row[0]) if row else None


def _batches(cur: Any) -> Iterator[list[tuple[Any, ...]]]:
    while rows := cur.fetchmany(BATCH):
        yield [tuple(r) for r in rows]


def export_rows(conn: Any, table: str) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of one neutral table (`core.engine.TRANSFER_TABLES`), in batches."""
    if table == "keywords":
        sql = (
            f"SELECT k.rowid & {indexing.FACT_MASK}, t.tenant_id, COALESCE(k.source, k.body) "
            "FROM fact_fts k "
            f"JOIN tenants t ON t.slot = k.rowid >> {indexing.FACT_BITS} ORDER BY k.rowid"
        )
    elif table == "vectors":
        if vector_dims(conn) is None:
            return
        sql = (
            "SELECT v.fact_id, v.field, "
            "(SELECT tenant_id FROM facts f WHERE f.fact_id = v.fact_id LIMIT 1), "
            "EXISTS (SELECT 1 FROM facts f WHERE f.fact_id = v.fact_id "
            "AND f.valid_to IS NULL AND f.known_to IS NULL), v.embedding "
            "FROM vector_rows v ORDER BY v.vec_rowid"
        )
    else:
        columns = TRANSFER_COLUMNS[table]
        order = TRANSFER_ORDER.get(table, "1")
        sql = f"SELECT {columns} FROM {table} ORDER BY {order}"
    yield from _batches(conn.execute(sql))


def load_rows(cur: Any, table: str, rows: list[tuple[Any, ...]]) -> None:
    """Insert one batch of a neutral table's rows."""
    if table == "keywords":
        indexing.flush_keywords(cur, rows)
    elif table == "vectors":
        for fact_id, field, tenant, current, blob in rows:
            indexing.write_vectors(cur, fact_id, tenant, [(field, bytes(blob))], bool(current))
    else:
        columns = TRANSFER_COLUMNS[table]
        marks = ", ".join("?" * len(columns.split(",")))
        cur.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)


def finish(cur: Any) -> None:
    """Nothing to do on SQLite: its row ids continue from the highest one."""
