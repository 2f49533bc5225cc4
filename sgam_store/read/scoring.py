"""The read path's third stage: every candidate scored on each signal fusion uses.

Given the candidates stage's `Found`, `score` gives each candidate its signals: keyword
hits outside the vector ranking's depth get their exact cosine, so the vector signal
covers the whole candidate union; a small scope's cosines become its vector ranking; and
a ranking of keywords alone is scored by calibrated coverage, so a user can put a
threshold on it. It hands on `Signals`. Nothing here writes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from operator import gt, itemgetter
from typing import Any

import numpy as np

from sgam_store.read import subjects, vectors
from sgam_store.read.candidates import Found
from sgam_store.read.query import Ranked, RetrievalConfig, Scan, Search, vector_depth
from sgam_store.read.scope import SMALL_SCOPE_MAX, Bounds


@dataclass(frozen=True)
class Signals:
    """What the stage hands on: the vector and keyword rankings of the candidates, each
    (fact_id, score, row_id) best first, and every candidate's cosine that is known.
    `keyword_only`: no candidate has a vector (keyword mode, no embeddings, no vectors
    among them), so `keyword` is the answer, scored by calibrated coverage. `window`: the
    candidates valid in the time the query names, each scored 1 (`window.windowed`
    fills it; empty otherwise).
    `episodes`: where diversification spreads the order over source episodes
    (`RetrievalConfig.diversity`), the engine's `sources_by_id` on this snapshot, which
    fusion asks for its first hits' episodes alone (~150 candidates' cost a user's
    search more than it does); else None. `first`: the candidates in the subjects the
    query names, which fusion ranks first (`RetrievalConfig.named_subjects`), else None.
    `units`: where fusion weighs redundancy (`RetrievalConfig.redundancy`), the reader
    of candidates' unit vectors on this snapshot (`vectors.per_fact`), which fusion asks for
    its first hits' alone; else None. `inside`: where the query names a time or an event
    that makes a window, the candidates in it, and `anchor` the event's memory (both for
    `explain`); else None."""

    vector: Ranked = field(default_factory=list)
    keyword: Ranked = field(default_factory=list)
    cosine: dict[int, float] = field(default_factory=dict)
    keyword_only: bool = False
    window: Ranked = field(default_factory=list)
    episodes: Callable[[list[int]], dict[int, str]] | None = None
    first: set[int] | None = None
    units: Callable[[list[int]], np.ndarray] | None = None
    inside: frozenset[int] | None = None
    anchor: int | None = None


# `Centre.of`: rows whose length is 1 within this are not normalized again (float32's
# rounding of a unit vector is ~1e-7); below _NEAR a squared distance from the mean is
# taken directly: |d|^2 - 2 d.m + m.m loses ~3e-7 to cancellation, 6e-6 of 0.05.
_UNIT = 1e-6
_NEAR = 0.05
# `hubs`: how many nearest facts a fact's hubness averages, as CSLS takes them (Conneau et
# al., 2018, "Word translation without parallel data", k = 10).
HUB_NEIGHBOURS = 10
# Rows whose hubs the first centered search after a mirror build derives for every tenant
# (`VectorCache._prime`): a tenant's hubs cost a product of its rows with themselves, so
# 131,072 rows in tenants of up to 2,000 facts are at most ~1.3 s once, and every user
# of bench_langmem.py at 100k (200 x 500 rows) ~0.4 s.
HUB_PRIME_ROWS = 131_072
_ON_MEAN = 1e-10  # |q - m|^2 below this: the query is the mean, with no direction about it


def score(bounds: Bounds, search: Search, found: Found) -> Signals:
    """The stage: `found`'s candidates with the signals `search` fuses."""
    if search.vector is None:
        return _keywords_alone(bounds, search, found.keyword)
    if found.members is not None:
        return _small(bounds, search, found)
    if not search.hybrid:
        return Signals(vector=found.vector or [])
    if centers(bounds, search) and (whole := _whole(bounds, search, found)) is not None:
        return _small(bounds, search, whole)
    vector = (found.vector or [])[: contributed(search.depth, search.cfg)]
    cosine = {fid: sim for fid, sim, _ in vector}
    missing = [fid for fid, _, _ in found.keyword if fid not in cosine]
    known = found.cosine
    extra = {fid: sim for fid in missing if (sim := known.get(fid)) is not None}
    rest = [fid for fid in missing if fid not in known]
    extra.update(cosine_for(bounds.engine, bounds.conn, rest, search.vector, found.scan))
    cosine.update(extra)
    vector = sorted(
        vector + [(fid, extra[fid], row) for fid, _, row in found.keyword if fid in extra],
        key=lambda t: -t[1],
    )
    return _both(bounds, search, found, vector, found.keyword, cosine)


