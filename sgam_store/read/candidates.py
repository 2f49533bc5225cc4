"""The read path's second stage: candidate facts from each source, checked against the scope.

Given the scope stage's `Bounds`, `gather` asks the sources a search uses (the keyword
ranking, the vector ranking, or a small scope's own facts) for their best hits, admits
them against the scope, prefix and filter (`Admission`, deepening until enough pass) and
hands on a `Found`: each source's ranking and the cosines already known. Hybrid search
runs the vector scan in a thread of its own beside the keyword ranking. A new source
plugs in here as one more ranking of `Found`. Nothing here writes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from sgam_store.read.query import (
    Batch,
    Fetch,
    Hits,
    Ranked,
    Scan,
    Search,
    keyword_depth,
    vector_depth,
)
from sgam_store.read.scope import Bounds
from sgam_store.read.terms import ScopeScorer, TermStats, pruned_terms, scope_keyword_hits

# Hybrid search overlaps the vector scan with the keyword ranking from this many vectors
# in scope. Measured (2 cores): 400 vectors 1.16 vs 1.19 ms sequential, 2,000 1.53 vs
# 1.72 ms; below a few hundred the thread hand-off would cost more than the scan.
OVERLAP_MIN_VECTORS = 256
_CORES = os.cpu_count() or 1


@dataclass(frozen=True)
class Sources:
    """What the stage reads besides the engine's statements, kept between searches by the
    pipeline: the keyword terms' counts, the engine's in-process keyword scorer of small
    scopes and vector mirror (optional features: None where the engine has none), and
    the scanner thread's executor."""

    stats: TermStats
    keywords: Any | None
    cache: Any | None
    scanner: Callable[[], ThreadPoolExecutor]


@dataclass(frozen=True)
class Found:
    """What the stage hands on. `keyword` and `vector`: each source's admitted ranking
    (fact_id, score, row_id), best first (`vector` None where vectors do not rank or a
    small scope's cosines stand instead). `cosine`: the cosines already read, by fact
    (a small scope's: every fact's; hybrid search's: those of the first keyword batch
    where the engine's first step took them, None for a fact without vectors).
    `members`: a small scope's facts (fact_id -> row_id), else None. `scan`: the vector
    mirror's finished scan, for the cosines of keyword hits (None: the engine answers).
    `mirror`: the engine's in-process vector mirror where it answers this search (its
    `units` give `centering` the scope's vectors), else None."""

    keyword: Ranked = field(default_factory=list)
    vector: Ranked | None = None
    cosine: dict[int, Any] = field(default_factory=dict)
    members: dict[int, int] | None = None
    scan: Scan | None = None
    mirror: Any | None = None


def gather(bounds: Bounds, search: Search, sources: Sources) -> Found:
    """The stage: every source's candidates for `search` within `bounds`."""
    if bounds.small is not None:
        return _small(bounds, search, sources)
    seen = Admission(bounds)
    if search.vector is None:
        ranking = keyword_ranking(bounds, search.text, search.want, seen, sources.keywords)
        return Found(keyword=ranking)
    if search.cfg.mode == "vector":
        scan = _scan(bounds, search.vector, sources, search.depth, overlap=False)
        return Found(vector=vector_ranking(bounds, search.vector, search.depth, seen, scan()))
    # The keyword query is prepared before the scan starts, so the two threads do not
    # contend for the GIL while both run Python.
    keywords = keyword_match(bounds, search.text, sources.stats, bounds.terms)
    scan = _scan(bounds, search.vector, sources, search.depth, overlap=True)
    vector, keyword, known = hybrid_rankings(
        bounds, search.vector, search.depth, seen, scan, keywords
    )
    done = scan()  # finished: the rankings awaited it
    return Found(keyword, vector, known, scan=done, mirror=sources.cache if done else None)


