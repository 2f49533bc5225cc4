"""Hybrid search's cache of term counts (`read.terms.TermStats`) under concurrent searches.

Found by benchmarks/bench_replicas.py: with the local embedding, a search on a server
failed with KeyError (HTTP 500) when another search, in another thread, replaced the
cache (the keyword index had grown by a tenth from concurrent puts) between this search
filling its counts and reading them back.
"""

from __future__ import annotations

from typing import Any

import pytest

from sgam_store import SGAMStore
from sgam_store.read.terms import TermStats

ENGINES = ("sqlite", "postgres")


def test_a_search_whose_term_counts_another_search_replaced_mid_call_still_answers(
    vstore: SGAMStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(20):
        vstore.put(("acme", "mira"), f"k{i}", {"text": f"passport visa note {i}"})
    engine, stats = vstore.engine, TermStats()
    with engine.reading() as conn:
        passport, visa = engine.reads.keyword_terms(conn, "passport visa")
        assert stats.common(engine, conn, [passport]) == set()  # its count is now cached
    count = engine.reads.keyword_frequency
    calls = []

    def interleaved(conn: Any, term: str, cap: int | None = None) -> int:
        """The real count; before this search's count of `visa`, another search runs to
        its end (an interleaving two threads can have) after puts that grow the index by
        more than a tenth, so it replaces the cache."""
        calls.append(term)
        if term == visa:
            for i in range(5):
                vstore.put(("acme", "mira"), f"new{i}", {"text": "hotel booking"})
            with engine.reading() as other:
                assert stats.common(engine, other, ["hotel"]) == set()
        return count(conn, term, cap)

    monkeypatch.setattr(engine.reads, "keyword_frequency", interleaved)
    with engine.reading() as conn:
        assert stats.common(engine, conn, [passport, visa]) == set()  # both rare: none dropped
    assert calls == [visa, "hotel"]  # passport's count came from the cache
