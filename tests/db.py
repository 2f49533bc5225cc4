"""Reading a store's tables in tests, on any engine (SQL is written with `?` marks)."""

from __future__ import annotations

from typing import Any


def rows(store: Any, sql: str, params: tuple[Any, ...] | None = ()) -> list[tuple[Any, ...]]:
    """All rows of `sql` on the store's own database."""
    postgres = type(store.engine).__name__ == "PostgresEngine"
    if postgres:  # psycopg parses % marks only when there are parameters
        sql, params = (sql.replace("?", "%s"), params) if params else (sql, None)
    with store.engine.reading() as conn:
        return [tuple(r) for r in conn.execute(sql, params)]


def scalar(store: Any, sql: str, params: tuple[Any, ...] = ()) -> Any:
    """The first column of the first row."""
    return rows(store, sql, params)[0][0]
