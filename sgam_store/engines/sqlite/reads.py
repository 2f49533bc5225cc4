"""The read side's statements on SQLite: get, listing, candidate checks, the keyword
(FTS5) and vector (vec0) rankings, namespaces, and recall's state selection.
"""

from __future__ import annotations
