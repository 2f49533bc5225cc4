"""The memory manager's candidate tables on SQLite: memory_candidates, candidate_support
and episode_extractions.
"""

from __future__ import annotations
