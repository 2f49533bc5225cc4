"""The BaseStore contract through its async methods, on every engine.

LangGraph's server and `ainvoke` call `aget`, `aput`, `asearch` and `alist_namespaces`;
they must answer exactly as the sync calls do, views included.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from sgam_store import InvalidFilterError, ReadOnlyViewError, SGAMStore

ENGINES = ("sqlite", "postgres")


async def test_async_round_trip(store: SGAMStore) -> None:
    await store.aput(("acme", "mira"), "city", {"value": "Lima"})
    await store.aput(("acme", "mira"), "city", {"value": "Quito"})
    item = await store.aget(("acme", "mira"), "city")
    assert item is not None and item.value == {"value": "Quito"}
    assert [v.value["value"] for v in store.history("acme", "mira", "city")] == ["Lima", "Quito"]
    assert await store.alist_namespaces(prefix=("acme",)) == [("acme", "mira")]
    await store.adelete(("acme", "mira"), "city")
    assert await store.aget(("acme", "mira"), "city") is None
    assert await store.asearch(("acme",)) == []


async def test_async_search_filters_and_ranks(vstore: SGAMStore) -> None:
    await vstore.aput(("acme", "mira"), "pet", {"text": "a grey cat named Ash", "kind": "pet"})
    await vstore.aput(("acme", "mira"), "car", {"text": "drives a red car", "kind": "car"})
    await vstore.aput(("beta", "nico"), "pet", {"text": "a cat as well", "kind": "pet"})
    found = await vstore.asearch(("acme",), query="cat", limit=5)
    assert [i.key for i in found][:1] == ["pet"]
    assert {i.namespace[0] for i in found} == {"acme"}
    assert [i.key for i in await vstore.asearch(("acme",), filter={"kind": "car"})] == ["car"]


async def test_concurrent_async_puts_to_one_key_keep_every_version(store: SGAMStore) -> None:
    await asyncio.gather(*[store.aput(("acme", "mira"), "counter", {"n": i}) for i in range(20)])
    versions = store.history("acme", "mira", "counter")
    assert len(versions) == 20
    assert sorted(v.value["n"] for v in versions) == list(range(20))
    current = await store.aget(("acme", "mira"), "counter")
    assert current is not None and current.value == versions[-1].value


async def test_async_views_keep_their_scope(store: SGAMStore) -> None:
    await store.aput(("acme", "mira"), "city", {"value": "Lima"})
    before = datetime.now(UTC)
    await store.aput(("acme", "mira"), "city", {"value": "Quito"})
    await store.aput(("beta", "nico"), "city", {"value": "Cusco"})
    past = store.as_of(before)
    assert (await past.aget(("acme", "mira"), "city")).value == {"value": "Lima"}
    with pytest.raises(ReadOnlyViewError):
        await past.aput(("acme", "mira"), "city", {"value": "Oslo"})
    tenant = store.for_tenant("acme")
    assert [i.value for i in await tenant.asearch(())] == [{"value": "Quito"}]
    assert await tenant.aget(("nico",), "city") is None
    assert await store.for_tenant("beta").alist_namespaces() == [("nico",)]
    assert (await store.aget(("acme", "mira"), "city")).value == {"value": "Quito"}


async def test_async_batch_reads_before_its_writes(store: SGAMStore) -> None:
    await store.aput(("acme", "mira"), "city", {"value": "Lima"})
    got, _, found = await store.abatch(
        [
            GetOp(("acme", "mira"), "city"),
            PutOp(("acme", "mira"), "city", {"value": "Quito"}),
            SearchOp(("acme",), None, 10, 0),
        ]
    )
    assert got.value == {"value": "Lima"}
    assert [i.value for i in found] == [{"value": "Lima"}]
    assert (await store.aget(("acme", "mira"), "city")).value == {"value": "Quito"}


async def test_async_bad_input_is_typed_and_writes_nothing(store: SGAMStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        await store.abatch(
            [PutOp(("acme", "mira"), "ok", {"v": 1}), PutOp(("acme", "a.b"), "k", {"v": 2})]
        )
    with pytest.raises(InvalidFilterError):
        await store.abatch(
            [
                PutOp(("acme", "mira"), "ok", {"v": 1}),
                SearchOp(("acme",), {"v": {"$regex": "x"}}, 10, 0),
            ]
        )
    assert await store.asearch(("acme",)) == []


def test_many_gets_in_one_batch_answer_as_single_gets(store: SGAMStore) -> None:
    for i in range(6):
        store.put(("acme", f"s{i}"), "city", {"v": i})
    before = datetime.now(UTC)
    for i in range(0, 6, 2):
        store.put(("acme", f"s{i}"), "city", {"v": 10 + i})
    store.delete(("acme", "s1"), "city")
    keys = [(("acme", f"s{i}"), "city") for i in (*range(7), 0)]  # s6 is absent, s0 twice
    for view in (store, store.as_of(before), store.for_tenant("acme")):
        relative = getattr(view, "tenant_id", None) is not None
        ops = [GetOp(ns[1:] if relative else ns, k) for ns, k in keys]
        together = view.batch(ops)
        alone = [view.batch([op])[0] for op in ops]
        assert [i and (i.namespace, i.value) for i in together] == [
            i and (i.namespace, i.value) for i in alone
        ]
    assert [i and i.value["v"] for i in store.batch([GetOp(*k) for k in keys])] == [
        10,
        None,
        12,
        3,
        14,
        5,
        None,
        10,
    ]


async def test_concurrent_reads_each_get_their_own_answer_or_error(store: SGAMStore) -> None:
    for i in range(30):
        await store.aput(("acme", f"s{i}"), "k", {"i": i})
    gets = [store.aget(("acme", f"s{i}"), "k") for i in range(30)]
    bad = store.aget(("acme", "a.b"), "k")  # '.' is not allowed in a label
    *items, failure = await asyncio.gather(*gets, bad, return_exceptions=True)
    assert [item.value["i"] for item in items] == list(range(30))
    assert isinstance(failure, InvalidNamespaceError)
    views = [store.for_tenant("acme").aget((f"s{i}",), "k") for i in range(5)]
    assert [item.value["i"] for item in await asyncio.gather(*views)] == list(range(5))
