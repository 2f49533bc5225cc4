"""The read side of the BaseStore contract: filters, listing, keyword and vector search.

Every query here takes a `Scope` (instant, belief time, tenant) and hands its pieces to
the engine's read statements (`engine.reads`), so current reads, `as_of` views and tenant
views share one rule. Here are the decisions: what to rank, how deep, which candidates
to admit. Nothing here writes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from langgraph.store.base import GetOp, Item, ListNamespacesOp, SearchItem, SearchOp

from sgam_store.core import analysis, namespaces, schema_migration
from sgam_store.core.errors import ConfigurationError
from sgam_store.core.models import FactRow

Ranked = list[tuple[int, float, Any]]  # (fact_id, score, row_id of its visible version)
Hits = list[tuple[int, float]]  # (fact_id, score), best first, before the scope check
Batch = tuple[Hits, bool]  # n hits, and whether the ranking has no more
Fetch = Callable[[int], Batch]  # the ranking's n best hits


class Scan(Protocol):
    """A similarity scan of the engine's in-process mirror of the current vectors."""

    count: int  # vectors scanned

    def top(self, k: int) -> Hits: ...

    def similarity(self, fact_ids: list[int]) -> dict[int, float]: ...


VECTOR_MIRRORS = ("float32", "float16", "int8")  # see engines/sqlite/vector_cache.py

# The weakest keyword match's share of the keyword signal (the best gets 1). Measured with
# benchmarks/retrieval_eval.py, hybrid recall@1/5/10: floor 0 (plain min-max) 0.856 /
# 0.972 / 0.983; 0.05: 0.867 / 0.972 / 0.978; 0.1: 0.878 / 0.972 / 0.972; 0.3: 0.911 /
# 0.967 / 0.972. A share of the best raw BM25 instead: 0.883 / 0.950 / 0.961.
KEYWORD_FLOOR = 0.1  # RetrievalConfig.keyword_floor's default


@dataclass(frozen=True)
class RetrievalConfig:
    """How `search(query=...)` ranks.

    mode: "hybrid" fuses the vector and BM25 rankings; "vector" or "keyword" use one.
    fusion: "relative" (default) takes the weighted mean of both signals' normalized
    scores over the candidate union; "rrf" adds weight / (rrf_k + rank) instead. Either
    way the reported score is a similarity that never rises down the fused order (see
    `ranking.similarity_scores`). `threshold` drops results whose score is below it.
    `depth` is how many candidates the keyword ranking contributes before fusion, and
    the vector ranking for "rrf"; for "relative" it gives `vector_depth(depth)`, the pool
    its cosines are normalized over (`ranking.contributed`). Weights are finite, >= 0,
    not both 0; depth >= 1 (ConfigurationError). `keyword_floor` (in [0, 1]) is the
    weakest keyword match's share of the keyword signal in relative fusion.
    `language` is how keywords are analyzed (`core.analysis`: "english", "spanish", ...,
    or "simple", unstemmed). The database records it: None takes the recorded one, and
    another raises ConfigurationError at `setup()` unless the keyword index is empty;
    `SGAMStore.set_language` rebuilds the index in another one.
    `vector_mirror` is how the in-process mirror of current vectors holds them (SQLite;
    read when the store opens): "float32" (exact), "float16" (half the memory, scores
    rounded) or "int8" (a quarter, the best candidates re-ranked on exact floats).
    """

    mode: str = "hybrid"
    fusion: str = "relative"
    rrf_k: int = 60
    vector_weight: float = 1.0
    keyword_weight: float = 1.0
    keyword_floor: float = KEYWORD_FLOOR
    language: str | None = None
    threshold: float | None = None
    depth: int = 30
    vector_mirror: str = "float32"

    def __post_init__(self) -> None:
        if self.mode not in ("hybrid", "vector", "keyword"):
            raise ValueError(f"retrieval mode must be hybrid, vector or keyword: {self.mode!r}")
        if self.fusion not in ("relative", "rrf"):
            raise ValueError(f"fusion must be relative or rrf: {self.fusion!r}")
        self._check_fusion_numbers()
        if self.language is not None:
            analysis.check_language(self.language)
        if self.vector_mirror not in VECTOR_MIRRORS:
            raise ConfigurationError(
                f"vector_mirror must be one of {', '.join(VECTOR_MIRRORS)}: {self.vector_mirror!r}"
            )

    def _check_fusion_numbers(self) -> None:
        """Weights and depths that rank at all: a negative or NaN weight would turn a
        signal's order upside down, and both weights 0 leave nothing to fuse."""
        weights = (self.vector_weight, self.keyword_weight)
        if not all(math.isfinite(w) and w >= 0 for w in weights) or not any(weights):
            raise ConfigurationError(
                f"vector_weight and keyword_weight must be finite, >= 0 and not both 0: {weights}"
            )
        if not 0 <= self.keyword_floor <= 1:
            raise ConfigurationError(f"keyword_floor must be in [0, 1]: {self.keyword_floor}")
        if self.depth < 1 or self.rrf_k < 0:
            raise ConfigurationError(
                f"depth must be >= 1 and rrf_k >= 0: depth={self.depth}, rrf_k={self.rrf_k}"
            )


