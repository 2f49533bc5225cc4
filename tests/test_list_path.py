"""A listing's short cuts (issue 31, session 36): a page's `SearchItem`s filled slot by
slot instead of through LangGraph's constructor, a current read's parameters bound
without the rule's general builder, and a page read as the 6 columns its items need
while no value transform is registered. Each is checked against what it replaced: the
constructor's items, the rule's answer in every kind of scope, and the registry's dual
read, on both engines."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from langgraph.store.base import SearchItem

from sgam_store import SGAMStore, register_transform
from sgam_store.core import clock
from sgam_store.core.models import PageRow
from sgam_store.read import items

ENGINES = ("sqlite", "postgres")

ITEM_SLOTS = {"namespace", "key", "value", "created_at", "updated_at", "score"}


def test_filled_items_are_the_constructors_items() -> None:
    first = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
    later = datetime(2026, 6, 3, 10, 0, 0, 123456, tzinfo=UTC)
    cases = [
        (("memories", "u0"), "k", {"content": "tea", "kind": "fact"}, first, first, None),
        (("acme",), "passport", {"value": [1, {"x": None}]}, first, later, 0.25),
    ]
    for args in cases:
        filled, built = items._filled(*args), items._constructed(*args)
        assert type(filled) is type(built) is SearchItem
        for name in items._slots(SearchItem):
            assert getattr(filled, name) == getattr(built, name), name
        assert filled == built and filled.dict() == built.dict() and repr(filled) == repr(built)
        assert filled.namespace is args[0]  # the page's one tuple, shared as the constructor does


def test_the_direct_fill_is_chosen_only_for_the_slots_it_fills() -> None:
    class Grown(SearchItem):
        __slots__ = ("rank",)

    class Loose(SearchItem):
        pass

    assert items._slots(SearchItem) == ITEM_SLOTS
    assert items._search_item is items._filled
    assert items._slots(Grown) == ITEM_SLOTS | {"rank"}
    assert items._slots(Loose) == {"__dict__"}


def _keys(items: list[SearchItem]) -> list[tuple[str, ...]]:
    return [(*i.namespace, i.key, i.value["v"]) for i in items]


def test_listings_follow_the_rule_in_every_scope(store: SGAMStore) -> None:
    """Current, `as_of` (valid time, then belief time too) and tenant-view listings,
    against states recorded as the writes went: each scope's parameters are bound by
    the code changed here, so a wrong one shows as a wrong page."""
    states: list[tuple[str, list[tuple[str, ...]]]] = []
    live: dict[tuple[str, ...], int] = {}
    for ns, key, v in (
        (("acme", "s"), "k1", 1),
        (("acme", "s"), "k2", 2),
        (("acme", "s", "t"), "k3", 3),
        (("globex", "s"), "k1", 4),
        (("acme", "s"), "k1", 5),  # a new version of k1
        (("acme", "s"), "k2", None),  # k2 closed
    ):
        if v is None:
            store.delete(ns, key)
            live.pop((*ns, key))
        else:
            store.put(ns, key, {"kind": "fact", "v": v})
            live.pop((*ns, key), None)
            live[(*ns, key)] = v
        time.sleep(0.002)
        states.append((clock.utc_now(), [(*k, v) for k, v in reversed(live.items())]))
        time.sleep(0.002)

    def acme(state: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
        return [row for row in state if row[0] == "acme"]

    now = states[-1][1]
    assert _keys(store.search(("acme",), filter={"kind": "fact"})) == acme(now)
    assert _keys(store.search(("acme", "s", "t"), filter={"kind": "fact"})) == [
        ("acme", "s", "t", "k3", 3)
    ]
    view = store.for_tenant("acme")
    assert [(*("acme", *i.namespace), i.key, i.value["v"]) for i in view.search(())] == acme(now)
    for at, state in states:
        # A closed version's row was copied when it closed: a past listing orders it
        # by that belief time, so only its members are compared here.
        past = store.as_of(at).search(("acme",), filter={"kind": "fact"})
        assert sorted(_keys(past)) == sorted(acme(state)), at
        believed = store.as_of(states[-1][0], known_at=at)
        assert _keys(believed.search(("acme",))) == acme(state), at


def test_a_remembered_listing_ends_at_its_first_expiry(store: SGAMStore) -> None:
    """A listing is remembered until the first of its rows expires (SQLite); the page
    read after that instant leaves the expired row out, on either engine."""
    ns = ("memories", "u0")
    store.put(ns, "lasting", {"kind": "fact", "v": 1})
    store.put(ns, "brief", {"kind": "fact", "v": 2}, ttl=0.01)  # 0.6 s
    store.put(ns, "other", {"kind": "event", "v": 3}, ttl=0.005)
    first = store.search(ns, filter={"kind": "fact"})
    assert [i.key for i in first] == ["brief", "lasting"]
    assert [i.key for i in store.search(ns, filter={"kind": "fact"})] == ["brief", "lasting"]
    time.sleep(0.7)
    assert [i.key for i in store.search(ns, filter={"kind": "fact"})] == ["lasting"]


def test_a_listing_reads_narrow_rows_until_a_transform_is_registered(
    store: SGAMStore, empty_transform_registry: None
) -> None:
    """With no value transform registered a listing reads the 6 columns items need
    (`PageRow`); once one is, it reads `ItemRow`s and shows values in the newest shape,
    never a page remembered from before. Both engines answer the same."""
    ns = ("acme", "mira")
    store.put(ns, "passport_deadline", {"value": "2026-06-30", "kind": "fact"})
    before = store.search(ns, filter={"kind": "fact"})
    assert [i.value for i in before] == [{"value": "2026-06-30", "kind": "fact"}]
    with store.engine.reading() as conn:
        rows = store.engine.reads.listing(
            conn, None, None, "acme", ns, None, 10, 0, below_tenant=True
        )
    narrow = type(rows[0]) is PageRow  # SQLite's; PostgreSQL reads ItemRows
    assert narrow == store.engine.__class__.__module__.endswith("sqlite.engine")
    register_transform(
        1, 2, lambda v: {"date": v["value"], "kind": v["kind"]}, attribute="passport_deadline"
    )
    after = store.search(ns, filter={"kind": "fact"})
    assert [i.value for i in after] == [{"date": "2026-06-30", "kind": "fact"}]
    assert (after[0].key, after[0].created_at) == (before[0].key, before[0].created_at)
    # A narrow row read before the registration is shown as stored, not refused.
    shown = {"value": "2026-06-30", "kind": "fact"} if narrow else after[0].value
    assert items.to_item(rows[0]).value == shown
