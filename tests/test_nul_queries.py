"""A NUL in what a caller asks for (issue 39, item 20): PostgreSQL's text cannot hold it,
and the driver's raw DataError reached the caller. Every engine now refuses it alike,
before any SQL, with the typed error of what was malformed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sgam_store import (
    InvalidEpisodeError,
    InvalidFactError,
    InvalidQueryError,
    SGAMError,
    SGAMStore,
)

ENGINES = ("sqlite", "postgres")

ASKS: dict[str, tuple[type[SGAMError], Callable[[SGAMStore], Any]]] = {
    "search query": (InvalidQueryError, lambda s: s.search(("acme",), query="he\x00llo")),
    "view search": (InvalidQueryError, lambda s: s.for_tenant("acme").search((), query="\x00")),
    "explain": (InvalidQueryError, lambda s: s.explain_search(("acme",), "a\x00")),
    "recall": (InvalidQueryError, lambda s: s.recall("acme", "he\x00llo")),
    "history": (InvalidFactError, lambda s: s.history("acme", "mira", "k\x00")),
    "versions": (InvalidFactError, lambda s: s.versions("acme", "mira", "k\x00")),
    "fact_at": (InvalidFactError, lambda s: s.fact_at("acme", "mira", "k\x00")),
    "ledger": (InvalidFactError, lambda s: s.ledger("acme", attribute="k\x00")),
    "get_episode": (InvalidEpisodeError, lambda s: s.get_episode("e\x00", tenant_id="acme")),
    "purge_episode": (InvalidEpisodeError, lambda s: s.purge_episode("acme", "e\x00")),
}


@pytest.mark.parametrize("ask", list(ASKS))
def test_a_nul_is_a_typed_error_on_every_engine(store: SGAMStore, ask: str) -> None:
    store.put(("acme", "mira"), "k", {"text": "hello"})
    error, call = ASKS[ask]
    with pytest.raises(error, match="NUL"):
        call(store)
    assert store.get(("acme", "mira"), "k").value == {"text": "hello"}  # nothing changed
