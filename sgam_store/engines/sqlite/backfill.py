"""The re-embedding backfill's statements on SQLite.
"""

from __future__ import annotations