def _small(bounds: Bounds, search: Search, sources: Sources) -> Found:
    """A small scope's facts, each a candidate: their keyword hits (hybrid search drops
    the query's terms common in the scope: `scope_keyword_hits`; counting them is a query
    per term, affordable over a small scope only) and their cosines, where the engine's
    `scope_scored` did not read them already."""
    small, engine, conn = bounds.small, bounds.engine, bounds.conn
    members: dict[int, int] = small.members
    ids = sorted(members)
    keyword: Ranked = []
    if search.vector is None or search.hybrid:
        scorer = ScopeScorer(engine, conn, bounds.tenant, ids, sources.keywords)
        if search.hybrid:
            scored = (bounds.terms, small.keyword) if bounds.terms is not None else None
            hits = scope_keyword_hits(engine, conn, search.text, scorer, sources.stats, scored)
        else:
            hits = scorer.scores(scorer.terms(search.text))
        keyword = [(fid, score, members[fid]) for fid, score in hits]
    if search.vector is None:
        return Found(keyword=keyword[: search.want])
    mirror = _mirror(bounds, search.vector, sources.cache)
    cosine = small.cosines
    if cosine is None:
        cosine = _cosines(bounds, ids, search.vector, mirror)
    return Found(keyword=keyword, cosine=cosine, members=members, mirror=mirror)


def _cosines(
    bounds: Bounds, fact_ids: list[int], query_vec: bytes, mirror: Any | None
) -> dict[int, float]:
    if mirror is not None:
        return mirror.similarities(query_vec, fact_ids)
    return bounds.engine.reads.similarities(bounds.conn, fact_ids, query_vec)


def _mirror(bounds: Bounds, query_vec: bytes, cache: Any | None) -> Any | None:
    """The in-process vector mirror, up to date, where it can answer this query: a
    current scope (it mirrors current vectors only) and a query with a direction."""
    if cache is None or not bounds.scope.current:
        return None
    cache.ensure(bounds.conn)
    return cache if cache.usable(query_vec) else None


def _scan(
    bounds: Bounds, query_vec: bytes, sources: Sources, want: int, *, overlap: bool
) -> Callable[[], Scan | None]:
    """The vector mirror's scan for this search, its first `want` hits ranked, or None
    where the engine's vector index must answer (a point-in-time scope, no mirror, a
    zero query).

    With `overlap` (hybrid search) a large scan runs in the pipeline's scanner thread
    while the keyword ranking runs on the connection: SQLite releases the GIL while it
    executes, so on two cores the search costs about the slower side instead of the
    sum. Not the other way round: numpy's einsum keeps the GIL, so the keyword ranking
    in the thread would wait.
    """
    cache = _mirror(bounds, query_vec, sources.cache)
    if cache is None:
        return lambda: None
    tenant = bounds.tenant

    def run() -> Scan:
        scan = cache.scan(query_vec, tenant)
        scan.top(vector_depth(want))  # ranked here too, off the main thread
        return scan

    if overlap and _CORES > 1 and cache.count(tenant) >= OVERLAP_MIN_VECTORS:
        return sources.scanner().submit(run).result
    done = run()
    return lambda: done


class Admission:
    """Candidate facts checked against the scope, prefix and filters, each at most once.

    Rankings carry row ids, not rows: only the page that is returned is read in full
    (the engine's `rows_by_id`), so candidates that do not make the page cost two
    integers each. A hybrid search checks both rankings' candidates here in one query.
    """

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds
        self.rows: dict[int, int | None] = {}  # fact_id -> visible version's row_id
        self.pending: list[int] = []  # to be checked with the next check's facts

    def defer(self, fact_ids: Iterable[int]) -> None:
        """Check these with the next `check`: one statement for both rankings' first
        batches, even when the vector batch comes from the engine after this call."""
        self.pending.extend(fact_ids)

    def learn(self, fact_ids: list[int], admitted: dict[int, int]) -> None:
        """Record a check the engine ran itself: `admitted` of `fact_ids`."""
        self.rows.update({fid: admitted.get(fid) for fid in fact_ids})

    def check(self, fact_ids: Iterable[int]) -> None:
        wanted, self.pending = [*self.pending, *fact_ids], []
        unknown = [fid for fid in dict.fromkeys(wanted) if fid not in self.rows]
        if not unknown:
            return
        bounds = self.bounds
        found = bounds.engine.reads.admitted(bounds.conn, *bounds.where, unknown)
        self.rows.update({fid: found.get(fid) for fid in unknown})

    def admit(self, hits: Hits) -> Ranked:
        """The admitted facts of `hits` (best first), each once, at its best score."""
        self.check(fid for fid, _ in hits)
        ranked: Ranked = []
        taken: set[int] = set()
        for fid, score in hits:
            row = self.rows[fid]
            if row is not None and fid not in taken:
                taken.add(fid)
                ranked.append((fid, score, row))
        return ranked


