"""The read rule as SQLite SQL: `engines/common/predicates.py` (its placeholders are
SQLite's), and lists bound as one JSON parameter (`Dialect.in_list`: one statement for any
length, never near SQLite's parameter limit)."""

from __future__ import annotations

from sgam_store.engines.common.dialect import SQLITE
from sgam_store.engines.common.predicates import belief, believed_sql, current_sql, visible

__all__ = ["as_list", "belief", "believed_sql", "current_sql", "in_list", "visible"]

in_list, as_list = SQLITE.in_list, SQLITE.as_list
