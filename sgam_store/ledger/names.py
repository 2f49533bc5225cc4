"""Names the inspector lists page by page, read by index seeks: the tenants with a current
fact, and a tenant's namespaces. Each name costs one seek, never a read of the facts
under it, so a page of a list of any length costs its length (issue 38)."""

from __future__ import annotations

from typing import Any

from sgam_store.core import clock
from sgam_store.core.models import Fact
from sgam_store.ledger import row_to_fact


def tenants(engine: Any, after: str, limit: int) -> list[str]:
    """Up to `limit` tenants holding a current fact, in order, after `after` ("": from the
    first)."""
    now, found = clock.utc_now(), []
    with engine.reading() as conn:
        while len(found) < limit:
            name = engine.counts.next_tenant(conn, found[-1] if found else after, now)
            if name is None:
                break
            found.append(name)
    return found


def namespaces(engine: Any, tenant: str, after: str, limit: int) -> list[str]:
    """Up to `limit` namespaces (stored text) of `tenant` holding a current fact, in
    order, after `after` ("": from the first)."""
    now, found = clock.utc_now(), []
    with engine.reading() as conn:
        while len(found) < limit:
            name = engine.counts.next_namespace(conn, tenant, found[-1] if found else after, now)
            if name is None:
                break
            found.append(name)
    return found


def capped_totals(engine: Any, cap: int) -> dict[str, int]:
    """Current facts and episodes, each counted up to `cap` (`cap` + 1: more)."""
    with engine.reading() as conn:
        return {what: engine.counts.capped(conn, what, cap) for what in ("facts", "episodes")}


def namespace_page(engine: Any, namespace: str, limit: int, offset: int) -> list[Fact]:
    """One page of a namespace's current facts, by key."""
    with engine.reading() as conn:
        rows = engine.counts.namespace_page(conn, namespace, clock.utc_now(), limit, offset)
    return [row_to_fact(r) for r in rows]