def deepen(fetch: Fetch, n: int, want: int, seen: Admission, first: Batch | None = None) -> Ranked:
    """Rank `n` hits, then 4x as many, until `want` are admitted or the hits run out.

    Each ranking is exact within its n; filters run after it, so n grows instead of
    guessing. `first` is the n-hit batch when the caller already fetched it.
    """
    hits, exhausted = first if first is not None else fetch(n)
    while True:
        ranked = seen.admit(hits)
        if len(ranked) >= want or exhausted:
            return ranked
        n *= 4
        hits, exhausted = fetch(n)


def cached_vectors(scan: Scan) -> Fetch:
    """Hits from the in-process cache's scan: no k ceiling, so no scan fallback."""
    return lambda n: (scan.top(n), n >= scan.count)


def vector_ranking(
    bounds: Bounds,
    query_vec: bytes,
    want: int,
    seen: Admission,
    scan: Scan | None = None,
    first: Batch | None = None,
) -> Ranked:
    """(fact_id, similarity, row_id) best first: from the cache's `scan` when given,
    else from the engine's vector index (point-in-time searches), which past its k
    ceiling falls back to an exact scan; `first` is the first batch when the caller
    already fetched it."""
    if scan is not None:
        return deepen(cached_vectors(scan), vector_depth(want), want, seen, first)
    capped = False
    engine, conn, current = bounds.engine, bounds.conn, bounds.scope.current

    def knn(n: int) -> Batch:
        nonlocal capped
        hits, exhausted, capped = engine.reads.nearest(conn, query_vec, n, bounds.tenant, current)
        return hits, exhausted

    ranked = deepen(knn, vector_depth(want), want, seen, first)
    if len(ranked) < want and capped:
        return engine.reads.nearest_exact(conn, *bounds.where, query_vec)
    return ranked


def keyword_match(
    bounds: Bounds, text: str, prune: TermStats | None, terms: list[str] | None = None
) -> Any | None:
    """The engine's keyword query for `text` in scope; `prune` drops very common terms
    (hybrid search, where vectors carry the semantics). None when nothing can match.
    `terms`: those `pruned_terms` already gave for this search.

    The engine analyzes the query as its keyword rows were (`core.analysis`: the
    database's language), so its terms are spelled as the index's."""
    engine, conn = bounds.engine, bounds.conn
    if terms is None:
        if prune is not None:
            terms = pruned_terms(engine, conn, text, prune)
        else:
            terms = engine.reads.keyword_terms(conn, text)
    return engine.reads.keyword_query(conn, terms, bounds.tenant)


def keyword_fetch(engine: Any, conn: Any, query: Any) -> Fetch:
    """Hits of the engine's keyword `query` by BM25 alone, scores in [0, 1), higher is
    better."""

    def fetch(n: int) -> Batch:
        hits = engine.reads.keyword_hits(conn, query, n)
        return hits, len(hits) < n

    return fetch


def keyword_ranking(
    bounds: Bounds, text: str, want: int, seen: Admission, mirror: Any | None = None
) -> Ranked:
    """(fact_id, BM25 score, row_id) by BM25 alone (keyword mode, or no embeddings); in a
    tenant's large scope, over its terms' newest postings (`recent_fetch`). `mirror` is
    the engine's in-process keyword scorer (None: its statements score)."""
    engine, conn = bounds.engine, bounds.conn
    terms = engine.reads.keyword_terms(conn, text)
    match = engine.reads.keyword_query(conn, terms, bounds.tenant)
    if match is None:
        return []
    fetch = keyword_fetch(engine, conn, match)
    if bounds.tenant is not None:
        fetch = recent_fetch(bounds, terms, fetch, mirror)
    return deepen(fetch, keyword_depth(want), want, seen)[:want]


# A large scope's keyword step (a whole tenant, or a prefix of more than SMALL_SCOPE_MAX
# facts) ranks, of each query term, at most this many of the tenant's rows holding it, the
# newest, for a first batch of hits (`keyword_depth`: a page of up to 16), in proportion
# for more: BM25 over every row holding a term grows with the tenant (~8,200 rows of
# "passport" at 100k facts), this does not. Measured on the 100k stores' big tenants
# (bench_ui's query and 60 of bench_table's questions; docs/read-path.md, large scopes):
# 256 found top 10s as good by BM25 as the unbounded ranking's in 59 of 61 questions;
# 1,024 in all, at about the unbounded ranking's CPU time for the median question.
RECENT_POSTINGS = 256


