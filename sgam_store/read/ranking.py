"""A search with a query, end to end: candidates, the vector and keyword rankings, fusion.

`Ranker` runs both rankings (the vector side may scan the in-process cache in a thread
of its own), admits their candidates against the scope (`Candidates`, deepening until
enough pass) and fuses them with the functions below. The score it reports is a
similarity that never rises with rank. The read path runs one way: this module calls
`search` for the scope's pieces (tenant, prefix), items and listings, and `search`
calls nothing here. Nothing here writes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from operator import itemgetter
from typing import Any

from langgraph.store.base import Op, SearchItem, SearchOp

from sgam_store import ledger
from sgam_store.core.models import Fact, ScopeSignals
from sgam_store.read import search
from sgam_store.read.index import IndexSpec
from sgam_store.read.search import Batch, Fetch, Hits, Ranked, RetrievalConfig, Scan, Scope

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

    __slots__ = ("_cache", "_engine", "_keywords", "_pool", "_pool_pid", "_spec", "_terms")

    def __init__(self, engine: Any, spec: IndexSpec | None, cache: Any) -> None:
        self._engine = engine
        self._spec = spec
        self._cache = cache
        self._terms = TermStats()
        # The engine's in-process keyword scorer of small scopes (ScopeScorer): an optional
        # feature, as the vector mirror is; SQLite's statement set makes one, PostgreSQL's
        # has none and its statements answer.
        mirror = getattr(engine.reads, "keyword_mirror", None)
        self._keywords = mirror() if mirror is not None else None
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
            page = self.page(conn, scope, op, query_vec, retrieval)
            rows = self._engine.reads.rows_by_id(conn, [row_id for _, _, row_id in page])
        return search.search_items((rows[row_id], score) for _, score, row_id in page)

    def page(
        self,
        conn: Any,
        scope: Scope,
        op: SearchOp,
        query_vec: bytes | None,
        retrieval: RetrievalConfig,
    ) -> Ranked:
        """The ranked hits of `op` (a query) that `search` returns: the threshold, then
        the page. Written once, for `search` and for `explain`."""
        ranked = self.rank(conn, scope, op, query_vec, retrieval)
        floor = retrieval.threshold
        if floor is not None:
            ranked = [r for r in ranked if r[1] is not None and r[1] >= floor]
        return ranked[op.offset : op.offset + op.limit]

    def facts(self, scope: Scope, query: str, limit: int, retrieval: RetrievalConfig) -> list[Fact]:
        """Ranked facts for `query` within `scope` (the read path's search step)."""
        prefix = self._engine.layout.absolute(scope.tenant, ()) if scope.tenant else ()
        op = SearchOp(prefix, query=query, limit=limit)
        vec = self.embed_queries([op]).get(0)
        with self._engine.reading() as conn:
            ranked = self.rank(conn, scope, op, vec, retrieval)[:limit]
            ids = [row_id for _, _, row_id in ranked]
            rows = self._engine.reads.rows_by_id(conn, ids, whole=True)
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
        small, terms = self._small_scope(conn, scope, op, query_vec if use_vectors else None, cfg)
        if small is not None:
            vec = query_vec if use_vectors else None
            return self._rank_small(conn, scope, op, vec, cfg, small, terms)
        seen = Candidates(engine, conn, scope, op)
        if not use_vectors:
            return keyword_ranking(engine, conn, scope, op, want, seen), True
        assert query_vec is not None
        if cfg.mode == "vector":
            scan = self._scan(conn, scope, op, query_vec, depth, overlap=False)
            found = vector_ranking(engine, conn, scope, op, query_vec, depth, seen, scan())
            return found, False
        # The keyword query is prepared before the scan starts, so the two threads do not
        # contend for the GIL while both run Python.
        keywords = keyword_match(engine, conn, scope, op, self._terms, terms)
        scan = self._scan(conn, scope, op, query_vec, depth, overlap=True)
        vector, keyword, known = hybrid_rankings(
            engine, conn, scope, op, query_vec, depth, seen, scan, keywords
        )
        vector = vector[: contributed(depth, cfg)]
        # Rank every candidate on both signals: keyword hits outside the KNN depth get their
        # exact cosine, so the vector ranking covers the whole candidate union.
        cosine = {fid: score for fid, score, _ in vector}
        missing = [fid for fid, _, _ in keyword if fid not in cosine]
        extra = {fid: sim for fid in missing if (sim := known.get(fid)) is not None}
        rest = [fid for fid in missing if fid not in known]
        extra.update(cosine_for(engine, conn, rest, query_vec, scan()))
        cosine.update(extra)
        vector = sorted(
            vector + [(fid, extra[fid], row) for fid, _, row in keyword if fid in extra],
            key=lambda t: -t[1],
        )
        return fuse(vector, keyword, cosine, cfg), not cosine

    def _small_scope(
        self, conn: Any, scope: Scope, op: SearchOp, query_vec: bytes | None, cfg: RetrievalConfig
    ) -> tuple[Any | None, list[str] | None]:
        """(the facts of a search scope deeper than its tenant that holds at most
        SMALL_SCOPE_MAX facts, or None for any other scope; the hybrid query's pruned terms
        where they were read first). The facts are a `ScopeSignals`, or, where the engine has
        `scope_scored` (an optional feature, see `core.engine.OPTIONAL`) and vectors rank,
        its answer: the facts with their keyword scores and cosines in one round trip. The
        terms it needs are read before it; should the scope not be small, the tenant-wide
        keyword query takes them."""
        engine = self._engine
        tenant, prefix = search.narrow(engine, scope, op)
        narrowing = len(prefix) - (engine.layout.tenant_of(prefix) is not None)
        if tenant is None or not narrowing:
            return None, None  # all tenants, or a whole tenant: no label but the tenant's
        where = (scope.at, scope.known_at, tenant, prefix, op.filter)
        step = getattr(engine.reads, "scope_scored", None) if query_vec is not None else None
        if step is None:
            found = engine.reads.in_scope(conn, *where, SMALL_SCOPE_MAX + 1)
            return (ScopeSignals(found) if len(found) <= SMALL_SCOPE_MAX else None), None
        terms = pruned_terms(engine, conn, op, self._terms) if cfg.mode == "hybrid" else None
        query = engine.reads.keyword_query(conn, terms or [], search.tenant_of(engine, scope, op))
        return step(conn, *where, SMALL_SCOPE_MAX, query, query_vec), terms

    def _rank_small(
        self,
        conn: Any,
        scope: Scope,
        op: SearchOp,
        query_vec: bytes | None,
        cfg: RetrievalConfig,
        small: Any,
        terms: list[str] | None,
    ) -> tuple[Ranked, bool]:
        """`_order` over a small scope's facts, each scored directly: the same signals,
        depths and fusion as the tenant-wide path, with no candidate left to check. Hybrid
        search also drops the query's terms common in the scope (`scope_keyword_hits`):
        counting them is a query per term, affordable over a small scope only. `small`
        carries the signals where the engine's `scope_scored` took them (`terms`: the
        hybrid query's)."""
        found: dict[int, int] = small.members
        want = op.offset + op.limit
        depth = max(want, cfg.depth)
        ids = sorted(found)
        hybrid = query_vec is not None and cfg.mode == "hybrid"
        keyword: Ranked = []
        if query_vec is None or hybrid:
            scorer = ScopeScorer(self._engine, conn, scope, op, ids, self._keywords)
            if hybrid:
                scored = (terms, small.keyword) if terms is not None else None
                hits = scope_keyword_hits(self._engine, conn, op, scorer, self._terms, scored)
            else:
                hits = scorer.scores(scorer.terms(op.query or ""))
            keyword = [(fid, score, found[fid]) for fid, score in hits]
        if query_vec is None:
            return keyword[:want], True
        cosine = small.cosines
        if cosine is None:
            cosine = self._cosines(conn, scope, ids, query_vec)
        deep = contributed(depth, cfg) if hybrid else want  # the page alone, if all it is
        ranked = best_first(cosine, deep)
        vector = [(fid, sim, found[fid]) for fid, sim in ranked]
        if not hybrid:
            return vector, False
        keyword = keyword[:depth]
        near = {fid for fid, _, _ in vector}
        extra = [(f, cosine[f], row) for f, _, row in keyword if f not in near and f in cosine]
        if extra:  # else already in this order (a stable sort would keep it)
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
            scan.top(vector_depth(want))  # ranked here too, off the main thread
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


# ------------------------------------------------ candidates and the two rankings


class Candidates:
    """Candidate facts checked against the scope, prefix and filters, each at most once.

    Rankings carry row ids, not rows: only the page that is returned is read in full
    (the engine's `rows_by_id`), so candidates that do not make the page cost two
    integers each. A hybrid search checks both rankings' candidates here in one query.
    """

    def __init__(self, engine: Any, conn: Any, scope: Scope, op: SearchOp) -> None:
        self.engine = engine
        self.conn = conn
        self.scope = scope
        self.op = op
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
        scope, op = self.scope, self.op
        found = self.engine.reads.admitted(
            self.conn,
            scope.at,
            scope.known_at,
            *search.narrow(self.engine, scope, op),
            op.filter,
            unknown,
        )
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


def deepen(fetch: Fetch, n: int, want: int, seen: Candidates, first: Batch | None = None) -> Ranked:
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


def best_first(cosine: dict[int, float], n: int) -> list[tuple[int, float]]:
    """The `n` best (fact_id, cosine), ties by fact id: `heapq.nsmallest(n, items,
    key=(-cosine, id))`, which is that sorted()[:n]. Sorted by id, then stably by cosine,
    descending, it builds no key tuple an item (a user's 100 facts: 14.8 -> 5.9 us)."""
    return sorted(sorted(cosine.items()), key=itemgetter(1), reverse=True)[:n]


def vector_depth(want: int) -> int:
    return max(64, want * 4)


def cached_vectors(scan: Scan) -> Fetch:
    """Hits from the in-process cache's scan: no k ceiling, so no scan fallback."""
    return lambda n: (scan.top(n), n >= scan.count)


def vector_ranking(
    engine: Any,
    conn: Any,
    scope: Scope,
    op: SearchOp,
    query_vec: bytes,
    want: int,
    seen: Candidates,
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
    tenant = search.tenant_of(engine, scope, op)

    def knn(n: int) -> Batch:
        nonlocal capped
        hits, exhausted, capped = engine.reads.nearest(conn, query_vec, n, tenant, scope.current)
        return hits, exhausted

    ranked = deepen(knn, vector_depth(want), want, seen, first)
    if len(ranked) < want and capped:
        return engine.reads.nearest_exact(
            conn, scope.at, scope.known_at, *search.narrow(engine, scope, op), op.filter, query_vec
        )
    return ranked


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
        self, engine: Any, conn: Any, scope: Scope, op: SearchOp, fact_ids: list[int], mirror: Any
    ) -> None:
        self.engine, self.conn, self.fact_ids = engine, conn, fact_ids
        self.tenant = search.tenant_of(engine, scope, op)
        in_process = mirror is not None and self.tenant is not None and fact_ids
        # The index's highest row id comes with the mirror's state (None: not read yet).
        self.local, self.rows = (
            mirror.scope(conn, self.tenant, fact_ids) if in_process else (None, None)
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
    op: SearchOp,
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
        query = scorer.held(scorer.terms(op.query or ""))
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


def keyword_match(
    engine: Any,
    conn: Any,
    scope: Scope,
    op: SearchOp,
    prune: TermStats | None,
    terms: list[str] | None = None,
) -> Any | None:
    """The engine's keyword query for `op.query` in scope; `prune` drops very common terms
    (hybrid search, where vectors carry the semantics). None when nothing can match.
    `terms`: those `pruned_terms` already gave for this search.

    The engine analyzes the query as its keyword rows were (`core.analysis`: the
    database's language), so its terms are spelled as the index's."""
    if terms is None:
        if prune is not None:
            terms = pruned_terms(engine, conn, op, prune)
        else:
            terms = engine.reads.keyword_terms(conn, op.query or "")
    return engine.reads.keyword_query(conn, terms, search.tenant_of(engine, scope, op))


def pruned_terms(engine: Any, conn: Any, op: SearchOp, prune: TermStats) -> list[str]:
    """`op.query`'s terms minus those too common in the store (`drop_common_terms`).
    Where the engine has `keyword_terms_sized`, the terms and the index's size come in
    one statement."""
    sized = getattr(engine.reads, "keyword_terms_sized", None)
    rows = None
    if sized is not None:
        terms, rows = sized(conn, op.query or "")
    else:
        terms = engine.reads.keyword_terms(conn, op.query or "")
    return drop_common_terms(engine, conn, terms, prune, rows=rows)


def keyword_depth(want: int) -> int:
    return max(32, want * 2)


def keyword_fetch(engine: Any, conn: Any, query: Any) -> Fetch:
    """Hits of the engine's keyword `query` by BM25 alone, scores in [0, 1), higher is
    better."""

    def fetch(n: int) -> Batch:
        hits = engine.reads.keyword_hits(conn, query, n)
        return hits, len(hits) < n

    return fetch


def keyword_ranking(
    engine: Any, conn: Any, scope: Scope, op: SearchOp, want: int, seen: Candidates
) -> Ranked:
    """(fact_id, BM25 score, row_id) by BM25 alone (keyword mode, or no embeddings)."""
    match = keyword_match(engine, conn, scope, op, None)
    if match is None:
        return []
    return deepen(keyword_fetch(engine, conn, match), keyword_depth(want), want, seen)[:want]


def cosine_for(
    engine: Any, conn: Any, fact_ids: list[int], query_vec: bytes, scan: Scan | None = None
) -> dict[int, float]:
    """Exact best-field cosine similarity for facts found by keywords only."""
    if not fact_ids:
        return {}
    if scan is not None:
        return scan.similarity(fact_ids)
    return engine.reads.similarities(conn, fact_ids, query_vec)


def contributed(depth: int, cfg: RetrievalConfig) -> int:
    """How many vector candidates enter fusion. Rank fusion counts each list's ranks
    alike, so both give `depth` (given 4x as many, RRF followed BM25 among its hits:
    recall@10 0.354 on the harder evaluation's tune half). Relative fusion min-max
    normalizes the cosines over the wider `vector_depth`: over `depth` alone it lost
    questions that keywords decide (benchmarks/retrieval_eval.py, hybrid recall@1/5/10
    0.878 / 0.956 / 0.972 -> 0.828 / 0.917 / 0.956 at depth 30)."""
    return depth if cfg.fusion == "rrf" else vector_depth(depth)


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
) -> tuple[Ranked, Ranked, dict[int, float | None]]:
    """(vector ranking, keyword ranking, cosines known so far): keywords `want` deep when
    that many match, vectors at least as deep (how many of them enter fusion is
    `contributed`); the cosines are those of the first keyword batch where the engine's
    first step took them (None: a fact without vectors).

    `scan()` waits for the cache's similarity scan, which may be running in another
    thread while the keyword ranking runs here (None: use the engine's vector index).
    `keywords` is the engine's keyword query. The first batch of both sides is checked
    against the scope in one query (the vector ranking's first admit), or, where the
    engine has `hybrid_first`, fetched, checked and the keyword batch's cosines taken in
    one statement.
    """
    fetch_keywords: Fetch = (
        keyword_fetch(engine, conn, keywords) if keywords else lambda n: ([], True)
    )
    known: dict[int, float | None] = {}
    first = _first_step(engine, conn, scope, op, query_vec, want, scan, keywords)
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
    vector = vector_ranking(engine, conn, scope, op, query_vec, want, seen, cached, vec_first)
    keyword = deepen(fetch_keywords, keyword_depth(want), want, seen, kw_first)[:want]
    return vector, keyword, known


def _first_step(
    engine: Any,
    conn: Any,
    scope: Scope,
    op: SearchOp,
    query_vec: bytes,
    want: int,
    scan: Callable[[], Scan | None],
    keywords: Any | None,
) -> Any | None:
    """The engine's `hybrid_first` (an optional feature, see `core.engine.OPTIONAL`):
    both rankings' first batches, their scope check and the keyword batch's cosines in
    one round trip, where no in-process scan answers; None where the engine has none or
    declines (a scope its vector index must walk)."""
    step = getattr(engine.reads, "hybrid_first", None)
    if step is None or scan() is not None:
        return None
    tenant, prefix = search.narrow(engine, scope, op)
    return step(
        conn,
        scope.at,
        scope.known_at,
        tenant,
        prefix,
        op.filter,
        keywords,
        query_vec,
        keyword_depth(want),
        vector_depth(want),
    )


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
