"""Whole-store export and import on PostgreSQL, the twin of `engines/sqlite/transfer.py`.

Same neutral tables and row shapes; on import the identity and row-id sequences are
moved past the copied ids, so the next write cannot reuse one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy

from sgam_store.engines.postgres import indexing
from sgam_store.engines.postgres.versions import COLUMNS

TABLES: tuple[tuple[str, str], ...] = (
    ("facts", COLUMNS),
    (
        "episodes",
        "episode_id, tenant_id, thread_id, source_kind, speaker, content, metadata, "
        "occurred_at, recorded_at, retention_class",
    ),
    ("fact_sources", "fact_id, episode_id"),
    ("ended_sessions", "tenant_id, thread_id, ended_at"),
    (
        "backfill_log",
        "fact_id, old_row_id, new_row_id, from_version, to_version, transforms, backfilled_at",
    ),
    (
        "memory_candidates",
        "candidate_id, tenant_id, subject, attribute, value, similarity_key, memory_type, "
        "reason, status, first_seen_at, last_seen_at, expires_at, promoted_fact_id, "
        "promoted_by, promoted_at",
    ),
    ("candidate_support", "candidate_id, episode_id, payload, confidence, recorded_at"),
    ("episode_extractions", "episode_id, extracted_at, extractor"),
)
_ORDER = {"facts": "row_id", "memory_candidates": "candidate_id", "backfill_log": "log_id"}
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
    """The rows of one neutral table, in batches (`TABLES`, "keywords" or "vectors")."""
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
        sql = f"SELECT {dict(TABLES)[table]} FROM {table} ORDER BY {_ORDER.get(table, '1')}"
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
        columns = dict(TABLES)[table]
        marks = ", ".join(["%s"] * len(columns.split(",")))
        cur.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)


def finish(cur: Any) -> None:
    """Move the row-id sequence and the candidates' identity past the copied ids."""
    cur.execute(
        "SELECT setval('facts_row_ids', GREATEST((SELECT COALESCE(MAX(row_id), 0) FROM facts), 1))"
    )
    cur.execute(
        "SELECT setval(pg_get_serial_sequence('memory_candidates', 'candidate_id'), "
        "GREATEST((SELECT COALESCE(MAX(candidate_id), 0) FROM memory_candidates), 1))"
    )
