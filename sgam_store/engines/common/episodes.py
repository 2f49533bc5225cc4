"""The episodes table's statements, on either engine, and the one facts lookup provenance
starts from.

Rows travel as tuples in `COLUMNS` order, which is `Episode`'s field order: metadata as
JSON text, timestamps as the stored fixed-width UTC text. `sgam_store.ledger.episodes`
builds and validates the `Episode`.
"""

from __future__ import annotations

from typing import Any

from sgam_store.core.errors import InvalidEpisodeError
from sgam_store.core.models import FactRow
from sgam_store.engines.common import predicates
from sgam_store.engines.common.dialect import Dialect

COLUMNS = (
    "episode_id, tenant_id, thread_id, source_kind, speaker, content, metadata, "
    "occurred_at, recorded_at, retention_class"
)


def exists(d: Dialect, cur: Any, tenant_id: str, episode_id: str) -> bool:
    """True when the tenant has recorded an episode with this id (ids are per tenant:
    another tenant's episode of the same id is another episode)."""
    sql = d.sql("SELECT 1 FROM episodes WHERE tenant_id = ? AND episode_id = ?")
    return cur.execute(sql, (tenant_id, episode_id)).fetchone() is not None


def insert(d: Dialect, cur: Any, row: tuple[Any, ...]) -> None:
    """Append one episode row, given in `COLUMNS` order."""
    cur.execute(d.sql(f"INSERT INTO episodes ({COLUMNS}) VALUES ({', '.join('?' * 10)})"), row)


def by_id(
    d: Dialect, cur: Any, episode_id: str, tenant_id: str | None = None
) -> tuple[Any, ...] | None:
    """The episode's row in `COLUMNS` order, or None; with `tenant_id`, that tenant's.
    Without, the one episode of that id: when several tenants recorded the id, which
    is meant cannot be guessed (InvalidEpisodeError)."""
    sql, params = f"SELECT {COLUMNS} FROM episodes WHERE episode_id = ?", [episode_id]
    if tenant_id is not None:
        sql, params = sql + " AND tenant_id = ?", [*params, tenant_id]
    rows = cur.execute(d.sql(sql + " LIMIT 2"), params).fetchall()
    if len(rows) > 1:
        raise InvalidEpisodeError(
            f"episode id {episode_id!r} is recorded by several tenants: name its tenant_id"
        )
    return rows[0] if rows else None


def of_ids(d: Dialect, conn: Any, tenant_id: str, episode_ids: list[str]) -> list[tuple[Any, ...]]:
    """The tenant's episodes among `episode_ids`, rows in `COLUMNS` order, in no order:
    one statement (primary key seeks) for a page that cites many, never one per id."""
    sql = d.sql(
        f"SELECT {COLUMNS} FROM episodes WHERE tenant_id = ? AND {d.in_list('episode_id', 'text')}"
    )
    return [tuple(r) for r in conn.execute(sql, (tenant_id, d.as_list(episode_ids))).fetchall()]


def fact_source(d: Dialect, cur: Any, fact_id: int) -> tuple[str, str] | None:
    """(tenant_id, source_episode_id) of a fact (any of its versions), or None."""
    sql = d.sql("SELECT tenant_id, source_episode_id FROM facts WHERE fact_id = ? LIMIT 1")
    return cur.execute(sql, (fact_id,)).fetchone()


def citing(
    d: Dialect,
    conn: Any,
    tenant_id: str,
    episode_id: str,
    known_at: str | None,
    limit: int,
) -> list[FactRow]:
    """Versions of `tenant_id` believed at `known_at` (None: now) whose source is the
    episode, key by key in valid-time order, at most `limit`: read through the
    facts_source index, so the cost follows the episode's facts, not the tenant's."""
    cond, params = predicates.belief(known_at)
    # The rows are found by source (facts_source) and only then checked for tenant and
    # belief: the tenant test is an expression, which no index answers, and so is the
    # order. Without statistics SQLite's planner would otherwise walk the tenant's index
    # (every fact of the tenant) or a key-ordered index (every fact).
    sql = d.sql(
        f"SELECT {predicates.COLUMNS} FROM facts WHERE source_episode_id = ? "
        f"AND tenant_id || '' = ? AND {cond} "
        "ORDER BY namespace || '', attribute || '', valid_from LIMIT ?"
    )
    rows = conn.execute(sql, (episode_id, tenant_id, *params, limit)).fetchall()
    return [FactRow._make(row) for row in rows]
