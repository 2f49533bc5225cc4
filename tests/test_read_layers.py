"""The read path's short cuts (issue 31): a lone listing skips the batch machinery
(`SGAMStore._execute`), and a page's items are built together (`items.search_items`).
Each must answer exactly what the general path answers: same items, same checks, same
TTL refresh."""

from __future__ import annotations

import time

import pytest
from langgraph.store.base import GetOp, SearchItem, SearchOp

from sgam_store import SGAMStore
from sgam_store.core.errors import InvalidFilterError, InvalidQueryError
from sgam_store.core.models import ItemRow
from sgam_store.read import items

ENGINES = ("sqlite", "postgres")


def _fill(store: SGAMStore) -> None:
    for user in ("u0", "u1"):
        for i in range(6):
            kind = "fact" if i % 2 else "event"
            ns = ("memories", user, "work") if i % 3 == 0 else ("memories", user)
            store.put(ns, f"k{i}", {"content": f"{user} item {i}", "kind": kind, "n": 2**70 + i})
    store.put(("memories", "u0"), "k1", {"content": "u0 item 1, again", "kind": "fact"})


def _fields(items: list[SearchItem]) -> list[tuple]:
    return [(i.namespace, i.key, i.value, i.created_at, i.updated_at, i.score) for i in items]


def test_lone_listing_answers_as_a_listing_in_a_batch(store: SGAMStore) -> None:
    _fill(store)
    for prefix, flt in [
        (("memories", "u0"), {"kind": "fact"}),
        (("memories", "u1"), None),
        (("memories",), {"kind": "event"}),
    ]:
        alone = store.search(prefix, filter=flt, limit=10)
        # With a get beside it, the listing goes through the batch's read loop.
        batched = store.batch([SearchOp(prefix, flt, 10, 0, None), GetOp(prefix, "none")])[0]
        assert alone, prefix
        assert _fields(alone) == _fields(batched)
    again = store.search(("memories", "u0"), filter={"kind": "fact"}, limit=10)
    assert again[0].key == "k1" and again[0].updated_at > again[0].created_at
    assert again[0].value == {"content": "u0 item 1, again", "kind": "fact"}


def test_lone_search_answers_as_a_search_in_a_batch(vstore: SGAMStore) -> None:
    for i, text in enumerate(["tea in the morning", "coffee at work", "tea and jazz", "chess"]):
        vstore.put(("memories", "u0"), f"k{i}", {"text": text})
        vstore.put(("memories", "u1"), f"k{i}", {"text": text + " too"})
    for prefix, query in [(("memories", "u0"), "tea"), (("memories",), "coffee jazz")]:
        alone = vstore.search(prefix, query=query, limit=3)
        batched = vstore.batch([SearchOp(prefix, None, 3, 0, query), GetOp(prefix, "none")])[0]
        assert len(alone) == 3
        assert _fields(alone) == _fields(batched)
    assert {i.namespace for i in vstore.search(("memories", "u1"), query="tea")} == {
        ("memories", "u1")
    }


def test_lone_listing_still_checks_its_op(store: SGAMStore) -> None:
    with pytest.raises(InvalidFilterError):
        store.search(("memories", "u0"), filter={"kind": {"$nope": 1}})
    with pytest.raises(ValueError, match="must not be negative"):
        store.search(("memories", "u0"), limit=-1)
    for page in ({"limit": 2.0}, {"limit": True}, {"offset": 1.5}):  # listing and search alike
        for query in (None, "tea"):
            with pytest.raises(InvalidQueryError, match="must be integers"):
                store.search(("memories", "u0"), query=query, **page)


def test_lone_listing_refreshes_ttl(target: str) -> None:
    with SGAMStore.from_conn_string(target, ttl={"default_ttl": 1.0}) as s:
        s.setup()
        s.put(("memories", "u0"), "k", {"kind": "fact"})
        before = s.history("memories", "u0", "k")[-1].expires_at
        time.sleep(0.01)
        assert [i.key for i in s.search(("memories", "u0"), filter={"kind": "fact"})] == ["k"]
        after = s.history("memories", "u0", "k")[-1].expires_at
        assert after is not None and before is not None and after > before


def _row(namespace: str, key: str, value: str, created: str, valid_from: str) -> ItemRow:
    return ItemRow(namespace, key, value, 0, "semantic", 1, valid_from, None, created, None)


def test_search_items_are_to_items() -> None:
    rows = [
        _row("memories.u0", "a", '{"n": 18446744073709551617}', "2026-01-01T00:00:00+00:00",
             "2026-01-01T00:00:00+00:00"),
        _row("memories.u0", "b", '{"x": [1.5, {"y": null}]}', "2026-01-01T00:00:00+00:00",
             "2026-02-01T10:00:00.123456+00:00"),
        _row("memories.u0.work", "c", '{"s": "\\u00e9"}', "2026-03-01T00:00:00+00:00",
             "2026-03-01T00:00:00+00:00"),
    ]  # fmt: skip
    scores = [0.9, None, 0.1]
    built = items.search_items(zip(rows, scores, strict=True))
    expected = [items.to_item(r, s, search=True) for r, s in zip(rows, scores, strict=True)]
    assert _fields(built) == _fields(expected)  # type: ignore[arg-type]
    assert built[0].value["n"] == 2**64 + 1  # past 64 bits: json's exact integer
    assert built[0].namespace is built[1].namespace  # one tuple for the page's namespace
    assert built[2].namespace == ("memories", "u0", "work")
