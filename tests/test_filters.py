"""Filters match stored values the way LangGraph's InMemoryStore does: nested objects by
value whatever their key order, partial objects as subsets, lists element by element,
operators at any depth. Checked against InMemoryStore itself on generated values, on
every engine: current and `as_of` searches, which PostgreSQL answers through different
indexes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore

from sgam_store import InvalidFilterError, SGAMStore

from . import pg

ENGINES = ("sqlite", "postgres")

NESTED = {"nested": {"lvl": 2, "color": "red"}, "tags": ["a", {"k": 1, "j": 2}], "n": 5}


@pytest.fixture
def stores(store: SGAMStore) -> Iterator[tuple[SGAMStore, InMemoryStore]]:
    yield store, InMemoryStore()


def open_sgam(engine: str) -> AbstractContextManager[SGAMStore]:
    if engine == "sqlite":
        return SGAMStore.from_conn_string(":memory:")
    uri, schema = pg.fresh_schema()
    return SGAMStore.from_conn_string(uri, schema=schema)


def keys(store, flt, prefix=("acme",)) -> list[str]:
    return sorted(i.key for i in store.search(prefix, filter=flt, limit=100))


@pytest.mark.parametrize(
    "flt, found",
    [
        ({"nested": {"color": "red", "lvl": 2}}, True),  # key order differs from the stored one
        ({"nested": {"color": "red"}}, True),  # a partial object is a subset
        ({"nested": {"color": "blue"}}, False),
        ({"nested": {"color": "red", "size": None}}, True),  # a missing key equals None
        ({"nested": {"lvl": {"$gt": 1}}}, True),  # operators below the top level
        ({"nested": {"lvl": {"$gt": 2}}}, False),
        ({"tags": ["a", {"j": 2}]}, True),  # lists element by element, objects inside partial
        ({"tags": ["a"]}, False),  # lists must have the same length
        ({"nested": {"$eq": {"color": "red", "lvl": 2}}}, True),  # $eq: the whole object
        ({"nested": {"$eq": {"color": "red"}}}, False),
        ({"nested": {"$ne": {"color": "red"}}}, True),
        ({"nested": {"$ne": {"lvl": 2, "color": "red"}}}, False),
        ({"nested": {}}, True),
        ({"n": {}}, False),  # an object filter needs an object
    ],
)
def test_nested_filters_match_like_in_memory_store(stores, flt, found) -> None:
    sgam, memory = stores
    for store in stores:
        store.put(("acme", "mira"), "profile", NESTED)
    assert keys(memory, flt) == (["profile"] if found else [])  # the reference agrees
    assert keys(sgam, flt) == keys(memory, flt)


def test_unsafe_nested_filter_keys_and_oversized_filters_are_typed_errors(stores) -> None:
    sgam, _ = stores
    with pytest.raises(InvalidFilterError, match="Invalid filter key"):
        sgam.search(("acme",), filter={"nested": {"color') OR 1=1 --": "red"}})
    with pytest.raises(InvalidFilterError, match="too large"):
        sgam.search(("acme",), filter={"tags": list(range(500))})


# No 0 or 1: Python's True == 1 makes InMemoryStore match a stored 1 to `true`; JSON (and
# so SGAMStore, like PostgresStore's JSONB) keeps them apart.
scalars = st.one_of(
    st.none(), st.booleans(), st.sampled_from([-3, 2, 3]), st.sampled_from(["a", "b", "red"])
)
labels = st.sampled_from(["a", "b", "c"])
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(labels, inner, max_size=3),
    max_leaves=8,
)


def subset_of(value):
    """A filter drawn from a stored value, so that matches are likely, or from anywhere."""
    if isinstance(value, dict) and value:
        return st.dictionaries(st.sampled_from(sorted(value)), values, max_size=2) | st.builds(
            lambda keep: {k: value[k] for k in keep},
            st.sets(st.sampled_from(sorted(value))),
        )
    return values


def test_filters_agree_with_in_memory_store(engine: str) -> None:
    @settings(max_examples=150 if engine == "sqlite" else 40, deadline=None)
    @given(
        docs=st.lists(st.dictionaries(labels, values, max_size=3), min_size=1, max_size=4),
        data=st.data(),
    )
    def agree(docs, data) -> None:
        flt = data.draw(subset_of(docs[data.draw(st.integers(0, len(docs) - 1))]))
        if not isinstance(flt, dict):
            flt = {"a": flt}
        memory = InMemoryStore()
        with open_sgam(engine) as sgam:
            sgam.setup()
            for i, doc in enumerate(docs):
                for store in (sgam, memory):
                    store.put(("acme", "s"), f"k{i}", doc)
            try:
                want = keys(memory, flt)
            except (TypeError, ValueError):  # InMemoryStore's own errors (e.g. $gt on None)
                return
            assert keys(sgam, flt) == want
            assert keys(sgam, flt, ()) == want  # across tenants
            assert keys(sgam.for_tenant("acme"), flt, ()) == want
            assert keys(sgam.as_of(datetime.now(UTC)), flt) == want

    agree()


def test_plain_filters_that_compare_equal_in_python_stay_apart(store: SGAMStore) -> None:
    """A filter of plain values is compiled once and reused (`Compiler.filter_sql`): 1,
    1.0 and True are one key to a dict, yet each keeps its own match (a JSON number, of
    either kind, is not a JSON boolean), asked one after the other, twice."""
    for key, value in (("int", 1), ("float", 1.5), ("true", True), ("text", "1")):
        store.put(("acme",), key, {"v": value})
    expected = [(1, ["int"]), (1.0, ["int"]), (True, ["true"]), ("1", ["text"]), (1.5, ["float"])]
    for _ in range(2):
        for value, found in expected:
            assert keys(store, {"v": value}) == found, value
