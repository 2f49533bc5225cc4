"""What a database file holds: rows per table, schema versions, and free space.

The numbers an operator checks around lifecycle work: how many rows are current,
historical or in an old value schema (is a backfill done?), and how many free pages
the file keeps after a purge (what `vacuum` would give back).
"""

from __future__ import annotations

from typing import Any

from sgam_store.engines.sqlite.predicates import believed_sql, current_sql

_COUNTS = {
    "fact_rows": "SELECT COUNT(*) FROM facts",
    "believed_rows": f"SELECT COUNT(*) FROM facts WHERE {believed_sql()}",
    "current_facts": f"SELECT COUNT(*) FROM facts WHERE {current_sql()}",
    "facts": "SELECT COUNT(DISTINCT fact_id) FROM facts",
    "tenants": "SELECT COUNT(DISTINCT tenant_id) FROM facts",
    "episodes": "SELECT COUNT(*) FROM episodes",
    "vector_rows": "SELECT COUNT(*) FROM vector_rows",
    "fact_fts": "SELECT COUNT(*) FROM fact_fts",
    "fact_sources": "SELECT COUNT(*) FROM fact_sources",
    "ended_sessions": "SELECT COUNT(*) FROM ended_sessions",
    "backfill_log": "SELECT COUNT(*) FROM backfill_log",
}


def collect_stats(conn: Any) -> dict[str, Any]:
    """Row counts, believed rows per value schema_version, and page usage of the file."""
    counts = {name: conn.execute(sql).fetchone()[0] for name, sql in _COUNTS.items()}
    versions = conn.execute(
        f"SELECT schema_version, COUNT(*) FROM facts WHERE {believed_sql()} "
        "GROUP BY schema_version ORDER BY schema_version"
    ).fetchall()
    pragma = {p: conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_size", "page_count")}
    return {
        "schema_version": conn.execute("PRAGMA user_version").fetchone()[0],
        "rows": counts,
        "believed_rows_by_value_version": {str(v): n for v, n in versions},
        "file": {**pragma, "freelist_count": conn.execute("PRAGMA freelist_count").fetchone()[0]},
    }
