"""Hybrid ranking: a search's vector and keyword rankings, fused into one order.

`Ranker` runs both rankings for a query (the pieces that call the engine live in
`search`; the vector side may scan the in-process cache in a thread of its own) and fuses them with
the functions below. The score it reports is a similarity that never rises with rank.
Nothing here writes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from langgraph.store.base import Op, SearchItem, SearchOp

from sgam_store import ledger
from sgam_store.core.models import Fact
from sgam_store.read import search
from sgam_store.read.index import IndexSpec
from sgam_store.read.search import Candidates, Ranked, RetrievalConfig, Scan, Scope

# Hybrid search overlaps the vector scan with the keyword ranking from this many vectors
# in scope. Measured (2 cores): 400 vectors 1.16 vs 1.19 ms sequential, 2,000 1.53 vs
# 1.72 ms; below a few hundred the thread hand-off would cost more than the scan.
OVERLAP_MIN_VECTORS = 256
_CORES = os.cpu_count() or 1
# A prefix deeper than its tenant (a subject, a LangMem user under ("memories", user))
# often holds a few facts among the tenant's thousands. Ranked tenant-wide, most hits fell
# outside it, and each deeper round was another candidate check. Up to this many facts,
# the prefix's own facts are scored directly (Ranker._rank_small).
SMALL_SCOPE_MAX = 2000


class Ranker:
    """Ranks a store's searches: embeds queries, runs the rankings, fuses them.

    Holds what ranking keeps between searches: the keyword term statistics and the
    scanner thread. It receives the store's engine, index spec and the engine's
    in-process vector cache (or None); the retrieval config is passed per call, since
    the store's may be replaced.
    """

    __slots__ = ("_cache", "_engine", "_pool", "_pool_pid", "_spec", "_terms")

    def __init__(self, engine: Any, spec: IndexSpec | None, cache: Any) -> None:
        self._engine = engine
        self._spec = spec
        self._cache = cache
        self._terms = search.TermStats()
        self._pool: ThreadPoolExecutor | None = None  # see `_scan`
        self._pool_pid = 0

    def close(self) -> None:
        """Shut the scanner thread down (a later overlapped search starts a new one)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def embed_queries(self, ops: Sequence[Op]) -> dict[int, bytes]:
        """Query vectors of the batch's searches with a query, by op position."""
        if not self._spec:
            return {}
        wanted = {i: op.query for i, op in enumerate(ops) if isinstance(op, SearchOp) and op.query}
        vectors = {i: self._spec.embeddings.embed_query(q) for i, q in wanted.items()}
        # A zero vector has no direction, so no cosine similarity: such a query (e.g. only
        # punctuation) is answered by keywords alone.
        return {i: self._spec.check(v) for i, v in vectors.items() if any(v)}

    def search(
        self, scope: Scope, op: SearchOp, query_vec: bytes | None, retrieval: RetrievalConfig
    ) -> list[SearchItem]:
        """The page of `op` (a listing without a query), the threshold applied."""
        with self._engine.reading() as conn:
            if not op.query:
                return search.listing(self._engine, conn, scope, op)
            ranked = self.rank(conn, scope, op, query_vec, retrieval)
            floor = retrieval.threshold
            if floor is not None:
                ranked = [r for r in ranked if r[1] is not None and r[1] >= floor]
            page = ranked[op.offset : op.offset + op.limit]
            rows = self._engine.reads.rows_by_id(conn, [row_id for _, _, row_id in page])
        return [
            search.to_item(rows[row_id], score=score, search=True)  # type: ignore[misc]
            for _, score, row_id in page
        ]

    def facts(self, scope: Scope, query: str, limit: int, retrieval: RetrievalConfig) -> list[Fact]:
        """Ranked facts for `query` within `scope` (the read path's search step)."""
        prefix = self._engine.layout.absolute(scope.tenant, ()) if scope.tenant else ()
        op = SearchOp(prefix, query=query, limit=limit)
        vec = self.embed_queries([op]).get(0)
        with self._engine.reading() as conn:
            ranked = self.rank(conn, scope, op, vec, retrieval)[:limit]
            rows = self._engine.reads.rows_by_id(conn, [row_id for _, _, row_id in ranked])
        return [ledger.row_to_fact(rows[row_id]) for _, _, row_id in ranked]

    def rank(
        self,
        conn: Any,
        scope: Scope,
        op: SearchOp,
        query_vec: bytes | None,
        retrieval: RetrievalConfig,
    ) -> Ranked:
        """Order by the configured retrieval mode. The score never rises with rank: the
        cosine similarity when vectors exist (in hybrid mode on the fused order, see
        `similarity_scores`), else the calibrated keyword score (`search.calibrated`)."""
        ranked, keyword_only = self._order(conn, scope, op, query_vec, retrieval)
        if keyword_only:
            return search.calibrated(self._engine, conn, op.query or "", ranked)
        return ranked

    def _order(
        self,
        conn: Any,
        scope: Scope,
        op: SearchOp,
        query_vec: bytes | None,
        retrieval: RetrievalConfig,
    ) -> tuple[Ranked, bool]:
        """The ranking and whether it is keywords' alone (scored by BM25, to be
        calibrated): keyword mode, no embeddings, or no vectors among the candidates."""
        cfg = retrieval
        want = op.offset + op.limit
        depth = max(want, cfg.depth)
        engine = self._engine
        use_vectors = query_vec is not None and self._spec is not None and cfg.mode != "keyword"
        small = self._small_scope(conn, scope, op)
        if small is not None:
            return self._rank_small(conn, scope, op, query_vec if use_vectors else None, cfg, small)
        seen = Candidates(engine, conn, scope, op)
        if not use_vectors:
            return search.keyword_ranking(engine, conn, scope, op, want, seen), True
        assert query_vec is not None
        if cfg.mode == "vector":
            scan = self._scan(conn, scope, op, query_vec, depth, overlap=False)
            found = search.vector_ranking(engine, conn, scope, op, query_vec, depth, seen, scan())
            return found, False
        # The keyword query is prepared before the scan starts, so the two threads do not
        # contend for the GIL while both run Python.
        keywords = search.keyword_match(engine, conn, scope, op, self._terms)
        scan = self._scan(conn, scope, op, query_vec, depth, overlap=True)
        vector, keyword = hybrid_rankings(
            engine, conn, scope, op, query_vec, depth, seen, scan, keywords
        )
        vector = vector[: contributed(depth, cfg)]
        # Rank every candidate on both signals: keyword hits outside the KNN depth get their
        # exact cosine, so the vector ranking covers the whole candidate union.
        cosine = {fid: score for fid, score, _ in vector}
        missing = [fid for fid, _, _ in keyword if fid not in cosine]
        extra = search.cosine_for(engine, conn, missing, query_vec, scan())
        cosine.update(extra)
        vector = sorted(
            vector + [(fid, extra[fid], row) for fid, _, row in keyword if fid in extra],
            key=lambda t: -t[1],
        )
        return fuse(vector, keyword, cosine, cfg), not cosine

    def _small_scope(self, conn: Any, scope: Scope, op: SearchOp) -> dict[int, int] | None:
        """{fact_id: row_id} of a search scope deeper than its tenant that holds at most
        SMALL_SCOPE_MAX facts; None for any other scope."""
        tenant, prefix = search.narrow(self._engine, scope, op)
        narrowing = len(prefix) - (self._engine.layout.tenant_of(prefix) is not None)
        if tenant is None or not narrowing:
            return None  # all tenants, or a whole tenant: no label but the tenant's
        found = self._engine.reads.in_scope(
            conn, scope.at, scope.known_at, tenant, prefix, op.filter, SMALL_SCOPE_MAX + 1
        )
        return found if len(found) <= SMALL_SCOPE_MAX else None

    def _rank_small(
        self,
        conn: Any,
        scope: Scope,
        op: SearchOp,
        query_vec: bytes | None,
        cfg: RetrievalConfig,
        found: dict[int, int],
    ) -> tuple[Ranked, bool]:
        """`_order` over a small scope's facts, each scored directly: the same signals,
        depths and fusion as the tenant-wide path, with no candidate left to check. Hybrid
        search also drops the query's terms common in the scope (`scope_keyword_match`):
        counting them is a query per term, affordable over a small scope only."""
        want = op.offset + op.limit
        depth = max(want, cfg.depth)
        ids = sorted(found)
        hybrid = query_vec is not None and cfg.mode == "hybrid"
        keyword: Ranked = []
        if query_vec is None or hybrid:
            match = (
                search.scope_keyword_match(self._engine, conn, scope, op, ids, self._terms)
                if hybrid
                else search.keyword_match(self._engine, conn, scope, op, None)
            )
            hits = self._engine.reads.keyword_scores(conn, match, ids) if match else []
            keyword = [(fid, score, found[fid]) for fid, score in hits]
        if query_vec is None:
            return keyword[:want], True
        cosine = self._cosines(conn, scope, ids, query_vec)
        ranked = sorted(cosine.items(), key=lambda kv: (-kv[1], kv[0]))
        vector = [(fid, sim, found[fid]) for fid, sim in ranked]
        if not hybrid:
            return vector, False
        vector, keyword = vector[: contributed(depth, cfg)], keyword[:depth]
        near = {fid for fid, _, _ in vector}
        extra = [(f, cosine[f], row) for f, _, row in keyword if f not in near and f in cosine]
        vector = sorted(vector + extra, key=lambda t: -t[1])
        return fuse(vector, keyword, cosine, cfg), not cosine

    def _cosines(
        self, conn: Any, scope: Scope, fact_ids: list[int], query_vec: bytes
    ) -> dict[int, float]:
        cache = self._mirror(conn, scope, query_vec)
        if cache is not None:
            return cache.similarities(query_vec, fact_ids)
        return self._engine.reads.similarities(conn, fact_ids, query_vec)

    def _mirror(self, conn: Any, scope: Scope, query_vec: bytes) -> Any | None:
        """The in-process vector mirror, up to date, where it can answer this query: a
        current scope (it mirrors current vectors only) and a query with a direction."""
        cache = self._cache if scope.current else None
        if cache is None:
            return None
        cache.ensure(conn)
        return cache if cache.usable(query_vec) else None

    def _scan(
        self, conn: Any, scope: Scope, op: SearchOp, query_vec: bytes, want: int, *, overlap: bool
    ) -> Callable[[], Scan | None]:
        """The vector cache's scan for this search, its first `want` hits ranked, or None
        where the engine's vector index must answer (a point-in-time scope, no cache, a
        zero query).

        With `overlap` (hybrid search) a large scan runs in this ranker's scanner thread
        while the keyword ranking runs on the connection: SQLite releases the GIL while it
        executes, so on two cores the search costs about the slower side instead of the
        sum. Not the other way round: numpy's einsum keeps the GIL, so the keyword ranking
        in the thread would wait.
        """
        cache = self._mirror(conn, scope, query_vec)
        if cache is None:
            return lambda: None
        tenant = search.tenant_of(self._engine, scope, op)

        def run() -> Scan:
            scan = cache.scan(query_vec, tenant)
            scan.top(search.vector_depth(want))  # ranked here too, off the main thread
            return scan

        if overlap and _CORES > 1 and cache.count(tenant) >= OVERLAP_MIN_VECTORS:
            return self._scanner().submit(run).result
        done = run()
        return lambda: done

    def _scanner(self) -> ThreadPoolExecutor:
        # A forked child inherits the executor but not its thread: start a new one there.
        if self._pool is None or self._pool_pid != os.getpid():
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="sgam-vector-scan")
            self._pool_pid = os.getpid()
        return self._pool


