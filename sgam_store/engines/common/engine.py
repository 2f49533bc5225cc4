"""What both engine classes share: their statement sets, found by name.

Each set `core.engine.STATEMENTS` names (versions, reads, indexing, ...) is the engine
package's module of that name, so the neutral layers call `engine.<set>.<statement>(...)`
whichever engine it is.
"""

from __future__ import annotations

import importlib
from typing import Any

from sgam_store.core.engine import STATEMENTS
from sgam_store.core.errors import ReadOnlyViewError

MAX_ATTEMPTS = 8  # a write transaction's tries before StoreBusyError


def refuse_writes(engine: Any) -> None:
    """A read-only engine's write transactions and maintenance: refused before they
    start, with the error a read-only view raises."""
    if engine.read_only:
        raise ReadOnlyViewError(
            "this store was opened read_only=True: it reads only; open it without "
            "read_only to write"
        )


class StatementSets:
    """Base of an engine class: `class XEngine(StatementSets, package=__package__)` gives
    it one class attribute per statement set, the module `<package>.<set>`."""

    ready: bool
    read_only: bool = False

    def __init_subclass__(cls, package: str, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for group in STATEMENTS:
            setattr(cls, group, importlib.import_module(f"{package}.{group}"))

    def setup(self) -> None:
        raise NotImplementedError

    def ensure_ready(self) -> None:
        if not self.ready:
            self.setup()
