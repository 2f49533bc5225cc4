"""What the store's schema holds: rows per table, schema versions, and space
(`engines/common/stats.py`), with the SQLite engine's keys.

What differs from SQLite: `rows` counts this engine's tables (`fact_keywords` for
`fact_fts`, `fact_vectors` for `vector_rows`, and `tenants` counted
from facts as on SQLite). There is no database file: `file.page_size` is the server's
block size, `file.page_count` the blocks our tables take with their indexes and TOAST
(`pg_total_relation_size`), and `file.freelist_count` counts dead row versions awaiting
VACUUM (`n_dead_tup`: rows rather than pages, and approximate, since sessions report
their deletes to the statistics system some seconds late): what `vacuum` would clear.
Plain VACUUM makes that space reusable rather than shrinking the files, so page_count
rarely drops after it.
"""

from __future__ import annotations

from typing import Any

from sgam_store.engines.common import stats
from sgam_store.engines.common.dialect import POSTGRES, export
from sgam_store.engines.postgres.indexing import has_vectors

export(globals(), stats, POSTGRES)
TABLES = ("episodes", "fact_keywords", "fact_sources", "ended_sessions", "backfill_log")

# Our schema's tables (the first on the search path), with their indexes and TOAST.
_SPACE = (
    "SELECT current_setting('block_size')::bigint, "
    "COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint, "
    "COALESCE(SUM(s.n_dead_tup), 0)::bigint "
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid "
    "WHERE n.nspname = current_schema() AND c.relkind = 'r'"
)


def _file(conn: Any) -> dict[str, int]:
    block, size, dead = conn.execute(_SPACE).fetchone()
    return {"page_size": block, "page_count": size // block, "freelist_count": dead}


def collect_stats(conn: Any) -> dict[str, Any]:
    """Row counts, believed rows per value schema_version, and our tables' space."""
    tables = (*TABLES, "fact_vectors") if has_vectors(conn) else TABLES
    row = conn.execute("SELECT value FROM sgam_meta WHERE key = 'schema_version'").fetchone()
    return stats.collected(POSTGRES, conn, tables, int(row[0]) if row else 0, _file(conn))
