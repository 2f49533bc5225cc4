"""Retention's selections on SQLite: which facts and episodes a policy or an ended session reaches.
"""

from __future__ import annotations
