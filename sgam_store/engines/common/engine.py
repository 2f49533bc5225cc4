"""What both engine classes share: their statement sets, found by name.

Each set `core.engine.STATEMENTS` names (versions, reads, indexing, ...) is the engine
package's module of that name, so the neutral layers call `engine.<set>.<statement>(...)`
whichever engine it is.
"""

from __future__ import annotations

import importlib
from typing import Any

from sgam_store.core.engine import STATEMENTS

MAX_ATTEMPTS = 8  # a write transaction's tries before StoreBusyError


class StatementSets:
    """Base of an engine class: `class XEngine(StatementSets, package=__package__)` gives
    it one class attribute per statement set, the module `<package>.<set>`."""

    ready: bool

    def __init_subclass__(cls, package: str, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for group in STATEMENTS:
            setattr(cls, group, importlib.import_module(f"{package}.{group}"))

    def setup(self) -> None:
        raise NotImplementedError

    def ensure_ready(self) -> None:
        if not self.ready:
            self.setup()
