"""The keyword index's language: settled when a store opens, changed by a rebuild.

The database records the language its keyword rows were analyzed in (`core.analysis`),
and every keyword write and query is analyzed in the recorded one, so the index and its
queries never disagree. Opening a store with another language is refused while keyword
rows exist, since answering would need rows analyzed another way; `set_language`
rebuilds them, in one transaction, from the text each row was built from. An empty
index has nothing to rebuild, so it takes the requested language as the store opens.
"""

from __future__ import annotations

from typing import Any

from sgam_store.core import analysis
from sgam_store.core.errors import ConfigurationError


def settle(engine: Any, requested: str | None) -> str:
    """The database's keyword language; `requested` (None: whatever it is) must be it,
    or the index must be empty, in which case it becomes it. Reads only when they agree,
    so opening takes no write lock."""
    with engine.reading() as conn:
        stored = engine.indexing.stored_language(conn)
    if requested is None or requested == stored:
        return stored

    def body(cur: Any) -> str:
        found = engine.indexing.stored_language(cur)
        if found == requested:
            return found  # another process switched it meanwhile
        if engine.indexing.has_keywords(cur):
            raise ConfigurationError(
                f"this database's keywords are analyzed as {found!r}; the store was "
                f"opened with language={requested!r}. Open it with {found!r} (or no "
                f"language), or rebuild its keyword index: store.set_language({requested!r})"
                f" or `sgam reindex --db <db> --language {requested}`"
            )
        engine.indexing.set_language(cur, requested)
        return requested

    return engine.transaction(body)


def set_language(engine: Any, language: str) -> int:
    """Rebuild every keyword row in `language` and record it, in one transaction;
    returns the rows rebuilt. History is untouched: facts and their versions stay as they
    were, and a past version's keyword row is rebuilt like a current one's, so
    point-in-time keyword searches keep working."""
    analysis.check_language(language)
    return engine.transaction(lambda cur: engine.indexing.set_language(cur, language))
