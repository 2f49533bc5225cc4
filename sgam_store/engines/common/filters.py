"""BaseStore filters on either engine: what a filter may say, checked whole before any
SQL runs (so a bad one writes nothing of its batch), and the walk that matches a value as
InMemoryStore compares filters. Each engine spells the leaves in its JSON dialect
(`engines/sqlite/filters.py`: JSON1 over `value`, `engines/postgres/filters.py`: jsonb
over `doc`).
"""

from __future__ import annotations

import re
from typing import Any, Generic, TypeVar

from sgam_store.core.errors import InvalidFilterError

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
COMPARE = {"$eq": "=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
# Filter keys are dotted paths; segments may hold letters, digits, '_', '-', ':', '@', ' '.
# Anything else (quotes, brackets, '$', parentheses) is refused instead of escaped.
_FILTER_SEGMENT = re.compile(r"^[\w\-:@ ]+$")
MAX_FILTER_TERMS = 200  # conditions in one filter; SQLite caps expression depth at 1000

Sql = tuple[str, list[Any]]
P = TypeVar("P")  # an engine's path to a place in the value


def segment(name: object, key: object) -> str:
    """One segment of filter key `key`, refused unless plain."""
    if not isinstance(name, str) or not _FILTER_SEGMENT.match(name):
        raise InvalidFilterError(f"Invalid filter key {key!r}: use letters, digits, _ - : @")
    return name


def is_operators(spec: Any) -> bool:
    """Whether `spec` is an object of operators (`{"$gt": 3}`) rather than a value."""
    return (
        isinstance(spec, dict)
        and bool(spec)
        and all(isinstance(k, str) and k.startswith("$") for k in spec)
    )


# Filters of plain values a compiler keeps compiled (`Compiler.filter_sql`) before it
# starts over.
COMPILED = 256
_PLAIN = (str, int, float, bool, type(None))


def _plain(filter: dict[str, Any] | None, tenant: str | None) -> tuple[Any, ...] | None:
    """A key naming the SQL of a filter whose values are all plain (str, number, bool,
    None), types included (1, 1.0 and True compile apart); None for any other filter."""
    if not filter:
        return None
    key: list[Any] = [tenant]
    for name, value in filter.items():
        if value.__class__ not in _PLAIN:
            return None
        key += (name, value.__class__, value)
    return tuple(key)


class Compiler(Generic[P]):
    """Compiles a filter to one engine's SQL: the checks and the walk here, the leaves
    (paths, type tests, comparisons) in the engine's subclass."""

    def __init__(self) -> None:
        self._compiled: dict[tuple[Any, ...], Sql] = {}

    true = "TRUE"  # the condition of an empty filter
    negated = "NOT COALESCE({}, FALSE)"  # a structure's `$ne`: NULL (missing) counts as unequal

    def filter_sql(self, filter: dict[str, Any] | None, tenant: str | None = None) -> Sql:
        """AND of all conditions; a dict of operators, or a value matched by value.
        `tenant`: the statement reads only that tenant's current facts (see `narrowed`).

        A filter of plain values (the common `{"kind": "fact"}`) is compiled once: every
        search compiles its filter twice, to check it and to run it (2 x 5 us of a 50 us
        filtered listing)."""
        key = _plain(filter, tenant)
        if key is None:
            return self._compile(filter, tenant)
        found = self._compiled.get(key)
        if found is None:
            if len(self._compiled) >= COMPILED:
                self._compiled.clear()
            found = self._compiled[key] = self._compile(filter, tenant)
        return found[0], list(found[1])

    def _compile(self, filter: dict[str, Any] | None, tenant: str | None) -> Sql:
        parts: list[str] = []
        params: list[Any] = []
        budget = [MAX_FILTER_TERMS]
        for key, spec in (filter or {}).items():
            if not isinstance(key, str):
                raise InvalidFilterError(f"Invalid filter key {key!r}: keys are strings")
            path = self.root([segment(s, key) for s in key.split(".")])
            sql, p = self.narrowed(path, spec, tenant, self.match(path, spec, False, budget))
            parts.append(sql)
            params.extend(p)
        return (" AND ".join(parts) or self.true), params

    def check_filter(self, filter: dict[str, Any] | None) -> None:
        """Validate a filter without running it (batch validation happens before any SQL)."""
        self.filter_sql(filter)

    def match(self, path: P, spec: Any, exact: bool, budget: list[int]) -> Sql:
        """Match the JSON at `path` by value, as InMemoryStore compares filters.

        An object filter matches an object holding every key it names with a matching
        value, whatever the key order (`exact`: the same keys and no others, for
        `$eq`/`$ne` with an object); a list matches a list of the same length element by
        element; an operator object applies its operators there. Comparing JSON text
        instead would depend on key order and could never match a partial object.
        `budget` caps the conditions, because SQLite refuses expression trees beyond a
        fixed depth.
        """
        budget[0] -= 1
        if budget[0] < 0:
            raise InvalidFilterError(f"filter too large: more than {MAX_FILTER_TERMS} conditions")
        if is_operators(spec) and not exact:
            parts = [self.condition(path, op, value) for op, value in spec.items()]
        elif isinstance(spec, dict):
            parts = self.object_parts(path, len(spec) if exact else None)
            parts += [
                self.match(self.child(path, segment(k, k)), v, exact, budget)
                for k, v in spec.items()
            ]
        elif isinstance(spec, list | tuple):
            parts = self.array_parts(path, len(spec))
            parts += [self.match(self.child(path, i), v, exact, budget) for i, v in enumerate(spec)]
        else:
            return self.condition(path, "$eq", spec)
        return "(" + " AND ".join(sql for sql, _ in parts) + ")", [p for _, ps in parts for p in ps]

    def condition(self, path: P, op: str, value: Any) -> Sql:
        """One operator applied to the value at `path`."""
        if op not in OPERATORS:
            raise InvalidFilterError(f"Unknown filter operator {op!r}; use one of {OPERATORS}")
        if isinstance(value, bool):
            if op not in ("$eq", "$ne"):
                raise InvalidFilterError(f"{op} does not apply to booleans")
            return self.boolean(path, op, value)
        if value is None:
            return self.null(path, null=op == "$eq")
        if isinstance(value, int | float):
            return self.number(path, op, value)
        if isinstance(value, str):
            return self.string(path, op, value)
        if isinstance(value, list | tuple | dict):
            if op not in ("$eq", "$ne"):
                raise InvalidFilterError(f"{op} does not apply to lists or objects")
            sql, params = self.match(path, value, True, [MAX_FILTER_TERMS])
            return (sql if op == "$eq" else self.negated.format(sql)), params
        raise InvalidFilterError(f"unsupported filter value type {type(value).__name__}")

    def narrowed(self, path: P, spec: Any, tenant: str | None, matched: Sql) -> Sql:
        """A top-level condition as the statement takes it (an engine may add an
        index-friendly condition every match meets)."""
        return matched

    # The leaves, each engine's.

    def root(self, segments: list[str]) -> P:
        raise NotImplementedError

    def child(self, path: P, step: str | int) -> P:
        raise NotImplementedError

    def object_parts(self, path: P, keys: int | None) -> list[Sql]:
        """An object there (with exactly `keys` keys, when given)."""
        raise NotImplementedError

    def array_parts(self, path: P, length: int) -> list[Sql]:
        """An array of `length` there."""
        raise NotImplementedError

    def boolean(self, path: P, op: str, value: bool) -> Sql:
        raise NotImplementedError

    def null(self, path: P, null: bool) -> Sql:
        """Missing or JSON null there, or (`null` False) the opposite."""
        raise NotImplementedError

    def number(self, path: P, op: str, value: int | float) -> Sql:
        raise NotImplementedError

    def string(self, path: P, op: str, value: str) -> Sql:
        raise NotImplementedError
