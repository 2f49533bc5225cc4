"""The supersession review's tables on SQLite: supersession_queue (new keys a put wrote,
waiting for the memory manager) and supersession_decisions (what it decided, and why).

The decisions themselves are `sgam_store.managers.supersession`'s and the writes to facts
`sgam_store.write.supersession`'s; these only read and record rows. Decision rows travel
as tuples in `DECISION_COLUMNS` order, which is `SupersessionDecision`'s field order.
"""

from __future__ import annotations

from typing import Any

from sgam_store.engines.sqlite.predicates import as_list, in_list

DECISION_COLUMNS = (
    "decision_id, tenant_id, new_fact_id, old_fact_id, decision, score, reason, evidence, "
    "decided_by, decided_at, undone_at"
)


def enqueue(cur: Any, facts: list[tuple[int, str]], at: str) -> None:
    """Queue new memories, (fact_id, tenant_id) each, for review."""
    cur.executemany(
        "INSERT OR IGNORE INTO supersession_queue (fact_id, tenant_id, queued_at) VALUES (?, ?, ?)",
        [(fact_id, tenant, at) for fact_id, tenant in facts],
    )


def queued(conn: Any, tenant: str | None, limit: int) -> list[tuple[int, str]]:
    """(fact_id, tenant_id) of the oldest queued memories, of one tenant or any."""
    where, params = ("WHERE tenant_id = ?", (tenant,)) if tenant is not None else ("", ())
    rows = conn.execute(
        f"SELECT fact_id, tenant_id FROM supersession_queue {where} ORDER BY fact_id LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [(fid, t) for fid, t in rows]


def dequeue(cur: Any, fact_ids: list[int]) -> None:
    cur.execute(f"DELETE FROM supersession_queue WHERE {in_list('fact_id')}", (as_list(fact_ids),))


def record(cur: Any, row: tuple[Any, ...]) -> int:
    """Insert one decision (`DECISION_COLUMNS` without its id); return the new id."""
    cur.execute(
        f"INSERT INTO supersession_decisions ({DECISION_COLUMNS.split(', ', 1)[1]}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        row,
    )
    return int(cur.lastrowid)


def by_id(conn: Any, decision_id: int) -> tuple[Any, ...] | None:
    row = conn.execute(
        f"SELECT {DECISION_COLUMNS} FROM supersession_decisions WHERE decision_id = ?",
        (decision_id,),
    ).fetchone()
    return None if row is None else tuple(row)


def touching(conn: Any, fact_ids: list[int]) -> list[tuple[Any, ...]]:
    """Decisions whose new or old memory is one of `fact_ids`, oldest first."""
    ids = as_list(fact_ids)
    rows = conn.execute(
        f"SELECT {DECISION_COLUMNS} FROM supersession_decisions "
        f"WHERE {in_list('new_fact_id')} OR {in_list('old_fact_id')} ORDER BY decision_id",
        (ids, ids),
    ).fetchall()
    return [tuple(r) for r in rows]


def mark_undone(cur: Any, decision_id: int, at: str) -> None:
    cur.execute(
        "UPDATE supersession_decisions SET undone_at = ? WHERE decision_id = ?", (at, decision_id)
    )
