"""What a database file holds: rows per table, schema versions, and free space.

The numbers an operator checks around lifecycle work: how many rows are current,
historical or in an old value schema (is a backfill done?), and how many free pages
the file keeps after a purge (what `vacuum` would give back).
"""

from __future__ import annotations

from typing import Any

from sgam_store.engines.common import stats
from sgam_store.engines.common.dialect import SQLITE, export

export(globals(), stats, SQLITE)
TABLES = ("episodes", "vector_rows", "fact_fts", "fact_sources", "ended_sessions", "backfill_log")


def collect_stats(conn: Any) -> dict[str, Any]:
    """Row counts, believed rows per value schema_version, and page usage of the file."""
    pages = ("page_size", "page_count", "freelist_count")
    file = {p: conn.execute(f"PRAGMA {p}").fetchone()[0] for p in pages}
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    return stats.collected(SQLITE, conn, TABLES, version, file)