def _small(bounds: Bounds, search: Search, found: Found) -> Signals:
    """A small scope's signals: the best cosines as its vector ranking (as deep as the
    tenant-wide path's, or the page alone in vector mode), the keyword hits within the
    depth with their cosines added to it. With `centering`, hybrid search ranks by
    `centered` cosines; the reported scores stay the plain ones."""
    members, cosine = found.members or {}, found.cosine
    deep = contributed(search.depth, search.cfg) if search.hybrid else search.want
    if search.hybrid and centers(bounds, search) and cosine:
        best, ranks = _centered(bounds, search, found, deep)
    else:  # `ranks` orders the vector ranking; `cosine` stays the reported score
        best, ranks = best_first(cosine, deep), cosine
    vector = [(fid, sim, members[fid]) for fid, sim in best]
    if not search.hybrid:
        return Signals(vector=vector)
    keyword = found.keyword[: search.depth]
    near = {fid for fid, _, _ in vector}
    extra = [(f, ranks[f], row) for f, _, row in keyword if f not in near and f in ranks]
    if extra:  # else already in this order (a stable sort would keep it)
        vector = sorted(vector + extra, key=lambda t: -t[1])
    return _both(bounds, search, found, vector, keyword, cosine)


def centers(bounds: Bounds, search: Search) -> bool:
    """Whether `search` centers its cosines: as its config says, else as its engine
    chooses (`centers_by_default`: where a scope's vectors are read in process)."""
    chosen = search.cfg.centering
    return bounds.engine.centers_by_default if chosen is None else chosen


def _whole(bounds: Bounds, search: Search, found: Found) -> Found | None:
    """A tenant-wide scope's facts with their cosines, as a small scope's are, so that
    `centering` can take their mean: where it holds at most SMALL_SCOPE_MAX facts (a
    user's tenant of subjects, one per speaker); None above that (ranked plainly).
    Where the scope stage or the vector mirror already counted more, nothing is read:
    a tenant of 5,000 facts read 2,001 rows a search to learn it (0.9 ms)."""
    if bounds.large or _outgrown(bounds, found):
        return None
    engine, conn = bounds.engine, bounds.conn
    members = engine.reads.in_scope(conn, *bounds.where, SMALL_SCOPE_MAX + 1)
    if len(members) > SMALL_SCOPE_MAX:
        return None
    cosine = cosine_for(engine, conn, list(members), search.vector, found.scan)
    return Found(keyword=found.keyword, cosine=cosine, members=members, mirror=found.mirror)


def _outgrown(bounds: Bounds, found: Found) -> bool:
    """Whether the mirror holds more than SMALL_SCOPE_MAX facts of a whole tenant searched
    unfiltered: the scope's facts with vectors are the tenant's current ones it holds
    (it answers current searches only: `found.mirror`)."""
    _, _, tenant, prefix, filter_ = bounds.where
    if found.mirror is None or tenant is None or prefix or filter_:
        return False
    return found.mirror.facts(tenant) > SMALL_SCOPE_MAX


