"""The change feed (`SGAMStore.changes`): a replayed sequence of writes reads back as
exactly the changes it made, newest first, per tenant, within its bounds, on both engines."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from sgam_store import (
    Change,
    InvalidTimestampError,
    LatestRecordedWins,
    MemoryFact,
    SGAMStore,
    TenantScopeError,
    Verdict,
)
from sgam_store.core import clock

ENGINES = ("sqlite", "postgres")
KEY = ("acme", "mira")


def fact(value: str, valid_from: str, source: str, tenant: str = "acme") -> MemoryFact:
    return MemoryFact(
        tenant_id=tenant,
        subject="mira",
        attribute="passport_deadline",
        value=value,
        valid_from=valid_from,
        source_episode_id=source,
    )


@pytest.fixture
def replayed(target: str) -> Iterator[tuple[SGAMStore, list[str]]]:
    """new e1; e2 supersedes it; a delete closes e2; a TTL'd put expires; another tenant
    writes meanwhile. Returns the store and the instant before each step."""
    with SGAMStore.from_conn_string(target, ttl={"refresh_on_read": False}) as store:
        store.setup()
        marks = [clock.utc_now()]
        store.replace_fact(fact("2026-07-15", "2026-06-01T09:00:00Z", "e1"))
        marks.append(clock.utc_now())
        store.replace_fact(fact("2026-06-30", "2026-06-03T10:00:00Z", "e2"))
        store.replace_fact(fact("elsewhere", "2026-06-03T10:00:00Z", "g1", tenant="globex"))
        marks.append(clock.utc_now())
        store.delete(KEY, "passport_deadline")
        marks.append(clock.utc_now())
        store.put(KEY, "otp", {"code": "1234"}, ttl=0.0005)  # 30 ms
        time.sleep(0.06)
        assert store.sweep_ttl() == 1
        yield store, marks


def kinds(changes: list[Change]) -> list[tuple[str, str, object]]:
    return [(c.kind, c.attribute, c.value) for c in changes]


def test_a_replayed_sequence_reads_back_newest_first(
    replayed: tuple[SGAMStore, list[str]],
) -> None:
    store, marks = replayed
    feed = store.changes(marks[0], tenant_id="acme")
    assert kinds(feed) == [
        ("expired", "otp", {"code": "1234"}),
        ("new", "otp", {"code": "1234"}),
        ("closed", "passport_deadline", "2026-06-30"),
        ("new", "passport_deadline", "2026-06-30"),
        ("superseded", "passport_deadline", "2026-07-15"),
        ("new", "passport_deadline", "2026-07-15"),
    ]
    assert [c.at for c in feed] == sorted((c.at for c in feed), reverse=True)
    expired, _, closed, e2, e1_closed, e1 = feed
    assert e1_closed.fact_id == e1.fact_id and e1_closed.superseded_by_fact_id == e2.fact_id
    assert e1_closed.valid_to == e2.valid_from == "2026-06-03T10:00:00.000000Z"
    assert e2.supersedes_fact_id == e1.fact_id and e2.source_episode_id == "e2"
    assert closed.fact_id == e2.fact_id and closed.valid_to == closed.at
    assert expired.valid_to is not None and expired.namespace == KEY
    assert e1.at == e1.at[:26] + "Z" and e1.superseded_by_fact_id is None


def test_the_feed_is_confined_to_its_tenant(replayed: tuple[SGAMStore, list[str]]) -> None:
    store, marks = replayed
    globex = store.changes(marks[0], tenant_id="globex")
    assert kinds(globex) == [("new", "passport_deadline", "elsewhere")]
    assert {c.tenant_id for c in store.changes(marks[0])} == {"acme", "globex"}
    assert len(store.changes(marks[0])) == 7
    view = store.for_tenant("globex")
    assert view.changes(marks[0]) == globex
    with pytest.raises(TypeError):
        view.changes(marks[0], tenant_id="acme")  # a tenant view cannot name another


def test_since_until_and_limit_bound_the_feed(replayed: tuple[SGAMStore, list[str]]) -> None:
    store, marks = replayed
    since_delete = store.changes(marks[2], tenant_id="acme")
    assert [c.kind for c in since_delete] == ["expired", "new", "closed"]
    window = store.changes(marks[1], tenant_id="acme", until=marks[2])
    assert [c.kind for c in window] == ["new", "superseded"]
    assert store.changes(marks[0], tenant_id="acme", limit=2) == since_delete[:2]
    newest = since_delete[0].at  # since is inclusive, until exclusive
    assert store.changes(newest, tenant_id="acme") == since_delete[:1]
    assert store.changes(marks[0], tenant_id="acme", until=since_delete[2].at)[0].kind == "new"
    assert store.changes(clock.utc_now(), tenant_id="acme") == []


def test_bad_bounds_are_refused(replayed: tuple[SGAMStore, list[str]]) -> None:
    store, marks = replayed
    with pytest.raises(InvalidTimestampError, match="naive"):
        store.changes("2026-06-01T00:00:00")
    with pytest.raises(InvalidTimestampError, match="after"):
        store.changes(marks[2], until=marks[1])
    for limit in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="limit"):
            store.changes(marks[0], limit=limit)  # type: ignore[arg-type]


def test_withdrawn_versions_are_changes_too(store: SGAMStore) -> None:
    """A version retired with no copy written: replaced at its own start by a policy
    (superseded), or deleted before it started (closed)."""
    since = clock.utc_now()
    store.replace_fact(fact("2026-07-15", "2026-06-01T09:00:00Z", "e1"))
    store.replace_fact(fact("2026-07-20", "2026-06-01T09:00:00Z", "e9"), LatestRecordedWins())
    feed = store.changes(since)
    assert kinds(feed)[:2] == [
        ("new", "passport_deadline", "2026-07-20"),
        ("superseded", "passport_deadline", "2026-07-15"),
    ]
    assert feed[1].superseded_by_fact_id == feed[0].fact_id and feed[0].at == feed[1].at
    # A page that the written versions fill still takes in what was withdrawn among them.
    store.replace_fact(fact("later", "2026-09-01T00:00:00Z", "e11"))
    for limit in (2, 3, 4, 5):
        page = store.changes(since, limit=limit)
        assert [c.kind for c in page] == ["new", "superseded", "new", "superseded", "new"][:limit]
        assert page == store.changes(since)[:limit]
    later = clock.utc_now()
    store.replace_fact(fact("future", "2999-01-01T00:00:00Z", "e10", tenant="other"))
    store.delete(("other", "mira"), "passport_deadline")
    assert kinds(store.changes(later, tenant_id="other")) == [
        ("closed", "passport_deadline", "future"),
        ("new", "passport_deadline", "future"),
    ]


def test_versions_lists_retired_versions_too(replayed: tuple[SGAMStore, list[str]]) -> None:
    store, _ = replayed
    versions = store.versions("acme", "mira", "passport_deadline")
    believed = store.history("acme", "mira", "passport_deadline")
    assert len(versions) == 4 and len(believed) == 2
    assert {v.known_to is None for v in versions} == {True, False}
    assert [v.fact_id for v in versions if v.known_to is None] == [f.fact_id for f in believed]


def test_a_tenant_view_gives_only_its_own_versions(
    replayed: tuple[SGAMStore, list[str]],
) -> None:
    store, _ = replayed
    view = store.for_tenant("globex")
    assert [v.value for v in view.versions("globex", "mira", "passport_deadline")] == ["elsewhere"]
    with pytest.raises(TenantScopeError):
        view.versions("acme", "mira", "passport_deadline")


def test_a_review_and_its_undo_read_back(store: SGAMStore) -> None:
    """A correction written under a new key: the review's "supersedes" closes the old
    memory (superseded by the new one, which is revised to name it); the undo revises the
    new memory back and writes the old value anew."""
    store.put(("acme", "mira"), "m1", {"content": "deadline 2026-07-15"})
    store.put(("acme", "mira"), "m2", {"content": "deadline 2026-06-30"})
    old, new = (store.fact_at("acme", "mira", k) for k in ("m1", "m2"))
    reviewed = clock.utc_now()
    (decision,) = store.apply_supersession(
        new.fact_id,
        [Verdict(old_fact_id=old.fact_id, decision="supersedes", reason="same deadline")],
        decided_by="test",
    )
    feed = store.changes(reviewed, tenant_id="acme")
    assert [(c.kind, c.attribute) for c in feed] == [("revised", "m2"), ("superseded", "m1")]
    assert feed[0].supersedes_fact_id == old.fact_id
    assert feed[1].superseded_by_fact_id == new.fact_id and feed[1].valid_to is not None
    undone = clock.utc_now()
    restored = store.undo_supersession(decision.decision_id)
    feed = store.changes(undone, tenant_id="acme")
    assert [(c.kind, c.attribute) for c in feed] == [("new", "m1"), ("revised", "m2")]
    assert feed[0].fact_id == restored.fact_id and feed[1].supersedes_fact_id is None
