"""The change feed's statements on PostgreSQL, the twin of `engines/sqlite/changes.py`:
what the store wrote, or withdrew, in a span of transaction time, and every version a
key ever had.

Versions are append-only, so a change is one of two row events: a version written
(`known_from` in the span) or a version withdrawn with no copy written in its place
(`known_to` in the span, no row of the fact starts being believed then). Each arrives
with what the ledger needs to name it (`sgam_store.ledger.changes`); nothing is decided
here.
"""

from __future__ import annotations

import functools
from typing import Any

from sgam_store.core.models import FactRow
from sgam_store.engines.postgres.versions import COLUMNS, F_COLUMNS

# A change row: the version, then at, ended (0 written, 1 withdrawn), the fact written at
# that instant that names it in `supersedes_fact_id` (if any), and whether the version
# it replaced had the same valid_to.
Change = tuple[FactRow, str, bool, int | None, bool]


@functools.cache
def _feed_sql(by_tenant: bool) -> str:
    """Both arms walk facts_changes (tenant_id, known_from) or facts_withdrawn
    (tenant_id, known_to) newest first and stop at the page; without a tenant they scan."""
    tenant = "tenant_id = %s AND " if by_tenant else ""
    written = (
        f"SELECT row_id, known_from AS at, 0 AS ended FROM facts WHERE {tenant}"
        "known_from >= %s AND known_from < %s ORDER BY known_from DESC, row_id DESC LIMIT %s"
    )
    # Withdrawn with no successor: rule 1 under a policy, a delete or an expiry of a
    # version that had not started yet.
    withdrawn = (
        f"SELECT r.row_id, r.known_to AS at, 1 AS ended FROM facts r WHERE {tenant}"
        "known_to >= %s AND known_to < %s AND NOT EXISTS (SELECT 1 FROM facts n "
        "WHERE n.fact_id = r.fact_id AND n.known_from = r.known_to AND n.row_id > r.row_id) "
        "ORDER BY known_to DESC, row_id DESC LIMIT %s"
    )
    return (
        f"SELECT {F_COLUMNS}, e.at, e.ended, "
        # The superseder is written in the same transaction, by the same tenant.
        "(SELECT s.fact_id FROM facts s WHERE s.tenant_id = f.tenant_id AND s.known_from = e.at "
        "AND s.supersedes_fact_id = f.fact_id AND s.fact_id <> f.fact_id LIMIT 1), "
        "EXISTS (SELECT 1 FROM facts p WHERE p.fact_id = f.fact_id AND p.known_to = f.known_from "
        "AND p.row_id < f.row_id AND p.valid_to IS NOT DISTINCT FROM f.valid_to) "
        f"FROM (SELECT * FROM ({written}) AS w UNION ALL SELECT * FROM ({withdrawn}) AS d) AS e "
        "JOIN facts f ON f.row_id = e.row_id ORDER BY e.at DESC, f.row_id DESC LIMIT %s"
    )


def feed(conn: Any, tenant: str | None, since: str, until: str, limit: int) -> list[Change]:
    """Up to `limit` changes with `since <= at < until`, newest first (ties: the later
    row first), of one tenant or (None) of all."""
    arm = [since, until, limit] if tenant is None else [tenant, since, until, limit]
    rows = conn.execute(_feed_sql(tenant is not None), (*arm, *arm, limit)).fetchall()
    n = len(FactRow._fields)
    return [
        (FactRow._make(row[:n]), row[n], bool(row[n + 1]), row[n + 2], bool(row[n + 3]))
        for row in rows
    ]


def key_versions(conn: Any, ns: str, attribute: str) -> list[FactRow]:
    """Every version of a key, believed or retired, in the order they were written."""
    return [
        FactRow._make(row)
        for row in conn.execute(
            f"SELECT {COLUMNS} FROM facts WHERE namespace = %s AND attribute = %s ORDER BY row_id",
            (ns, attribute),
        ).fetchall()
    ]
