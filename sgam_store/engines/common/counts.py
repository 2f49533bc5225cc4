"""How many keys are current, per namespace, counted from an index alone.

The inspector shows a total beside each subject; reading values to count them would grow
with the values' size. `facts_current_count` (both engines' migrations) holds every column
this statement reads, so SQLite answers it as a covering index and PostgreSQL with an
index-only scan.
"""

from __future__ import annotations

import functools
from typing import Any

from sgam_store.core.models import FactRow
from sgam_store.engines.common import predicates
from sgam_store.engines.common.dialect import Dialect
from sgam_store.engines.common.predicates import current_sql, visible


@functools.cache
def _current_keys_sql(d: Dialect) -> str:
    # The read rule of a current get or listing: the open version of the current belief,
    # not past its TTL (an expired fact is stale before the sweep closes it).
    return d.sql(
        "SELECT namespace, COUNT(*) FROM facts "
        f"WHERE tenant_id = ? AND {d.in_list('namespace', 'text')} AND {current_sql()} "
        "AND (expires_at IS NULL OR expires_at > ?) "
        "GROUP BY namespace ORDER BY namespace"
    )


def current_keys(
    d: Dialect, conn: Any, tenant: str, namespaces: list[str], now: str, cap: int | None = None
) -> list[tuple[str, int]]:
    """(namespace, keys current at `now`) for each of `namespaces` that has any, in
    namespace order; with `cap`, each counted up to `cap` + 1 (one bounded index read per
    namespace: a LangMem user of 19,070 memories cost 211,000 VM steps counted whole)."""
    if cap is None:
        rows = conn.execute(_current_keys_sql(d), (tenant, d.as_list(namespaces), now))
        return [(ns, int(n)) for ns, n in rows.fetchall()]
    sql = d.sql(
        "SELECT COUNT(*) FROM (SELECT 1 FROM facts WHERE tenant_id = ? AND namespace = ? "
        f"AND {_LIVE} LIMIT ?) AS capped"
    )
    found = [
        (ns, int(conn.execute(sql, (tenant, ns, now, cap + 1)).fetchone()[0]))
        for ns in sorted(set(namespaces))
    ]
    return [(ns, n) for ns, n in found if n]


# One index seek each: the next tenant, or the next namespace of a tenant, holding a
# current fact after a given name. A listing of n names costs n seeks through
# facts_current_count, however many facts each name holds (a skip scan).
_LIVE = f"{current_sql()} AND (expires_at IS NULL OR expires_at > ?)"


def next_tenant(d: Dialect, conn: Any, after: str, now: str) -> str | None:
    """The first tenant after `after` ("" for the first of all) with a current fact."""
    sql = d.sql(f"SELECT tenant_id FROM facts WHERE tenant_id > ? AND {_LIVE} "
                "ORDER BY tenant_id LIMIT 1")  # fmt: skip
    row = conn.execute(sql, (after, now)).fetchone()
    return None if row is None else str(row[0])


def next_namespace(d: Dialect, conn: Any, tenant: str, after: str, now: str) -> str | None:
    """The first namespace of `tenant` after `after` ("" for its first) with a current
    fact."""
    sql = d.sql(
        f"SELECT namespace FROM facts WHERE tenant_id = ? AND namespace > ? AND {_LIVE} "
        "ORDER BY tenant_id, namespace LIMIT 1"
    )
    row = conn.execute(sql, (tenant, after, now)).fetchone()
    return None if row is None else str(row[0])


# Past instants: the same seeks, by a visibility no partial index holds. A tenant's next
# name is found by walking an index in name order and stopping at the first row visible
# then, so a seek reads the rows of names with nothing visible at that instant, and those
# of the found name before its first visible one: a page costs its names' early rows,
# never the tenant's whole history.


def next_tenant_at(d: Dialect, conn: Any, after: str, at: str, known_at: str | None) -> str | None:
    """The first tenant after `after` with a fact visible at valid time `at` as believed
    at `known_at` (None: now), walked in tenant order (facts_changes)."""
    cond, params = visible(at, known_at, "")
    sql = d.sql(f"SELECT tenant_id FROM facts WHERE tenant_id > ? AND {cond} "
                "ORDER BY tenant_id LIMIT 1")  # fmt: skip
    row = conn.execute(sql, (after, *params)).fetchone()
    return None if row is None else str(row[0])


def next_namespace_at(
    d: Dialect,
    conn: Any,
    tenant: str,
    after: str,
    at: str,
    known_at: str | None,
    within: tuple[str, str] | None,
) -> str | None:
    """The first namespace of `tenant` after `after` with a fact visible at (`at`,
    `known_at`). `within` is the [low, high) range of namespace text that holds all the
    tenant's namespaces, where the layout has one (the tenant is their first label): the
    walk then goes in namespace order through facts_key_time inside it, the tenant test
    an expression no index answers. Without one it seeks the tenant's rows (facts_changes)."""
    cond, params = visible(at, known_at, "")
    if within is None:
        sql = (f"SELECT namespace FROM facts WHERE tenant_id = ? AND namespace > ? AND {cond} "
               "ORDER BY namespace LIMIT 1")  # fmt: skip
        row = conn.execute(d.sql(sql), (tenant, after, *params)).fetchone()
    else:
        # One lower bound, or the planner may seek the other (`after` is "" on a first
        # page): from the range's start, or past `after`, whichever is later.
        sql = (
            "SELECT namespace FROM facts WHERE namespace >= ? AND namespace < ? "
            f"AND namespace <> ? AND tenant_id || '' = ? AND {cond} ORDER BY namespace LIMIT 1"
        )
        start = max(after, within[0])
        row = conn.execute(d.sql(sql), (start, within[1], after, tenant, *params)).fetchone()
    return None if row is None else str(row[0])


def capped(d: Dialect, conn: Any, what: str, cap: int, tenant: str | None = None) -> int:
    """How many current facts ("facts") or episodes ("episodes") the store (or `tenant`)
    holds, counted up to `cap` (a bounded read: `cap` + 1 means more than `cap`): a
    tenant's through facts_current_count and the episodes' key, both led by tenant_id."""
    table, conds = {"facts": ("facts", [current_sql()]), "episodes": ("episodes", [])}[what]
    conds += [] if tenant is None else ["tenant_id = ?"]
    where = f" WHERE {' AND '.join(conds)}" if conds else ""
    sql = d.sql(f"SELECT COUNT(*) FROM (SELECT 1 FROM {table}{where} LIMIT ?) AS capped")
    scope = () if tenant is None else (tenant,)
    return int(conn.execute(sql, (*scope, cap + 1)).fetchone()[0])


def namespace_page(
    d: Dialect, conn: Any, namespace: str, now: str, limit: int, offset: int, after: str = ""
) -> list[FactRow]:
    """One page of a namespace's current facts, by key, after key `after` ("": from the
    first; a key is never empty): read in key order through facts_one_open (namespace,
    attribute), so a page costs its rows however large the tenant is (a tenant-wide
    listing walks the tenant's recent facts to find them). `after` is a seek to the page;
    `offset` reads the keys it skips."""
    sql = d.sql(
        f"SELECT {predicates.COLUMNS} FROM facts WHERE namespace = ? AND attribute > ? "
        f"AND {_LIVE} ORDER BY namespace, attribute LIMIT ? OFFSET ?"
    )
    params = (namespace, after, now, limit, offset)
    return [FactRow._make(r) for r in conn.execute(sql, params)]
