"""The read rule as PostgreSQL SQL, the twin of `engines/sqlite/predicates.py`:
which versions a read at (valid time, belief time) may see."""

from __future__ import annotations


def believed_sql(alias: str = "") -> str:
    """SQL for "this version is the store's current belief": not retired."""
    return f"{alias}.known_to IS NULL" if alias else "known_to IS NULL"


def current_sql(alias: str = "") -> str:
    """SQL for "the open fact of the current belief" (expiry aside)."""
    a = f"{alias}." if alias else ""
    return f"{a}valid_to IS NULL AND {believed_sql(alias)}"


def belief(known_at: str | None, alias: str = "") -> tuple[str, list[str]]:
    """SQL for "believed at `known_at`" (None: now), the transaction-time half of a read."""
    if known_at is None:
        return believed_sql(alias), []
    a = f"{alias}." if alias else ""
    return f"{a}known_from <= %s AND ({a}known_to IS NULL OR {a}known_to > %s)", [known_at] * 2


def visible(at: str | None, known_at: str | None, alias: str = "f") -> tuple[str, list[str]]:
    """SQL for "rows visible at valid time `at` as believed at `known_at`" (None: current)."""
    a = f"{alias}." if alias else ""
    if known_at is None and at is None:
        return current_sql(alias), []
    tx, params = belief(known_at, alias)
    if at is None:
        return f"{a}valid_to IS NULL AND {tx}", params
    return (
        f"{a}valid_from <= %s AND ({a}valid_to IS NULL OR {a}valid_to > %s) AND {tx}",
        [at, at, *params],
    )
