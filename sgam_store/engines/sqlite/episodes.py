"""The episodes table's statements on SQLite.
"""

from __future__ import annotations
