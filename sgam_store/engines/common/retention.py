"""Retention's selections, on either engine: which facts and episodes a policy or an
ended session reaches (which open facts a policy reaches is each engine's: PostgreSQL
locks their keys).

The decisions (which policy applies, the cut-off instant, what to erase) are
`sgam_store.lifecycle.retention`'s; these only read and record rows.
"""

from __future__ import annotations

from typing import Any

from sgam_store.engines.common.dialect import Dialect


def _policy_counts(d: Dialect, cur: Any, table: str, column: str) -> list[tuple[str, int]]:
    """Distinct values and their rows, sorted byte-wise on both engines."""
    return cur.execute(
        f"SELECT {column}, COUNT(*) FROM {table} WHERE {column} IS NOT NULL "
        f"GROUP BY {column} ORDER BY {column}{d.collate_c}"
    ).fetchall()


def fact_policies(d: Dialect, cur: Any) -> list[tuple[str, int]]:
    """(retention_policy, rows) for every distinct policy stored on facts."""
    return _policy_counts(d, cur, "facts", "retention_policy")


def episode_classes(d: Dialect, cur: Any) -> list[tuple[str, int]]:
    """(retention_class, rows) for every distinct class stored on episodes."""
    return _policy_counts(d, cur, "episodes", "retention_class")


def episodes_due(d: Dialect, cur: Any, retention_class: str, cutoff: str) -> list[tuple[str, str]]:
    """(tenant_id, episode_id) of episodes of `retention_class` recorded at or before
    `cutoff` (episode ids are per tenant)."""
    rows = cur.execute(
        d.sql(
            "SELECT tenant_id, episode_id FROM episodes "
            "WHERE retention_class = ? AND recorded_at <= ?"
        ),
        (retention_class, cutoff),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def record_session_end(d: Dialect, cur: Any, tenant_id: str, thread_id: str, ended_at: str) -> None:
    """Record that a thread ended at `ended_at`; an earlier recorded end moves forward."""
    cur.execute(
        d.sql(
            "INSERT INTO ended_sessions (tenant_id, thread_id, ended_at) VALUES (?, ?, ?) "
            "ON CONFLICT (tenant_id, thread_id) DO UPDATE SET "
            f"ended_at = {d.greatest}(ended_sessions.ended_at, excluded.ended_at)"
        ),
        (tenant_id, thread_id, ended_at),
    )


def _one_session(tenant_id: str | None, thread_id: str | None) -> tuple[str, list[Any]]:
    """The condition narrowing an ended-session join to one thread (None: every session)."""
    if tenant_id is None:
        return "", []
    return " AND s.tenant_id = ? AND s.thread_id = ?", [tenant_id, thread_id]


def ended_session_facts(
    d: Dialect, cur: Any, policy: str, tenant_id: str | None = None, thread_id: str | None = None
) -> list[int]:
    """fact_ids under `policy` recorded up to the end of their source's ended thread.

    A fact's thread is its source's: an episode of the thread, or the "thread:<id>"
    marker a `put` records inside a graph run. With a tenant, only that thread counts.
    """
    only, params = _one_session(tenant_id, thread_id)
    rows = cur.execute(
        d.sql(
            "SELECT DISTINCT f.fact_id FROM facts f "
            "JOIN ended_sessions s ON s.tenant_id = f.tenant_id "
            "WHERE f.retention_policy = ? AND f.recorded_at <= s.ended_at "
            "AND (f.source_episode_id = 'thread:' || s.thread_id OR f.source_episode_id IN "
            "(SELECT e.episode_id FROM episodes e WHERE e.tenant_id = s.tenant_id "
            f"AND e.thread_id = s.thread_id)){only}"
        ),
        (policy, *params),
    ).fetchall()
    return [r[0] for r in rows]


def ended_session_episodes(
    d: Dialect,
    cur: Any,
    retention_class: str,
    tenant_id: str | None = None,
    thread_id: str | None = None,
) -> list[tuple[str, str]]:
    """(tenant_id, episode_id) of episodes of `retention_class` recorded up to the end of
    their ended thread."""
    only, params = _one_session(tenant_id, thread_id)
    rows = cur.execute(
        d.sql(
            "SELECT e.tenant_id, e.episode_id FROM episodes e JOIN ended_sessions s "
            "ON s.tenant_id = e.tenant_id AND s.thread_id = e.thread_id "
            f"WHERE e.retention_class = ? AND e.recorded_at <= s.ended_at{only}"
        ),
        (retention_class, *params),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]
