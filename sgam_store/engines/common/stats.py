"""What the store holds, on either engine: the facts' figures, rows per table, and
believed rows per value schema (is a backfill done?). Each engine adds its schema version
and its space figures (`engines/sqlite/stats.py`, `engines/postgres/stats.py`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sgam_store.engines.common.dialect import Dialect
from sgam_store.engines.common.predicates import believed_sql, current_sql

_FIGURES = {
    "fact_rows": "SELECT COUNT(*) FROM facts",
    "believed_rows": f"SELECT COUNT(*) FROM facts WHERE {believed_sql()}",
    "current_facts": f"SELECT COUNT(*) FROM facts WHERE {current_sql()}",
    "facts": "SELECT COUNT(DISTINCT fact_id) FROM facts",
    "tenants": "SELECT COUNT(DISTINCT tenant_id) FROM facts",
}


def collected(
    d: Dialect, conn: Any, tables: Iterable[str], schema_version: int, file: dict[str, int]
) -> dict[str, Any]:
    """The stats: the facts' figures and the rows of each of `tables` (in that order),
    believed rows per value schema_version, and the engine's `schema_version` and `file`."""
    rows = {name: conn.execute(sql).fetchone()[0] for name, sql in _FIGURES.items()}
    for table in tables:
        rows[table] = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    versions = conn.execute(
        f"SELECT schema_version, COUNT(*) FROM facts WHERE {believed_sql()} "
        "GROUP BY schema_version ORDER BY schema_version"
    ).fetchall()
    return {
        "schema_version": schema_version,
        "rows": rows,
        "believed_rows_by_value_version": {str(v): n for v, n in versions},
        "file": file,
    }
