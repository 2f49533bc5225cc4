"""The supersession review's tables on PostgreSQL: the twin of
`engines/sqlite/supersession.py`, with the same arguments and results. What differs: id
lists are arrays (`= ANY`), and a new decision's id comes back through RETURNING.
"""

from __future__ import annotations

from typing import Any

DECISION_COLUMNS = (
    "decision_id, tenant_id, new_fact_id, old_fact_id, decision, score, reason, evidence, "
    "decided_by, decided_at, undone_at"
)


def enqueue(cur: Any, facts: list[tuple[int, str]], at: str) -> None:
    """Queue new memories, (fact_id, tenant_id) each, for review."""
    cur.executemany(
        "INSERT INTO supersession_queue (fact_id, tenant_id, queued_at) VALUES (%s, %s, %s) "
        "ON CONFLICT (fact_id) DO NOTHING",
        [(fact_id, tenant, at) for fact_id, tenant in facts],
    )


def queued(conn: Any, tenant: str | None, limit: int) -> list[tuple[int, str]]:
    """(fact_id, tenant_id) of the oldest queued memories, of one tenant or any."""
    where, params = ("WHERE tenant_id = %s", (tenant,)) if tenant is not None else ("", ())
    rows = conn.execute(
        f"SELECT fact_id, tenant_id FROM supersession_queue {where} ORDER BY fact_id LIMIT %s",
        (*params, limit),
    ).fetchall()
    return [(fid, t) for fid, t in rows]


def dequeue(cur: Any, fact_ids: list[int]) -> None:
    cur.execute(
        "DELETE FROM supersession_queue WHERE fact_id = ANY(%s::bigint[])", (list(fact_ids),)
    )


def record(cur: Any, row: tuple[Any, ...]) -> int:
    """Insert one decision (`DECISION_COLUMNS` without its id); return the new id."""
    return int(
        cur.execute(
            f"INSERT INTO supersession_decisions ({DECISION_COLUMNS.split(', ', 1)[1]}) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING decision_id",
            row,
        ).fetchone()[0]
    )


def by_id(conn: Any, decision_id: int) -> tuple[Any, ...] | None:
    row = conn.execute(
        f"SELECT {DECISION_COLUMNS} FROM supersession_decisions WHERE decision_id = %s",
        (decision_id,),
    ).fetchone()
    return None if row is None else tuple(row)


def touching(conn: Any, fact_ids: list[int]) -> list[tuple[Any, ...]]:
    """Decisions whose new or old memory is one of `fact_ids`, oldest first."""
    ids = list(fact_ids)
    rows = conn.execute(
        f"SELECT {DECISION_COLUMNS} FROM supersession_decisions "
        "WHERE new_fact_id = ANY(%s::bigint[]) OR old_fact_id = ANY(%s::bigint[]) "
        "ORDER BY decision_id",
        (ids, ids),
    ).fetchall()
    return [tuple(r) for r in rows]


def mark_undone(cur: Any, decision_id: int, at: str) -> None:
    cur.execute(
        "UPDATE supersession_decisions SET undone_at = %s WHERE decision_id = %s",
        (at, decision_id),
    )
