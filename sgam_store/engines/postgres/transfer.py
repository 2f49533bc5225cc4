"""Whole-store export and import on PostgreSQL, as `engines/sqlite/transfer.py` does it.

Same neutral tables and row shapes; on import the identity and row-id sequences are
moved past the copied ids, so the next write cannot reuse one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy

from sgam_store.engines.common import transfer
from sgam_store.engines.common.dialect import POSTGRES, export
from sgam_store.engines.postgres import indexing

export(globals(), transfer, POSTGRES)


def export_rows(conn: Any, table: str) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of one neutral table (`core.engine.TRANSFER_TABLES`), in batches."""
    if table == "keywords":
        sql = "SELECT fact_id, tenant_id, body FROM fact_keywords ORDER BY fact_id"
    elif table == "vectors":
        if transfer.vector_dims(POSTGRES, conn) is None:
            return
        sql = (
            "SELECT fact_id, field, tenant_id, is_current, embedding::text FROM fact_vectors "
            "ORDER BY vec_id"
        )
    else:
        sql = transfer.select_plain(table)
    with conn.cursor() as cur:
        cur.execute(sql)
        while rows := cur.fetchmany(transfer.BATCH):
            if table == "vectors":
                rows = [(*r[:4], _blob(r[4])) for r in rows]
            yield [tuple(r) for r in rows]


def _blob(text: str) -> bytes:
    """pgvector's text form as the float32 bytes every engine exchanges."""
    return numpy.array(text.strip("[]").split(","), dtype=numpy.float32).tobytes()


def load_rows(cur: Any, table: str, rows: list[tuple[Any, ...]]) -> None:
    """Insert one batch of a neutral table's rows."""
    transfer.load(POSTGRES, cur, indexing, table, rows)


def finish(cur: Any) -> None:
    """Move the row-id sequence and the identities past the copied ids."""
    cur.execute(
        "SELECT setval('facts_row_ids', GREATEST((SELECT COALESCE(MAX(row_id), 0) FROM facts), 1))"
    )
    for table, column in (
        ("memory_candidates", "candidate_id"),
        ("supersession_decisions", "decision_id"),
    ):
        cur.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
            f"GREATEST((SELECT COALESCE(MAX({column}), 0) FROM {table}), 1))"
        )
