"""A search with a query, as a pipeline its data walks once.

    scope -> candidates -> scoring -> window -> fusion -> items

Each stage is one module that receives what the stage before produced: `scope.bounds`
(which facts the search may see: `Bounds`), `candidates.gather` (each source's admitted
hits: `Found`), `scoring.score` (each candidate's signals: `Signals`), `window.windowed`
(the time the query names, where `time_window` is on: `Signals`), `fusion.fused`
(one order: `Ranked`) and `items.built` (threshold, page, rows, items). `Ranker` is the driver
and the only caller of the stages; a stage imports the shapes of the stages before it and
calls none of them (the `read` contracts in pyproject.toml). Nothing here writes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langgraph.store.base import Op, SearchItem, SearchOp

from sgam_store.core.models import Fact
from sgam_store.read import candidates, fusion, items, scope, scoring, search, window
from sgam_store.read.index import IndexSpec
from sgam_store.read.query import Ranked, RetrievalConfig, Scope, Search
from sgam_store.read.terms import TermStats


class Ranker:
    """Ranks a store's searches: embeds queries and drives each through the stages.

    Holds what the stages keep between searches (`candidates.Sources`: the keyword term
    statistics, the engine's in-process scorers, the scanner thread). It receives the
    store's engine, index spec and the engine's in-process vector cache (or None); the
    retrieval config is passed per call, since the store's may be replaced.
    """

    __slots__ = ("_engine", "_pool", "_pool_pid", "_sources", "_spec")

    def __init__(self, engine: Any, spec: IndexSpec | None, cache: Any) -> None:
        self._engine = engine
        self._spec = spec
        # The engine's in-process keyword scorer of small scopes (ScopeScorer): an optional
        # feature, as the vector mirror is; SQLite's statement set makes one, PostgreSQL's
        # has none and its statements answer.
        mirror = getattr(engine.reads, "keyword_mirror", None)
        keywords = mirror() if mirror is not None else None
        self._sources = candidates.Sources(TermStats(), keywords, cache, self._scanner)
        self._pool: ThreadPoolExecutor | None = None  # see `candidates._scan`
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
            asked = self._search(scope, op, query_vec, retrieval)
            return items.built(self._engine, conn, asked, self._rank(conn, asked))

    def explained(
        self,
        conn: Any,
        scope: Scope,
        op: SearchOp,
        query_vec: bytes | None,
        retrieval: RetrievalConfig,
    ) -> tuple[Ranked, scoring.Signals]:
        """The ranked hits of `op` (a query) that `search` returns (the threshold, then
        the page), and the signals fusion ordered them by: `explain` reports these, so a
        hit's ranks are those the search used, and nothing is ranked a second time."""
        asked = self._search(scope, op, query_vec, retrieval)
        signals = self._signals(conn, asked)
        return items.page(asked, fusion.fused(asked, signals)), signals

    def facts(self, scope: Scope, query: str, limit: int, retrieval: RetrievalConfig) -> list[Fact]:
        """Ranked facts for `query` within `scope` (the read path's search step)."""
        prefix = self._engine.layout.absolute(scope.tenant, ()) if scope.tenant else ()
        op = SearchOp(prefix, query=query, limit=limit)
        vec = self.embed_queries([op]).get(0)
        with self._engine.reading() as conn:
            ranked = self._rank(conn, self._search(scope, op, vec, retrieval))
            return items.facts(self._engine, conn, ranked[:limit])

    def _search(
        self, scope: Scope, op: SearchOp, query_vec: bytes | None, retrieval: RetrievalConfig
    ) -> Search:
        """`op` as the stages read it: its query vector kept where vectors rank."""
        vectors = query_vec is not None and self._spec is not None and retrieval.mode != "keyword"
        return Search(scope, op, query_vec if vectors else None, retrieval)

    def _rank(self, conn: Any, asked: Search) -> Ranked:
        """The stages from scope to fusion, each entered once. The score never rises
        with rank: the cosine similarity when vectors exist (in hybrid mode on the fused
        order, see `fusion.similarity_scores`), else the calibrated keyword score
        (`scoring.calibrated`)."""
        return fusion.fused(asked, self._signals(conn, asked))

    def _signals(self, conn: Any, asked: Search) -> scoring.Signals:
        """The stages from scope to the window: what fusion orders."""
        bounds = scope.bounds(self._engine, conn, asked, self._sources.stats)
        found = candidates.gather(bounds, asked, self._sources)
        signals = scoring.score(bounds, asked, found)
        return window.windowed(bounds, asked, signals)

    def _scanner(self) -> ThreadPoolExecutor:
        # A forked child inherits the executor but not its thread: start a new one there.
        if self._pool is None or self._pool_pid != os.getpid():
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="sgam-vector-scan")
            self._pool_pid = os.getpid()
        return self._pool
