"""Reads without a query: gets, listings and namespaces.

Every query here takes a `Scope` (instant, belief time, tenant) and hands its pieces to
the engine's read statements (`engine.reads`), so current reads, `as_of` views and tenant
views share one rule. A search with a query is the pipeline's (`pipeline.Ranker`).
Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.store.base import GetOp, Item, ListNamespacesOp, SearchItem, SearchOp

from sgam_store.core import namespaces
from sgam_store.read.items import search_items, to_item
from sgam_store.read.query import Scope
from sgam_store.read.scope import narrow


def get(engine: Any, conn: Any, scope: Scope, namespace: tuple[str, ...], key: str) -> Item | None:
    row = engine.reads.get(
        conn, scope.at, scope.known_at, scope.tenant, namespaces.to_text(namespace), key
    )
    return to_item(row) if row else None


def get_many(engine: Any, conn: Any, scope: Scope, ops: Sequence[GetOp]) -> list[Item | None]:
    """Many gets in one statement (coalesced async reads)."""
    keys = [(namespaces.to_text(op.namespace), op.key) for op in ops]
    rows = engine.reads.get_many(conn, scope.at, scope.known_at, scope.tenant, keys)
    return [to_item(rows[k]) if k in rows else None for k in keys]


def listing(engine: Any, conn: Any, scope: Scope, op: SearchOp) -> list[SearchItem]:
    """Search without a query: newest first, exact offset/limit."""
    tenant, prefix = narrow(engine, scope, op)
    below_tenant = len(prefix) > engine.layout.tenant_at + 1
    rows = engine.reads.listing(
        conn, scope.at, scope.known_at, tenant, prefix, op.filter, op.limit, op.offset,
        below_tenant=below_tenant,
    )  # fmt: skip
    return search_items((r, None) for r in rows)


def list_namespaces(
    engine: Any, conn: Any, scope: Scope, op: ListNamespacesOp
) -> list[tuple[str, ...]]:
    """Distinct namespaces of visible facts, matched label-wise, truncated to max_depth."""
    conditions = tuple(op.match_conditions or ())
    prefix = namespaces.literal_prefix(conditions)
    tenant = scope.tenant if scope.tenant is not None else engine.layout.tenant_of(prefix)
    texts = engine.reads.namespaces_under(conn, scope.at, scope.known_at, tenant, prefix)
    found: set[tuple[str, ...]] = set()
    for text in texts:
        ns = namespaces.from_text(text)
        if all(namespaces.matches(ns, c) for c in conditions):
            found.add(ns[: op.max_depth] if op.max_depth is not None else ns)
    ordered = sorted(found)
    return ordered[op.offset : op.offset + op.limit]
