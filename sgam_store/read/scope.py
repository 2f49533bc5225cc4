"""The read path's first stage: which facts a search may see.

A search's `Scope` (instant, belief time, the view's tenant) and its op's prefix and
filter become `Bounds`: the tenant and prefix as the engine's statements take them, and,
for a prefix deeper than its tenant that holds few facts, those facts themselves, so the
stages after score them directly instead of ranking the whole tenant. Gets and listings
use `tenant_of` and `narrow` too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from langgraph.store.base import SearchOp

from sgam_store.core.models import ScopeSignals
from sgam_store.read import subjects
from sgam_store.read.query import Scope, Search
from sgam_store.read.terms import TermStats, pruned_terms

# A prefix deeper than its tenant (a subject, a LangMem user under ("memories", user))
# often holds a few facts among the tenant's thousands. Ranked tenant-wide, most hits fell
# outside it, and each deeper round was another candidate check. Up to this many facts,
# the prefix's own facts are scored directly (a "small" scope).
SMALL_SCOPE_MAX = 2000


def tenant_of(engine: Any, scope: Scope, op: SearchOp) -> str | None:
    """The tenant a search is confined to, if any: the view's, or the one its prefix
    names (the label at the layout's `tenant_at`)."""
    if scope.tenant is not None:
        return scope.tenant
    return engine.layout.tenant_of(op.namespace_prefix)


def narrow(engine: Any, scope: Scope, op: SearchOp) -> tuple[str | None, tuple[str, ...]]:
    """(tenant, namespace prefix) of a search, as the engine's statements take them.

    A prefix that is its tenant alone (tenant first) says no more than the tenant
    condition in a current scope, where the index of current facts leads with the
    tenant; it is dropped there. Past versions are reached by namespace, so it stays.
    """
    tenant, prefix = tenant_of(engine, scope, op), tuple(op.namespace_prefix)
    if scope.current and engine.layout.tenant_at == 0 and prefix == (tenant,):
        return tenant, ()
    return tenant, prefix


@dataclass(frozen=True)
class Bounds:
    """What the scope stage hands on: the snapshot a search reads, and what it may see.

    `tenant` confines it (the view's or its prefix's: `tenant_of`); `where` is what the
    engine's candidate checks take: (at, known_at, tenant, prefix, filter), the tenant
    and prefix as `narrow` gives them. `small` holds the facts of a small scope (a
    `ScopeSignals`, or where the engine's `scope_scored` read them, its answer with both
    signals), else None; `terms` the hybrid query's pruned terms where they were read.
    `large`: the stage counted more than SMALL_SCOPE_MAX facts in a deeper prefix.
    """

    engine: Any
    conn: Any
    scope: Scope
    tenant: str | None
    where: tuple[Any, ...]
    small: Any | None = None
    terms: list[str] | None = None
    named: list[tuple[str, ...]] | None = None
    large: bool = False


def bounds(engine: Any, conn: Any, search: Search, stats: TermStats) -> Bounds:
    """The stage: `search`'s tenant and prefix, a small scope's facts (`_bounds`), and
    where `named_subjects` is on in hybrid search, the subjects the query names."""
    found = _bounds(engine, conn, search, stats)
    if not (search.cfg.named_subjects and search.hybrid):
        return found
    return replace(found, named=subjects.named(engine, conn, found.where, search.text))


def _bounds(engine: Any, conn: Any, search: Search, stats: TermStats) -> Bounds:
    """`search`'s tenant and prefix, and a small scope's facts.

    A small scope is one deeper than its tenant holding at most SMALL_SCOPE_MAX facts.
    Where the engine has `scope_scored` (an optional feature, see `core.engine.OPTIONAL`)
    and vectors rank, its answer carries the facts with their keyword scores and cosines
    in one round trip; the hybrid query's pruned terms it needs are read first.
    """
    found = plain(engine, conn, search.scope, search.op)
    tenant, prefix = found.where[2:4]
    deeper = len(prefix) - (engine.layout.tenant_of(prefix) is not None)
    if tenant is None or not deeper:
        return found  # all tenants, or a whole tenant: no label but the tenant's
    step = getattr(engine.reads, "scope_scored", None) if search.vector is not None else None
    if step is None:
        members = engine.reads.in_scope(conn, *found.where, SMALL_SCOPE_MAX + 1)
        if len(members) > SMALL_SCOPE_MAX:
            return replace(found, large=True)
        return replace(found, small=ScopeSignals(members))
    terms = pruned_terms(engine, conn, search.text, stats) if search.cfg.mode == "hybrid" else None
    query = engine.reads.keyword_query(conn, terms or [], found.tenant)
    small = step(conn, *found.where, SMALL_SCOPE_MAX, query, search.vector)
    return replace(found, small=small, terms=terms, large=small is None)


def plain(engine: Any, conn: Any, scope: Scope, op: SearchOp) -> Bounds:
    """`op`'s bounds as they stand, no small scope looked for (`explain`'s side rankings)."""
    where = (scope.at, scope.known_at, *narrow(engine, scope, op), op.filter)
    return Bounds(engine, conn, scope, tenant_of(engine, scope, op), where)
