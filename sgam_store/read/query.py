"""What a search asks, and the shapes the read path's stages hand each other.

The read path runs one way (`pipeline`): scope -> candidates -> scoring -> fusion ->
items. Every stage reads the search as a `Search` (the view's `Scope`, LangGraph's
`SearchOp`, the query vector, the `RetrievalConfig`) and passes on rankings as `Ranked`
lists. This module is under all of them and calls none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Protocol

from langgraph.store.base import SearchOp

from sgam_store.core import analysis
from sgam_store.core.errors import ConfigurationError

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
TIME_WINDOWS = ("off", "rank", "filter")  # see read/window.py

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
    `fusion.similarity_scores`). `threshold` drops results whose score is below it.
    `depth` is how many candidates the keyword ranking contributes before fusion, and
    the vector ranking for "rrf"; for "relative" it gives `vector_depth(depth)`, the pool
    its cosines are normalized over (`scoring.contributed`). Weights are finite, >= 0,
    not both 0; depth >= 1 (ConfigurationError). `keyword_floor` (in [0, 1]) is the
    weakest keyword match's share of the keyword signal in relative fusion.
    `language` is how keywords are analyzed (`core.analysis`: "english", "spanish", ...,
    or "simple", unstemmed). The database records it: None takes the recorded one, and
    another raises ConfigurationError at `setup()` unless the keyword index is empty;
    `SGAMStore.set_language` rebuilds the index in another one.
    `vector_mirror` is how the in-process mirror of current vectors holds them (SQLite;
    read when the store opens): "float32" (exact), "float16" (half the memory, scores
    rounded) or "int8" (a quarter, the best candidates re-ranked on exact floats).
    `time_window` uses a time the query names ("in May", "two weeks ago"), resolved
    against the search's reference instant (an `as_of` view's, else now), in the keyword
    language (`read.window`, with dateparser): "rank" (default) ranks the memories
    valid then higher (a signal of weight `time_weight`, default 1.5, in hybrid fusion;
    first, in vector or keyword mode), "filter" keeps only them, "off" ignores it. A
    query that names no time is answered as with "off", for a few microseconds.
    `diversity` (in [0, 1), default 0: off) spreads a hybrid search's first `depth` hits
    over source episodes by maximal marginal relevance (`fusion.spread`): opt-in, for
    questions whose evidence sits in several conversations.
    `named_subjects` (default False) ranks first, in hybrid search, the memories of the
    subjects under the prefix that the query names (`subjects.named`).
    `redundancy` (in [0, 1), default 0: off) re-ranks a hybrid search's page by maximal
    marginal relevance over the candidates' vectors (`fusion.novel`): each next hit is
    the best by (1 - redundancy) x its fused score less redundancy x its cosine with the
    closest hit above it, so near-copies of a hit (small talk said every day, a fact
    repeated) stop filling the page and the second conversation's evidence gets in.
    Opt-in: 0.2 lifts spread questions, and costs a user's search about a fifth.
    `centering` ranks a hybrid search's candidates by cosine taken about the scope's
    mean vector (`scoring.centered`), so turns that resemble the whole conversation
    (small talk, a speaker's name) stop outranking the ones that answer; in a scope of
    at most 2,000 facts (`scope.SMALL_SCOPE_MAX`), else it is ignored. None (default):
    the engine's choice, on for SQLite (the vectors are in process) and off for
    PostgreSQL (they would cross the wire each search); True or False says.
    `hubness` (finite, >= 0; default 0.5) lowers, in a centered ranking, each fact by
    that times its mean centered cosine with its 10 nearest facts of the scope
    (`scoring.hubs`): a turn like many others (small talk said every week) is near
    every query, and stops crowding the page. At 0.5 the ranking is CSLS's (Conneau et
    al., 2018: 2 cos - r_q - r_d, whose r_q is the query's alone). 0 turns it off.
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
    time_window: str = "rank"
    time_weight: float = 1.5
    diversity: float = 0.0
    named_subjects: bool = False
    centering: bool | None = None
    redundancy: float = 0.0
    hubness: float = 0.5

    @classmethod
    def of(cls, settings: Mapping[str, Any] | None) -> RetrievalConfig:
        """The config a `retrieval=` dict asks for; a setting it does not know (a typo)
        is a ConfigurationError naming the ones it does, not a bare TypeError."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(settings or {}) - known)
        if unknown:
            raise ConfigurationError(
                f"unknown retrieval setting {', '.join(map(repr, unknown))}; "
                f"known: {', '.join(sorted(known))}"
            )
        return cls(**(settings or {}))

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
        self._check_time()
        self._check_levers()

    def _check_time(self) -> None:
        """A window setting that can run: a known mode and a weight that ranks."""
        if self.time_window not in TIME_WINDOWS:
            raise ConfigurationError(
                f"time_window must be one of {', '.join(TIME_WINDOWS)}: {self.time_window!r}"
            )
        if not (math.isfinite(self.time_weight) and self.time_weight >= 0):
            raise ConfigurationError(f"time_weight must be finite and >= 0: {self.time_weight}")

    def _check_levers(self) -> None:
        """A diversity and a redundancy that weigh relevance at all (at 1 the order
        would ignore the query), a hubness that ranks, and plain switches for named
        subjects and centering."""
        for name in ("diversity", "redundancy"):
            d = getattr(self, name)
            if isinstance(d, bool) or not isinstance(d, int | float) or not 0 <= d < 1:
                raise ConfigurationError(f"{name} must be a number in [0, 1): {d!r}")
        if not isinstance(self.named_subjects, bool):
            raise ConfigurationError(
                f"named_subjects must be True or False: {self.named_subjects!r}"
            )
        h = self.hubness
        if isinstance(h, bool) or not isinstance(h, int | float) or not 0 <= h < math.inf:
            raise ConfigurationError(f"hubness must be a finite number >= 0: {h!r}")
        if self.centering is not None and not isinstance(self.centering, bool):
            raise ConfigurationError(f"centering must be True, False or None: {self.centering!r}")

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


@dataclass(frozen=True)
class Search:
    """One search with a query, as every stage reads it. `vector` is the query vector
    where vectors rank (None: keywords alone, in keyword mode, with no index, or for a
    query with no direction)."""

    scope: Scope
    op: SearchOp
    vector: bytes | None
    cfg: RetrievalConfig

    @property
    def want(self) -> int:
        """Hits the page needs: its offset and its limit."""
        return self.op.offset + self.op.limit

    @property
    def depth(self) -> int:
        """How deep the keyword ranking goes (`RetrievalConfig.depth`, at least the page)."""
        return max(self.want, self.cfg.depth)

    @property
    def hybrid(self) -> bool:
        """Whether both rankings run and are fused."""
        return self.vector is not None and self.cfg.mode == "hybrid"

    @property
    def text(self) -> str:
        return self.op.query or ""


def keyword_depth(want: int) -> int:
    """The keyword ranking's first batch for `want` admitted hits."""
    return max(32, want * 2)


def vector_depth(want: int) -> int:
    """The vector ranking's first batch for `want` admitted hits."""
    return max(64, want * 4)