def contributed(depth: int, cfg: RetrievalConfig) -> int:
    """How many vector candidates enter fusion. Rank fusion counts each list's ranks
    alike, so both give `depth` (given 4x as many, RRF followed BM25 among its hits:
    recall@10 0.354 on the harder evaluation's tune half). Relative fusion min-max
    normalizes the cosines over the wider `vector_depth`: over `depth` alone it lost
    questions that keywords decide (benchmarks/retrieval_eval.py, hybrid recall@1/5/10
    0.878 / 0.956 / 0.972 -> 0.828 / 0.917 / 0.956 at depth 30)."""
    return depth if cfg.fusion == "rrf" else search.vector_depth(depth)


def fuse(vector: Ranked, keyword: Ranked, cosine: dict[int, float], cfg: RetrievalConfig) -> Ranked:
    """The configured fusion of both rankings, scored on the cosine scale."""
    signals = [(cfg.vector_weight, vector), (cfg.keyword_weight, keyword)]
    if cfg.fusion == "rrf":
        fused = fuse_rrf(signals, cfg.rrf_k)
    else:
        fused = fuse_relative(signals[0], signals[1], cfg.keyword_floor)
    return similarity_scores(fused, cosine, keyword)


def hybrid_rankings(
    engine: Any,
    conn: Any,
    scope: Scope,
    op: SearchOp,
    query_vec: bytes,
    want: int,
    seen: Candidates,
    scan: Callable[[], Scan | None],
    keywords: Any | None,
) -> tuple[Ranked, Ranked]:
    """(vector ranking, keyword ranking): keywords `want` deep when that many match,
    vectors at least as deep (how many of them enter fusion is `contributed`).

    `scan()` waits for the cache's similarity scan, which may be running in another
    thread while the keyword ranking runs here (None: use the engine's vector index).
    `keywords` is the engine's keyword query. The first batch of both sides is checked
    against the scope in one query.
    """
    keyword_fetch: search.Fetch = (
        search.keyword_fetch(engine, conn, keywords) if keywords else lambda n: ([], True)
    )
    kw_first = keyword_fetch(search.keyword_depth(want))
    cached = scan()
    vec_first = (
        search.cached_vectors(cached)(search.vector_depth(want)) if cached is not None else None
    )
    seen.check(fid for fid, _ in (vec_first[0] if vec_first else []) + kw_first[0])
    vector = search.vector_ranking(
        engine, conn, scope, op, query_vec, want, seen, cached, vec_first
    )
    keyword = search.deepen(keyword_fetch, search.keyword_depth(want), want, seen, kw_first)[:want]
    return vector, keyword


