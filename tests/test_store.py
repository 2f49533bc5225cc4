"""SGAMStore as a LangGraph BaseStore: the SGAM meaning of put/get/delete/search/list."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import pytest
from langgraph.graph import START, StateGraph
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, PutOp, SearchOp
from typing_extensions import TypedDict

from sgam_store import (
    DimensionMismatchError,
    InvalidFilterError,
    MemoryFact,
    SGAMStore,
    ValueTooLargeError,
)

from .conftest import HashEmbeddings

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine


def test_put_keeps_history_and_get_sees_current(store: SGAMStore) -> None:
    store.put(("acme", "mira"), "tone", {"style": "formal"})
    first = store.get(("acme", "mira"), "tone")
    store.put(("acme", "mira"), "tone", {"style": "short"})
    item = store.get(("acme", "mira"), "tone")
    assert item.value == {"style": "short"}
    assert item.created_at == first.created_at  # not reset by an update
    hist = store.history("acme", "mira", "tone")
    assert [f.value["style"] for f in hist] == ["formal", "short"]
    assert hist[1].supersedes_fact_id == hist[0].fact_id
    assert hist[0].valid_to == hist[1].valid_from


def test_many_puts_in_one_batch_same_key_never_fail(store: SGAMStore) -> None:
    ops = [PutOp(("acme", "mira"), "n", {"i": i}) for i in range(50)]
    store.batch(ops)
    assert store.get(("acme", "mira"), "n").value == {"i": 49}
    hist = store.history("acme", "mira", "n")
    assert len(hist) == 50
    assert len({f.valid_from for f in hist}) == 50


def test_delete_closes_and_keeps_history(store: SGAMStore) -> None:
    store.put(("acme", "mira"), "tone", {"style": "short"})
    time.sleep(0.001)
    store.delete(("acme", "mira"), "tone")
    assert store.get(("acme", "mira"), "tone") is None
    assert store.search(("acme",)) == []
    hist = store.history("acme", "mira", "tone")
    assert len(hist) == 1 and hist[0].valid_to is not None
    past = store.as_of(hist[0].valid_from)
    assert past.get(("acme", "mira"), "tone").value == {"style": "short"}


def test_scalar_facts_read_back_as_value_dicts(store: SGAMStore) -> None:
    from sgam_store import MemoryFact

    store.replace_fact(
        MemoryFact(
            tenant_id="acme",
            subject="mira",
            attribute="age",
            value=41,
            valid_from="2026-01-01T00:00:00Z",
            source_episode_id="e1",
        )
    )
    assert store.get(("acme", "mira"), "age").value == {"value": 41}
    assert store.search(("acme",), filter={"value": {"$gte": 40}})[0].key == "age"


def test_filters_and_operators(store: SGAMStore) -> None:
    for i in range(10):
        store.put(
            ("acme", "docs"),
            f"d{i}",
            {"n": i, "tag": "even" if i % 2 == 0 else "odd", "meta": {"x-y": i % 3}},
        )
    assert len(store.search(("acme",), filter={"tag": "even"}, limit=100)) == 5
    assert len(store.search(("acme",), filter={"n": {"$gt": 6}}, limit=100)) == 3
    assert len(store.search(("acme",), filter={"n": {"$lte": 1}}, limit=100)) == 2
    assert len(store.search(("acme",), filter={"n": {"$ne": 3}}, limit=100)) == 9
    assert len(store.search(("acme",), filter={"meta.x-y": 0}, limit=100)) == 4
    with pytest.raises(InvalidFilterError, match="operator"):
        store.search(("acme",), filter={"n": {"$regex": "1"}})
    with pytest.raises(ValueError, match="Invalid filter key"):
        store.search(("acme",), filter={"n') OR 1=1 --": 1})


def test_pagination_past_first_page(store: SGAMStore) -> None:
    for i in range(30):
        store.put(("acme", "docs"), f"d{i}", {"n": i})
    page = store.search(("acme",), limit=5, offset=10)
    assert len(page) == 5
    everything = {it.key for it in store.search(("acme",), limit=100)}
    assert len(everything) == 30


def test_vector_pagination_and_current_only(vstore: SGAMStore) -> None:
    for i in range(30):
        vstore.put(("acme", "docs"), f"d{i}", {"text": f"passport renewal note number {i}"})
    page = vstore.search(("acme",), query="passport renewal", limit=5, offset=10)
    assert len(page) == 5
    vstore.put(("acme", "docs"), "d0", {"text": "grocery list"})
    hits = vstore.search(("acme",), query="passport renewal note number 0", limit=30)
    assert len(hits) == 30 and len({h.key for h in hits}) == 30  # one item per key
    assert next(h for h in hits if h.key == "d0").value == {"text": "grocery list"}
    top = vstore.search(("acme",), query="passport renewal note number 0", limit=3)
    assert "d0" not in {h.key for h in top}  # the superseded text no longer ranks


def test_invalid_namespaces_rejected_before_any_write(store: SGAMStore) -> None:
    for bad in [("a.b",), ("acme", ""), ("acme", 1), ()]:
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp(("ok",), "k", {"v": 1}), PutOp(bad, "k", {"v": 1})])
    assert store.get(("ok",), "k") is None


def test_wrong_dimensions_and_huge_values_write_nothing(db_path: str) -> None:
    class Bad(HashEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[0.1] * 3 for _ in texts]

    with SGAMStore.from_conn_string(db_path, index={"dims": 64, "embed": Bad(64)}) as s:
        with pytest.raises(DimensionMismatchError):
            s.put(("acme",), "k", {"text": "x"})
        assert s.get(("acme",), "k") is None
    with SGAMStore.from_conn_string(db_path, max_value_bytes=100) as s:
        with pytest.raises(ValueTooLargeError):
            s.put(("acme",), "k", {"text": "x" * 200})
        with pytest.raises(ValueError):
            s.put(("acme",), "k", {"bad": object()})
        assert s.get(("acme",), "k") is None


def test_reopening_with_other_dims_is_an_error(db_path: str) -> None:
    with SGAMStore.from_conn_string(db_path, index={"dims": 64, "embed": HashEmbeddings(64)}) as s:
        s.setup()
    other = {"dims": 32, "embed": HashEmbeddings(32)}
    with (
        SGAMStore.from_conn_string(db_path, index=other) as s,
        pytest.raises(DimensionMismatchError),
    ):
        s.setup()


# Labels that sort just around the separator ('.' < '/'), or are GLOB metacharacters.
BOUNDARY_LABELS = ["mira", "mira-2", "mira 2", "mira!", "mira*", "mira[", "mira/", "mira0", "mir"]


def test_a_prefix_stops_at_label_boundaries(store: SGAMStore) -> None:
    """A search under ("acme", "mira") holds "mira" and what is under it, never "mira-2":
    listed, filtered, and ranked (a small scope is read whole)."""
    for label in BOUNDARY_LABELS:
        store.put(("acme", label), "k", {"text": f"note {label}", "kind": "a"})
        store.put(("acme", label, "deep"), "k", {"text": f"deep note {label}", "kind": "a"})
    for label in BOUNDARY_LABELS:
        under = {("acme", label), ("acme", label, "deep")}
        for found in (
            store.search(("acme", label), limit=100),
            store.search(("acme", label), filter={"kind": "a"}, limit=100),
            store.search(("acme", label), query="note", limit=100),
        ):
            assert {tuple(item.namespace) for item in found} == under, label


def test_list_namespaces(store: SGAMStore) -> None:
    for ns in [
        ("acme", "mira", "prefs"),
        ("acme", "mira", "docs"),
        ("acme2", "mira", "prefs"),
        ("acme", "bob"),
    ]:
        store.put(ns, "k", {"v": 1})
    assert set(store.list_namespaces(prefix=("acme",))) == {
        ("acme", "mira", "prefs"),
        ("acme", "mira", "docs"),
        ("acme", "bob"),
    }
    assert set(store.list_namespaces(suffix=("prefs",))) == {
        ("acme", "mira", "prefs"),
        ("acme2", "mira", "prefs"),
    }
    assert set(store.list_namespaces(prefix=("*", "mira"), max_depth=2)) == {
        ("acme", "mira"),
        ("acme2", "mira"),
    }
    assert len(store.list_namespaces(limit=2, offset=3)) == 1


def test_ttl_expiry_closes_and_keeps_history(db_path: str) -> None:
    ttl = {"default_ttl": 0.0005, "refresh_on_read": False}  # 30 ms
    with SGAMStore.from_conn_string(db_path, ttl=ttl) as s:
        s.put(("acme", "mira"), "otp", {"code": "1234"})
        assert s.get(("acme", "mira"), "otp") is not None
        time.sleep(0.06)
        assert s.get(("acme", "mira"), "otp") is None  # stale before the sweep runs
        assert s.sweep_ttl() == 1
        assert s.sweep_ttl() == 0
        hist = s.history("acme", "mira", "otp")
        assert len(hist) == 1 and hist[0].valid_to == hist[0].expires_at


def test_ttl_refresh_on_read_moves_expiry(db_path: str) -> None:
    with SGAMStore.from_conn_string(db_path, ttl={"default_ttl": 1.0}) as s:
        s.put(("acme",), "k", {"v": 1})
        first = s.fact_at("acme", "", "k").expires_at
        time.sleep(0.01)
        s.get(("acme",), "k")
        assert s.fact_at("acme", "", "k").expires_at > first
        s.get(("acme",), "k", refresh_ttl=False)


def test_provenance_from_langgraph_config(store: SGAMStore) -> None:
    class State(TypedDict):
        text: str

    def remember(state: State, *, store: BaseStore) -> dict:
        store.put(("acme", "mira"), "note", {"text": state["text"]})
        return {}

    graph = StateGraph(State).add_node("remember", remember)
    graph = graph.add_edge(START, "remember").compile(store=store)
    graph.invoke({"text": "a"}, {"configurable": {"thread_id": "t-1"}})
    assert store.fact_at("acme", "mira", "note").source_episode_id == "thread:t-1"
    graph.invoke({"text": "b"}, {"configurable": {"thread_id": "t-1", "episode_id": "ep-9"}})
    assert store.fact_at("acme", "mira", "note").source_episode_id == "ep-9"
    store.put(("acme", "mira"), "note", {"text": "c"})
    assert store.fact_at("acme", "mira", "note").source_episode_id == "external:store.put"


async def test_abatch_does_not_block_the_event_loop(store: SGAMStore) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.gather(
        *[
            store.abatch([PutOp(("acme", f"s{i}"), "k", {"i": i}), GetOp(("acme", f"s{i}"), "k")])
            for i in range(100)
        ]
    )
    task.cancel()
    assert ticks > 100
    assert len(await store.asearch(("acme",), limit=200)) == 100
    assert (await store.aget(("acme", "s7"), "k")).value == {"i": 7}


def test_keyword_search_without_embeddings(store: SGAMStore) -> None:
    store.put(("acme", "mira"), "passport_deadline", {"value": "2026-06-30"})
    store.put(("acme", "mira"), "tone", {"value": "short answers"})
    hits = store.search(("acme",), query="when is the passport deadline?")
    assert [h.key for h in hits] == ["passport_deadline"]
    assert hits[0].score == 1.0  # calibrated: the memory holds every term of the query


def test_search_ops_in_batch_validate_filters_first(store: SGAMStore) -> None:
    with pytest.raises(InvalidFilterError):
        store.batch([PutOp(("acme",), "k", {"v": 1}), SearchOp(("acme",), filter={"v": {"$x": 1}})])
    assert store.get(("acme",), "k") is None


def test_put_naming_index_fields_without_an_index_config_lands(store: SGAMStore) -> None:
    """As in InMemoryStore: nothing to embed, and the named fields feed the keyword row."""
    store.put(("acme", "mira"), "note", {"text": "renew the passport", "other": "zebra"},
              index=["text"])  # fmt: skip
    assert store.get(("acme", "mira"), "note").value["text"] == "renew the passport"
    assert [h.key for h in store.search(("acme",), query="passport")] == ["note"]
    assert store.search(("acme",), query="zebra") == []  # not a named field


def test_index_false_items_are_listed_but_never_found_by_a_query(vstore: SGAMStore) -> None:
    vstore.put(("acme", "mira"), "secret", {"text": "passport number"}, index=False)
    vstore.put(("acme", "mira"), "deadline", {"text": "passport deadline"})
    assert {i.key for i in vstore.search(("acme",))} == {"secret", "deadline"}
    assert [h.key for h in vstore.search(("acme",), query="passport number")] == ["deadline"]


def test_changing_max_value_bytes_applies_to_every_write_path(store: SGAMStore) -> None:
    store.max_value_bytes = 64
    big = "x" * 100
    with pytest.raises(ValueTooLargeError):
        store.put(("acme", "mira"), "note", {"text": big})
    with pytest.raises(ValueTooLargeError):
        store.replace_fact(MemoryFact(tenant_id="acme", subject="mira", attribute="note",
                                      value=big, valid_from="2026-06-01T00:00:00Z",
                                      source_episode_id="external:test"))  # fmt: skip
    assert store.history("acme", "mira", "note") == []


# ---------------------------------------------------------------- identical re-puts


def test_an_identical_re_put_keeps_the_version(store: SGAMStore) -> None:
    store.put(("acme", "mira"), "deadline", {"value": "2026-06-30"})
    first = store.fact_at("acme", "mira", "deadline")
    store.batch([PutOp(("acme", "mira"), "deadline", {"value": "2026-06-30"})] * 3)
    hist = store.history("acme", "mira", "deadline")
    assert [(f.fact_id, f.valid_from, f.known_from) for f in hist] == [
        (first.fact_id, first.valid_from, first.known_from)
    ]
    store.put(("acme", "mira"), "deadline", {"value": "2026-07-15"})  # a change versions
    store.put(("acme", "mira"), "deadline", {"value": "2026-07-15"})
    assert [f.value for f in store.history("acme", "mira", "deadline")] == [
        {"value": "2026-06-30"},
        {"value": "2026-07-15"},
    ]
    store.put(("acme", "mira"), "deadline", {"value": "2026-06-30"})  # back again: a change
    assert len(store.history("acme", "mira", "deadline")) == 3


def test_a_re_put_that_indexes_otherwise_versions(vstore: SGAMStore) -> None:
    vstore.put(("acme", "mira"), "note", {"text": "passport renewal"}, index=False)
    assert vstore.search(("acme",), query="passport renewal") == []
    vstore.put(("acme", "mira"), "note", {"text": "passport renewal"})  # now searchable
    assert [h.key for h in vstore.search(("acme",), query="passport renewal")] == ["note"]
    vstore.put(("acme", "mira"), "note", {"text": "passport renewal"})
    assert len(vstore.history("acme", "mira", "note")) == 2


def test_a_scalar_fact_restated_as_a_dict_versions(store: SGAMStore) -> None:
    store.replace_fact(MemoryFact(tenant_id="acme", subject="mira", attribute="deadline",
                                  value="2026-06-30", valid_from="2026-06-01T00:00:00Z",
                                  source_episode_id="e1"))  # fmt: skip
    store.put(("acme", "mira"), "deadline", {"value": "2026-06-30"})
    assert [f.value for f in store.history("acme", "mira", "deadline")] == [
        "2026-06-30",
        {"value": "2026-06-30"},
    ]


def test_an_identical_re_put_renews_the_ttl_only(target: str) -> None:
    with SGAMStore.from_conn_string(target, ttl={"default_ttl": 1.0}) as s:
        s.put(("acme",), "otp", {"code": "1234"})
        first = s.fact_at("acme", "", "otp")
        time.sleep(0.01)
        s.put(("acme",), "otp", {"code": "1234"})
        again = s.fact_at("acme", "", "otp")
        assert again.expires_at > first.expires_at
        assert (again.fact_id, again.valid_from) == (first.fact_id, first.valid_from)
        s.put(("acme",), "otp", {"code": "1234"}, ttl=5)  # another TTL is a change
        assert len(s.history("acme", "", "otp")) == 2


def test_an_expired_fact_re_put_comes_back_as_a_new_version(target: str) -> None:
    with SGAMStore.from_conn_string(target, ttl={"default_ttl": 0.0005}) as s:  # 30 ms
        s.put(("acme",), "otp", {"code": "1234"})
        time.sleep(0.06)
        assert s.get(("acme",), "otp") is None
        s.put(("acme",), "otp", {"code": "1234"})  # its TTL may have run out too, by now
        first, again = s.history("acme", "", "otp")
        assert again.fact_id != first.fact_id and again.value == {"code": "1234"}


def test_concurrent_identical_re_puts_never_fail(store: SGAMStore) -> None:
    store.put(("acme", "mira"), "deadline", {"value": "2026-06-30"})

    def writer(n: int) -> None:
        for i in range(10):
            value = "2026-06-30" if (n + i) % 3 else "2026-07-15"
            store.put(("acme", "mira"), "deadline", {"value": value})

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(writer, range(4)))  # re-raises any writer's error
    hist = store.history("acme", "mira", "deadline")
    values = [f.value["value"] for f in hist]
    assert all(a != b for a, b in pairwise(values))  # no restatement
    assert all(a.valid_to == b.valid_from for a, b in pairwise(hist))
