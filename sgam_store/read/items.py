"""The read path's last stage: a ranked page as LangGraph's items, or as facts.

`built` takes the fused order's page (`page`: the threshold, then the op's offset and
limit) and turns its rows, read in full only now, into `SearchItem`s; `facts` gives
recall its evidence as facts. `to_item` and `search_items` also build the items of gets
and listings (`search`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

import orjson
from langgraph.store.base import Item, SearchItem

from sgam_store import ledger
from sgam_store.core import namespaces, schema_migration
from sgam_store.core.models import Fact, FactRow, ItemRow, PageRow
from sgam_store.read.query import Ranked, Search


def page(search: Search, ranked: Ranked) -> Ranked:
    """The hits `search` returns: the threshold applied, then the op's offset and limit.
    Written once, for searches and for `explain`."""
    floor = search.cfg.threshold
    if floor is not None:
        ranked = [r for r in ranked if r[1] is not None and r[1] >= floor]
    op = search.op
    return ranked[op.offset : op.offset + op.limit]


def built(engine: Any, conn: Any, search: Search, ranked: Ranked) -> list[SearchItem]:
    """The stage: the `page` of `ranked` that `search` returns, its rows read in full
    only now (by row id), as items."""
    hits = page(search, ranked)
    rows = engine.reads.rows_by_id(conn, [row_id for _, _, row_id in hits])
    return search_items((rows[row_id], score) for _, score, row_id in hits)


def facts(engine: Any, conn: Any, ranked: Ranked) -> list[Fact]:
    """`ranked` as facts, their rows read whole: recall's evidence."""
    rows = engine.reads.rows_by_id(conn, [row_id for _, _, row_id in ranked], whole=True)
    return [ledger.row_to_fact(rows[row_id]) for _, _, row_id in ranked]


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
    orjson refuses (NaN, lone surrogates, nesting past its 1,024 levels) and where it lost
    an integer past 64 bits (it reads one as a float)."""
    try:
        value = orjson.loads(text)
    except ValueError:
        return schema_migration.loads_deep(text)  # as deep as SQLite stores
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
