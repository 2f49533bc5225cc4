"""BaseStore filters compiled to PostgreSQL SQL over `facts.doc` (the value as jsonb):
the leaves of `engines/common/filters.py`'s walk, with SQLite's matches and errors.

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
from typing import Any

from sgam_store.core.errors import InvalidFilterError
from sgam_store.engines.common.filters import COMPARE, Compiler, Sql, is_operators

_NOTHING = object()  # a filter part that pins no value, so adds nothing to `doc @>`
Path = tuple[str | int, ...]  # object keys and array indices from the top of the value


def _at(path: Path) -> Sql:
    """The jsonb at `path` (NULL where it is missing, or crosses the wrong type)."""
    steps = "".join("->%s::text" if isinstance(s, str) else f"->{int(s)}" for s in path)
    return "f.doc" + steps, [s for s in path if isinstance(s, str)]


def _typed(path: Path, kind: str, cast: str) -> Sql:
    """The value at `path` cast by `cast` (a format of the jsonb) if of type `kind`, else
    NULL: the CASE keeps the cast from ever meeting another type."""
    at, p = _at(path)
    return f"CASE WHEN jsonb_typeof({at}) = '{kind}' THEN {cast.format(at)} END", [*p, *p]


def _type_is(path: Path, kind: str) -> Sql:
    at, p = _at(path)
    return f"jsonb_typeof({at}) = '{kind}'", p


def _numeric(value: int | float) -> str | None:
    """The bound number as exact decimal text; NaN matches nothing (bound as NULL)."""
    if isinstance(value, float):
        return None if math.isnan(value) else repr(float(value))
    return str(int(value))


class _Jsonb(Compiler[Path]):
    def root(self, segments: list[str]) -> Path:
        return tuple(segments)

    def child(self, path: Path, step: str | int) -> Path:
        return (*path, step)

    def object_parts(self, path: Path, keys: int | None) -> list[Sql]:
        parts = [_type_is(path, "object")]
        if keys is not None:
            count, p = _typed(path, "object", "(SELECT count(*) FROM jsonb_object_keys({}))")
            parts.append((f"{count} = %s", [*p, keys]))
        return parts

    def array_parts(self, path: Path, length: int) -> list[Sql]:
        count, p = _typed(path, "array", "jsonb_array_length({})")
        return [_type_is(path, "array"), (f"{count} = %s", [*p, length])]

    def boolean(self, path: Path, op: str, value: bool) -> Sql:
        at, p = _at(path)
        test = "=" if op == "$eq" else "IS DISTINCT FROM"
        return f"{at} {test} '{json.dumps(value)}'::jsonb", p

    def null(self, path: Path, null: bool) -> Sql:
        """Missing or JSON null (SQLite's `json_extract(...) IS NULL`), or the opposite."""
        at, p = _at(path)
        return f"COALESCE(jsonb_typeof({at}), 'null') {'=' if null else '<>'} 'null'", p

    def number(self, path: Path, op: str, value: int | float) -> Sql:
        bound = _numeric(value)
        if op == "$ne":
            if bound is None:
                return self.null(path, null=False)
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
        return f"{sql} {COMPARE[op]} %s::numeric", [*p, bound]

    def string(self, path: Path, op: str, value: str) -> Sql:
        if "\x00" in value:  # PostgreSQL text holds no NUL, so no stored string equals it
            if op in ("$eq", "$ne"):
                return ("FALSE" if op == "$eq" else "TRUE"), []
            raise InvalidFilterError(f"{op} with a NUL character cannot be compared on PostgreSQL")
        sql, p = _typed(path, "string", "({} #>> '{{}}')")
        test = "IS DISTINCT FROM" if op == "$ne" else COMPARE[op]
        return f'{sql} COLLATE "C" {test} %s', [*p, value]

    def narrowed(self, path: Path, spec: Any, tenant: str | None, matched: Sql) -> Sql:
        """`doc @> {...}` for what the condition pins first, so the GIN index serves;
        keyed by `tenant` when given (current facts of one tenant only, see TENANT_DOC)."""
        pinned = _pinned(spec, exact=False)
        if pinned is _NOTHING:
            return matched
        for step in reversed(path):
            pinned = {step: pinned}
        if tenant is not None:
            contains = f"{TENANT_DOC} @> %s::jsonb", [json.dumps({tenant: pinned})]
        else:
            contains = "f.doc @> %s::jsonb", [json.dumps(pinned)]
        return f"{contains[0]} AND {matched[0]}", [*contains[1], *matched[1]]


def _pinned(spec: Any, *, exact: bool) -> Any:
    """The JSON every value matching `spec` contains (`@>`), or _NOTHING if it pins none."""
    if is_operators(spec) and not exact:
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

_COMPILER = _Jsonb()
filter_sql = _COMPILER.filter_sql
check_filter = _COMPILER.check_filter
