"""The read side of the BaseStore contract: the scope of a read, items, gets, listings.

Every query here takes a `Scope` (instant, belief time, tenant) and hands its pieces to
the engine's read statements (`engine.reads`), so current reads, `as_of` views and tenant
views share one rule. A search with a query is `ranking`'s, which calls the pieces here
(`narrow`, `tenant_of`, `calibrated`, `to_item`); nothing here calls back. Nothing here
writes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import orjson
from langgraph.store.base import GetOp, Item, ListNamespacesOp, SearchItem, SearchOp

from sgam_store.core import analysis, namespaces, schema_migration
from sgam_store.core.errors import ConfigurationError
from sgam_store.core.models import FactRow, ItemRow, PageRow

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


def to_item(
    r: FactRow | ItemRow | PageRow, score: float | None = None, search: bool = False
) -> Item:
    """An Item from a stored version, whole or as gets and listings read it (every get,
    listing and search builds one per row, so no more than one call a field). A
    `PageRow` was read while no transform was registered: its value stands as stored,
    as it would had the read finished before the registration."""
    if schema_migration.REGISTRY and not isinstance(r, PageRow):  # dual-read: newest shape
        value = schema_migration.present(r._asdict())[0]
    else:
        value = _loads(r.value)
    namespace = namespaces.from_text(r.namespace)
    created, updated = _stamps(r.created_at, r.valid_from)
    if search:
        return SearchItem(
            namespace=namespace,
            key=r.attribute,
            value=value,
            created_at=created,
            updated_at=updated,
            score=score,
        )
    return Item(
        value=value, key=r.attribute, namespace=namespace, created_at=created, updated_at=updated
    )


def _stamps(created_at: str, valid_from: str) -> tuple[datetime, datetime]:
    """An item's created_at and updated_at: a key's first version starts when it was
    created, so one parse serves both."""
    created = datetime.fromisoformat(created_at)
    return created, created if valid_from == created_at else datetime.fromisoformat(valid_from)


def search_items(
    page: Iterable[tuple[FactRow | ItemRow | PageRow, float | None]],
) -> list[SearchItem]:
    """`to_item(row, score, search=True)` of each (row, score) of a page, with what the
    items share looked up once: a page is mostly one namespace (one user's), whose tuple
    is built once and shared (tuples are immutable), and the names each item needs are
    bound once a page (a 6-item page 22.5 -> 18.9 us on a loaded machine, 5k)."""
    if schema_migration.REGISTRY:  # dual-read: to_item's per-row migration
        return [to_item(r, score, search=True) for r, score in page]  # type: ignore[misc]
    loads, make, stamps = _loads, _search_item, _stamps
    spaces: dict[str, tuple[str, ...]] = {}
    items = []
    for r, score in page:
        text = r.namespace
        namespace = spaces.get(text)
        if namespace is None:
            namespace = spaces[text] = namespaces.from_text(text)
        created, updated = stamps(r.created_at, r.valid_from)
        items.append(make(namespace, r.attribute, loads(r.value), created, updated, score))
    return items


def _constructed(
    namespace: tuple[str, ...],
    key: str,
    value: dict[str, Any],
    created_at: datetime,
    updated_at: datetime,
    score: float | None,
) -> SearchItem:
    return SearchItem(
        namespace=namespace,
        key=key,
        value=value,
        created_at=created_at,
        updated_at=updated_at,
        score=score,
    )


def _filled(
    namespace: tuple[str, ...],
    key: str,
    value: dict[str, Any],
    created_at: datetime,
    updated_at: datetime,
    score: float | None,
    new: Callable[[type[SearchItem]], SearchItem] = SearchItem.__new__,
) -> SearchItem:
    item = new(SearchItem)
    item.namespace, item.key, item.value = namespace, key, value
    item.created_at, item.updated_at, item.score = created_at, updated_at, score
    return item


def _slots(cls: type) -> set[str]:
    """The attributes an instance of `cls` holds: its classes' slots, or {"__dict__"}
    (any attribute) when one of them has none."""
    names: set[str] = set()
    for klass in cls.__mro__[:-1]:  # object holds none
        slots = vars(klass).get("__slots__")
        if slots is None:
            return {"__dict__"}
        names.update((slots,) if isinstance(slots, str) else slots)
    return names


# LangGraph's constructors copy the namespace into a tuple and parse timestamps given as
# text; ours arrive as a tuple and datetimes, so while SearchItem holds exactly these
# slots, an item's are filled directly (0.56 -> 0.14 us an item); any other shape of the
# class (a new field) goes through its constructor.
_search_item = (
    _filled
    if _slots(SearchItem) == {"namespace", "key", "value", "created_at", "updated_at", "score"}
    else _constructed
)


def _loads(text: str) -> Any:
    """A stored value: orjson where it reads it as json does (~5x faster), json for what
    orjson refuses (NaN, lone surrogates) and where it lost an integer past 64 bits (it
    reads one as a float)."""
    try:
        value = orjson.loads(text)
    except ValueError:
        return json.loads(text)
    return value if _exact(value) else json.loads(text)


# Below this magnitude every float orjson reads came from a float literal: an integer
# literal it reads as a float is past 64 bits (beyond -2**63 .. 2**64 - 1).
_INT64 = float(2**63)


# What a flat value may hold for `_exact` to pass it at once: no float, nothing nested.
_FLAT = frozenset((str, int, bool, type(None)))


def _exact(value: Any) -> bool:
    """Whether no float in `value` could be an integer orjson rounded: the check walks the
    parsed value, where a search of the text for 19 digits in a row cost 1-2 us an item
    (4.9 -> 3.3 us per item built). A flat object of strings, integers, booleans and
    nulls (LangMem's {"content", "kind"}) passes in one loop (0.94 -> 0.31 us)."""
    if value.__class__ is dict:
        for node in value.values():
            if node.__class__ not in _FLAT:
                break
        else:
            return True
    stack = [value]
    while stack:
        node = stack.pop()
        if node.__class__ is dict:
            stack.extend(node.values())
        elif node.__class__ is list:
            stack.extend(node)
        elif node.__class__ is float and not -_INT64 < node < _INT64:
            return False
    return True


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
    tenant, prefix = narrow(engine, scope, op)
    below_tenant = len(prefix) > engine.layout.tenant_at + 1
    rows = engine.reads.listing(
        conn, scope.at, scope.known_at, tenant, prefix, op.filter, op.limit, op.offset,
        below_tenant=below_tenant,
    )  # fmt: skip
    return search_items((r, None) for r in rows)


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