def _centered(
    bounds: Bounds, search: Search, found: Found, n: int
) -> tuple[list[tuple[int, float]], dict[int, float]]:
    """The `n` best facts of the scope by `centered` cosine less `hubness` times their
    `hubs` (`best_first`), and every fact's. Where the mirror holds them a row each,
    from the plain cosines already read and what the mirror keeps of the scope until
    its tenant is written (`_kept`); else from the rows themselves (a fact of several
    fields, a point-in-time view, an engine without a mirror)."""
    cosine, hubness, kept = found.cosine, search.cfg.hubness, None
    if found.mirror is not None:
        if any(map(gt, cosine, islice(cosine, 1, None))):  # by id, as the mirror keeps them
            cosine = dict(sorted(cosine.items()))
        keys = list(cosine)
        kept = _kept(found.mirror, np.fromiter(keys, np.int64, len(keys)), hubness)
    if kept is None:
        ranks = centered(*_vectors(bounds, found, list(cosine)), search.vector, hubness)
        return best_first(ranks, n), ranks
    centre, hub = kept
    sims = centre.cosines(np.fromiter(cosine.values(), np.float64, len(keys)), search.vector)
    if hub is not None:
        sims -= hubness * hub
    return _ranked(keys, sims, n)


def _kept(mirror: Any, ids: np.ndarray, hubness: float) -> tuple[Centre, np.ndarray | None] | None:
    """The scope's `Centre` and, with `hubness`, its `scope_hubs`, as the mirror keeps
    them (None where it does not hold the scope a row a fact, or a write changed it
    between the two). The first search after a build derives both for every tenant
    (`VectorCache._prime`), the hubs for HUB_PRIME_ROWS rows at most: 2 ms for 500
    facts, where a centre is 0.7."""
    centre = mirror.derived(ids, Centre.of)
    if centre is None or not hubness:
        return None if centre is None else (centre, None)
    hub = mirror.derived(ids, scope_hubs, prime=HUB_PRIME_ROWS)
    return None if hub is None else (centre, hub)


def _ranked(
    keys: list[int], sims: np.ndarray, n: int
) -> tuple[list[tuple[int, float]], dict[int, float]]:
    """`best_first` of `keys` (ascending) and their `sims`, and every (key, value) as a
    dict: a stable sort keeps the keys in order among equal values, so ties go to the
    smaller id. In arrays, as few calls as can be: on a busy machine each costs more."""
    values = sims.tolist()
    top = np.argsort(-sims, kind="stable")[:n].tolist()
    return [(keys[i], values[i]) for i in top], dict(zip(keys, values, strict=True))


