"""Whole-store export and import on PostgreSQL, the twin of `engines/sqlite/transfer.py`.

Same neutral tables and row shapes; on import the identity and row-id sequences are
moved past the copied ids, so the next write cannot reuse one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy

from sgam_store.core.engine import TRANSFER_COLUMNS, TRANSFER_ORDER
from sgam_store.engines.postgres import indexing

BATCH = 1000


def is_empty(conn: Any) -> bool:
    """True when the store holds no fact and no episode (a safe copy target)."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM facts) OR EXISTS (SELECT 1 FROM episodes)"
    ).fetchone()
    return not row[0]


def vector_dims(conn: Any) -> int | None:
    """The vector table's dimensions, or None when the store has no vectors."""
    row = conn.execute("SELECT value FROM sgam_meta WHERE key = 'vector_dims'").fetchone()
    return int(row[0]) if row else None


def export_rows(conn: Any, table: str) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of one neutral table (`core.engine.TRANSFER_TABLES`), in batches."""
    if table == "keywords":
        sql = "SELECT fact_id, tenant_id, body FROM fact_keywords ORDER BY fact_id"
    elif table == "vectors":
        if vector_dims(conn) is None:
            return
        sql = (
            "SELECT fact_id, field, tenant_id, is_current, embedding::text FROM fact_vectors "
            "ORDER BY vec_id"
        )
    else:
        order = TRANSFER_ORDER.get(table, "1")
        sql = f"SELECT {TRANSFER_COLUMNS[table]} FROM {table} ORDER BY {order}"
    with conn.cursor() as cur:
        cur.execute(sql)
        while rows := cur.fetchmany(BATCH):
            if table == "vectors":
                rows = [(*r[:4], _blob(r[4])) for r in rows]
            yield [tuple(r) for r in rows]


def _blob(text: str) -> bytes:
    """pgvector's text form as the float32 bytes every engine exchanges."""
    return numpy.array(text.strip("[]").split(","), dtype=numpy.float32).tobytes()


def load_rows(cur: Any, table: str, rows: list[tuple[Any, ...]]) -> None:
    """Insert one batch of a neutral table's rows."""
    if table == "keywords":
        indexing.flush_keywords(cur, rows)
    elif table == "vectors":
        for fact_id, field, tenant, current, blob in rows:
            indexing.write_vectors(cur, fact_id, tenant, [(field, bytes(blob))], bool(current))
    else:
        columns = TRANSFER_COLUMNS[table]
        marks = ", ".join(["%s"] * len(columns.split(",")))
        cur.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)


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
