"""The few SQL fragments where SQLite and PostgreSQL differ in portable statements.

A portable statement is written once with `?` placeholders and these fragments; the
statement functions take the dialect first, and `export` binds it, so each engine's
module offers the same functions with the parameters `core/engine.py` names. Anything
beyond this (FTS5 against tsvector, the vector table against pgvector, locks, DDL) stays
in the engine's own modules.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Callable, Iterable
from functools import partial
from types import ModuleType
from typing import Any


class Dialect:
    """SQLite's spelling; `POSTGRES` overrides what PostgreSQL spells otherwise."""

    name = "sqlite"
    collate_c = ""  # SQLite compares text byte-wise already
    same = "IS"  # null-safe equality
    greatest = "MAX"  # the larger of two values

    def sql(self, text: str) -> str:
        """The statement as the driver takes it."""
        return text

    def in_list(self, column: str, kind: str = "bigint") -> str:
        """`column` is one of a list bound as one parameter (`as_list`): one statement for
        any length, never near SQLite's parameter limit."""
        return f"{column} IN (SELECT value FROM json_each(?))"

    def as_list(self, values: Iterable[Any]) -> Any:
        """The parameter `in_list` binds."""
        return json.dumps(list(values))

    def rows_of(self, table: str, column: str, kind: str = "bigint") -> str:
        """A FROM clause: the rows of `table` whose `column` is in a list bound as one
        parameter (`as_list`), the list driving the join. SQLite's `in_list` form built a
        temporary index and a Bloom filter of the list first (a 10-row page at 5k: 31.5
        against 23.4 us)."""
        return f"json_each(?) AS k CROSS JOIN {table} ON {column} = k.value"

    def execute_planned(self, cur: Any, sql: str, params: Any) -> Any:
        """`cur.execute`, planned for these parameters on every call: for a key lookup
        whose best plan depends on the table's size (see `_Postgres`)."""
        return cur.execute(sql, params)

    def json_text(self, column: str, key: str) -> str:
        """A top-level key of a JSON text column, as text."""
        return f"json_extract({column}, '$.{key}')"

    def typed(self, kind: str) -> str:
        """A placeholder whose type the database cannot infer (a selected constant)."""
        return "?"

    # (namespace, attribute) keys as a relation `k(ns, attr)`, bound by `as_pairs`.
    pairs = "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)"

    def as_pairs(self, keys: Iterable[tuple[str, str]]) -> tuple[Any, ...]:
        """The parameters `pairs` binds."""
        return (json.dumps([list(k) for k in keys]),)

    # Whether writers run side by side, each locking the keys it decides on (`locking`).
    locks = False

    def lock_keys(self, cur: Any, keys: list[tuple[str, str]]) -> None:
        """Nothing to lock: `BEGIN IMMEDIATE` admits one writer at a time."""


class _Postgres(Dialect):
    name = "postgres"
    collate_c = ' COLLATE "C"'  # byte-wise, as SQLite's text sorts
    same = "IS NOT DISTINCT FROM"
    greatest = "GREATEST"

    def __init__(self) -> None:
        self._translated: dict[str, str] = {}

    def sql(self, text: str) -> str:
        """`?` becomes psycopg's `%s` (a literal `%` doubles); translated once per text."""
        found = self._translated.get(text)
        if found is None:
            if len(self._translated) > 4096:  # statements built from many shapes
                self._translated.clear()
            found = self._translated[text] = text.replace("%", "%%").replace("?", "%s")
        return found

    def in_list(self, column: str, kind: str = "bigint") -> str:
        return f"{column} = ANY(?::{kind}[])"

    def as_list(self, values: Iterable[Any]) -> Any:
        return list(values)

    def rows_of(self, table: str, column: str, kind: str = "bigint") -> str:
        return f"{table} WHERE {self.in_list(column, kind)}"

    def execute_planned(self, cur: Any, sql: str, params: Any) -> Any:
        # A prepared statement keeps the generic plan PostgreSQL made when it was first
        # run five times, until an ANALYZE; one made while `facts` was nearly empty scans
        # it. Right after loading 20k facts, a put's key lookups took 11.3 and 2.9 ms
        # that way, 0.46 and 0.43 ms planned per call.
        return cur.execute(sql, params, prepare=False)

    def json_text(self, column: str, key: str) -> str:
        return f"{column}::jsonb ->> '{key}'"

    def typed(self, kind: str) -> str:
        return f"?::{kind}"

    pairs = "SELECT * FROM unnest(?::text[], ?::text[])"

    def as_pairs(self, keys: Iterable[tuple[str, str]]) -> tuple[Any, ...]:
        keys = list(keys)
        return [ns for ns, _ in keys], [attr for _, attr in keys]


SQLITE = Dialect()
POSTGRES = _Postgres()


def locking(dialect: Dialect, lock: Callable[[Any, list[tuple[str, str]]], None]) -> Dialect:
    """`dialect` for an engine whose writers run side by side: the write rule's lookups call
    `lock(cur, keys)` before they read a key."""
    bound = copy.copy(dialect)
    bound.locks, bound.lock_keys = True, lock  # type: ignore[method-assign]
    return bound


def export(namespace: dict[str, Any], module: ModuleType, dialect: Dialect) -> None:
    """Put `module`'s public statements into an engine module's `namespace`: functions whose
    first parameter is the dialect get it bound; constants and other functions as they are."""
    for name, value in vars(module).items():
        if name.startswith("_") or isinstance(value, ModuleType):
            continue
        if inspect.isfunction(value) and value.__module__ == module.__name__:
            if next(iter(inspect.signature(value).parameters)) == "d":
                value = partial(value, dialect)
            namespace[name] = value
        elif name.isupper():
            namespace[name] = value