@dataclass(frozen=True)
class Scope:
    """Which rows a read may see: valid instant, belief instant, and tenant confinement."""

    at: str | None = None
    known_at: str | None = None
    tenant: str | None = None

    @property
    def current(self) -> bool:
        return self.at is None and self.known_at is None


# ------------------------------------------------------------------ items


def to_item(r: FactRow, score: float | None = None, search: bool = False) -> Item:
    """An Item from a stored version."""
    if schema_migration.REGISTRY:  # dual-read: newest registered shape
        value = schema_migration.present(r._asdict())[0]
    else:
        value = json.loads(r.value)
    kwargs = {
        "namespace": namespaces.from_text(r.namespace),
        "key": r.attribute,
        "value": value,
        "created_at": datetime.fromisoformat(r.created_at),
        "updated_at": datetime.fromisoformat(r.valid_from),
    }
    return SearchItem(**kwargs, score=score) if search else Item(**kwargs)


def get(engine: Any, conn: Any, scope: Scope, namespace: tuple[str, ...], key: str) -> Item | None:
    row = engine.reads.get(
        conn, scope.at, scope.known_at, scope.tenant, namespaces.to_text(namespace), key
    )
    return to_item(row) if row else None


def get_many(engine: Any, conn: Any, scope: Scope, ops: Sequence[GetOp]) -> list[Item | None]:
    """Many gets in one statement (coalesced async reads)."""
    keys = [(namespaces.to_text(op.namespace), op.key) for op in ops]
    rows = engine.reads.get_many(conn, scope.at, scope.known_at, scope.tenant, keys)
    return [to_item(rows[k]) if k in rows else None for k in keys]


def tenant_of(engine: Any, scope: Scope, op: SearchOp) -> str | None:
    """The tenant a search is confined to, if any: the view's, or the one its prefix
    names (the label at the layout's `tenant_at`)."""
    if scope.tenant is not None:
        return scope.tenant
    return engine.layout.tenant_of(op.namespace_prefix)


def narrow(engine: Any, scope: Scope, op: SearchOp) -> tuple[str | None, tuple[str, ...]]:
    """(tenant, namespace prefix) of a search, as the engine's statements take them.

    A prefix that is its tenant alone (tenant first) says no more than the tenant
    condition in a current scope, where the index of current facts leads with the
    tenant; it is dropped there. Past versions are reached by namespace, so it stays.
    """
    tenant, prefix = tenant_of(engine, scope, op), tuple(op.namespace_prefix)
    if scope.current and engine.layout.tenant_at == 0 and prefix == (tenant,):
        return tenant, ()
    return tenant, prefix


