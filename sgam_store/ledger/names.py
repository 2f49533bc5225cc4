"""Names the inspector lists page by page, read by index seeks: the tenants with a current
fact, and a tenant's namespaces. Each name costs one seek, never a read of the facts
under it, so a page of a list of any length costs its length (issue 38)."""

from __future__ import annotations

from typing import Any

from sgam_store.core import clock


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
