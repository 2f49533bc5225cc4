"""Whole-store export and import on SQLite, for `sgam copy` between engines.

Rows travel in the neutral shapes of `core.engine.TRANSFER_TABLES`: timestamps as stored
text, keyword rows as (fact_id, tenant_id, text as written, which the target analyzes),
vectors as (fact_id, field, tenant_id, is_current, float32 bytes). What only SQLite has
(keyword rowid slots) is rebuilt on import; tenant and is_current come from `facts` here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sgam_store.engines.common import transfer
from sgam_store.engines.common.dialect import SQLITE, export
from sgam_store.engines.sqlite import indexing

export(globals(), transfer, SQLITE)


def _batches(cur: Any) -> Iterator[list[tuple[Any, ...]]]:
    while rows := cur.fetchmany(transfer.BATCH):
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
        if transfer.vector_dims(SQLITE, conn) is None:
            return
        sql = (
            "SELECT v.fact_id, v.field, "
            "(SELECT tenant_id FROM facts f WHERE f.fact_id = v.fact_id LIMIT 1), "
            "EXISTS (SELECT 1 FROM facts f WHERE f.fact_id = v.fact_id "
            "AND f.valid_to IS NULL AND f.known_to IS NULL), v.embedding "
            "FROM vector_rows v ORDER BY v.vec_rowid"
        )
    else:
        sql = transfer.select_plain(table)
    yield from _batches(conn.execute(sql))


def load_rows(cur: Any, table: str, rows: list[tuple[Any, ...]]) -> None:
    """Insert one batch of a neutral table's rows."""
    transfer.load(SQLITE, cur, indexing, table, rows)


def finish(cur: Any) -> None:
    """Nothing to do on SQLite: its row ids continue from the highest one."""
