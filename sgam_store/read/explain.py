"""Why a search returned what it did: each hit's score beside its two signals.

`explain` runs the store's own ranker once (`Ranker.explained`: `search`'s hits and
order, threshold and page included) and reports, for those hits alone, what that search
computed: each hit's place in the keyword and in the vector ranking that fusion ordered,
and its cosine similarity; whether it is in the window of a time or event the query names;
plus the share of the query's terms the memory holds (one read of the page's keyword
rows). Nothing is ranked a second time. Nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph.store.base import SearchItem, SearchOp

from sgam_store.read import items
from sgam_store.read.query import Ranked, RetrievalConfig, Scope
from sgam_store.read.scoring import Signals


@dataclass(frozen=True)
class Explanation:
    """One search hit and the two contributions behind its score.

    `keyword` is the share of the query's distinct terms the memory's keyword row holds
    (1.0: all of them). `keyword_rank` is its 1-based place in the keyword ranking the
    search itself fused: BM25's order over the terms it ranked by (terms too common in
    the store or the scope left out, `read.terms`), as deep as the search read it. `cosine`
    is its best field's cosine similarity to the query, `vector_rank` its place in the
    vector ranking fusion received (the vector hits, with the keyword hits' exact cosines
    added in). Each is None where that side did not find the memory (no shared term, a
    term the search left out, beyond the ranking's depth, no vector) or the store has no
    such index or the retrieval mode leaves the side out; so a memory may hold a share
    of the query yet have no keyword rank. `score` is the hit's score as `search`
    reports it (None for a listing: a search without a query). `in_window`: where the
    query names a time or an event that makes a window of valid time (`time_window`),
    whether the memory falls in it (None: no window); `anchor`: whether the memory is
    the event's own ("before relocating to Seville": the move), whose window it starts
    or ends.
    """

    item: SearchItem
    score: float | None
    keyword: float | None
    keyword_rank: int | None
    cosine: float | None
    vector_rank: int | None
    in_window: bool | None = None
    anchor: bool = False


def explain(
    ranker: Any,
    engine: Any,
    scope: Scope,
    op: SearchOp,
    query_vec: bytes | None,
    retrieval: RetrievalConfig,
) -> list[Explanation]:
    """The hits of `op` as `search` returns them, each with its contributions."""
    if not op.query:
        return [_bare(item) for item in ranker.search(scope, op, None, retrieval)]
    with engine.snapshot() as conn:
        page, signals = ranker.explained(conn, scope, op, query_vec, retrieval)
        rows = engine.reads.rows_by_id(conn, [row_id for _, _, row_id in page])
        fids = [fid for fid, _, _ in page]
        keywords = not (retrieval.mode == "vector" and query_vec is not None)
        keyword = _shares(engine, conn, op.query, fids) if keywords else {}
    keyword_rank = _places(signals.keyword, fids) if keywords else {}
    cosine, vector_rank = _vector_side(signals, fids)
    return [
        Explanation(
            item=items.to_item(rows[row_id], score=score, search=True),  # type: ignore[arg-type]
            score=score,
            keyword=keyword.get(fid),
            keyword_rank=keyword_rank.get(fid),
            cosine=cosine.get(fid),
            vector_rank=vector_rank.get(fid),
            in_window=None if signals.inside is None else fid in signals.inside,
            anchor=fid == signals.anchor,
        )
        for fid, score, row_id in page
    ]


def _bare(item: SearchItem) -> Explanation:
    return Explanation(item, None, None, None, None, None)


def _places(ranked: Ranked, fids: list[int]) -> dict[int, int]:
    """{fact_id: 1-based place in `ranked`} of those of `fids` it holds."""
    wanted = set(fids)
    return {fid: place for place, (fid, _, _) in enumerate(ranked, start=1) if fid in wanted}


def _shares(engine: Any, conn: Any, query: str, fids: list[int]) -> dict[int, float]:
    """{fact_id: share of the query's terms held} of `fids`; a memory that holds no
    term of the query is left out."""
    terms = engine.reads.keyword_terms(conn, query)
    share = engine.reads.keyword_coverage(conn, terms, fids) if terms and fids else {}
    return {fid: s for fid, s in share.items() if s > 0}


def _vector_side(signals: Signals, fids: list[int]) -> tuple[dict[int, float], dict[int, int]]:
    """({fact_id: cosine}, {fact_id: vector rank}) of `fids` as the search computed
    them: the ranking's own similarities, and the cosines scoring added (empty where
    vectors did not rank)."""
    wanted = set(fids)
    cosine = {fid: sim for fid, sim, _ in signals.vector if fid in wanted}
    cosine.update((fid, signals.cosine[fid]) for fid in wanted if fid in signals.cosine)
    return cosine, _places(signals.vector, fids)
