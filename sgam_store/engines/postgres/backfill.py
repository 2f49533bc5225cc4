"""The schema backfill's statements on PostgreSQL: which believed rows a registered
transform applies to, whether a row is still believed, its audit row, and its keyword
row. The twin of `engines/sqlite/backfill.py`.

What differs from SQLite: keyword rows are `fact_keywords` rows keyed by fact_id and
vectors live in `fact_vectors` (no FTS5 slots, no vec0 pair); and since writers run in
parallel, `still_believed` locks the row's key (`versions.lock_keys`) before answering,
so no writer of that key can retire the row between the answer and the rewrite. The
rewrite itself is `sgam_store.lifecycle.backfill`'s.
"""

from __future__ import annotations

from typing import Any

from sgam_store.core.models import FactRow
from sgam_store.engines.postgres.predicates import believed_sql
from sgam_store.engines.postgres.versions import COLUMNS, lock_keys


def _transformable(keys: list[tuple[str, str, int]]) -> tuple[str, list[Any]]:
    """SQL for rows one of the (kind, name, schema_version) keys applies to.

    `kind` is "attribute" or "memory_type" (the registry's keys), a column name.
    """
    parts, params = [], []
    for kind, name, version in keys:
        parts.append(f"({kind} = %s AND schema_version = %s)")
        params += [name, version]
    return "(" + " OR ".join(parts) + ")", params


def transformable_batch(
    conn: Any, keys: list[tuple[str, str, int]], after: int, limit: int
) -> list[FactRow]:
    """Up to `limit` believed rows after row id `after` that one of the keys applies to,
    in row id order."""
    match, params = _transformable(keys)
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM facts WHERE {believed_sql()} AND row_id > %s "
        f"AND {match} ORDER BY row_id LIMIT %s",
        (after, *params, limit),
    ).fetchall()
    return [FactRow._make(row) for row in rows]


def transformable_count(conn: Any, keys: list[tuple[str, str, int]]) -> int:
    """How many believed rows one of the keys still applies to."""
    match, params = _transformable(keys)
    return conn.execute(
        f"SELECT COUNT(*) FROM facts WHERE {believed_sql()} AND {match}", params
    ).fetchone()[0]


def with_vectors(conn: Any, fact_ids: list[int]) -> list[int]:
    """The fact ids among `fact_ids` that have vector rows."""
    rows = conn.execute(
        "SELECT DISTINCT fact_id FROM fact_vectors WHERE fact_id = ANY(%s::bigint[])",
        (list(fact_ids),),
    ).fetchall()
    return [r[0] for r in rows]


def still_believed(cur: Any, row_id: int) -> bool:
    """Whether the version exists and is not retired (another writer may have since),
    its key locked so that stays so until the transaction ends."""
    key = cur.execute(
        "SELECT namespace, attribute FROM facts WHERE row_id = %s", (row_id,)
    ).fetchone()
    if key is None:
        return False
    lock_keys(cur, [(key[0], key[1])])
    row = cur.execute("SELECT known_to FROM facts WHERE row_id = %s", (row_id,)).fetchone()
    return row == (None,)


def delete_keyword_row(cur: Any, fact_id: int) -> bool:
    """Delete the fact's keyword row; whether it had one."""
    deleted = cur.execute("DELETE FROM fact_keywords WHERE fact_id = %s", (fact_id,)).rowcount
    return bool(deleted)


def log_rewrite(
    cur: Any,
    fact_id: int,
    old_row_id: int,
    new_row_id: int,
    from_version: int,
    to_version: int,
    transforms: str,
    at: str,
) -> None:
    """Audit one rewrite in backfill_log (versions and transform names, never values)."""
    cur.execute(
        "INSERT INTO backfill_log (fact_id, old_row_id, new_row_id, from_version, "
        "to_version, transforms, backfilled_at) VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (fact_id, old_row_id, new_row_id, from_version, to_version, transforms, at),
    )
