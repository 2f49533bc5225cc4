"""The read rule as SQLite SQL: `engines/common/predicates.py` (its placeholders are
SQLite's), and lists bound as one JSON parameter."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sgam_store.engines.common.predicates import belief, believed_sql, current_sql, visible

__all__ = [
    "as_list",
    "belief",
    "believed_sql",
    "current_sql",
    "in_list",
    "visible",
]


def in_list(column: str) -> str:
    """SQL for "`column` is one of a list", the list bound as one parameter (`as_list`):
    one statement for any length, never near SQLite's parameter limit."""
    return f"{column} IN (SELECT value FROM json_each(?))"


def as_list(values: Iterable[Any]) -> str:
    """The parameter for `in_list` (a JSON array)."""
    return json.dumps(list(values))
