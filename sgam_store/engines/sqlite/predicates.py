"""The read rule as SQL: which versions a read at (valid time, belief time) may see.

Written once; the ledger, search, retention, backfill and stats all build on these.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


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


def in_list(column: str) -> str:
    """SQL for "`column` is one of a list", the list bound as one parameter (`as_list`):
    one statement for any length, never near SQLite's parameter limit."""
    return f"{column} IN (SELECT value FROM json_each(?))"


def as_list(values: Iterable[Any]) -> str:
    """The parameter for `in_list` (a JSON array)."""
    return json.dumps(list(values))


# The (namespace, attribute) keys bound as one `as_list` parameter of [ns, attr] pairs.
KEY_PAIRS = "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)"