def _tie_ranks(ranked: Ranked) -> dict[int, int]:
    """1-based competition ranks: equal scores share a rank, so ties add no order."""
    ranks: dict[int, int] = {}
    for position, (fact_id, score, _) in enumerate(ranked):
        tied = position > 0 and score == ranked[position - 1][1]
        ranks[fact_id] = ranks[ranked[position - 1][0]] if tied else position + 1
    return ranks


def fuse_rrf(weighted: list[tuple[float, Ranked]], rrf_k: int) -> list[tuple[int, float, Any]]:
    """Weighted reciprocal rank fusion: sum of weight / (rrf_k + rank) over rankings.

    Returns (fact_id, score, row) best first, the score divided by its ceiling (first in
    every ranking) so it lies in (0, 1]; ties keep the first ranking's order.
    """
    fused: dict[int, float] = {}
    rows: dict[int, Any] = {}
    order: dict[int, int] = {}
    for weight, ranked in weighted:
        for fact_id, rank in _tie_ranks(ranked).items():
            fused[fact_id] = fused.get(fact_id, 0.0) + weight / (rrf_k + rank)
        for fact_id, _, row in ranked:
            rows.setdefault(fact_id, row)
            order.setdefault(fact_id, len(order))
    ceiling = sum(weight for weight, _ in weighted) / (rrf_k + 1) or 1.0
    best = sorted(fused, key=lambda fid: (-fused[fid], order[fid]))
    return [(fid, fused[fid] / ceiling, rows[fid]) for fid in best]


