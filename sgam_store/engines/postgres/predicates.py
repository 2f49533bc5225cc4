"""The read rule as PostgreSQL SQL: `engines/common/predicates.py` with psycopg's `%s`
placeholders, for the statements written for PostgreSQL alone."""

from __future__ import annotations

from sgam_store.engines.common import predicates
from sgam_store.engines.common.dialect import POSTGRES
from sgam_store.engines.common.predicates import believed_sql, current_sql

__all__ = ["belief", "believed_sql", "current_sql", "visible"]


def belief(known_at: str | None, alias: str = "") -> tuple[str, list[str]]:
    """SQL for "believed at `known_at`" (None: now), the transaction-time half of a read."""
    sql, params = predicates.belief(known_at, alias)
    return POSTGRES.sql(sql), params


def visible(at: str | None, known_at: str | None, alias: str = "f") -> tuple[str, list[str]]:
    """SQL for "rows visible at valid time `at` as believed at `known_at`" (None: current)."""
    sql, params = predicates.visible(at, known_at, alias)
    return POSTGRES.sql(sql), params
