"""The episodes table's statements on PostgreSQL, and the one facts lookup provenance
starts from: the twin of `engines/sqlite/episodes.py`.

Only the placeholders differ. Rows travel as tuples in `COLUMNS` order (`Episode`'s field
order): metadata as JSON text (a text column the DDL checks parses as JSON), timestamps
as the stored text the connection's loader gives for `timestamptz`.
"""

from __future__ import annotations

from typing import Any

COLUMNS = (
    "episode_id, tenant_id, thread_id, source_kind, speaker, content, metadata, "
    "occurred_at, recorded_at, retention_class"
)
_INSERT = f"INSERT INTO episodes ({COLUMNS}) VALUES ({', '.join(['%s'] * 10)})"


def exists(cur: Any, episode_id: str) -> bool:
    """True when an episode with this id is recorded (for any tenant)."""
    found = cur.execute("SELECT 1 FROM episodes WHERE episode_id = %s", (episode_id,)).fetchone()
    return found is not None


def insert(cur: Any, row: tuple[Any, ...]) -> None:
    """Append one episode row, given in `COLUMNS` order."""
    cur.execute(_INSERT, row)


def by_id(cur: Any, episode_id: str, tenant_id: str | None = None) -> tuple[Any, ...] | None:
    """The episode's row in `COLUMNS` order, or None; with `tenant_id`, only that tenant's."""
    sql, params = f"SELECT {COLUMNS} FROM episodes WHERE episode_id = %s", [episode_id]
    if tenant_id is not None:
        sql, params = sql + " AND tenant_id = %s", [*params, tenant_id]
    return cur.execute(sql, params).fetchone()


def fact_source(cur: Any, fact_id: int) -> tuple[str, str] | None:
    """(tenant_id, source_episode_id) of a fact (any of its versions), or None."""
    return cur.execute(
        "SELECT tenant_id, source_episode_id FROM facts WHERE fact_id = %s LIMIT 1", (fact_id,)
    ).fetchone()
