"""The read side's portable statements, on either engine: the scope every read starts
from, get, and recall's state selection. Search's statements (keyword and vector
rankings, candidate checks, listings) are each engine's.

A read's scope arrives as plain pieces: `at` and `known_at` (None: now) and `tenant`
(None: any tenant). Its SQL depends only on which pieces are given, so each text is
built once per dialect (every get and search builds one). Each engine builds it through
its own `reads._scope`, the one place a read's tenant predicate enters, and hands it to
the statements here.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from sgam_store.core import clock
from sgam_store.core.models import FactRow, ItemRow
from sgam_store.engines.common.dialect import Dialect
from sgam_store.engines.common.predicates import F_COLUMNS, aliased_columns, visible


@functools.cache
def _scope_sql(d: Dialect, has_at: bool, has_known_at: bool, has_tenant: bool) -> str:
    cond, _ = visible("" if has_at else None, "" if has_known_at else None, "f")
    if not has_at and not has_known_at:
        # An expired fact is stale even before the sweep closes it.
        cond += " AND (f.expires_at IS NULL OR f.expires_at > ?)"
    return d.sql(cond + (" AND f.tenant_id = ?" if has_tenant else ""))


def _params(at: str | None, known_at: str | None, tenant: str | None) -> list[Any]:
    current = at is None and known_at is None  # whose rule binds only now
    params = [clock.utc_now()] if current else visible(at, known_at, "f")[1]
    if tenant is not None:
        params.append(tenant)
    return params


def scope(
    d: Dialect, at: str | None, known_at: str | None, tenant: str | None
) -> tuple[str, list[Any]]:
    """SQL for "visible in the scope" over `facts f`, in the dialect, with its parameters."""
    sql = _scope_sql(d, at is not None, known_at is not None, tenant is not None)
    return sql, _params(at, known_at, tenant)


def distinct_namespaces(
    conn: Any, scope: tuple[str, list[Any]], under: tuple[str, list[Any]]
) -> list[str]:
    """`namespaces_under`: the distinct namespaces (as stored text) of facts visible in the
    `scope` and `under` a prefix, both SQL the engine built in its own dialect."""
    (cond, params), (ns_sql, ns_params) = scope, under
    rows = conn.execute(
        f"SELECT DISTINCT f.namespace FROM facts f WHERE {cond} AND {ns_sql}",
        (*params, *ns_params),
    ).fetchall()
    return [text for (text,) in rows]


I_COLUMNS = aliased_columns(ItemRow)


@functools.cache
def _rows_sql(d: Dialect, whole: bool) -> str:
    columns = F_COLUMNS if whole else f"f.row_id, {I_COLUMNS}"
    return d.sql(f"SELECT {columns} FROM {d.rows_of('facts f', 'f.row_id')}")


def rows_by_id(
    d: Dialect, conn: Any, row_ids: list[int], whole: bool = False
) -> dict[int, ItemRow] | dict[int, FactRow]:
    """The given versions by row_id (a ranked page's, read last): the columns an item is
    built from (a 10-row page of whole rows cost ~30 us more at 5k), or `whole` rows."""
    if not row_ids:
        return {}
    rows = conn.execute(_rows_sql(d, whole), (d.as_list(row_ids),)).fetchall()
    if whole:
        return {row[0]: FactRow._make(row) for row in rows}
    return {row[0]: ItemRow._make(row[1:]) for row in rows}


@functools.cache
def _sources_sql(d: Dialect) -> str:
    rows = d.rows_of("facts f", "f.row_id")
    return d.sql(f"SELECT f.row_id, f.source_episode_id FROM {rows}")


def sources_by_id(d: Dialect, conn: Any, row_ids: list[int]) -> dict[int, str]:
    """{row_id: source_episode_id} of the given versions: the two columns diversification
    compares candidates by (whole rows for ~150 candidates cost a search milliseconds)."""
    if not row_ids:
        return {}
    return dict(conn.execute(_sources_sql(d), (d.as_list(row_ids),)).fetchall())


@functools.cache
def _intervals_sql(d: Dialect) -> str:
    rows = d.rows_of("facts f", "f.row_id")
    return d.sql(f"SELECT f.row_id, f.valid_from, f.valid_to FROM {rows}")


def intervals_by_id(d: Dialect, conn: Any, row_ids: list[int]) -> dict[int, tuple[str, str | None]]:
    """{row_id: (valid_from, valid_to)} of the given versions: the intervals the time
    window holds the candidates to (their whole rows cost a search about a millisecond)."""
    if not row_ids:
        return {}
    rows = conn.execute(_intervals_sql(d), (d.as_list(row_ids),)).fetchall()
    return {row_id: (start, end) for row_id, start, end in rows}


@functools.cache
def _get_sql(d: Dialect, cond: str) -> str:
    head = f"SELECT {I_COLUMNS} FROM facts f WHERE f.namespace = ? AND f.attribute = ? AND "
    return d.sql(head) + cond + " ORDER BY f.valid_from DESC LIMIT 1"


def key_version(
    d: Dialect, conn: Any, scope: tuple[str, list[Any]], namespace: str, key: str
) -> ItemRow | None:
    """`get`: the key's version visible in the `scope` the engine built (the latest start,
    should several be), as an item is built from it."""
    cond, params = scope
    row = conn.execute(_get_sql(d, cond), (namespace, key, *params)).fetchone()
    return None if row is None else ItemRow._make(row)


def state(
    d: Dialect,
    conn: Any,
    scope: tuple[str, list[Any]],
    subjects: Sequence[str] | None,
    attributes: Sequence[str] | None,
    memory_types: Sequence[str] | None,
    limit: int,
) -> list[FactRow]:
    """`structured_state`: versions visible in the `scope` the engine built, of the given
    subjects, attributes and memory types (each empty or None: any), by subject and
    attribute (then tenant and row, for a stable order), at most `limit`."""
    cond, params = scope
    narrow = ""
    for column, values in (
        ("subject", subjects),
        ("attribute", attributes),
        ("memory_type", memory_types),
    ):
        if values:
            narrow += f" AND {d.in_list(f'f.{column}', 'text')}"
            params = [*params, d.as_list(values)]
    c = d.collate_c
    order = f" ORDER BY f.subject{c}, f.attribute{c}, f.tenant_id{c}, f.row_id LIMIT ?"
    sql = d.sql(f"SELECT {F_COLUMNS} FROM facts f WHERE ") + cond + d.sql(narrow + order)
    return [FactRow._make(row) for row in conn.execute(sql, (*params, limit)).fetchall()]
