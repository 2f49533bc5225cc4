"""The write rule and bitemporal reads, through replace_fact / fact_at / history."""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime, timedelta

import pytest

from sgam_store import ConflictError, InvalidTimestampError, MemoryFact, SGAMStore
from tests.db import scalar

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine

KEY = ("acme", "mira", "passport_deadline")


def fact(value: str, valid_from: str, episode: str, tenant: str = "acme") -> MemoryFact:
    return MemoryFact(
        tenant_id=tenant,
        subject="mira",
        attribute="passport_deadline",
        value=value,
        valid_from=valid_from,
        source_episode_id=episode,
    )


def seed(store: SGAMStore):
    e1 = store.replace_fact(fact("2026-07-15", "2026-06-01T09:00:00Z", "e1"))
    e2 = store.replace_fact(fact("2026-06-30", "2026-06-03T10:00:00Z", "e2"))
    e0 = store.replace_fact(fact("2026-08-01", "2026-05-30T08:00:00Z", "e0"))
    return e1, e2, e0


def test_seed_check(store: SGAMStore) -> None:
    e1, e2, e0 = seed(store)
    assert store.fact_at(*KEY).value == "2026-06-30"
    assert store.fact_at(*KEY, at="2026-06-02T00:00:00Z").source_episode_id == "e1"
    may31 = store.fact_at(*KEY, at="2026-05-31T00:00:00Z")
    assert may31.value == "2026-08-01" and may31.valid_to == e1.valid_from
    assert e2.supersedes_fact_id == e1.fact_id
    assert e0.supersedes_fact_id is None


def test_history_is_contiguous_and_ordered(store: SGAMStore) -> None:
    seed(store)
    hist = store.history(*KEY)
    assert [f.source_episode_id for f in hist] == ["e0", "e1", "e2"]
    for before, after in itertools.pairwise(hist):
        assert before.valid_to == after.valid_from
    assert hist[-1].valid_to is None


def test_equal_valid_from_conflicts_and_writes_nothing(store: SGAMStore) -> None:
    seed(store)
    before = store.history(*KEY)
    with pytest.raises(ConflictError):
        store.replace_fact(fact("2026-01-01", "2026-06-03T10:00:00+00:00", "e3"))
    assert store.history(*KEY) == before
    assert isinstance(ConflictError("x"), ValueError)


def test_insert_inside_closed_interval_keeps_its_end(store: SGAMStore) -> None:
    seed(store)
    mid = store.replace_fact(fact("2026-07-01", "2026-06-02T00:00:00Z", "e4"))
    e1 = store.fact_at(*KEY, at="2026-06-01T12:00:00Z")
    assert e1.source_episode_id == "e1"
    assert e1.valid_to == mid.valid_from
    assert mid.valid_to == datetime(2026, 6, 3, 10, tzinfo=UTC)
    assert mid.supersedes_fact_id == e1.fact_id
    assert store.fact_at(*KEY).source_episode_id == "e2"


@pytest.mark.parametrize(
    "bad", ["2026-06-01T09:00:00", "not a time", datetime(2026, 6, 1, 9), 12345]
)
def test_naive_or_garbage_timestamps_are_rejected(store: SGAMStore, bad: object) -> None:
    with pytest.raises((InvalidTimestampError, ValueError)):
        store.replace_fact(fact("x", bad, "e1"))  # type: ignore[arg-type]
    with pytest.raises(InvalidTimestampError):
        store.fact_at(*KEY, at=bad)  # type: ignore[arg-type]
    assert store.history(*KEY) == []


def test_offsets_are_normalized_to_utc(store: SGAMStore) -> None:
    f = store.replace_fact(fact("x", "2026-06-01T11:00:00+02:00", "e1"))
    assert f.valid_from == datetime(2026, 6, 1, 9, tzinfo=UTC)
    assert scalar(store, "SELECT valid_from FROM facts") == "2026-06-01T09:00:00.000000Z"


