"""Retention: policy grammar, expiry (closes, keeps history), session-only erasure, the job."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest

from sgam_store import InvalidRetentionPolicyError, MemoryFact, SGAMStore, parse_policy
from sgam_store.cli import main
from sgam_store.core.errors import InvalidEpisodeError, InvalidNamespaceError, InvalidSchemaError
from sgam_store.write.schemas import check_retention
from tests.db import rows

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine


SAMPLES = [
    None,
    "keep",
    "session_only",
    "expire_after:P30D",
    "expire_after:PT12H",
    "expire_after:P2W",
    "expire_after:P1DT6H",
    "expire_after:30d",
    "expire_after:",
    "expire_after:P0D",
    "expire_after:-P1D",
    "expire_after:PT",
    "expire_after P30D",
    "session",
    "forever",
    "KEEP",
]


def fact(attribute: str, policy: str | None, source: str = "e1", value: str = "v") -> MemoryFact:
    return MemoryFact(
        tenant_id="acme",
        subject="mira",
        attribute=attribute,
        value=value,
        valid_from="2026-01-01T00:00:00Z",
        source_episode_id=source,
        retention_policy=policy,
    )


def episode_ids(store: SGAMStore) -> set[str]:
    return {r[0] for r in rows(store, "SELECT episode_id FROM episodes")}


def test_policy_grammar() -> None:
    assert parse_policy(None).kind == parse_policy("keep").kind == "keep"
    assert parse_policy("session_only").kind == "session_only"
    assert parse_policy("expire_after:P30D").after == timedelta(days=30)
    assert parse_policy("expire_after:PT12H").after == timedelta(hours=12)
    assert parse_policy("expire_after:P2W").after == timedelta(weeks=2)
    with pytest.raises(InvalidRetentionPolicyError, match="ISO-8601 duration such as P30D"):
        parse_policy("expire_after:30d")
    with pytest.raises(InvalidRetentionPolicyError, match="unknown retention policy 'forever'"):
        parse_policy("forever")


@pytest.mark.parametrize("text", SAMPLES)
def test_same_grammar_as_memory_schemas(text: str | None) -> None:
    """A policy a MemorySchema accepts is one the retention job can apply, and vice versa."""
    try:
        parse_policy(text)
        parsed = True
    except InvalidRetentionPolicyError:
        parsed = False
    try:
        check_retention("keep" if text is None else text)
        declared = True
    except InvalidSchemaError:
        declared = False
    assert parsed == declared


def test_expire_after_closes_at_deadline_and_keeps_history(store: SGAMStore) -> None:
    expiring = store.replace_fact(fact("visa", "expire_after:P30D"))
    kept = store.replace_fact(fact("home", "keep"))
    plain = store.replace_fact(fact("cat", None))
    deadline = expiring.recorded_at + timedelta(days=30)

    early = store.run_retention(now=deadline - timedelta(seconds=1))
    assert early.expired_fact_ids == []
    assert store.fact_at("acme", "mira", "visa") is not None

    report = store.run_retention(now=deadline + timedelta(days=1))
    assert report.expired_fact_ids == [expiring.fact_id]
    assert report.erased.fact_ids == []
    assert store.fact_at("acme", "mira", "visa") is None
    assert store.get(("acme", "mira"), "visa") is None
    [closed] = store.history("acme", "mira", "visa")
    assert closed.value == "v" and closed.valid_to == deadline
    assert store.fact_at("acme", "mira", "visa", known_at=expiring.recorded_at).is_open
    for other in (kept, plain):
        assert store.fact_at("acme", "mira", other.attribute).fact_id == other.fact_id

    again = store.run_retention(now=deadline + timedelta(days=1))
    assert again.expired_fact_ids == [] and again.erased.fact_ids == []


def test_expired_episode_is_erased_and_its_facts_follow_their_own_policy(store: SGAMStore) -> None:
    store.record_episode(
        "acme", "hello", source_kind="user_message", episode_id="e1",
        retention_class="expire_after:PT1H",
    )  # fmt: skip
    store.record_episode("acme", "kept", source_kind="user_message", episode_id="e2")
    derived = store.replace_fact(fact("greeting", None, source="e1"))
    report = store.run_retention(now=derived.recorded_at + timedelta(hours=2))
    assert report.erased.episode_ids == ["e1"]
    assert report.erased.deleted["episodes"] == 1
    assert episode_ids(store) == {"e2"}
    assert store.fact_at("acme", "mira", "greeting").source_episode_id == "e1"
    assert (
        store.run_retention(now=derived.recorded_at + timedelta(hours=2)).erased.episode_ids == []
    )


def test_end_session_erases_session_only_data_of_that_thread(store: SGAMStore) -> None:
    for episode, thread, retention in [("s1", "t1", "session_only"), ("s2", "t2", "session_only")]:
        store.record_episode(
            "acme", f"said in {thread}", source_kind="user_message", episode_id=episode,
            thread_id=thread, retention_class=retention,
        )  # fmt: skip
    from_episode = store.replace_fact(fact("mood", "session_only", source="s1"))
    from_put = store.replace_fact(fact("topic", "session_only", source="thread:t1"))
    durable = store.replace_fact(fact("name", "keep", source="s1"))
    other_thread = store.replace_fact(fact("plan", "session_only", source="s2"))

    report = store.end_session("acme", "t1")
    assert sorted(report.erased.fact_ids) == sorted([from_episode.fact_id, from_put.fact_id])
    assert report.erased.episode_ids == ["s1"]
    assert store.history("acme", "mira", "mood") == []
    assert store.history("acme", "mira", "topic") == []
    assert store.fact_at("acme", "mira", "name").fact_id == durable.fact_id
    assert store.fact_at("acme", "mira", "plan").fact_id == other_thread.fact_id
    assert episode_ids(store) == {"s2"}

    # The thread resumes: what is recorded after the end waits for the next end.
    late = store.replace_fact(fact("mood", "session_only", source="thread:t1", value="later"))
    assert store.run_retention().erased.fact_ids == []
    assert store.end_session("acme", "t1").erased.fact_ids == [late.fact_id]
    assert store.run_retention().erased.fact_ids == []


def test_job_closes_ttl_expired_facts(store: SGAMStore) -> None:
    store.put(("acme", "mira"), "otp", {"code": "1234"}, ttl=0.0005)  # 30 ms
    time.sleep(0.06)
    assert store.run_retention().ttl_closed == 1
    assert len(store.history("acme", "mira", "otp")) == 1
    assert store.run_retention().ttl_closed == 0


def test_unparseable_policies_are_reported_not_guessed(store: SGAMStore) -> None:
    store.replace_fact(fact("visa", "forever"))
    store.record_episode(
        "acme", "x", source_kind="user_message", episode_id="e1", retention_class="30 days"
    )
    report = store.run_retention(now="2100-01-01T00:00:00Z")
    assert {(i["table"], i["policy"], i["rows"]) for i in report.invalid} == {
        ("facts", "forever", 1),
        ("episodes", "30 days", 1),
    }
    assert all("unknown retention policy" in i["error"] for i in report.invalid)
    assert store.fact_at("acme", "mira", "visa") is not None
    assert episode_ids(store) == {"e1"}


def test_end_session_rejects_bad_scope(store: SGAMStore) -> None:
    with pytest.raises(InvalidEpisodeError):
        store.end_session("acme", "")
    with pytest.raises(InvalidNamespaceError):
        store.end_session("a.b", "t1")


@pytest.mark.sqlite_only  # reads SQLite's own tables or file
def test_cli_retention(store: SGAMStore, db_path: str, capsys: pytest.CaptureFixture) -> None:
    expiring = store.replace_fact(fact("visa", "expire_after:P1D"))
    later = (expiring.recorded_at + timedelta(days=2)).isoformat()
    assert main(["retention", "--db", db_path, "--now", later, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["expired_fact_ids"] == [expiring.fact_id]
    assert out["erased"]["deleted"]["facts"] == 0

    assert main(["retention", "--db", db_path, "--now", "2026-01-01T00:00:00"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sgam: error:") and "naive" in err and err.count("\n") == 1
    assert main(["retention", "--db", db_path + ".missing"]) == 2
    assert "no database at" in capsys.readouterr().err
