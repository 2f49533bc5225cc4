"""A conflict policy's verdict, kept at the bottom layer.

`ledger.policies` produces it and `core.errors.KeptExistingError` carries it; living
here lets both use it while `core` imports nothing above itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Decision:
    action: Literal["keep", "replace"]
    reason: str
    decided_by: str  # the policy name written to the ledger's decided_by column