def test_known_at_does_not_see_later_corrections(store: SGAMStore) -> None:
    store.replace_fact(fact("2026-07-15", "2026-06-01T09:00:00Z", "e1"))
    time.sleep(0.002)
    believed = datetime.now(UTC)
    time.sleep(0.002)
    store.replace_fact(fact("2026-06-30", "2026-06-01T12:00:00Z", "e2"))
    # Now June 2 is e2; as believed before the correction, it was e1 (and e1 was open).
    assert store.fact_at(*KEY, at="2026-06-02T00:00:00Z").source_episode_id == "e2"
    old = store.fact_at(*KEY, at="2026-06-02T00:00:00Z", known_at=believed)
    assert old.source_episode_id == "e1" and old.valid_to is None
    assert [f.source_episode_id for f in store.history(*KEY, known_at=believed)] == ["e1"]
    before_anything = believed - timedelta(days=1)
    assert store.fact_at(*KEY, at="2026-06-02T00:00:00Z", known_at=before_anything) is None


@pytest.mark.sqlite_only  # PostgreSQL: tests/test_postgres.py
def test_open_fact_unique_index_is_in_the_schema(store: SGAMStore) -> None:
    seed(store)
    with pytest.raises(Exception, match="UNIQUE"):
        store.conn.execute(
            "INSERT INTO facts SELECT row_id + 100, fact_id + 100, tenant_id, namespace, subject,"
            " attribute, value, scalar, memory_type, schema_version, '2027-01-01T00:00:00.000000Z',"
            " NULL, recorded_at, known_from, NULL, created_at, NULL, source_episode_id,"
            " confidence, retention_policy, expires_at, ttl_minutes, decided_by"
            " FROM facts WHERE valid_to IS NULL AND known_to IS NULL"
        )
    with pytest.raises(Exception, match="CHECK"):
        store.conn.execute(
            "UPDATE facts SET valid_to = valid_from WHERE valid_to IS NULL AND known_to IS NULL"
        )


_COPY = (
    "INSERT INTO facts SELECT (SELECT MAX(row_id) FROM facts) + 1, fact_id, tenant_id, "
    "namespace, subject, attribute, value, scalar, memory_type, schema_version, valid_from, "
    "'2027-01-01T00:00:00.000000Z', recorded_at, known_from, {known_to}, created_at, NULL, "
    "source_episode_id, confidence, retention_policy, expires_at, ttl_minutes, decided_by "
    "FROM facts WHERE valid_to IS NULL AND known_to IS NULL"
)


@pytest.mark.sqlite_only  # PostgreSQL: its exclusion constraint, tests/test_postgres.py
def test_two_believed_versions_never_share_a_start(store: SGAMStore) -> None:
    """Rule 1's backstop in the schema: a second believed version with the open one's
    start is refused, while a retired version may share it (history)."""
    seed(store)
    with pytest.raises(Exception, match="UNIQUE"):
        store.conn.execute(_COPY.format(known_to="NULL"))
    store.conn.execute(_COPY.format(known_to="known_from"))
    store.conn.execute(_COPY.format(known_to="known_from"))  # retired copies: any number
    assert store.fact_at(*KEY).value == "2026-06-30"


def test_tenants_with_same_subject_are_separate(store: SGAMStore) -> None:
    seed(store)
    store.replace_fact(fact("2026-09-10", "2026-06-02T12:00:00Z", "g1", tenant="acme2"))
    assert store.fact_at(*KEY).value == "2026-06-30"
    assert store.fact_at("acme2", "mira", "passport_deadline").value == "2026-09-10"
    assert len(store.history("acme2", "mira", "passport_deadline")) == 1


def test_fact_fields_answer_the_design_questions(store: SGAMStore) -> None:
    _, e2, _ = seed(store)
    for name in (
        "fact_id",
        "tenant_id",
        "subject",
        "attribute",
        "value",
        "valid_from",
        "valid_to",
        "supersedes_fact_id",
        "source_episode_id",
        "recorded_at",
        "memory_type",
        "schema_version",
        "confidence",
        "retention_policy",
    ):
        assert hasattr(e2, name)
    assert e2.recorded_at.tzinfo is not None
    assert e2.schema_version == 1
