"""BaseStore filters compiled to PostgreSQL SQL over `facts.doc` (the value as jsonb):
the twin of `engines/sqlite/filters.py`, with the same matches and the same errors.

What differs from SQLite, and why:
- Paths are chains of `->` steps (a text key for objects, an integer for arrays): `#>`
  would also read an array element through a key like "0", which SQLite's `$."0"` never
  does. The path's steps are bound as parameters.
- Type checks use `jsonb_typeof`; numbers are compared as `numeric` (bound as their
  decimal text, so a float keeps every digit), strings as text in code-point order
  (`COLLATE "C"`, SQLite's BINARY), inside CASE so a value of the wrong type is never cast.
- Each top-level condition that pins values also adds `doc @> fragment`, a condition
  every match already meets, so the GIN index on `doc` (jsonb_path_ops) can narrow the
  scan. Only equalities go into the fragment: `@>` is containment, not equality (an array
  fragment is a subset of any longer array), and the exact conditions still decide.
- `$ne` against a string never matches an object or array by its JSON text, which
  SQLite's `json_extract` (the subtree as text) would.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from sgam_store.core.errors import InvalidFilterError

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
# Filter keys are dotted paths; segments may hold letters, digits, '_', '-', ':', '@', ' '.
# Anything else (quotes, brackets, '$', parentheses) is refused, as on SQLite.
_FILTER_SEGMENT = re.compile(r"^[\w\-:@ ]+$")
MAX_FILTER_TERMS = 200  # conditions in one filter, the same cap as SQLite's
_COMPARE = {"$eq": "=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_NOTHING = object()  # a filter part that pins no value, so adds nothing to `doc @>`

Path = tuple[str | int, ...]  # object keys and array indices from the top of the value
Sql = tuple[str, list[Any]]


def _path(key: Any) -> Path:
    """`a.b-c` -> ("a", "b-c"), after refusing unsafe segments."""
    if not isinstance(key, str):
        raise InvalidFilterError(f"Invalid filter key {key!r}: keys are strings")
    return tuple(_segment(s, key) for s in key.split("."))


def _segment(name: object, key: object) -> str:
    if not isinstance(name, str) or not _FILTER_SEGMENT.match(name):
        raise InvalidFilterError(f"Invalid filter key {key!r}: use letters, digits, _ - : @")
    return name


def _at(path: Path) -> Sql:
    """The jsonb at `path` (NULL where it is missing, or crosses the wrong type)."""
    steps = "".join("->%s::text" if isinstance(s, str) else f"->{int(s)}" for s in path)
    return "f.doc" + steps, [s for s in path if isinstance(s, str)]


def _typed(path: Path, kind: str, cast: str) -> Sql:
    """The value at `path` cast by `cast` (a format of the jsonb) if of type `kind`, else
    NULL: the CASE keeps the cast from ever meeting another type."""
    at, p = _at(path)
    return f"CASE WHEN jsonb_typeof({at}) = '{kind}' THEN {cast.format(at)} END", [*p, *p]


def _is_null(path: Path, null: bool) -> Sql:
    """Missing or JSON null (SQLite's `json_extract(...) IS NULL`), or the opposite."""
    at, p = _at(path)
    return f"COALESCE(jsonb_typeof({at}), 'null') {'=' if null else '<>'} 'null'", p


def _type_is(path: Path, kind: str) -> Sql:
    at, p = _at(path)
    return f"jsonb_typeof({at}) = '{kind}'", p


def _numeric(value: int | float) -> str | None:
    """The bound number as exact decimal text; NaN matches nothing (bound as NULL)."""
    if isinstance(value, float):
        return None if math.isnan(value) else repr(float(value))
    return str(int(value))


def _boolean(path: Path, op: str, value: bool) -> Sql:
    at, p = _at(path)
    test = "=" if op == "$eq" else "IS DISTINCT FROM"
    return f"{at} {test} '{json.dumps(value)}'::jsonb", p


def _number(path: Path, op: str, value: int | float) -> Sql:
    bound = _numeric(value)
    if op == "$ne":
        if bound is None:
            return _is_null(path, null=False)
        # SQLite's `json_extract(...) IS NOT ?` reads true and false as 1 and 0.
        at, p = _at(path)
        number = (
            f"CASE jsonb_typeof({at}) WHEN 'number' THEN ({at})::numeric "
            f"WHEN 'boolean' THEN ({at})::boolean::int END"
        )
        return f"{number} IS DISTINCT FROM %s::numeric", [*p, *p, *p, bound]
    if bound is None:
        return "FALSE", []
    sql, p = _typed(path, "number", "({})::numeric")
    return f"{sql} {_COMPARE[op]} %s::numeric", [*p, bound]


def _string(path: Path, op: str, value: str) -> Sql:
    if "\x00" in value:  # PostgreSQL text holds no NUL, so no stored string equals it
        if op in ("$eq", "$ne"):
            return ("FALSE" if op == "$eq" else "TRUE"), []
        raise InvalidFilterError(f"{op} with a NUL character cannot be compared on PostgreSQL")
    sql, p = _typed(path, "string", "({} #>> '{{}}')")
    test = "IS DISTINCT FROM" if op == "$ne" else _COMPARE[op]
    return f'{sql} COLLATE "C" {test} %s', [*p, value]


def _condition(path: Path, op: str, value: Any) -> Sql:
    if op not in OPERATORS:
        raise InvalidFilterError(f"Unknown filter operator {op!r}; use one of {OPERATORS}")
    if isinstance(value, bool):
        if op not in ("$eq", "$ne"):
            raise InvalidFilterError(f"{op} does not apply to booleans")
        return _boolean(path, op, value)
    if value is None:
        return _is_null(path, null=op == "$eq")
    if isinstance(value, int | float):
        return _number(path, op, value)
    if isinstance(value, str):
        return _string(path, op, value)
    if isinstance(value, list | tuple | dict):
        if op not in ("$eq", "$ne"):
            raise InvalidFilterError(f"{op} does not apply to lists or objects")
        sql, params = _match(path, value, exact=True, budget=[MAX_FILTER_TERMS])
        return (sql if op == "$eq" else f"NOT COALESCE({sql}, FALSE)"), params
    raise InvalidFilterError(f"unsupported filter value type {type(value).__name__}")


def _is_operators(spec: Any) -> bool:
    return (
        isinstance(spec, dict)
        and bool(spec)
        and all(isinstance(k, str) and k.startswith("$") for k in spec)
    )


def _match(path: Path, spec: Any, *, exact: bool, budget: list[int]) -> Sql:
    """Match the JSON at `path` by value, as InMemoryStore compares filters (see the SQLite
    twin): objects by subset (`exact`: the same keys), lists element by element, operator
    objects by their operators. `budget` caps the conditions, as on SQLite."""
    budget[0] -= 1
    if budget[0] < 0:
        raise InvalidFilterError(f"filter too large: more than {MAX_FILTER_TERMS} conditions")
    if _is_operators(spec) and not exact:
        parts = [_condition(path, op, value) for op, value in spec.items()]
    elif isinstance(spec, dict):
        parts = [_type_is(path, "object")]
        if exact:
            keys, p = _typed(path, "object", "(SELECT count(*) FROM jsonb_object_keys({}))")
            parts.append((f"{keys} = %s", [*p, len(spec)]))
        parts += [
            _match((*path, _segment(k, k)), v, exact=exact, budget=budget) for k, v in spec.items()
        ]
    elif isinstance(spec, list | tuple):
        length, p = _typed(path, "array", "jsonb_array_length({})")
        parts = [_type_is(path, "array"), (f"{length} = %s", [*p, len(spec)])]
        parts += [_match((*path, i), v, exact=exact, budget=budget) for i, v in enumerate(spec)]
    else:
        return _condition(path, "$eq", spec)
    return "(" + " AND ".join(sql for sql, _ in parts) + ")", [p for _, ps in parts for p in ps]


def _pinned(spec: Any, *, exact: bool) -> Any:
    """The JSON every value matching `spec` contains (`@>`), or _NOTHING if it pins none."""
    if _is_operators(spec) and not exact:
        return _pinned(spec["$eq"], exact=True) if "$eq" in spec else _NOTHING
    if isinstance(spec, dict):
        pinned = {k: _pinned(v, exact=exact) for k, v in spec.items()}
        return {k: v for k, v in pinned.items() if v is not _NOTHING}
    if isinstance(spec, list | tuple):
        pinned = [_pinned(v, exact=exact) for v in spec]
        return [v for v in pinned if v is not _NOTHING]
    if isinstance(spec, str) and "\x00" in spec:
        return _NOTHING  # matches nothing, and jsonb cannot hold it
    if spec is None or (isinstance(spec, float) and not math.isfinite(spec)):
        return _NOTHING  # None also matches a missing key; jsonb has no NaN or infinity
    return spec


# The current facts' documents keyed by tenant, as the partial GIN index facts_tenant_doc
# holds them: one posting list per (tenant, path, value), so a tenant's filtered listing
# reads only its own matches (0.47 against 2.15 ms at 20k facts, where `doc @>` found
# every tenant's matches and dropped nine tenths).
TENANT_DOC = "jsonb_set('{}'::jsonb, ARRAY[f.tenant_id], f.doc)"


def _contains(path: Path, spec: Any, tenant: str | None) -> Sql | None:
    """`doc @> {...}` for what the condition at `path` pins, or None; keyed by `tenant`
    when given (current facts of one tenant only, see TENANT_DOC)."""
    pinned = _pinned(spec, exact=False)
    if pinned is _NOTHING:
        return None
    for step in reversed(path):
        pinned = {step: pinned}
    if tenant is not None:
        return f"{TENANT_DOC} @> %s::jsonb", [json.dumps({tenant: pinned})]
    return "f.doc @> %s::jsonb", [json.dumps(pinned)]


def filter_sql(filter: dict[str, Any] | None, tenant: str | None = None) -> Sql:
    """AND of all conditions; a dict of operators, or a value matched by value. `tenant`:
    the query reads only that tenant's current facts, so the tenant-keyed index serves."""
    parts: list[str] = []
    params: list[Any] = []
    budget = [MAX_FILTER_TERMS]
    for key, spec in (filter or {}).items():
        path = _path(key)
        sql, p = _match(path, spec, exact=False, budget=budget)
        contains = _contains(path, spec, tenant)
        if contains is not None:
            sql, p = f"{contains[0]} AND {sql}", [*contains[1], *p]
        parts.append(sql)
        params.extend(p)
    return (" AND ".join(parts) or "TRUE"), params


def check_filter(filter: dict[str, Any] | None) -> None:
    """Validate a filter without running it (batch validation happens before any SQL)."""
    filter_sql(filter)
