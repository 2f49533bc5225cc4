"""`count_keys`: current keys per subject, from an index, equal to what a listing shows."""

from __future__ import annotations

import time

import pytest

from sgam_store import SGAMStore
from sgam_store.core.errors import InvalidFactError, TenantScopeError
from sgam_store.engines.common import counts
from sgam_store.engines.common.dialect import SQLITE

ENGINES = ("sqlite", "postgres")
# One second: long enough that a loaded machine counts "brief" before it expires.
TTL = {"default_ttl": 1 / 60, "refresh_on_read": False}


def listed(store: SGAMStore, tenant: str, subject: str) -> int:
    """How many current items the tenant's listing of `subject` shows."""
    return len(store.for_tenant(tenant).search((subject,), limit=1000))


def test_counts_equal_the_current_keys_a_listing_shows(target: str) -> None:
    with SGAMStore.from_conn_string(target, ttl=TTL) as store:
        store.setup()
        for n in range(5):
            store.put(("acme", "mira"), f"k{n}", {"v": n}, ttl=None)
        store.put(("acme", "mira"), "k0", {"v": "again"}, ttl=None)  # a new version
        store.delete(("acme", "mira"), "k1")
        store.put(("acme", "mira"), "brief", {"v": "soon gone"})  # the default one-second TTL
        store.put(("acme", "kim"), "k0", {"v": 0}, ttl=None)
        store.put(("zeta", "mira"), "other", {"v": 1}, ttl=None)  # another tenant's
        assert store.count_keys("acme", ["mira", "kim"]) == {"mira": 5, "kim": 1}
        time.sleep(1.1)  # "brief" expires; no sweep has closed it
        found = store.count_keys("acme", ["mira", "kim", "nobody"])
        assert found == {"mira": 4, "kim": 1, "nobody": 0}
        assert found == {s: listed(store, "acme", s) for s in found}
        assert store.count_keys("zeta", ["mira"]) == {"mira": 1}


def test_a_tenant_view_counts_its_own_tenant_only(store: SGAMStore) -> None:
    store.put(("acme", "mira"), "k", {"v": 1})
    assert store.for_tenant("acme").count_keys("acme", ["mira"]) == {"mira": 1}
    with pytest.raises(TenantScopeError):
        store.for_tenant("acme").count_keys("zeta", ["mira"])


def test_bad_subjects_are_refused(store: SGAMStore) -> None:
    with pytest.raises(InvalidFactError, match="list of subjects"):
        store.count_keys("acme", "mira")
    with pytest.raises(ValueError):
        store.count_keys("acme", ["mira..kim"])


@pytest.mark.sqlite_only
def test_sqlite_counts_from_a_covering_index(store: SGAMStore) -> None:
    store.put(("acme", "mira"), "k", {"v": 1})
    with store.engine.reading() as conn:
        plan = conn.execute(
            "EXPLAIN QUERY PLAN " + counts._current_keys_sql(SQLITE),
            ("acme", SQLITE.as_list(["acme.mira"]), "2000-01-01T00:00:00Z"),
        ).fetchall()
    details = " ".join(row[3] for row in plan)
    assert "COVERING INDEX facts_current_count" in details, details