def recent_fetch(bounds: Bounds, terms: list[str], exact: Fetch, mirror: Any | None) -> Fetch:
    """`exact` (the keyword ranking over every row holding a term) where no term is held
    by more than the postings read (the same hits, same order, a bounded cost); else
    BM25 over the union of each term's newest postings (`keyword_recent`), scored as
    `exact` scores them (the whole index's statistics), best first.

    What that returns differently: a memory whose every query term is held by more
    than that many newer memories of the tenant is not a keyword candidate. Only the
    first batch is bounded: asked for more (a filter or prefix rejected too many of
    it), `deepen` gets the unbounded ranking, as before, where a second bounded round
    of 4 times the postings would score thousands of rows in Python."""
    engine, conn, tenant = bounds.engine, bounds.conn, bounds.tenant
    asked: list[int] = []

    def fetch(n: int) -> Batch:
        asked.append(n)
        if len(asked) > 1:
            return exact(n)
        postings = RECENT_POSTINGS * max(1, n // keyword_depth(1))
        ids, complete = engine.reads.keyword_recent(conn, terms, tenant, postings)
        if complete:
            return exact(n)
        scorer = ScopeScorer(engine, conn, tenant, sorted(ids), mirror, keep=False)
        return scorer.scores(terms)[:n], False

    return fetch


def hybrid_rankings(
    bounds: Bounds,
    query_vec: bytes,
    want: int,
    seen: Admission,
    scan: Callable[[], Scan | None],
    keywords: Any | None,
) -> tuple[Ranked, Ranked, dict[int, float | None]]:
    """(vector ranking, keyword ranking, cosines known so far): keywords `want` deep when
    that many match, vectors at least as deep (how many of them enter fusion is
    `scoring.contributed`); the cosines are those of the first keyword batch where the
    engine's first step took them (None: a fact without vectors).

    `scan()` waits for the cache's similarity scan, which may be running in another
    thread while the keyword ranking runs here (None: use the engine's vector index).
    `keywords` is the engine's keyword query. The first batch of both sides is checked
    against the scope in one query (the vector ranking's first admit), or, where the
    engine has `hybrid_first`, fetched, checked and the keyword batch's cosines taken in
    one statement.
    """
    engine, conn = bounds.engine, bounds.conn
    fetch_keywords: Fetch = (
        keyword_fetch(engine, conn, keywords) if keywords else lambda n: ([], True)
    )
    known: dict[int, float | None] = {}
    first = _first_step(bounds, query_vec, want, scan, keywords)
    if first is not None:
        kw_first, vec_first = first.keyword, first.vector
        seen.learn([fid for fid, _ in kw_first[0] + vec_first[0]], first.admitted)
        known = {fid: first.cosines.get(fid) for fid, _ in kw_first[0]}
        cached = None
    else:
        kw_first = fetch_keywords(keyword_depth(want))
        cached = scan()
        vec_first = cached_vectors(cached)(vector_depth(want)) if cached is not None else None
        seen.defer(fid for fid, _ in (vec_first[0] if vec_first else []) + kw_first[0])
    vector = vector_ranking(bounds, query_vec, want, seen, cached, vec_first)
    keyword = deepen(fetch_keywords, keyword_depth(want), want, seen, kw_first)[:want]
    return vector, keyword, known


def _first_step(
    bounds: Bounds,
    query_vec: bytes,
    want: int,
    scan: Callable[[], Scan | None],
    keywords: Any | None,
) -> Any | None:
    """The engine's `hybrid_first` (an optional feature, see `core.engine.OPTIONAL`):
    both rankings' first batches, their scope check and the keyword batch's cosines in
    one round trip, where no in-process scan answers; None where the engine has none."""
    step = getattr(bounds.engine.reads, "hybrid_first", None)
    if step is None or scan() is not None:
        return None
    return step(
        bounds.conn,
        *bounds.where,
        keywords,
        query_vec,
        keyword_depth(want),
        vector_depth(want),
    )
