"""The `facts` table's portable statements, on either engine: the lookups the ledger's
interval rule decides on, and the bitemporal reads of a key, a belief and a version.

A lookup of the write rule locks its keys first where writers run side by side
(`Dialect.lock_keys`: PostgreSQL's advisory locks, nothing on SQLite). The row ids, the
instant and the inserts are each engine's.
"""

from __future__ import annotations

import functools
from typing import Any

from sgam_store.core.models import FactRow
from sgam_store.engines.common.dialect import Dialect
from sgam_store.engines.common.predicates import (
    COLUMNS,
    F_COLUMNS,
    belief,
    believed_sql,
    current_sql,
    visible,
)

_KEY = "namespace = ? AND attribute = ?"
_IN_FORCE = visible("", None, alias="")[0]  # believed now, valid at the instant bound twice


def _one(d: Dialect, cur: Any, sql: str, params: tuple[Any, ...]) -> FactRow | None:
    row = cur.execute(d.sql(sql), params).fetchone()
    return None if row is None else FactRow._make(row)


def _all(d: Dialect, cur: Any, sql: str, params: tuple[Any, ...]) -> list[FactRow]:
    return [FactRow._make(row) for row in cur.execute(d.sql(sql), params).fetchall()]


# ---------------------------------------------------------------- the write rule's lookups

# Built once: every put runs several (a dialect's `sql` then finds a constant's text).
_CONTAINING = (
    f"SELECT {COLUMNS} FROM facts WHERE {_KEY} AND {_IN_FORCE} ORDER BY valid_from DESC LIMIT 1"
)
_OF_KEY = f"FROM facts WHERE {_KEY} AND {believed_sql()}"  # a key's believed versions
_NEXT_START = f"SELECT MIN(valid_from) {_OF_KEY} AND valid_from > ?"
_LATEST_START = f"SELECT MAX(valid_from) {_OF_KEY}"
# One created_at on all of a key's believed versions (`key_tails`): the latest one's,
# read by one descent of the versions index, not a scan of the key's whole history.
_FIRST_CREATED = f"SELECT created_at {_OF_KEY} ORDER BY valid_from DESC LIMIT 1"
_OPEN = f"SELECT {COLUMNS} FROM facts WHERE {_KEY} AND {current_sql()}"
_MOVE_CREATED = (
    f"UPDATE facts SET created_at = ? WHERE {_KEY} AND {believed_sql()} AND created_at > ?"
)
_OPEN_TTL = (
    f"SELECT row_id, ttl_minutes FROM facts WHERE {_KEY} AND {current_sql()} "
    "AND ttl_minutes IS NOT NULL"
)


def containing(d: Dialect, cur: Any, ns: str, attribute: str, instant: str) -> FactRow | None:
    """The believed version whose interval contains `instant` (at most one exists)."""
    d.lock_keys(cur, [(ns, attribute)])
    return _one(d, cur, _CONTAINING, (ns, attribute, instant, instant))


def _of_key(d: Dialect, cur: Any, sql: str, ns: str, attribute: str, *more: str) -> Any:
    """One aggregate of a key's believed versions, its key locked first."""
    d.lock_keys(cur, [(ns, attribute)])
    return cur.execute(d.sql(sql), (ns, attribute, *more)).fetchone()[0]


def next_start(d: Dialect, cur: Any, ns: str, attribute: str, instant: str) -> str | None:
    """The earliest believed start after `instant`."""
    return _of_key(d, cur, _NEXT_START, ns, attribute, instant)


def latest_start(d: Dialect, cur: Any, ns: str, attribute: str) -> str | None:
    """The latest believed start of a key."""
    return _of_key(d, cur, _LATEST_START, ns, attribute)


def first_created(d: Dialect, cur: Any, ns: str, attribute: str) -> str | None:
    """The earliest `created_at` among a key's believed versions (None: it has none)."""
    d.lock_keys(cur, [(ns, attribute)])
    row = cur.execute(d.sql(_FIRST_CREATED), (ns, attribute)).fetchone()
    return None if row is None else row[0]


def open_version(d: Dialect, cur: Any, ns: str, attribute: str) -> FactRow | None:
    """The key's open version in the current belief."""
    d.lock_keys(cur, [(ns, attribute)])
    return _one(d, cur, _OPEN, (ns, attribute))


@functools.cache
def _key_tails_sql(d: Dialect) -> str:
    return d.sql(
        f"WITH k(ns, attr) AS ({d.pairs}) SELECT {F_COLUMNS} FROM k JOIN facts f "
        "ON f.row_id = (SELECT g.row_id FROM facts g WHERE g.namespace = k.ns "
        f"AND g.attribute = k.attr AND {believed_sql('g')} ORDER BY g.valid_from DESC LIMIT 1)"
    )


def key_tails(d: Dialect, cur: Any, keys: list[tuple[str, str]]) -> list[tuple[FactRow, str]]:
    """(latest believed version, earliest believed created_at) of many keys, one statement,
    after locking them all. Keys with no believed version are absent.

    Each key's latest version is one descent of its versions index (valid_from, newest
    first). The write rule keeps one `created_at` on all of a key's believed versions
    (`ledger.replace_fact`, `move_created`), so the latest one's is the earliest: an
    aggregate over every believed version read each one, and a key with a long history
    made every batch that touched it slower (64 concurrent writers updating 32 shared
    keys: half the group's time).
    """
    d.lock_keys(cur, keys)
    rows = d.execute_planned(cur, _key_tails_sql(d), d.as_pairs(keys)).fetchall()
    return [(row, row.created_at) for row in map(FactRow._make, rows)]


def move_created(d: Dialect, cur: Any, ns: str, attribute: str, start: str) -> None:
    """A delayed fact became the key's first: believed versions take its start as
    `created_at` (derived metadata, so no new versions)."""
    cur.execute(d.sql(_MOVE_CREATED), (start, ns, attribute, start))


# ---------------------------------------------------------------- expiry (TTL)


def open_ttl(d: Dialect, cur: Any, ns: str, attribute: str) -> tuple[int, float] | None:
    """(row id, ttl minutes) of the key's open version, if it has a TTL."""
    d.lock_keys(cur, [(ns, attribute)])
    return cur.execute(d.sql(_OPEN_TTL), (ns, attribute)).fetchone()


def expired(d: Dialect, cur: Any, now: str) -> list[FactRow]:
    """Open versions whose `expires_at` has passed by `now`, their keys locked."""
    rows = _all(
        d,
        cur,
        f"SELECT {COLUMNS} FROM facts WHERE expires_at IS NOT NULL AND expires_at <= ? "
        f"AND {current_sql()}",
        (now,),
    )
    if not d.locks or not rows:
        return rows
    d.lock_keys(cur, [(r.namespace, r.attribute) for r in rows])
    # Locked after reading: re-read so a version retired meanwhile is not closed twice.
    return _all(
        d,
        cur,
        f"SELECT {COLUMNS} FROM facts WHERE {d.in_list('row_id')} AND {current_sql()}",
        (d.as_list(r.row_id for r in rows),),
    )


# ---------------------------------------------------------------- reads


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
