"""Names the inspector lists page by page, read by index seeks: the tenants with a current
fact, and a tenant's namespaces. Each name costs one seek, never a read of the facts
under it, so a page of a list of any length costs its length (issue 38)."""

from __future__ import annotations

from typing import Any

from sgam_store.core import clock
from sgam_store.core.models import Fact
from sgam_store.ledger import row_to_fact


def tenants(
    engine: Any, after: str, limit: int, at: str | None = None, known_at: str | None = None
) -> list[str]:
    """Up to `limit` tenants holding a current fact (or, with `at`, one visible at `at`
    as believed at `known_at`), in order, after `after` ("": from the first)."""
    now, found = clock.utc_now(), []
    with engine.reading() as conn:
        while len(found) < limit:
            last = found[-1] if found else after
            if at is None:
                name = engine.counts.next_tenant(conn, last, now)
            else:
                name = engine.counts.next_tenant_at(conn, last, at, known_at)
            if name is None:
                break
            found.append(name)
    return found


def namespaces(
    engine: Any,
    tenant: str,
    after: str,
    limit: int,
    at: str | None = None,
    known_at: str | None = None,
    within: tuple[str, str] | None = None,
) -> list[str]:
    """Up to `limit` namespaces (stored text) of `tenant` holding a current fact (or, with
    `at`, one visible then; `within`: the text range holding the tenant's namespaces), in
    order, after `after` ("": from the first)."""
    now, found = clock.utc_now(), []
    with engine.reading() as conn:
        while len(found) < limit:
            last = found[-1] if found else after
            if at is None:
                name = engine.counts.next_namespace(conn, tenant, last, now)
            else:
                name = engine.counts.next_namespace_at(conn, tenant, last, at, known_at, within)
            if name is None:
                break
            found.append(name)
    return found


def capped_totals(engine: Any, cap: int, tenant: str | None = None) -> dict[str, int]:
    """Current facts and episodes (of the store, or of `tenant`), each counted up to `cap`
    (`cap` + 1: more)."""
    with engine.reading() as conn:
        return {
            what: engine.counts.capped(conn, what, cap, tenant) for what in ("facts", "episodes")
        }


def namespace_page(
    engine: Any, namespace: str, limit: int, offset: int, after: str = ""
) -> list[Fact]:
    """One page of a namespace's current facts, by key, after key `after` ("": the first)."""
    now = clock.utc_now()
    with engine.reading() as conn:
        rows = engine.counts.namespace_page(conn, namespace, now, limit, offset, after)
    return [row_to_fact(r) for r in rows]
