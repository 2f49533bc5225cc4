"""What both engines' set-up records alike in `sgam_meta`, under their own write lock
(SQLite's `BEGIN IMMEDIATE`, PostgreSQL's advisory lock): the namespace layout's
`tenant_at` and the vectors' dims, each recorded once; and the refusal of a newer schema.
"""

from __future__ import annotations

from typing import Any

from sgam_store.core import namespaces
from sgam_store.core.errors import (
    DATABASE_PLACEHOLDER,
    DimensionMismatchError,
    SchemaVersionError,
)
from sgam_store.engines.common.dialect import Dialect


def check_version(found: int, latest: int) -> None:
    """Refuse a database written by a newer sgam-store rather than touch it."""
    if found > latest:
        raise SchemaVersionError(
            f"database schema v{found} is newer than this sgam-store (v{latest}); "
            "upgrade sgam-store"
        )


# Read-only opens (`SGAMStore(..., read_only=True)`) create and upgrade nothing: what they
# say when the database holds no store, or an older schema.
NO_STORE = "it holds no sgam-store database, and a read-only open creates none"
UPGRADE = f"sgam migrate --db {DATABASE_PLACEHOLDER}"


def older(found: int, latest: int) -> str:
    """Why a read-only open refuses an older schema, and the command that upgrades it."""
    return (
        f"database schema v{found} is older than this sgam-store's (v{latest}), and a "
        f"read-only open does not upgrade it: run `{UPGRADE}` (or open it writable and "
        "call store.setup()) once, then open it read-only"
    )


def meta(d: Dialect, cur: Any, key: str) -> str | None:
    """A value recorded in `sgam_meta`."""
    row = cur.execute(d.sql("SELECT value FROM sgam_meta WHERE key = ?"), (key,)).fetchone()
    return None if row is None else row[0]


def read_tenant_at(d: Dialect, cur: Any, requested: int | None) -> int:
    """The database's `tenant_at`: the recorded one, else `requested` (or the default);
    a request for another raises ConfigurationError (see `namespaces.settle_tenant_at`)."""
    recorded = meta(d, cur, "tenant_at")
    has_facts = cur.execute("SELECT EXISTS (SELECT 1 FROM facts)").fetchone()[0]
    return namespaces.settle_tenant_at(recorded, requested, bool(has_facts))


def record_tenant_at(d: Dialect, cur: Any, requested: int | None) -> int:
    """Settle `tenant_at` inside the set-up's lock: `read_tenant_at`'s answer, recorded
    now if it was not."""
    recorded = meta(d, cur, "tenant_at")
    found = read_tenant_at(d, cur, requested)
    if recorded is None:
        cur.execute(
            d.sql("INSERT INTO sgam_meta (key, value) VALUES ('tenant_at', ?)"), (str(found),)
        )
    return found


def recorded_dims(d: Dialect, cur: Any, dims: int) -> bool:
    """Whether the vectors' dims are recorded (and are `dims`: a vector of other dims could
    not be ranked against the stored ones, so they raise DimensionMismatchError)."""
    recorded = meta(d, cur, "vector_dims")
    if recorded is not None and int(recorded) != dims:
        raise DimensionMismatchError(
            f"this database's vectors have {recorded} dims; the index config says {dims}"
        )
    return recorded is not None


def record_dims(d: Dialect, cur: Any, dims: int) -> None:
    cur.execute(d.sql("INSERT INTO sgam_meta (key, value) VALUES ('vector_dims', ?)"), (str(dims),))