def _min_max(scores: dict[int, float]) -> dict[int, float]:
    low, high = min(scores.values()), max(scores.values())
    span = high - low
    return {fid: (v - low) / span if span else 1.0 for fid, v in scores.items()}


def _floored(scores: dict[int, float], floor: float) -> dict[int, float]:
    """Min-max into [floor, 1]: every match keeps a part above a non-match's 0."""
    return {fid: floor + (1 - floor) * v for fid, v in _min_max(scores).items()}


def fuse_relative(
    vector: tuple[float, Ranked],
    keyword: tuple[float, Ranked],
    floor: float = search.KEYWORD_FLOOR,
) -> list[tuple[int, float, Any]]:
    """Relative score fusion: the weighted mean of each signal's normalized score.

    Unlike RRF it keeps score gaps: a candidate that is clearly best on one signal and
    merely tied on the other wins, where rank fusion would let the ties decide. The
    vector ranking covers every candidate (keyword hits get their exact cosine), so it
    is min-max normalized over them. BM25 is min-max normalized onto [floor, 1]:
    the weakest keyword match still counts, so of two candidates equal on vectors the
    one that also matches the words ranks first. A candidate missing from
    a ranking gets 0 for that signal. The score is the fused one, in [0, 1], so it
    falls with rank.
    """
    fused: dict[int, float] = {}
    rows: dict[int, Any] = {}
    total = vector[0] + keyword[0] or 1.0
    for (weight, ranked), normalize in (
        (vector, _min_max),
        (keyword, partial(_floored, floor=floor)),
    ):
        if not ranked:
            continue
        for fact_id, norm in normalize({fid: score for fid, score, _ in ranked}).items():
            fused[fact_id] = fused.get(fact_id, 0.0) + weight * norm / total
        for fact_id, _, row in ranked:
            rows.setdefault(fact_id, row)
    best = sorted(fused, key=lambda fid: -fused[fid])
    return [(fid, fused[fid], rows[fid]) for fid in best]


def similarity_scores(
    fused: list[tuple[int, float, Any]], cosine: dict[int, float], keyword: Ranked
) -> Ranked:
    """The fused order, scored on the cosine-similarity scale, never rising down the list.

    LangGraph's stores report a search score as the similarity, and its store suite checks
    that; the fused order can rank a keyword match above a more similar hit. Each hit
    therefore gets the best similarity at or below its rank: its own cosine wherever the
    order agrees with similarity (always, for one result), otherwise that of the more
    similar hit it outranks. A hit without vectors takes the score above it. With no
    vectors among the candidates the order is the keyword one, scored as in keyword mode.
    """
    if not any(fid in cosine for fid, _, _ in fused):
        return keyword
    scores: list[float | None] = []
    best: float | None = None
    for fid, _, _ in reversed(fused):
        value = cosine.get(fid)
        if value is not None and (best is None or value > best):
            best = value
        scores.append(best)
    scores.reverse()
    for i in range(1, len(scores)):
        if scores[i] is None:
            scores[i] = scores[i - 1]
    return [(fid, score, row) for (fid, _, row), score in zip(fused, scores, strict=True)]
