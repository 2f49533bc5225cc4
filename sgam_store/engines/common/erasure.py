"""Erasure's selections, on either engine: which facts and episodes a purge selector
names, and the other sources that keep a fact alive when one episode goes. The deletions,
their locks and the secure rewrite are each engine's (`engines/sqlite/erasure.py` gives
the selectors and the rules).
"""

from __future__ import annotations

from typing import Any

from sgam_store.engines.common.dialect import Dialect


def _where(tenant_id: str, subject: str | None, attribute: str | None) -> tuple[str, list[str]]:
    where, params = "tenant_id = ?", [tenant_id]
    if subject is not None:
        where, params = where + " AND subject = ?", [*params, subject]
    if attribute is not None:
        where, params = where + " AND attribute = ?", [*params, attribute]
    return where, params


def selected(
    d: Dialect, tenant_id: str, subject: str | None, attribute: str | None
) -> tuple[str, list[str]]:
    """WHERE conditions for a purge selector (tables with tenant, subject, attribute)."""
    where, params = _where(tenant_id, subject, attribute)
    return d.sql(where), params


def facts_of(
    d: Dialect, cur: Any, tenant_id: str, subject: str | None = None, attribute: str | None = None
) -> list[int]:
    """fact_ids of a tenant, narrowed to exactly one subject and/or attribute, by id."""
    where, params = _where(tenant_id, subject, attribute)
    rows = cur.execute(d.sql(f"SELECT DISTINCT fact_id FROM facts WHERE {where}"), params)
    return sorted(r[0] for r in rows)


def episodes_of(d: Dialect, cur: Any, tenant_id: str) -> list[str]:
    """Ids of the tenant's episodes."""
    rows = cur.execute(d.sql("SELECT episode_id FROM episodes WHERE tenant_id = ?"), (tenant_id,))
    return [r[0] for r in rows]


def other_sources(d: Dialect, cur: Any, fact_id: int, episode_id: str) -> list[str]:
    """The fact's sources but `episode_id`, byte-wise."""
    rows = cur.execute(
        d.sql(
            "SELECT e FROM (SELECT source_episode_id AS e FROM facts "
            "WHERE fact_id = ? AND source_episode_id != ? "
            "UNION SELECT episode_id FROM fact_sources WHERE fact_id = ? AND episode_id != ?) s "
            f"ORDER BY e{d.collate_c}"
        ),
        (fact_id, episode_id, fact_id, episode_id),
    ).fetchall()
    return [r[0] for r in rows]
