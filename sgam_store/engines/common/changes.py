"""The change feed's statements, on either engine: what the store wrote, or withdrew, in a span
of transaction time, and every version a key ever had.

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
from sgam_store.engines.common.dialect import Dialect
from sgam_store.engines.common.predicates import COLUMNS, F_COLUMNS

# A change row: the version, then at, ended (0 written, 1 withdrawn), the fact written at
# that instant that names it in `supersedes_fact_id` (if any), and whether the version
# it replaced had the same valid_to.
Change = tuple[FactRow, str, bool, int | None, bool]


@functools.cache
def _feed_sql(d: Dialect, by_tenant: bool) -> str:
    """Both arms walk an index newest first and stop at the page: facts_changes
    (tenant_id, known_from) for versions written, facts_withdrawn (tenant_id, known_to)
    for versions withdrawn; without a tenant they scan. Most withdrawn versions have a
    successor and are skipped, so that arm starts no earlier than the written arm's page
    reaches when it is full: anything older cannot make the page, and the skipping stays
    within the same transactions (SQLite, 100k facts in 10 tenants, a page of 100: the
    withdrawn arm alone 36.5 ms unbounded, the whole statement 1.8 ms so)."""
    tenant = "tenant_id = ? AND " if by_tenant else ""
    # The page's end is a keyset, (until, before_row) exclusive: at < until, or at ==
    # until with a smaller row_id. Written as `at <= until AND (at < until OR row_id <
    # before_row)`, so the index still seeks `at <= until` and the page after one whose
    # last entry is (at, row_id) starts right there, ties included, with nothing re-read.
    return d.sql(
        "WITH w AS (SELECT row_id, known_from AS at, 0 AS ended FROM facts "
        f"WHERE {tenant}known_from >= ? AND known_from <= ? "
        "AND (known_from < ? OR row_id < ?) "
        "ORDER BY known_from DESC, row_id DESC LIMIT ?), "
        "low AS (SELECT CASE WHEN COUNT(*) = ? THEN MIN(at) ELSE ? END AS at FROM w), "
        # Withdrawn with no successor: rule 1 under a policy, a delete or an expiry of a
        # version that had not started yet.
        "d AS (SELECT r.row_id, r.known_to AS at, 1 AS ended FROM facts r "
        f"WHERE {tenant}r.known_to >= (SELECT at FROM low) AND r.known_to <= ? "
        "AND (r.known_to < ? OR r.row_id < ?) AND NOT EXISTS "
        "(SELECT 1 FROM facts n WHERE n.fact_id = r.fact_id AND n.known_from = r.known_to "
        "AND n.row_id > r.row_id) ORDER BY r.known_to DESC, r.row_id DESC LIMIT ?) "
        f"SELECT {F_COLUMNS}, e.at, e.ended, "
        # The superseder is written in the same transaction (facts_superseders).
        "(SELECT s.fact_id FROM facts s WHERE s.supersedes_fact_id = f.fact_id "
        "AND s.known_from = e.at AND s.fact_id <> f.fact_id LIMIT 1), "
        "EXISTS (SELECT 1 FROM facts p WHERE p.fact_id = f.fact_id AND p.known_to = f.known_from "
        f"AND p.row_id < f.row_id AND p.valid_to {d.same} f.valid_to) "
        "FROM (SELECT * FROM w UNION ALL SELECT * FROM d) AS e "
        "JOIN facts f ON f.row_id = e.row_id ORDER BY e.at DESC, f.row_id DESC LIMIT ?"
    )


def feed(
    d: Dialect,
    conn: Any,
    tenant: str | None,
    since: str,
    until: str,
    limit: int,
    before_row: int = 0,
) -> list[Change]:
    """Up to `limit` changes with `since <= at < until`, or at == until and a row_id
    below `before_row` (0: none at until), newest first (ties: the later row first), of
    one tenant or (None) of all."""
    scope = [] if tenant is None else [tenant]
    end = (until, until, before_row)
    params = (*scope, since, *end, limit, limit, since, *scope, *end, limit, limit)
    rows = conn.execute(_feed_sql(d, tenant is not None), params).fetchall()
    n = len(FactRow._fields)
    return [
        (FactRow._make(row[:n]), row[n], bool(row[n + 1]), row[n + 2], bool(row[n + 3]))
        for row in rows
    ]


def key_versions(
    d: Dialect, conn: Any, ns: str, attribute: str, limit: int | None = None, offset: int = 0
) -> list[FactRow]:
    """Every version of a key, believed or retired, in the order they were written; or
    `limit` of them after the first `offset` (a key's page: the facts_versions index
    walked in row order, so a page of a key rewritten 500 times reads its own rows)."""
    page = "" if limit is None else " LIMIT ? OFFSET ?"
    sql = f"SELECT {COLUMNS} FROM facts WHERE namespace = ? AND attribute = ? ORDER BY row_id"
    params = (ns, attribute) if limit is None else (ns, attribute, limit, offset)
    return [FactRow._make(row) for row in conn.execute(d.sql(sql + page), params).fetchall()]
