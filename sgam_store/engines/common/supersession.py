"""The supersession review's tables, on either engine: supersession_queue (new keys a put
wrote, waiting for the memory manager) and supersession_decisions (what it decided, and
why).

The decisions themselves are `sgam_store.managers.supersession`'s and the writes to facts
`sgam_store.write.supersession`'s; these only read and record rows. Decision rows travel
as tuples in `DECISION_COLUMNS` order, which is `SupersessionDecision`'s field order.
"""

from __future__ import annotations

from typing import Any

from sgam_store.core.models import FactRow
from sgam_store.engines.common import predicates
from sgam_store.engines.common.dialect import Dialect

DECISION_COLUMNS = (
    "decision_id, tenant_id, new_fact_id, old_fact_id, decision, score, reason, evidence, "
    "decided_by, decided_at, undone_at"
)


def enqueue(d: Dialect, cur: Any, facts: list[tuple[int, str]], at: str) -> None:
    """Queue new memories, (fact_id, tenant_id) each, for review (a queued one stays)."""
    cur.executemany(
        d.sql(
            "INSERT INTO supersession_queue (fact_id, tenant_id, queued_at) VALUES (?, ?, ?) "
            "ON CONFLICT (fact_id) DO NOTHING"
        ),
        [(fact_id, tenant, at) for fact_id, tenant in facts],
    )


def queued(
    d: Dialect, conn: Any, tenant: str | None, limit: int, after: int = 0
) -> list[tuple[int, str]]:
    """(fact_id, tenant_id) of the oldest queued memories after fact `after` (0: from the
    first), of one tenant or any: a page of a deep queue is a seek from the last fact id
    the page before showed (supersession_queue_tenant), not an offset read past."""
    where, params = ("AND tenant_id = ?", (tenant,)) if tenant is not None else ("", ())
    rows = conn.execute(
        d.sql(
            "SELECT fact_id, tenant_id FROM supersession_queue "
            f"WHERE fact_id > ? {where} ORDER BY fact_id LIMIT ?"
        ),
        (after, *params, limit),
    ).fetchall()
    return [(fid, t) for fid, t in rows]


def dequeue(d: Dialect, cur: Any, fact_ids: list[int]) -> None:
    sql = d.sql(f"DELETE FROM supersession_queue WHERE {d.in_list('fact_id')}")
    cur.execute(sql, (d.as_list(fact_ids),))


def record(d: Dialect, cur: Any, row: tuple[Any, ...]) -> int:
    """Insert one decision (`DECISION_COLUMNS` without its id); return the new id."""
    sql = d.sql(
        f"INSERT INTO supersession_decisions ({DECISION_COLUMNS.split(', ', 1)[1]}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING decision_id"
    )
    return int(cur.execute(sql, row).fetchone()[0])


def by_id(d: Dialect, conn: Any, decision_id: int) -> tuple[Any, ...] | None:
    row = conn.execute(
        d.sql(f"SELECT {DECISION_COLUMNS} FROM supersession_decisions WHERE decision_id = ?"),
        (decision_id,),
    ).fetchone()
    return None if row is None else tuple(row)


def touching(d: Dialect, conn: Any, fact_ids: list[int]) -> list[tuple[Any, ...]]:
    """Decisions whose new or old memory is one of `fact_ids`, oldest first."""
    ids = d.as_list(fact_ids)
    rows = conn.execute(
        d.sql(
            f"SELECT {DECISION_COLUMNS} FROM supersession_decisions WHERE "
            f"{d.in_list('new_fact_id')} OR {d.in_list('old_fact_id')} ORDER BY decision_id"
        ),
        (ids, ids),
    ).fetchall()
    return [tuple(r) for r in rows]


def of_key(d: Dialect, conn: Any, tenant: str, ns: str, attribute: str) -> list[tuple[Any, ...]]:
    """The tenant's decisions whose new or old memory is a fact of one key (any of its
    versions), oldest first: one statement for a key's page, where a call per version
    cost two statements each (525 versions, 1,050). The key's fact ids come from the
    facts_versions index, and each one's decisions from the new and old fact-id indexes
    (SQLite: a multi-index OR), so a key costs its versions and decisions, not the table."""
    key = "SELECT fact_id FROM facts WHERE namespace = ? AND attribute = ?"
    rows = conn.execute(
        d.sql(
            f"SELECT {DECISION_COLUMNS} FROM supersession_decisions WHERE tenant_id = ? "
            f"AND (new_fact_id IN ({key}) OR old_fact_id IN ({key})) ORDER BY decision_id"
        ),
        (tenant, ns, attribute, ns, attribute),
    ).fetchall()
    return [tuple(r) for r in rows]


def mark_undone(d: Dialect, cur: Any, decision_id: int, at: str) -> None:
    sql = d.sql("UPDATE supersession_decisions SET undone_at = ? WHERE decision_id = ?")
    cur.execute(sql, (at, decision_id))


def of_tenant(
    d: Dialect, conn: Any, tenant: str, limit: int, before: int | None = None
) -> list[tuple[Any, ...]]:
    """A tenant's decisions older than decision `before` (None: from the newest), newest
    first, at most `limit`: read from the decisions table alone (by id, downward from the
    cursor, stopping at `limit`), never from the tenant's facts."""
    rows = conn.execute(
        d.sql(
            f"SELECT {DECISION_COLUMNS} FROM supersession_decisions WHERE tenant_id = ? "
            "AND decision_id < ? ORDER BY decision_id DESC LIMIT ?"
        ),
        (tenant, 2**62 if before is None else before, limit),
    ).fetchall()
    return [tuple(r) for r in rows]


def namespace_members(
    d: Dialect, conn: Any, tenant: str, namespace: str, now: str, limit: int
) -> list[FactRow]:
    """Up to `limit` current facts of one namespace (a review's small-namespace check: in
    no order, since it only asks whether there are more than a few, and if not, which).
    Read by namespace through the current-fact index, never by scanning the tenant."""
    sql = d.sql(
        f"SELECT {predicates.COLUMNS} FROM facts WHERE namespace = ? AND tenant_id = ? "
        f"AND {predicates.current_sql()} AND (expires_at IS NULL OR expires_at > ?) LIMIT ?"
    )
    return [FactRow._make(r) for r in conn.execute(sql, (namespace, tenant, now, limit))]
