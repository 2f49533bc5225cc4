"""The common-term cut's bounded counts (`TermStats.cap`, `keyword_frequency`'s `cap`).

PostgreSQL stops counting a term's keyword rows past the cap, where an exact count of a
common term walked its whole posting list; the cut must drop exactly the terms it dropped
with exact counts, over the whole window the counts are cached for. SQLite's count stays
exact (its in-process BM25 weighs terms by it).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sgam_store import SGAMStore
from sgam_store.read import terms as read_terms
from sgam_store.read.terms import TERM_STATS_GROWTH, TermStats, common_ceiling

ENGINES = ("sqlite", "postgres")


@given(
    filled=st.integers(min_value=0, max_value=10**9),
    growth=st.floats(min_value=0.0, max_value=1.0),
    count=st.integers(min_value=0, max_value=2 * 10**8),
)
def test_a_capped_count_is_common_exactly_when_the_exact_count_is(
    filled: int, growth: float, count: int
) -> None:
    rows = filled + int(growth * (filled * TERM_STATS_GROWTH - filled))
    assert filled <= rows <= filled * TERM_STATS_GROWTH  # inside the cache's window
    cap = TermStats.cap(filled)
    capped = min(count, cap + 1)  # what a count stopped at the cap returns
    assert (capped > common_ceiling(rows)) == (count > common_ceiling(rows))


def _fill(store: SGAMStore, common: int, rare: int) -> None:
    for i in range(common):
        text = f"passport note {i}" + (" visa" if i < rare else "")
        store.put(("acme", "mira"), f"k{i}", {"text": text})


def test_keyword_frequency_is_exact_up_to_the_cap_and_above_it_beyond(
    vstore: SGAMStore, engine: str
) -> None:
    _fill(vstore, common=30, rare=5)
    reads = vstore.engine.reads
    with vstore.engine.reading() as conn:
        passport, visa = reads.keyword_terms(conn, "passport visa")
        assert reads.keyword_frequency(conn, passport) == 30
        assert reads.keyword_frequency(conn, visa, 10) == 5  # under the cap: exact
        assert reads.keyword_frequency(conn, passport, 30) == 30  # at the cap: exact
        assert reads.keyword_frequency(conn, "absentterm", 10) == 0
        above = reads.keyword_frequency(conn, passport, 10)
    # PostgreSQL stops at cap + 1; SQLite always counts exactly.
    assert above == (11 if engine == "postgres" else 30)


def test_the_cut_with_capped_counts_drops_what_exact_counts_drop(
    vstore: SGAMStore, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small index with a low floor and share, so the cut bites (a ceiling of 15 rows):
    `passport` is common, `visa` not; the counts cached, then the index grown within the
    window, the cut again. (Row ids, the cut's size, need not start at 1.)"""
    _fill(vstore, common=30, rare=5)
    engine_, stats = vstore.engine, TermStats()
    reads = engine_.reads
    with engine_.reading() as conn:
        rows = reads.highest_row_id(conn)
    monkeypatch.setattr(read_terms, "COMMON_TERM_MIN_ROWS", 8)
    monkeypatch.setattr(read_terms, "COMMON_TERM_SHARE", 15 / rows)
    with engine_.reading() as conn:
        passport, visa, note = (
            reads.keyword_terms(conn, w)[0] for w in ("passport", "visa", "note")
        )
        terms = [passport, visa, note]
        cap = TermStats.cap(rows)
        assert 8 <= cap < 30  # the cap bites for passport and note
        exact = {t for t in terms if reads.keyword_frequency(conn, t) > common_ceiling(rows)}
        assert exact == {passport, note}
        assert stats.common(engine_, conn, terms) == exact
        cached = stats.counts[1]
    assert cached[visa] == 5
    assert cached[passport] == (cap + 1 if engine == "postgres" else 30)
    vstore.put(("acme", "mira"), "grown", {"text": "visa visa"})  # within the window
    with engine_.reading() as conn:
        grown = reads.highest_row_id(conn)
        assert rows < grown <= rows * TERM_STATS_GROWTH
        assert stats.common(engine_, conn, terms) == exact
        assert stats.counts[1] is cached  # the same cache answered
