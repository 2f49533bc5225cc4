"""The schema backfill's portable statements, on either engine: which believed rows a
registered transform applies to, and the audit row of a rewrite. Whether a row is still
believed, its vectors and its keyword row are each engine's.

The rewrite itself (plans, transforms, re-embedding, new versions through the ledger) is
`sgam_store.lifecycle.backfill`'s.
"""

from __future__ import annotations

from typing import Any

from sgam_store.core.models import FactRow
from sgam_store.engines.common.dialect import Dialect
from sgam_store.engines.common.predicates import COLUMNS, believed_sql


def _transformable(keys: list[tuple[str, str, int]]) -> tuple[str, list[Any]]:
    """SQL for rows one of the (kind, name, schema_version) keys applies to.

    `kind` is "attribute" or "memory_type" (the registry's keys), a column name.
    """
    parts, params = [], []
    for kind, name, version in keys:
        parts.append(f"({kind} = ? AND schema_version = ?)")
        params += [name, version]
    return "(" + " OR ".join(parts) + ")", params


def transformable_batch(
    d: Dialect, conn: Any, keys: list[tuple[str, str, int]], after: int, limit: int
) -> list[FactRow]:
    """Up to `limit` believed rows after row id `after` that one of the keys applies to,
    in row id order."""
    match, params = _transformable(keys)
    rows = conn.execute(
        d.sql(
            f"SELECT {COLUMNS} FROM facts WHERE {believed_sql()} AND row_id > ? "
            f"AND {match} ORDER BY row_id LIMIT ?"
        ),
        (after, *params, limit),
    ).fetchall()
    return [FactRow._make(row) for row in rows]


def transformable_count(d: Dialect, conn: Any, keys: list[tuple[str, str, int]]) -> int:
    """How many believed rows one of the keys still applies to."""
    match, params = _transformable(keys)
    return conn.execute(
        d.sql(f"SELECT COUNT(*) FROM facts WHERE {believed_sql()} AND {match}"), params
    ).fetchone()[0]


def log_rewrite(
    d: Dialect,
    cur: Any,
    fact_id: int,
    old_row_id: int,
    new_row_id: int,
    from_version: int,
    to_version: int,
    transforms: str,
    at: str,
) -> None:
    """Audit one rewrite in backfill_log (versions and transform names, never values),
    under the rewritten fact's tenant."""
    cur.execute(
        d.sql(
            "INSERT INTO backfill_log (fact_id, old_row_id, new_row_id, from_version, "
            "to_version, transforms, backfilled_at, tenant_id) "
            f"SELECT {d.typed('bigint')}, row_id, {d.typed('bigint')}, "
            f"{d.typed('integer')}, {d.typed('integer')}, ?, {d.typed('timestamptz')}, tenant_id "
            "FROM facts WHERE row_id = ?"
        ),
        (fact_id, new_row_id, from_version, to_version, transforms, at, old_row_id),
    )