def listing(engine: Any, conn: Any, scope: Scope, op: SearchOp) -> list[SearchItem]:
    """Search without a query: newest first, exact offset/limit."""
    rows = engine.reads.listing(
        conn, scope.at, scope.known_at, *narrow(engine, scope, op), op.filter, op.limit, op.offset
    )
    return [to_item(r, search=True) for r in rows]  # type: ignore[misc]


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

    def check(self, fact_ids: Iterable[int]) -> None:
        unknown = [fid for fid in dict.fromkeys(fact_ids) if fid not in self.rows]
        if not unknown:
            return
        scope, op = self.scope, self.op
        found = self.engine.reads.admitted(
            self.conn, scope.at, scope.known_at, *narrow(self.engine, scope, op), op.filter, unknown
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
    ceiling falls back to an exact scan."""
    if scan is not None:
        return deepen(cached_vectors(scan), vector_depth(want), want, seen, first)
    capped = False
    tenant = tenant_of(engine, scope, op)

    def knn(n: int) -> Batch:
        nonlocal capped
        hits, exhausted, capped = engine.reads.nearest(conn, query_vec, n, tenant, scope.current)
        return hits, exhausted

    ranked = deepen(knn, vector_depth(want), want, seen)
    if len(ranked) < want and capped:
        return engine.reads.nearest_exact(
            conn, scope.at, scope.known_at, *narrow(engine, scope, op), op.filter, query_vec
        )
    return ranked


# In hybrid search a term found in more than this share of all keyword rows (and in more
# than COMMON_TERM_MIN_ROWS of them) is dropped: its IDF is near zero, so it barely changes
# BM25 order, yet scoring its posting list dominates the query's cost.
COMMON_TERM_SHARE = 0.1
COMMON_TERM_MIN_ROWS = 1000


class TermStats:
    """Document frequencies of query terms, cached per store.

    Counting a term's rows can walk its whole posting list (milliseconds for a common
    term), so counts are remembered and forgotten when the keyword index has grown by a
    tenth since they were taken: they only decide which terms to drop.
    """

    def __init__(self) -> None:
        self.rows_at_fill = 0
        self.frequency: dict[str, int] = {}

    def common(self, engine: Any, conn: Any, terms: list[str]) -> set[str]:
        # The highest row id counts every version ever written: an upper bound on keyword
        # rows (one per fact) that costs one index seek.
        rows = engine.reads.highest_row_id(conn)
        if rows > self.rows_at_fill * 1.1 or rows < self.rows_at_fill:
            self.frequency, self.rows_at_fill = {}, rows
        # This call's map: a search in another thread may replace the attribute meanwhile
        # (the index grew), and this call must still find the counts it took.
        frequency = self.frequency
        ceiling = max(COMMON_TERM_MIN_ROWS, COMMON_TERM_SHARE * rows)
        for term in terms:
            if term not in frequency:
                frequency[term] = engine.reads.keyword_frequency(conn, term)
        return {t for t in terms if frequency[t] > ceiling}


# In hybrid search of a small scope (see ranking.SMALL_SCOPE_MAX) a term is also dropped
# when it is in more than this share of the scope's facts and more than
# SCOPE_COMMON_MIN_ROWS of them. A speaker's name is in half of a conversation's turns:
# rare in the store, so kept by the cut above, it matched nearly any turn of the
# conversation and gave the best keyword hit a full share for the name and one common
# word (benchmarks/README.md, the harder evaluation: tune recall@10 0.609 -> 0.639).
SCOPE_COMMON_SHARE = 0.25
SCOPE_COMMON_MIN_ROWS = 32


def scope_frequency(
    engine: Any, conn: Any, scope: Scope, op: SearchOp, term: str, fact_ids: list[int]
) -> int:
    """How many of `fact_ids` hold `term`."""
    query = engine.reads.keyword_query(conn, [term], tenant_of(engine, scope, op))
    return len(engine.reads.keyword_scores(conn, query, fact_ids)) if query else 0


def scope_keyword_match(
    engine: Any, conn: Any, scope: Scope, op: SearchOp, fact_ids: list[int], stats: TermStats
) -> Any | None:
    """`keyword_match` for hybrid search of the small scope `fact_ids`: terms common in
    the store or in the scope dropped (see SCOPE_COMMON_SHARE)."""
    terms = drop_common_terms(engine, conn, engine.reads.keyword_terms(conn, op.query or ""), stats)
    ceiling = max(SCOPE_COMMON_MIN_ROWS, SCOPE_COMMON_SHARE * len(fact_ids))
    if len(fact_ids) > ceiling:  # else no term can be in more of them
        terms = [
            t for t in terms if scope_frequency(engine, conn, scope, op, t, fact_ids) <= ceiling
        ]
    return engine.reads.keyword_query(conn, terms, tenant_of(engine, scope, op))


def drop_common_terms(engine: Any, conn: Any, terms: list[str], stats: TermStats) -> list[str]:
    """Terms minus those too common to discriminate (see COMMON_TERM_SHARE)."""
    common = stats.common(engine, conn, terms) if terms else set()
    return [t for t in terms if t not in common]


def keyword_match(
    engine: Any, conn: Any, scope: Scope, op: SearchOp, prune: TermStats | None
) -> Any | None:
    """The engine's keyword query for `op.query` in scope; `prune` drops very common terms
    (hybrid search, where vectors carry the semantics). None when nothing can match.

    The engine analyzes the query as its keyword rows were (`core.analysis`: the
    database's language), so its terms are spelled as the index's."""
    terms = engine.reads.keyword_terms(conn, op.query or "")
    if prune is not None:
        terms = drop_common_terms(engine, conn, terms, prune)
    return engine.reads.keyword_query(conn, terms, tenant_of(engine, scope, op))


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
    """(fact_id, score, row_id) by BM25 alone (keyword mode, or no embeddings)."""
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


def list_namespaces(
    engine: Any, conn: Any, scope: Scope, op: ListNamespacesOp
) -> list[tuple[str, ...]]:
    """Distinct namespaces of visible facts, matched label-wise, truncated to max_depth."""
    conditions = tuple(op.match_conditions or ())
    prefix = namespaces.literal_prefix(conditions)
    tenant = scope.tenant if scope.tenant is not None else engine.layout.tenant_of(prefix)
    texts = engine.reads.namespaces_under(conn, scope.at, scope.known_at, tenant, prefix)
    found: set[tuple[str, ...]] = set()
    for text in texts:
        ns = namespaces.from_text(text)
        if all(namespaces.matches(ns, c) for c in conditions):
            found.add(ns[: op.max_depth] if op.max_depth is not None else ns)
    ordered = sorted(found)
    return ordered[op.offset : op.offset + op.limit]
