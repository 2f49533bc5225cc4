"""The `facts` table's portable reads, on either engine: the bitemporal lookups of a key, a
belief and a version. The write rule's lookups and writes are each engine's (PostgreSQL
locks keys first).
"""

from __future__ import annotations

from typing import Any

from sgam_store.core.models import FactRow
from sgam_store.engines.common.dialect import Dialect
from sgam_store.engines.common.predicates import COLUMNS, belief, visible

_KEY = "namespace = ? AND attribute = ?"


def _one(d: Dialect, cur: Any, sql: str, params: tuple[Any, ...]) -> FactRow | None:
    row = cur.execute(d.sql(sql), params).fetchone()
    return None if row is None else FactRow._make(row)


def _all(d: Dialect, cur: Any, sql: str, params: tuple[Any, ...]) -> list[FactRow]:
    return [FactRow._make(row) for row in cur.execute(d.sql(sql), params).fetchall()]


def set_expiry(d: Dialect, cur: Any, row_id: int, expires: str) -> None:
    cur.execute(d.sql("UPDATE facts SET expires_at = ? WHERE row_id = ?"), (expires, row_id))


def visible_at(
    d: Dialect, conn: Any, ns: str, attribute: str, at: str | None, known_at: str | None
) -> FactRow | None:
    """The version of a key visible at valid time `at`, as believed at `known_at`."""
    cond, params = visible(at, known_at, alias="")
    return _one(
        d,
        conn,
        f"SELECT {COLUMNS} FROM facts WHERE {_KEY} AND {cond} ORDER BY valid_from DESC LIMIT 1",
        (ns, attribute, *params),
    )


def history(d: Dialect, conn: Any, ns: str, attribute: str, known_at: str | None) -> list[FactRow]:
    """Every version of a key believed at `known_at` (None: now), by valid_from."""
    cond, params = belief(known_at)
    return _all(
        d,
        conn,
        f"SELECT {COLUMNS} FROM facts WHERE {_KEY} AND {cond} ORDER BY valid_from",
        (ns, attribute, *params),
    )


def believed(
    d: Dialect, conn: Any, narrow: dict[str, str | None], known_at: str | None
) -> list[FactRow]:
    """Every version believed at `known_at`, key by key in valid-time order, narrowed to
    the given tenant_id, subject and attribute values (None: any)."""
    cond, params = belief(known_at)
    for column, value in narrow.items():
        if value is not None:
            cond, params = f"{cond} AND {column} = ?", [*params, value]
    return _all(
        d,
        conn,
        f"SELECT {COLUMNS} FROM facts WHERE {cond} "
        "ORDER BY tenant_id, subject, attribute, valid_from",
        tuple(params),
    )


def by_row_id(d: Dialect, conn: Any, row_id: int) -> FactRow | None:
    return _one(d, conn, f"SELECT {COLUMNS} FROM facts WHERE row_id = ?", (row_id,))


def latest_of(d: Dialect, conn: Any, fact_id: int) -> FactRow | None:
    """A fact's newest version (its closed copy, or the retired row)."""
    return _one(
        d,
        conn,
        f"SELECT {COLUMNS} FROM facts WHERE fact_id = ? ORDER BY row_id DESC LIMIT 1",
        (fact_id,),
    )
