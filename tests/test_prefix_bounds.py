"""A namespace prefix matches its own namespace and those under it at a label boundary,
and nothing that merely sorts near it: on PostgreSQL the prefix is a byte-wise range
(`reads._prefix_sql`), so the neighbours of its bounds are checked here on both engines,
through listing, search and the small-scope path (LangMem's layout, `tenant_at=1`)."""

from __future__ import annotations

import pytest

from sgam_store import SGAMStore

ENGINES = ("sqlite", "postgres")

UNDER = [("acme", "mira"), ("acme", "mira", "work"), ("acme", "mira", "é"), ("acme", "mira", "z")]
NEAR = [
    ("acme", "mir"),  # a shorter label
    ("acme", "mira-b"),  # '-' sorts just below the separator '.'
    ("acme", "mira/b"),  # '/' is the range's upper bound
    ("acme", "mira0"),  # a longer label
    ("acme", "miraé"),  # a multi-byte character right after the prefix
    ("acme", "mirb"),
]


@pytest.fixture
def layered(target: str) -> SGAMStore:
    store = SGAMStore(target, tenant_at=0)
    store.setup()
    for n, ns in enumerate(UNDER + NEAR):
        store.put(ns, "note", {"text": f"note {n} about travel", "n": n})
    return store


def namespaces(items: list) -> set[tuple[str, ...]]:
    return {tuple(i.namespace) for i in items}


def test_a_prefix_reaches_its_namespaces_and_none_beside_them(layered: SGAMStore) -> None:
    try:
        assert namespaces(layered.search(("acme", "mira"), limit=50)) == set(UNDER)
        found = layered.search(("acme", "mira"), query="note about travel", limit=50)
        assert namespaces(found) == set(UNDER)
        assert namespaces(layered.search(("acme", "mira", "work"), limit=50)) == {UNDER[1]}
        listed = layered.list_namespaces(prefix=("acme", "mira"))
        assert set(listed) == set(UNDER)
    finally:
        layered.close()
