"""The read path's fourth stage: the candidates' signals fused into one order.

Given the scoring stage's `Signals`, `fused` orders the candidates: keywords alone as
scored, vectors alone by cosine, both by the configured fusion (relative score fusion or
reciprocal rank fusion), scored on the cosine scale so the score never rises down the
list; where the search diversifies, its first hits spread over source episodes. Nothing
here reads the store but those hits' episodes, through the reader scoring hands on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import islice
from operator import ge
from typing import Any

import numpy as np

from sgam_store.read.query import KEYWORD_FLOOR, Ranked, RetrievalConfig, Search
from sgam_store.read.scoring import Signals


def fused(search: Search, signals: Signals) -> Ranked:
    """The stage: `signals` in one order, best first; in hybrid search its first
    `search.want` hits alone, all that a page (and `explain`) reads of it."""
    if signals.keyword_only:
        return signals.keyword
    if not search.hybrid:
        return signals.vector
    spread_over = (signals.episodes, search.depth) if signals.episodes is not None else None
    novel_of = (signals.units, search.depth, search.want) if signals.units is not None else None
    return fuse(
        signals.vector,
        signals.keyword,
        signals.cosine,
        search.cfg,
        signals.window,
        spread_over,
        signals.first,
        novel_of,
        search.want,
    )


def fuse(
    vector: Ranked,
    keyword: Ranked,
    cosine: dict[int, float],
    cfg: RetrievalConfig,
    window: Ranked | None = None,
    spread_over: tuple[Callable[[list[int]], dict[int, str]], int] | None = None,
    first: set[int] | None = None,
    novel_of: tuple[Callable[[list[int]], np.ndarray], int, int] | None = None,
    keep: int | None = None,
) -> Ranked:
    """The configured fusion of both rankings, scored on the cosine scale. `window` (the
    candidates in the time the query names, all tied) is a third signal of weight
    `time_weight`; none, and the sums are the two rankings' alone. `novel_of` (a reader
    of unit vectors by fact id, how many of the first hits to weigh and how many to
    pick) where the search weighs redundancy (`novel`); `spread_over`
    (a reader of source episodes by row id, and how many of the first hits to spread)
    where the search diversifies (`spread`); `first`, the hits of the subjects the query
    names, ranked before the rest, each part in its order. `keep`: the first `keep` hits
    alone (`similarity_scores`), else all."""
    signals = [(cfg.vector_weight, vector), (cfg.keyword_weight, keyword)]
    timed = [(cfg.time_weight, window)] if window else []
    if cfg.fusion == "rrf":
        fused = fuse_rrf(signals + timed, cfg.rrf_k)
    else:
        fused = fuse_relative(signals[0], signals[1], cfg.keyword_floor, *timed)
    if novel_of is not None:
        fused = novel(fused, *novel_of, cfg.redundancy)
    if spread_over is not None:
        fused = spread(fused, *spread_over, cfg.diversity)
    if first:
        fused = [h for h in fused if h[0] in first] + [h for h in fused if h[0] not in first]
    return similarity_scores(fused, cosine, keyword, keep)


def novel(
    fused: list[tuple[int, float, Any]],
    units_of: Callable[[list[int]], np.ndarray],
    n: int,
    k: int,
    redundancy: float,
) -> list[tuple[int, float, Any]]:
    """The first `k` of the fused order's first `n` hits picked by maximal marginal
    relevance over their vectors; the rest follow as they were.

    Each pick is the hit left with the best (1 - redundancy) x its fused score (over the
    best's) less redundancy x its cosine with the closest hit picked (none below 0).
    A turn of small talk said every day, or a fact stated five times, fills a page with
    copies that answer nothing the first did not; weighed down, they make room for the
    evidence in a second conversation. Only the first `n` hits' vectors are read
    (`units_of`, unit rows by fact id); a hit without one resembles none. Measured on
    `benchmarks/retrieval_hard.py` (docs/read-path.md).
    """
    head, rest = fused[:n], fused[n:]
    if not head or not redundancy:
        return fused
    top = float(head[0][1]) or 1.0
    gain = [(1 - redundancy) * float(score) / top for _, score, _ in head]
    # Plain Python over the head, one numpy call a pick (its row of cosines): in a
    # search, with the caches cold, each numpy call on a 30-element array cost ~3-5 us.
    # A hit's value is at most its gain, so down a best-first order (fusion's) the
    # first pick is the first hit.
    falls = all(map(ge, gain, islice(gain, 1, None)))
    picks = min(k, len(head))
    if picks < 2 and falls:  # a single pick moves nothing: no vector to read
        return fused
    cosines = _gram(units_of([fid for fid, _, _ in head]))
    picked = _picks(gain, cosines, picks, redundancy, falls)
    taken = set(picked)
    return [head[i] for i in picked] + [h for i, h in enumerate(head) if i not in taken] + rest


def _picks(
    gain: list[float], cosines: np.ndarray, picks: int, redundancy: float, falls: bool
) -> list[int]:
    """`novel`'s picks, by position in the head: each the first hit left of the best
    gain less redundancy x its closest cosine with a hit picked (none below 0). `falls`:
    the gains never rise down the head, so a scan stops at one no better than the best
    value found. A hit's closest cosine takes in the picks' rows only when a scan
    reaches it (~18 hits weighed over a page's 10 picks, not 300)."""
    rows: list[list[float]] = []  # each pick's cosines with the head, in pick order
    closest = [0.0] * len(gain)
    met = [0] * len(gain)  # how many of `rows` each hit's `closest` has taken in
    left = list(range(len(gain)))  # not picked yet, in the head's order
    picked: list[int] = []
    for _ in range(picks):
        best, take = -math.inf, left[0]
        for i in left:
            if falls and gain[i] <= best:
                break
            near = closest[i]
            for row in rows[met[i] :]:
                if row[i] > near:
                    near = row[i]
            closest[i], met[i] = near, len(rows)
            value = gain[i] - redundancy * near
            if value > best:  # the first of equals: the head's order breaks ties
                best, take = value, i
        left.remove(take)
        picked.append(take)
        if len(picked) < picks:
            rows.append(cosines[take].tolist())
    return picked


def _gram(units: np.ndarray) -> np.ndarray:
    """Every pair's cosine of unit rows, as one product: numpy hands `a @ a.T` to BLAS's
    symmetric kernel, whose float32 sums a row at a time would not repeat bit for bit."""
    return units @ units.T


def spread(
    fused: list[tuple[int, float, Any]],
    episodes_of: Callable[[list[int]], dict[int, str]],
    n: int,
    diversity: float,
) -> list[tuple[int, float, Any]]:
    """The first `n` of the fused order re-ranked by maximal marginal relevance over
    source episodes; the rest follow as they were.

    Each pick is the hit with the best (1 - diversity) x its fused score, less diversity
    when a hit of its episode was picked already: ten near-copies from one conversation
    no longer crowd a second conversation out of the top ten. Only the first `n` hits'
    episodes are read (`episodes_of`, by row id); a hit whose episode is unknown is its
    own. The penalty is all or nothing and the order is best first, so each pick is the
    first hit left or the first left of an episode not picked yet: one pass, where a
    pairwise scan cost ~0.8 ms over 30 hits.
    """
    head, rest = fused[:n], fused[n:]
    episodes = episodes_of([row for _, _, row in head])
    of = [episodes.get(row) for _, _, row in head]
    seen: set[str | None] = set()
    used = [False] * len(head)
    picked: list[tuple[int, float, Any]] = []
    top = fresh = 0  # the first hit left; the first left of an episode not picked yet
    for _ in head:
        while used[top]:
            top += 1
        while fresh < len(head) and (used[fresh] or of[fresh] in seen):
            fresh += 1  # both only move down: a hit passed is taken or its episode seen
        take = top
        if fresh < len(head) and fresh != top:  # `top` repeats an episode
            repeat = (1 - diversity) * head[top][1] - diversity
            take = fresh if (1 - diversity) * head[fresh][1] > repeat else top
        used[take] = True
        picked.append(head[take])
        if of[take] is not None:
            seen.add(of[take])
    return picked + rest


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


def fuse_relative(
    vector: tuple[float, Ranked],
    keyword: tuple[float, Ranked],
    floor: float = KEYWORD_FLOOR,
    *more: tuple[float, Ranked],
) -> list[tuple[int, float, Any]]:
    """Relative score fusion: the weighted mean of each signal's normalized score.

    Unlike RRF it keeps score gaps: a candidate that is clearly best on one signal and
    merely tied on the other wins, where rank fusion would let the ties decide. The
    vector ranking covers every candidate (keyword hits get their exact cosine), so it
    is min-max normalized over them. BM25 is min-max normalized onto [floor, 1]:
    the weakest keyword match still counts, so of two candidates equal on vectors the
    one that also matches the words ranks first. A candidate missing from
    a ranking gets 0 for that signal. The score is the fused one, in [0, 1], so it
    falls with rank. `more` are further signals, min-max normalized like the vectors.

    The sort is keyed by a list, not a lambda: the same order, fewer calls.
    """
    fused: dict[int, float] = {}
    rows: dict[int, Any] = {}
    total = vector[0] + keyword[0] + sum(weight for weight, _ in more) or 1.0
    for (weight, ranked), floored in ((vector, None), (keyword, floor), *((s, None) for s in more)):
        if not ranked:
            continue
        scores = {fid: score for fid, score, _ in ranked}
        low, high = min(scores.values()), max(scores.values())
        _add(fused, scores, weight, total, low, high - low, floored)
        rows.update({fid: row for fid, _, row in reversed(ranked) if fid not in rows})
    ids, sums = list(fused), list(fused.values())
    keys = [-value for value in sums]  # stable: equal sums keep the signals' order
    best = sorted(range(len(ids)), key=keys.__getitem__)
    return [(ids[i], sums[i], rows[ids[i]]) for i in best]


def _add(
    fused: dict[int, float],
    scores: dict[int, float],
    weight: float,
    total: float,
    low: float,
    span: float,
    floor: float | None,
) -> None:
    """Add a signal's share to each candidate's sum: its score min-max normalized into
    [0, 1], or with a `floor` into [floor, 1] (every match keeps a part above a
    non-match's 0), times its weight over the weights' `total`."""
    get = fused.get
    rise = 1 - floor if floor is not None else 1.0
    for fid, v in scores.items():
        norm = (v - low) / span if span else 1.0
        if floor is not None:
            norm = floor + rise * norm
        fused[fid] = get(fid, 0.0) + weight * norm / total


def similarity_scores(
    fused: list[tuple[int, float, Any]],
    cosine: dict[int, float],
    keyword: Ranked,
    keep: int | None = None,
) -> Ranked:
    """The fused order, scored on the cosine-similarity scale, never rising down the list.

    LangGraph's stores report a search score as the similarity, and its store suite checks
    that; the fused order can rank a keyword match above a more similar hit. Each hit
    therefore gets the best similarity at or below its rank: its own cosine wherever the
    order agrees with similarity (always, for one result), otherwise that of the more
    similar hit it outranks. A hit without vectors takes the score above it. With no
    vectors among the candidates the order is the keyword one, scored as in keyword mode.
    `keep`: only the first `keep` hits are scored and returned (the rest give their best
    cosine alone: a user's page of 10 of ~120 candidates), else all.
    """
    if not any(fid in cosine for fid, _, _ in fused):
        return keyword
    head = fused if keep is None else fused[:keep]
    best: float | None = None
    for position in range(len(fused) - 1, len(head) - 1, -1):  # the rest, bottom up
        value = cosine.get(fused[position][0])
        if value is not None and (best is None or value > best):
            best = value
    scores: list[float | None] = []
    for fid, _, _ in reversed(head):
        value = cosine.get(fid)
        if value is not None and (best is None or value > best):
            best = value
        scores.append(best)
    scores.reverse()
    for i in range(1, len(scores)):
        if scores[i] is None:
            scores[i] = scores[i - 1]
    return [(fid, score, row) for (fid, _, row), score in zip(head, scores, strict=True)]
