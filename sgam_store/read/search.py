"""The read side of the BaseStore contract: filters, listing, keyword and vector search.

Every query here takes a `Scope` (instant, belief time, tenant) and turns it into SQL
through `visible`, so current reads, `as_of` views and tenant views share one
rule. Nothing here writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.store.base import Item, ListNamespacesOp, SearchItem, SearchOp

from sgam_store.core import clock, namespaces, schema_migration
from sgam_store.core.models import FactRow
from sgam_store.engines.sqlite.filters import filter_sql
from sgam_store.engines.sqlite.indexing import FACT_MASK, slot_range, tenant_slot
from sgam_store.engines.sqlite.predicates import as_list, in_list, visible
from sgam_store.engines.sqlite.vector_cache import Scan
from sgam_store.engines.sqlite.versions import F_COLUMNS

KNN_MAX_K = 4096  # sqlite-vec's ceiling for k

Ranked = list[tuple[int, float, Any]]  # (fact_id, score, row_id of its visible version)
Hits = list[tuple[int, float]]  # (fact_id, score), best first, before the scope check
Batch = tuple[Hits, bool]  # n hits, and whether the ranking has no more
Fetch = Callable[[int], Batch]  # the ranking's n best hits


@dataclass(frozen=True)
class RetrievalConfig:
    """How `search(query=...)` ranks.

    mode: "hybrid" fuses the vector and BM25 rankings; "vector" or "keyword" use one.
    fusion: "relative" (default) takes the weighted mean of both signals' normalized
    scores over the candidate union; "rrf" adds weight / (rrf_k + rank) instead. Either
    way the reported score is a similarity that never rises down the fused order (see
    `ranking.similarity_scores`). `threshold` drops results whose score is below it.
    `depth` is how many candidates each ranking contributes before fusion.
    """

    mode: str = "hybrid"
    fusion: str = "relative"
    rrf_k: int = 60
    vector_weight: float = 1.0
    keyword_weight: float = 1.0
    threshold: float | None = None
    depth: int = 30

    def __post_init__(self) -> None:
        if self.mode not in ("hybrid", "vector", "keyword"):
            raise ValueError(f"retrieval mode must be hybrid, vector or keyword: {self.mode!r}")
        if self.fusion not in ("relative", "rrf"):
            raise ValueError(f"fusion must be relative or rrf: {self.fusion!r}")


@dataclass(frozen=True)
class Scope:
    """Which rows a read may see: valid instant, belief instant, and tenant confinement."""

    at: str | None = None
    known_at: str | None = None
    tenant: str | None = None

    def where(self, alias: str = "f") -> tuple[str, list[Any]]:
        cond, params = visible(self.at, self.known_at, alias)
        if self.current:  # an expired fact is stale even before the sweep closes it
            cond += f" AND ({alias}.expires_at IS NULL OR {alias}.expires_at > ?)"
            params = [*params, clock.utc_now()]
        if self.tenant is not None:
            cond += f" AND {alias}.tenant_id = ?"
            params = [*params, self.tenant]
        return cond, params

    @property
    def current(self) -> bool:
        return self.at is None and self.known_at is None


# ------------------------------------------------------------------ items


def to_item(row: Any, score: float | None = None, search: bool = False) -> Item:
    """An Item from a facts row (a row of `FactRow`'s columns)."""
    r = FactRow._make(row)
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


def get(conn: Any, scope: Scope, namespace: tuple[str, ...], key: str) -> Item | None:
    cond, params = scope.where()
    row = conn.execute(
        f"SELECT {F_COLUMNS} FROM facts f WHERE f.namespace = ? AND f.attribute = ? AND {cond}"
        " ORDER BY f.valid_from DESC LIMIT 1",
        (namespaces.to_text(namespace), key, *params),
    ).fetchone()
    return to_item(row) if row else None




def _base_where(scope: Scope, op: SearchOp) -> tuple[str, list[Any]]:
    cond, params = scope.where()
    ns_sql, ns_params = namespaces.prefix_sql("f.namespace", op.namespace_prefix)
    flt_sql, flt_params = filter_sql(op.filter)
    return f"{cond} AND {ns_sql} AND {flt_sql}", [*params, *ns_params, *flt_params]


def tenant_of(scope: Scope, op: SearchOp) -> str | None:
    """The tenant a search is confined to, if any: the view's, or the prefix's first label."""
    if scope.tenant is not None:
        return scope.tenant
    return op.namespace_prefix[0] if op.namespace_prefix else None


def listing(conn: Any, scope: Scope, op: SearchOp) -> list[SearchItem]:
    """Search without a query: newest first, exact offset/limit."""
    where, params = _base_where(scope, op)
    rows = conn.execute(
        f"SELECT {F_COLUMNS} FROM facts f WHERE {where} "
        "ORDER BY f.known_from DESC, f.row_id DESC LIMIT ? OFFSET ?",
        (*params, op.limit, op.offset),
    ).fetchall()
    return [to_item(r, search=True) for r in rows]  # type: ignore[misc]


class Candidates:
    """Candidate facts checked against the scope, prefix and filters, each at most once.

    Rankings carry row ids, not rows: only the page that is returned is read in full
    (`rows_by_id`), so candidates that do not make the page cost two integers each.
    A hybrid search checks both rankings' candidates here in one query.
    """

    def __init__(self, conn: Any, scope: Scope, op: SearchOp) -> None:
        self.conn = conn
        self.where, self.params = _base_where(scope, op)
        self.rows: dict[int, int | None] = {}  # fact_id -> visible version's row_id

    def check(self, fact_ids: Iterable[int]) -> None:
        unknown = [fid for fid in dict.fromkeys(fact_ids) if fid not in self.rows]
        if not unknown:
            return
        # INDEXED BY: in a tenant view the planner would otherwise walk the tenant's
        # current facts (facts_current_ns) instead of seeking each candidate.
        found = dict(
            self.conn.execute(
                "SELECT f.fact_id, f.row_id FROM facts f INDEXED BY facts_fact_id "
                f"WHERE {in_list('f.fact_id')} AND {self.where}",
                (as_list(unknown), *self.params),
            ).fetchall()
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


def rows_by_id(conn: Any, row_ids: list[int]) -> dict[int, Any]:
    """Full rows of the given versions, by row_id (a ranked page's, read last)."""
    if not row_ids:
        return {}
    rows = conn.execute(
        f"SELECT {F_COLUMNS} FROM facts f WHERE {in_list('f.row_id')}",
        (as_list(row_ids),),
    ).fetchall()
    return {r[0]: r for r in rows}


def vector_depth(want: int) -> int:
    return max(64, want * 4)


def cached_vectors(scan: Scan) -> Fetch:
    """Hits from the in-process cache's scan: no k ceiling, so no scan fallback."""
    return lambda n: (scan.top(n), n >= scan.count)


def vector_ranking(
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
    else from vec0 KNN (point-in-time searches), which past sqlite-vec's k ceiling
    falls back to an exact scan."""
    if scan is not None:
        return deepen(cached_vectors(scan), vector_depth(want), want, seen, first)
    capped = False

    def knn(n: int) -> Batch:
        nonlocal capped
        k = min(KNN_MAX_K, n)
        sql = "SELECT rowid, distance FROM fact_vectors WHERE embedding MATCH ? AND k = ?"
        params: list[Any] = [query_vec, k]
        tenant = tenant_of(scope, op)
        if tenant is not None:
            sql, params = sql + " AND tenant_id = ?", [*params, tenant]
        if scope.current:
            sql += " AND is_current = 1"
        found = conn.execute(sql, params).fetchall()
        capped = k == KNN_MAX_K and len(found) == k
        return _owners(conn, found), len(found) < k or capped

    ranked = deepen(knn, vector_depth(want), want, seen)
    if len(ranked) < want and capped:
        return _exact_scan(conn, scope, op, query_vec)
    return ranked


def _owners(conn: Any, knn: list[tuple[int, float]]) -> Hits:
    """vec0 (rowid, distance) -> (fact_id, similarity), best first."""
    if not knn:
        return []
    distance = dict(knn)
    owners = conn.execute(
        f"SELECT vec_rowid, fact_id FROM vector_rows WHERE {in_list('vec_rowid')}",
        (as_list(distance),),
    ).fetchall()
    hits = [(fid, 1.0 - distance[rid]) for rid, fid in owners]
    return sorted(hits, key=lambda h: (-h[1], h[0]))


def _exact_scan(conn: Any, scope: Scope, op: SearchOp, query_vec: bytes) -> Ranked:
    where, params = _base_where(scope, op)
    rows = conn.execute(
        "SELECT f.fact_id, f.row_id, MIN(vec_distance_cosine(v.embedding, ?)) AS d "
        "FROM facts f JOIN vector_rows vr ON vr.fact_id = f.fact_id "
        f"JOIN fact_vectors v ON v.rowid = vr.vec_rowid WHERE {where} "
        "GROUP BY f.row_id ORDER BY d",
        (query_vec, *params),
    ).fetchall()
    return [(fid, 1.0 - d, row_id) for fid, row_id, d in rows]


# Words too common to say anything about which fact a question needs.
STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "you",
        "your",
    }
)


# In hybrid search a term found in more than this share of all keyword rows (and in more
# than COMMON_TERM_MIN_ROWS of them) is dropped: its IDF is near zero, so it barely changes
# BM25 order, yet scoring its posting list dominates the query's cost.
COMMON_TERM_SHARE = 0.1
COMMON_TERM_MIN_ROWS = 1000


def query_terms(text: str) -> list[str]:
    """Distinct lowercase words of a query, stopwords dropped unless nothing else is left."""
    words = re.findall(r"\w+", text.lower())
    return list(dict.fromkeys([w for w in words if w not in STOPWORDS] or words))


class TermStats:
    """Document frequencies of query terms, cached per store.

    fts5vocab counts a term's rows by walking its whole posting list (milliseconds for a
    common term), so counts are remembered and forgotten when the keyword index has
    grown by a tenth since they were taken: they only decide which terms to drop.
    """

    def __init__(self) -> None:
        self.rows_at_fill = 0
        self.frequency: dict[str, int] = {}

    def common(self, conn: Any, terms: list[str]) -> set[str]:
        # The highest row id counts every version ever written: an upper bound on keyword
        # rows (one per fact) that costs one index seek.
        rows = conn.execute("SELECT max(row_id) FROM facts").fetchone()[0] or 0
        if rows > self.rows_at_fill * 1.1 or rows < self.rows_at_fill:
            self.frequency, self.rows_at_fill = {}, rows
        ceiling = max(COMMON_TERM_MIN_ROWS, COMMON_TERM_SHARE * rows)
        for term in terms:
            if term not in self.frequency:
                row = conn.execute(
                    "SELECT doc FROM fact_fts_vocab WHERE term = ?", (term,)
                ).fetchone()
                self.frequency[term] = row[0] if row else 0
        return {t for t in terms if self.frequency[t] > ceiling}


def drop_common_terms(conn: Any, terms: list[str], stats: TermStats) -> list[str]:
    """Terms minus those too common to discriminate (see COMMON_TERM_SHARE)."""
    common = stats.common(conn, terms) if terms else set()
    return [t for t in terms if t not in common]


def fts_query(terms: list[str]) -> str | None:
    """A safe FTS5 MATCH string: terms quoted and OR-ed."""
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


@dataclass(frozen=True)
class KeywordQuery:
    """An FTS5 MATCH and the rowid range of the tenant it is confined to (if any)."""

    match: str
    rowids: tuple[int, int] | None = None


def keyword_match(
    conn: Any, scope: Scope, op: SearchOp, prune: TermStats | None
) -> KeywordQuery | None:
    """The keyword query for `op.query` in scope; `prune` drops very common terms (hybrid
    search, where vectors carry the semantics). None when nothing can match."""
    terms = query_terms(op.query or "")
    if prune is not None:
        terms = drop_common_terms(conn, terms, prune)
    match = fts_query(terms)
    tenant = tenant_of(scope, op)
    if match is None or tenant is None:
        return KeywordQuery(match) if match else None
    slot = tenant_slot(conn, tenant)
    return KeywordQuery(match, slot_range(slot)) if slot is not None else None


def keyword_depth(want: int) -> int:
    return max(32, want * 2)


def bm25_hits(conn: Any, query: KeywordQuery) -> Fetch:
    """Hits by BM25, FTS5 ranking alone; score = -bm25 / (1 - bm25) in [0, 1), higher
    is better."""
    sql = "SELECT rowid, bm25(fact_fts) AS b FROM fact_fts WHERE fact_fts MATCH ?"
    if query.rowids is not None:
        sql += " AND rowid BETWEEN ? AND ?"
    sql += " ORDER BY b LIMIT ?"
    params = [query.match, *(query.rowids or ())]

    def fetch(n: int) -> Batch:
        found = conn.execute(sql, (*params, n)).fetchall()
        return [(rowid & FACT_MASK, -b / (1.0 - b)) for rowid, b in found], len(found) < n

    return fetch


def keyword_ranking(conn: Any, scope: Scope, op: SearchOp, want: int, seen: Candidates) -> Ranked:
    """(fact_id, score, row_id) by BM25 alone (keyword mode, or no embeddings)."""
    match = keyword_match(conn, scope, op, None)
    if match is None:
        return []
    return deepen(bm25_hits(conn, match), keyword_depth(want), want, seen)[:want]


def cosine_for(
    conn: Any, fact_ids: list[int], query_vec: bytes, scan: Scan | None = None
) -> dict[int, float]:
    """Exact best-field cosine similarity for facts found by keywords only."""
    if not fact_ids:
        return {}
    if scan is not None:
        return scan.similarity(fact_ids)
    rows = conn.execute(
        "SELECT vr.fact_id, MIN(vec_distance_cosine(v.embedding, ?)) FROM vector_rows vr "
        "JOIN fact_vectors v ON v.rowid = vr.vec_rowid "
        f"WHERE {in_list('vr.fact_id')} GROUP BY vr.fact_id",
        (query_vec, as_list(fact_ids)),
    ).fetchall()
    return {fid: 1.0 - d for fid, d in rows}


def list_namespaces(conn: Any, scope: Scope, op: ListNamespacesOp) -> list[tuple[str, ...]]:
    """Distinct namespaces of visible facts, matched label-wise, truncated to max_depth."""
    cond, params = scope.where()
    conditions = tuple(op.match_conditions or ())
    ns_sql, ns_params = namespaces.prefix_sql("f.namespace", namespaces.literal_prefix(conditions))
    rows = conn.execute(
        f"SELECT DISTINCT f.namespace FROM facts f WHERE {cond} AND {ns_sql}",
        (*params, *ns_params),
    ).fetchall()
    found: set[tuple[str, ...]] = set()
    for (text,) in rows:
        ns = namespaces.from_text(text)
        if all(namespaces.matches(ns, c) for c in conditions):
            found.add(ns[: op.max_depth] if op.max_depth is not None else ns)
    ordered = sorted(found)
    return ordered[op.offset : op.offset + op.limit]
