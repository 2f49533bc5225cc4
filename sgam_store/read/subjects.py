"""Subjects a question names (issue 40, lever 5): "when did Maya move?" asks about Maya.

Where `RetrievalConfig.named_subjects` is on, the scope stage looks for the subjects under
the search's prefix whose label the query holds as a word (`named`), and the scoring stage
marks the candidates in them (`members`), which fusion then ranks first. The scope and
scoring stages call these; nothing here calls a stage, and nothing here writes.
"""

from __future__ import annotations

import re
from typing import Any

from sgam_store.core import namespaces

_WORD = re.compile(r"\w+")


def named(engine: Any, conn: Any, where: tuple[Any, ...], text: str) -> list[tuple[str, ...]]:
    """The namespaces under the search's prefix that have a label the query names: a
    label below the prefix, not the tenant's, whose words the query holds, case aside.
    One statement: the scope's distinct namespaces (`namespaces_under`)."""
    at, known_at, tenant, prefix, _ = where
    asked = {w.casefold() for w in _WORD.findall(text)}
    found = []
    for stored in engine.reads.namespaces_under(conn, at, known_at, tenant, prefix):
        space = namespaces.from_text(stored)
        labels = [
            label
            for i, label in enumerate(space)
            if i >= len(prefix) and i != engine.layout.tenant_at
        ]
        if any(_names(label, asked) for label in labels):
            found.append(space)
    return found


def _names(label: str, asked: set[str]) -> bool:
    words = [w.casefold() for w in _WORD.findall(label)]
    return bool(words) and all(w in asked for w in words)


def members(
    engine: Any,
    conn: Any,
    where: tuple[Any, ...],
    spaces: list[tuple[str, ...]],
    fact_ids: list[int],
) -> set[int]:
    """Those of `fact_ids` in one of `spaces` (the engine's candidate check, a statement
    a named namespace)."""
    at, known_at, tenant, _, flt = where
    inside: set[int] = set()
    for space in spaces:
        inside.update(engine.reads.admitted(conn, at, known_at, tenant, space, flt, fact_ids))
    return inside
