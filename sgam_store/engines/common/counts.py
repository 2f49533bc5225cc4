"""How many keys are current, per namespace, counted from an index alone.

The inspector shows a total beside each subject; reading values to count them would grow
with the values' size. `facts_current_count` (both engines' migrations) holds every column
this statement reads, so SQLite answers it as a covering index and PostgreSQL with an
index-only scan.
"""

from __future__ import annotations

import functools
from typing import Any

from sgam_store.engines.common.dialect import Dialect
from sgam_store.engines.common.predicates import current_sql


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
    d: Dialect, conn: Any, tenant: str, namespaces: list[str], now: str
) -> list[tuple[str, int]]:
    """(namespace, keys current at `now`) for each of `namespaces` that has any."""
    rows = conn.execute(_current_keys_sql(d), (tenant, d.as_list(namespaces), now)).fetchall()
    return [(ns, int(n)) for ns, n in rows]
