"""A query's keyword terms: which are too common to rank by, and a small scope's scores.

A term in most keyword rows barely changes BM25 order, yet scoring its posting list is
most of a query's cost, so hybrid search drops such terms (`TermStats`, cached between
searches), and in a small scope also the terms common in the scope (`ScopeScorer`,
`scope_keyword_hits`). The scope and candidates stages call these; nothing here calls a
stage.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from sgam_store.read.query import Hits

# In hybrid search a term found in more than this share of all keyword rows (and in more
# than COMMON_TERM_MIN_ROWS of them) is dropped: its IDF is near zero, so it barely changes
# BM25 order, yet scoring its posting list dominates the query's cost.
COMMON_TERM_SHARE = 0.1
COMMON_TERM_MIN_ROWS = 1000
# TermStats' counts are kept until the index has grown past this factor of its size when
# they were taken.
TERM_STATS_GROWTH = 1.1


def common_ceiling(rows: int | float) -> float:
    """The count above which a term is common in an index of `rows` keyword rows."""
    return max(COMMON_TERM_MIN_ROWS, COMMON_TERM_SHARE * rows)


class TermStats:
    """Document frequencies of query terms, cached per store.

    Counting a term's rows can walk its whole posting list (milliseconds for a common
    term), so counts are remembered and forgotten when the keyword index has grown by a
    tenth since they were taken: they only decide which terms to drop. So the engine may
    stop counting at `cap`, the highest ceiling while the counts are kept: a count at or
    below it is exact, one above it is above every ceiling the cache will compare it with,
    so the cut drops the same terms.
    """

    def __init__(self) -> None:
        # (keyword rows when the counts were taken, term -> count): one attribute, so a
        # search reads a map and its size together while another thread replaces both.
        self.counts: tuple[int, dict[str, int]] = (0, {})

    def common(
        self,
        engine: Any,
        conn: Any,
        terms: list[str],
        count: Callable[[str], int] | None = None,
        rows: int | None = None,
    ) -> set[str]:
        """Those of `terms` in more than COMMON_TERM_SHARE of the keyword rows; `count`
        counts a term's rows where the caller already does (else `keyword_frequency`);
        `rows` is `highest_row_id` where the caller read it in this snapshot."""
        # The highest row id counts every version ever written: an upper bound on keyword
        # rows (one per fact) that costs one index seek.
        if rows is None:
            rows = engine.reads.highest_row_id(conn)
        filled, frequency = self.counts
        if rows > filled * TERM_STATS_GROWTH or rows < filled:
            filled, frequency = self.counts = (rows, {})
        ceiling = common_ceiling(rows)
        # This call's map: a search in another thread may replace the attribute meanwhile
        # (the index grew), and this call must still find the counts it took.
        cap = self.cap(filled)
        for term in terms:
            if term not in frequency:
                frequency[term] = (
                    count(term) if count else engine.reads.keyword_frequency(conn, term, cap)
                )
        return {t for t in terms if frequency[t] > ceiling}

    @staticmethod
    def cap(filled: int) -> int:
        """The highest ceiling a count taken at `filled` rows is compared with: rows stay
        within [filled, filled * TERM_STATS_GROWTH] while it is kept (the same float
        product as the check above, so no rounding lets a later ceiling exceed it)."""
        return math.ceil(common_ceiling(filled * TERM_STATS_GROWTH))


# In hybrid search of a small scope (see SMALL_SCOPE_MAX) a term is also dropped
# when it is in more than this share of the scope's facts and more than
# SCOPE_COMMON_MIN_ROWS of them. A speaker's name is in half of a conversation's turns:
# rare in the store, so kept by the cut above, it matched nearly any turn of the
# conversation and gave the best keyword hit a full share for the name and one common
# word (benchmarks/README.md, the harder evaluation: tune recall@10 0.609 -> 0.639).
SCOPE_COMMON_SHARE = 0.25
SCOPE_COMMON_MIN_ROWS = 32


class ScopeScorer:
    """`keyword_scores` of a small scope's facts, and how many of them hold a term.

    Where the engine scores a scope's own keyword rows in process (SQLite's
    `scope_keywords`: FTS5 walks every tenant's postings of a term to weigh it, one user's
    search included) those answer, with the same hits, scores and order; else, and for
    terms it leaves to the index, the engine's keyword statements do.
    """

    def __init__(
        self,
        engine: Any,
        conn: Any,
        tenant: str | None,
        fact_ids: list[int],
        mirror: Any,
        keep: bool = True,
    ) -> None:
        """`keep=False`: facts met once (a large scope's keyword candidates), which the
        mirror scores without keeping."""
        self.engine, self.conn, self.fact_ids = engine, conn, fact_ids
        self.tenant = tenant
        in_process = mirror is not None and self.tenant is not None and fact_ids
        # The index's highest row id comes with the mirror's state (None: not read yet).
        self.local, self.rows = (
            mirror.scope(conn, self.tenant, fact_ids, keep) if in_process else (None, None)
        )

    def scores(self, terms: list[str]) -> Hits:
        """(fact_id, BM25 score) of the scope's facts matching any of `terms`, best first."""
        local = self.local
        tokens = local.tokens(terms) if local is not None else None
        if local is not None and tokens is not None:
            return local.scores(self.conn, tokens)
        query = self.engine.reads.keyword_query(self.conn, terms, self.tenant)
        return self.engine.reads.keyword_scores(self.conn, query, self.fact_ids) if query else []

    def terms(self, text: str) -> list[str]:
        """The engine's `keyword_terms` of `text` (the scorer's: the language it read)."""
        if self.local is not None:
            return self.local.terms(text)
        return self.engine.reads.keyword_terms(self.conn, text)

    def frequency(self, term: str) -> int:
        """How many keyword rows of the whole index hold `term` (`keyword_frequency`):
        the in-process scorer's count when it scores the term, so a term new to this
        state of the index is counted once for the cut of common terms and for BM25."""
        local = self.local
        tokens = local.tokens([term]) if local is not None else None
        if local is not None and tokens is not None:
            return local.frequency(self.conn, tokens[0])
        return self.engine.reads.keyword_frequency(self.conn, term)

    def held(self, terms: list[str]) -> list[str]:
        """Those of `terms` some fact of the scope holds, where the in-process scorer scores
        them (else all): a term no fact holds adds 0.0 to every score and matches nothing,
        so it needs no count of the whole index's rows (a statement walking its posting
        lists: 46 us of a user's search at 5k, for the one new term of each query)."""
        local = self.local
        tokens = local.tokens(terms) if local is not None else None
        if local is None or tokens is None:
            return terms
        return [term for term, token in zip(terms, tokens, strict=True) if local.holds(token)]

    def holding(self, term: str) -> int:
        """How many of the scope's facts hold `term` (the scope's common-term cut)."""
        local = self.local
        tokens = local.tokens([term]) if local is not None else None
        if local is not None and tokens is not None:
            return local.holding(tokens[0])
        return len(self.scores([term]))


def scope_keyword_hits(
    engine: Any,
    conn: Any,
    text: str,
    scorer: ScopeScorer,
    stats: TermStats,
    scored: tuple[list[str], Hits] | None = None,
) -> Hits:
    """`keyword_scores` of a small scope (`scorer`'s) for hybrid search, terms common in
    the store or in the scope dropped (see SCOPE_COMMON_SHARE).

    No term is in more of the scope's facts than match any of the terms, so when those
    are few enough no term can be common in the scope: the query over all terms is the
    answer, and the count per term (a query each, most of a per-user search's keyword
    cost) is only run when the matches exceed the ceiling. Same hits, same order. Terms
    no fact of the scope holds are left out before any count (`ScopeScorer.held`).
    `scored`: (pruned terms, their hits) where the engine's `scope_scored` read them."""
    if scored is not None:  # the pruned terms and their hits, already read
        terms, hits = scored
    else:
        query = scorer.held(scorer.terms(text))
        terms = drop_common_terms(engine, conn, query, stats, scorer.frequency, scorer.rows)
        hits = scorer.scores(terms)
    ceiling = max(SCOPE_COMMON_MIN_ROWS, SCOPE_COMMON_SHARE * len(scorer.fact_ids))
    if len(hits) <= ceiling:
        return hits
    kept = [t for t in terms if scorer.holding(t) <= ceiling]
    return hits if kept == terms else scorer.scores(kept)


def drop_common_terms(
    engine: Any,
    conn: Any,
    terms: list[str],
    stats: TermStats,
    count: Callable[[str], int] | None = None,
    rows: int | None = None,
) -> list[str]:
    """Terms minus those too common to discriminate (see COMMON_TERM_SHARE); `count` and
    `rows` as `TermStats.common` takes them."""
    common = stats.common(engine, conn, terms, count, rows) if terms else set()
    return [t for t in terms if t not in common]


def pruned_terms(engine: Any, conn: Any, text: str, prune: TermStats) -> list[str]:
    """`text`'s terms minus those too common in the store (`drop_common_terms`).
    Where the engine has `keyword_terms_sized`, the terms and the index's size come in
    one statement."""
    sized = getattr(engine.reads, "keyword_terms_sized", None)
    rows = None
    if sized is not None:
        terms, rows = sized(conn, text)
    else:
        terms = engine.reads.keyword_terms(conn, text)
    return drop_common_terms(engine, conn, terms, prune, rows=rows)
