"""as_of views are read-only snapshots; tenant views cannot reach another tenant."""

from __future__ import annotations

import pytest
from langgraph.store.base import InvalidNamespaceError

from sgam_store import MemoryFact, ReadOnlyViewError, SGAMStore

from .conftest import HashEmbeddings

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine


TENANTS = ["acme", "acme2", "ac*me", "ünï", "mira"]


def put_fact(store: SGAMStore, tenant: str, value: str, valid_from: str, ep: str) -> None:
    store.replace_fact(
        MemoryFact(
            tenant_id=tenant,
            subject="mira",
            attribute="passport_deadline",
            value=value,
            valid_from=valid_from,
            source_episode_id=ep,
        )
    )


def seed(store: SGAMStore) -> None:
    put_fact(store, "acme", "2026-07-15", "2026-06-01T09:00:00Z", "e1")
    put_fact(store, "acme", "2026-06-30", "2026-06-03T10:00:00Z", "e2")
    put_fact(store, "acme", "2026-08-01", "2026-05-30T08:00:00Z", "e0")


def test_as_of_answers_the_past_and_rejects_writes(store: SGAMStore) -> None:
    seed(store)
    june2 = store.as_of("2026-06-02T00:00:00Z")
    assert june2.get(("acme", "mira"), "passport_deadline").value == {"value": "2026-07-15"}
    assert [i.value for i in june2.search(("acme",))] == [{"value": "2026-07-15"}]
    assert june2.list_namespaces() == [("acme", "mira")]
    assert store.as_of("2026-01-01T00:00:00Z").list_namespaces() == []
    for write in (
        lambda: june2.put(("acme", "mira"), "x", {"v": 1}),
        lambda: june2.delete(("acme", "mira"), "passport_deadline"),
    ):
        with pytest.raises(ReadOnlyViewError):
            write()
    assert store.get(("acme", "mira"), "x") is None
    assert store.get(("acme", "mira"), "passport_deadline").value == {"value": "2026-06-30"}


def test_tenant_view_is_relative_and_confined(store: SGAMStore) -> None:
    for tenant in TENANTS:
        put_fact(store, tenant, f"value-of-{tenant}", "2026-06-01T09:00:00Z", f"ep-{tenant}")
    for tenant in TENANTS:
        view = store.for_tenant(tenant)
        item = view.get(("mira",), "passport_deadline")
        assert item.value == {"value": f"value-of-{tenant}"}
        assert item.namespace == ("mira",)
        assert [i.value["value"] for i in view.search(())] == [f"value-of-{tenant}"]
        assert [i.value["value"] for i in view.search((), query="value")] == [f"value-of-{tenant}"]
        assert view.list_namespaces() == [("mira",)]
        assert view.list_namespaces(suffix=("mira",)) == [("mira",)]
        # another tenant's name as a subject label stays inside this tenant
        assert view.get(("acme", "mira"), "passport_deadline") is None or tenant == "acme"
    with pytest.raises(InvalidNamespaceError):
        store.for_tenant("acme").get(("acme2.mira",), "passport_deadline")


def test_tenant_view_writes_land_in_its_tenant(store: SGAMStore) -> None:
    view = store.for_tenant("acme")
    view.put(("mira",), "tone", {"style": "short"})
    assert store.get(("acme", "mira"), "tone").value == {"style": "short"}
    assert store.for_tenant("acme2").get(("mira",), "tone") is None
    past = view.as_of("2020-01-01T00:00:00Z")
    assert past.get(("mira",), "tone") is None
    with pytest.raises(ReadOnlyViewError):
        past.put(("mira",), "tone", {"style": "long"})


def test_tenant_vector_search_stays_in_partition(db_path: str) -> None:
    index = {"dims": 64, "embed": HashEmbeddings(64)}
    with SGAMStore.from_conn_string(db_path, index=index) as s:
        for tenant in TENANTS:
            s.put((tenant, "mira"), "note", {"text": "passport deadline is June 30"})
        for tenant in TENANTS:
            hits = s.for_tenant(tenant).search((), query="passport deadline", limit=50)
            assert len(hits) == 1 and hits[0].namespace == ("mira",)
        assert len(s.search((), query="passport deadline", limit=50)) == len(TENANTS)


def test_as_of_vector_search_sees_the_value_of_that_time(vstore: SGAMStore) -> None:
    vstore.put(("acme", "mira"), "note", {"text": "passport deadline July 15"})
    first = vstore.fact_at("acme", "mira", "note").valid_from
    vstore.put(("acme", "mira"), "note", {"text": "grocery list"})
    now_hits = vstore.search(("acme",), query="passport deadline", limit=5)
    assert [h.value["text"] for h in now_hits] == ["grocery list"]
    past_hits = vstore.as_of(first).search(("acme",), query="passport deadline", limit=5)
    assert [h.value["text"] for h in past_hits] == ["passport deadline July 15"]
