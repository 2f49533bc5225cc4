"""Why a search returned what it did: each hit's score beside its two signals.

`explain` ranks with the store's own ranker (`Ranker.page`, so its hits and order are
`search`'s, threshold and page included), then asks each side about those hits alone: the share of
the query's terms the memory holds and its place in the keyword ranking; its cosine
similarity and its place in the vector ranking. Both side rankings run over the same
scope, prefix and filter as the search. Nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph.store.base import SearchItem, SearchOp

from sgam_store.read import candidates, items, scoring
from sgam_store.read.query import Ranked, RetrievalConfig, Scope, vector_depth
from sgam_store.read.scope import Bounds, plain


@dataclass(frozen=True)
class Explanation:
    """One search hit and the two contributions behind its score.

    `keyword` is the share of the query's distinct terms the memory's keyword row holds
    (1.0: all of them), `keyword_rank` its 1-based place in the BM25 ranking; `cosine`
    its best field's cosine similarity to the query, `vector_rank` its place in the
    vector ranking. Each is None where that side did not find the memory (no shared
    term, beyond the ranking's depth, no vector) or the store has no such index or the
    retrieval mode leaves the side out. `score` is the hit's score as `search` reports
    it (None for a listing: a search without a query).
    """

    item: SearchItem
    score: float | None
    keyword: float | None
    keyword_rank: int | None
    cosine: float | None
    vector_rank: int | None


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
        page = ranker.page(conn, scope, op, query_vec, retrieval)
        rows = engine.reads.rows_by_id(conn, [row_id for _, _, row_id in page])
        fids = [fid for fid, _, _ in page]
        depth = max(op.offset + op.limit, retrieval.depth)
        bounds = plain(engine, conn, scope, op)
        keyword, keyword_rank = _keyword_side(bounds, op.query, fids, depth)
        cosine, vector_rank = _vector_side(bounds, query_vec, fids, depth)
    if retrieval.mode == "keyword":
        cosine, vector_rank = {}, {}
    elif retrieval.mode == "vector" and query_vec is not None:
        keyword, keyword_rank = {}, {}
    return [
        Explanation(
            item=items.to_item(rows[row_id], score=score, search=True),  # type: ignore[arg-type]
            score=score,
            keyword=keyword.get(fid),
            keyword_rank=keyword_rank.get(fid),
            cosine=cosine.get(fid),
            vector_rank=vector_rank.get(fid),
        )
        for fid, score, row_id in page
    ]


def _bare(item: SearchItem) -> Explanation:
    return Explanation(item, None, None, None, None, None)


def _places(ranked: Ranked) -> dict[int, int]:
    return {fid: place for place, (fid, _, _) in enumerate(ranked, start=1)}


def _keyword_side(
    bounds: Bounds, query: str, fids: list[int], depth: int
) -> tuple[dict[int, float], dict[int, int]]:
    """({fact_id: share of the query's terms held}, {fact_id: BM25 rank}) of `fids`;
    a memory that holds no term of the query is in neither."""
    engine, conn = bounds.engine, bounds.conn
    terms = engine.reads.keyword_terms(conn, query)
    share = engine.reads.keyword_coverage(conn, terms, fids) if terms and fids else {}
    held = {fid: s for fid, s in share.items() if s > 0}
    seen = candidates.Admission(bounds)
    ranked = candidates.keyword_ranking(bounds, query, depth, seen)
    wanted = set(fids)
    return held, {fid: p for fid, p in _places(ranked).items() if fid in wanted}


def _vector_side(
    bounds: Bounds, query_vec: bytes | None, fids: list[int], depth: int
) -> tuple[dict[int, float], dict[int, int]]:
    """({fact_id: cosine}, {fact_id: vector rank}) of `fids`; empty without a query
    vector (no index, or a query with no direction)."""
    if query_vec is None or not fids:
        return {}, {}
    cosine = scoring.cosine_for(bounds.engine, bounds.conn, fids, query_vec)
    seen = candidates.Admission(bounds)
    ranked = candidates.vector_ranking(bounds, query_vec, vector_depth(depth), seen)
    wanted = set(fids)
    return cosine, {fid: p for fid, p in _places(ranked).items() if fid in wanted}
