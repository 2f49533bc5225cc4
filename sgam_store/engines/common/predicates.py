"""The read rule as SQL, with `?` placeholders: which versions a read at (valid time,
belief time) may see, and the facts table's columns in `FactRow` order.

Written once; the ledger, search, retention, backfill and stats all build on these.
"""

from __future__ import annotations

from typing import NamedTuple

from sgam_store.core.models import FactRow

COLUMNS = ", ".join(FactRow._fields)


def aliased_columns(shape: type[NamedTuple], alias: str = "f") -> str:
    """The select list that reads a row of `shape` from the facts table as `alias`."""
    return ", ".join(f"{alias}.{name}" for name in shape._fields)


F_COLUMNS = aliased_columns(FactRow)


def believed_sql(alias: str = "") -> str:
    """SQL for "this version is the store's current belief": not retired."""
    return f"{alias}.known_to IS NULL" if alias else "known_to IS NULL"


def current_sql(alias: str = "") -> str:
    """SQL for "the open fact of the current belief" (expiry aside: see `visible`'s users)."""
    a = f"{alias}." if alias else ""
    return f"{a}valid_to IS NULL AND {believed_sql(alias)}"


def belief(known_at: str | None, alias: str = "") -> tuple[str, list[str]]:
    """SQL for "believed at `known_at`" (None: now), the transaction-time half of a read."""
    if known_at is None:
        return believed_sql(alias), []
    a = f"{alias}." if alias else ""
    return f"{a}known_from <= ? AND ({a}known_to IS NULL OR {a}known_to > ?)", [known_at] * 2


def visible(at: str | None, known_at: str | None, alias: str = "f") -> tuple[str, list[str]]:
    """SQL for "rows visible at valid time `at` as believed at `known_at`".

    `at=None` means *current*: the open fact of the current belief. `known_at=None`
    means the current belief. Every read (get, search, list, history, views) uses this.
    """
    a = f"{alias}." if alias else ""
    if known_at is None and at is None:
        return current_sql(alias), []
    tx, params = belief(known_at, alias)
    if at is None:
        return f"{a}valid_to IS NULL AND {tx}", params
    return (
        f"{a}valid_from <= ? AND ({a}valid_to IS NULL OR {a}valid_to > ?) AND {tx}",
        [at, at, *params],
    )