def _vectors(bounds: Bounds, found: Found, fact_ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Every stored field vector of `fact_ids`, from the mirror where it answers."""
    return vectors.stored(bounds.engine, bounds.conn, found.mirror, fact_ids)


def _both(
    bounds: Bounds,
    search: Search,
    found: Found,
    vector: Ranked,
    keyword: Ranked,
    cosine: dict[int, float],
) -> Signals:
    """Both rankings for fusion, or keywords alone where no candidate has a cosine."""
    if not cosine:
        return _keywords_alone(bounds, search, keyword)
    first = None
    if bounds.named:
        ids = list(dict.fromkeys(fid for fid, _, _ in (*vector, *keyword)))
        first = subjects.members(bounds.engine, bounds.conn, bounds.where, bounds.named, ids)
    units = None
    if search.cfg.redundancy:
        units = partial(vectors.per_fact, bounds.engine, bounds.conn, found.mirror)
    return Signals(
        vector, keyword, cosine, episodes=_episodes(bounds, search), first=first, units=units
    )


def _episodes(bounds: Bounds, search: Search) -> Callable[[list[int]], dict[int, str]] | None:
    """The reader of source episodes by row id where the search diversifies over them."""
    if not search.cfg.diversity:
        return None
    return partial(bounds.engine.reads.sources_by_id, bounds.conn)


def _keywords_alone(bounds: Bounds, search: Search, keyword: Ranked) -> Signals:
    return Signals(keyword=calibrated(bounds.engine, bounds.conn, search.text, keyword),
                   keyword_only=True)  # fmt: skip


def calibrated(engine: Any, conn: Any, query: str, ranked: Ranked) -> Ranked:
    """A keyword ranking, its order kept, scored so a user can put a threshold on it.

    A hit's coverage is the share of the query's distinct terms (analyzed as the rows
    were: stems, stop words dropped) that its keyword row holds (the engine's
    `keyword_coverage`). It depends on the query and the memory alone: BM25's weights
    depend on the whole index (in a 3-row store an exact match scored 2e-06, one shared
    digit 0.87 among 2,000), so no number meant the same in two stores. BM25 still
    orders the hits (its rare-term weighting ranks better: benchmarks/README.md), and
    the score never rises down the list: each hit scores the lowest coverage at or above
    its rank. So a hit's score is a share of the query it and every hit above it hold,
    and a threshold keeps the longest prefix of the ranking that holds that share.
    """
    if not ranked:
        return ranked
    terms = engine.reads.keyword_terms(conn, query)
    share = engine.reads.keyword_coverage(conn, terms, [fid for fid, _, _ in ranked])
    out: Ranked = []
    ceiling = 1.0
    for fid, _, row in ranked:
        ceiling = min(ceiling, share.get(fid, 0.0))
        out.append((fid, ceiling, row))
    return out


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


def best_first(cosine: dict[int, float], n: int) -> list[tuple[int, float]]:
    """The `n` best (fact_id, cosine), ties by fact id: `heapq.nsmallest(n, items,
    key=(-cosine, id))`, which is that sorted()[:n]. Sorted by id, then stably by cosine,
    descending, it builds no key tuple an item (a user's 100 facts: 14.8 -> 5.9 us)."""
    return sorted(sorted(cosine.items()), key=itemgetter(1), reverse=True)[:n]


def centered(
    ids: np.ndarray, matrix: np.ndarray, query: bytes, hubness: float = 0.0
) -> dict[int, float]:
    """Each fact's best-field cosine with the query, both taken about the mean of the
    scope's unit vectors (`matrix`: a row per stored field vector, `ids` its fact's).

    A conversation's turns share a direction: the speakers' names, chat register, small
    talk. A query that names a speaker leans the same way, so a plain cosine ranks the
    shortest turns of that speaker ("Leo: Let's catch up soon.") first. Subtracting the
    mean (as "all-but-the-top" post-processing does for word vectors) leaves what sets
    each turn apart. On `benchmarks/retrieval_hard.py`'s tune split (MiniLM) hybrid
    recall@10 went 0.667 -> 0.703, multi-session 0.556 -> 0.630 (docs/read-path.md).
    Less `hubness` times each row's `hubs` (a fact's best field after it).
    """
    if not len(ids):
        return {}
    matrix = vectors.unit(matrix)
    mean = matrix.mean(axis=0)
    q = np.frombuffer(query, np.float32)
    q = q / (np.sqrt(q @ q) or 1.0) - mean
    rel = matrix - mean
    norms = np.sqrt(np.einsum("ij,ij->i", rel, rel)) * np.sqrt(q @ q)
    sims = (rel @ q) / np.where(norms > 0, norms, 1.0)  # 0 where either has no direction
    if hubness:  # `scope_hubs` of the rows, from the unit rows about the mean made here
        sims = sims - hubness * hubs(vectors.unit(rel))
    # Ascending, so a fact's best field is the last one written: its value in the dict.
    order = np.argsort(sims, kind="stable")
    return dict(zip(ids[order].tolist(), sims[order].tolist(), strict=True))


def scope_hubs(rows: np.ndarray) -> np.ndarray:
    """`hubs` of a scope's rows (a row per stored field vector, any length), each taken
    about the mean of their unit vectors, as `centered` takes them."""
    rel = vectors.unit(rows)
    rel = vectors.unit(rel - rel.mean(axis=0))
    return hubs(rel)


def hubs(rows: np.ndarray) -> np.ndarray:
    """Each row's mean cosine with its HUB_NEIGHBOURS nearest other rows, `rows` unit
    vectors about the scope's mean (0: no direction): how near every query a memory
    sits. Small talk said each week has many near copies; the turn that answers has
    few. 0 for every row of a scope of at most twice that many, whose nearest would be
    most of it (four dinners, three of them alike, are not small talk). One product of
    the scope with itself: 500 rows ~2 ms, 2,000 ~20 ms; kept with the scope's centre.
    """
    n = len(rows)
    if n <= 2 * HUB_NEIGHBOURS:  # the nearest would be half the scope: no neighbourhood
        return np.zeros(n)
    rows = np.asarray(rows, np.float32)
    gram = rows @ rows.T
    np.fill_diagonal(gram, -np.inf)
    gram.partition(n - HUB_NEIGHBOURS, axis=1)  # in place: no copy of n x n
    return gram[:, n - HUB_NEIGHBOURS :].mean(axis=1, dtype=np.float64)


@dataclass(frozen=True)
class Centre:
    """What a cosine about a scope's mean unit vector m needs of the scope's vectors, one
    a fact, besides each one's plain cosine with the query.

    For unit d and q, (d - m).(q - m) = d.q - d.m - q.m + m.m, and the cosine divides
    that by |d - m| |q - m|. Given d.q, the plain cosine a small scope's search reads
    anyway, it is `plain * weight + base - q.m * inverse`, over |q - m|: `inverse` is
    1 / |d - m| (0 where d is the mean: no direction about it, cosine 0 as in
    `centered`), `weight` that over |d| (the plain cosine is the stored vector's),
    `base` (m.m - d.m) over |d - m|. So a search costs a few array operations over the
    scope, where `centered` normalizes, averages and centers its whole matrix again.
    Vectors close to the mean (near copies of one text) keep d - m, whose product with
    q - m is taken directly: there the difference of nearly equal terms would round.
    The two agree to float32's rounding, in the same order but for cosines closer than
    that (tests/test_centering_speed.py).
    """

    mean: np.ndarray
    reach: float  # m.m
    weight: np.ndarray
    base: np.ndarray
    inverse: np.ndarray
    near: np.ndarray  # the vectors within sqrt(_NEAR) of the mean, and each one's d - m
    rel: np.ndarray

    @classmethod
    def of(cls, rows: np.ndarray) -> Centre:
        """The centre of these float32 rows, one a fact, as `centered` takes it. In three
        passes over the rows (lengths, sum, dots with the mean), where `centered` makes
        six: rows of length 1 (as the vector mirror holds them) are not normalized again,
        and a distance from the mean is |d|^2 - 2 d.m + m.m, taken directly only where
        that is small (`_NEAR`), where float32's rounding would show (a vector that is
        the mean gets exactly 0)."""
        squares = np.einsum("ij,ij->i", rows, rows).astype(np.float64)
        scale = np.ones(len(rows))
        if np.abs(squares - 1).max() > _UNIT:  # a zero row, or not as the mirror holds them
            norms = np.sqrt(squares)
            scale = np.divide(1.0, norms, out=np.zeros(len(rows)), where=norms > 0)
            rows, squares = rows * scale[:, None].astype(np.float32), (norms > 0) * 1.0
        mean = np.add.reduce(rows, axis=0) / np.float32(len(rows))
        along = np.einsum("ij,j->i", rows, mean).astype(np.float64)
        wide = mean.astype(np.float64)
        reach = float(wide @ wide)
        spread = squares - 2 * along + reach
        near = np.flatnonzero(spread < _NEAR)
        rel = np.zeros((0, rows.shape[1]))
        if len(near):  # rare: four more calls a centre where none is near
            rel = (rows[near] - mean).astype(np.float64)
            spread[near] = np.einsum("ij,ij->i", rel, rel)
        spread = np.sqrt(spread)
        inverse = np.divide(1.0, spread, out=np.zeros(len(rows)), where=spread > 0)
        base = (reach - along) * inverse
        return cls(wide, reach, scale * inverse, base, inverse, near, rel)

    def cosines(self, plain: np.ndarray, query: bytes) -> np.ndarray:
        """Each vector's cosine with `query`, both about the mean, from its `plain` cosine
        (0 where either has no direction about the mean, as in `centered`)."""
        q = np.frombuffer(query, np.float32).astype(np.float64)
        length = math.sqrt(q @ q) or 1.0
        along = float(q @ self.mean) / length
        apart = 1 - 2 * along + self.reach  # |q - m|^2, q made unit
        if apart < _ON_MEAN:
            return np.zeros(len(plain))
        sims = plain * self.weight
        sims += self.base
        sims -= along * self.inverse
        if len(self.near):  # (d - m).(q - m) itself, where the difference would round
            off = q / length - self.mean
            sims[self.near] = (self.rel @ off) * self.inverse[self.near]
        sims *= 1 / math.sqrt(apart)
        return sims
