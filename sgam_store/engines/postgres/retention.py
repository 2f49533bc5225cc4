"""Retention's selections on PostgreSQL: which facts and episodes a policy or an ended
session reaches. The twin of `engines/sqlite/retention.py`.

What differs from SQLite: writers run in parallel here, so `open_facts_due`, whose rows
the caller closes through the ledger, locks their keys (`versions.lock_keys`) and
re-reads them, as `versions.expired` does; a key another writer changed meanwhile is
not closed twice. Policy counts come sorted byte-wise, as SQLite's GROUP BY gives them.
The decisions (which policy applies, the cut-off instant, what to erase) are
`sgam_store.lifecycle.retention`'s.
"""

from __future__ import annotations

from typing import Any

from sgam_store.core.models import FactRow
from sgam_store.engines.postgres.predicates import current_sql
from sgam_store.engines.postgres.versions import COLUMNS, lock_keys


def _policy_counts(cur: Any, table: str, column: str) -> list[tuple[str, int]]:
    return cur.execute(
        f"SELECT {column}, COUNT(*) FROM {table} WHERE {column} IS NOT NULL "
        f'GROUP BY {column} ORDER BY {column} COLLATE "C"'
    ).fetchall()


def fact_policies(cur: Any) -> list[tuple[str, int]]:
    """(retention_policy, rows) for every distinct policy stored on facts."""
    return _policy_counts(cur, "facts", "retention_policy")


def episode_classes(cur: Any) -> list[tuple[str, int]]:
    """(retention_class, rows) for every distinct class stored on episodes."""
    return _policy_counts(cur, "episodes", "retention_class")


def _open_rows(cur: Any, where: str, params: tuple[Any, ...]) -> list[FactRow]:
    rows = cur.execute(
        f"SELECT {COLUMNS} FROM facts WHERE {where} AND {current_sql()} ORDER BY row_id", params
    ).fetchall()
    return [FactRow._make(row) for row in rows]


def open_facts_due(cur: Any, policy: str, cutoff: str) -> list[FactRow]:
    """Open facts of the current belief under `policy` recorded at or before `cutoff`,
    their keys locked."""
    due = _open_rows(cur, "retention_policy = %s AND recorded_at <= %s", (policy, cutoff))
    if not due:
        return []
    lock_keys(cur, [(r.namespace, r.attribute) for r in due])
    # Locked after reading: re-read so a version retired meanwhile is not closed twice.
    return _open_rows(cur, "row_id = ANY(%s::bigint[])", ([r.row_id for r in due],))


def episodes_due(cur: Any, retention_class: str, cutoff: str) -> list[str]:
    """Ids of episodes of `retention_class` recorded at or before `cutoff`."""
    rows = cur.execute(
        "SELECT episode_id FROM episodes WHERE retention_class = %s AND recorded_at <= %s",
        (retention_class, cutoff),
    ).fetchall()
    return [r[0] for r in rows]


def record_session_end(cur: Any, tenant_id: str, thread_id: str, ended_at: str) -> None:
    """Record that a thread ended at `ended_at`; an earlier recorded end moves forward."""
    cur.execute(
        "INSERT INTO ended_sessions (tenant_id, thread_id, ended_at) VALUES (%s, %s, %s) "
        "ON CONFLICT (tenant_id, thread_id) "
        "DO UPDATE SET ended_at = GREATEST(ended_sessions.ended_at, excluded.ended_at)",
        (tenant_id, thread_id, ended_at),
    )


def _one_session(tenant_id: str | None, thread_id: str | None) -> tuple[str, list[Any]]:
    """The condition narrowing an ended-session join to one thread (None: every session)."""
    if tenant_id is None:
        return "", []
    return " AND s.tenant_id = %s AND s.thread_id = %s", [tenant_id, thread_id]


def ended_session_facts(
    cur: Any, policy: str, tenant_id: str | None = None, thread_id: str | None = None
) -> list[int]:
    """fact_ids under `policy` recorded up to the end of their source's ended thread.

    A fact's thread is its source's: an episode of the thread, or the "thread:<id>"
    marker a `put` records inside a graph run. With a tenant, only that thread counts.
    """
    only, params = _one_session(tenant_id, thread_id)
    rows = cur.execute(
        "SELECT DISTINCT f.fact_id FROM facts f JOIN ended_sessions s ON s.tenant_id = f.tenant_id "
        "WHERE f.retention_policy = %s AND f.recorded_at <= s.ended_at "
        "AND (f.source_episode_id = 'thread:' || s.thread_id OR f.source_episode_id IN "
        "(SELECT e.episode_id FROM episodes e WHERE e.tenant_id = s.tenant_id "
        f"AND e.thread_id = s.thread_id)){only}",
        (policy, *params),
    ).fetchall()
    return [r[0] for r in rows]


def ended_session_episodes(
    cur: Any, retention_class: str, tenant_id: str | None = None, thread_id: str | None = None
) -> list[str]:
    """Ids of episodes of `retention_class` recorded up to the end of their ended thread."""
    only, params = _one_session(tenant_id, thread_id)
    rows = cur.execute(
        "SELECT e.episode_id FROM episodes e JOIN ended_sessions s "
        "ON s.tenant_id = e.tenant_id AND s.thread_id = e.thread_id "
        f"WHERE e.retention_class = %s AND e.recorded_at <= s.ended_at{only}",
        (retention_class, *params),
    ).fetchall()
    return [r[0] for r in rows]
