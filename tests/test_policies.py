"""Conflict policies for an equal valid_from: default conflict, source precedence, latest wins.

A policy decides "keep" (KeptExistingError, nothing written) or "replace" (the stored
version is retired, the new fact takes its start and end, `decided_by` names the policy);
the loser of a replacement stays readable through `known_at`.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgam_store import (
    ConflictError,
    Episode,
    KeptExistingError,
    LatestRecordedWins,
    MemoryFact,
    SGAMStore,
    SourcePrecedence,
)
from sgam_store.core.clock import CLOCK

from .seed import DEADLINE, E1_AT, E2_AT, candidate, fresh_store

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine


PRECEDENCE = SourcePrecedence()


def said(store: SGAMStore, kind: str, *, confirmed: bool = False, speaker: str = "mira") -> Episode:
    return store.record_episode(
        "acme",
        "Her passport deadline is 2026-07-15.",
        source_kind=kind,  # type: ignore[arg-type]
        speaker=speaker,
        metadata={"confirmed": True} if confirmed else {},
    )


def fact(source: str, value: str, valid_from: str = E1_AT) -> MemoryFact:
    return MemoryFact(
        tenant_id="acme",
        subject="mira",
        attribute="passport_deadline",
        value=value,
        valid_from=valid_from,
        source_episode_id=source,
    )


def test_without_a_policy_an_equal_start_raises_and_writes_nothing(store: SGAMStore) -> None:
    store.replace_fact(fact(said(store, "tool_result").episode_id, "2026-07-15"))
    before = store.history(*DEADLINE)
    incoming = fact(said(store, "user_message", confirmed=True).episode_id, "2026-06-30")
    with pytest.raises(ConflictError, match="resolve with a conflict policy") as info:
        store.replace_fact(incoming, policy=None)
    assert not isinstance(info.value, KeptExistingError)
    assert store.history(*DEADLINE) == before


def test_source_precedence_keeps_a_better_stored_source(store: SGAMStore) -> None:
    stored = store.replace_fact(fact(said(store, "user_message").episode_id, "2026-07-15"))
    tool = fact(said(store, "tool_result").episode_id, "2026-06-30")
    with pytest.raises(
        KeptExistingError, match="user_statement outranks incoming tool_result"
    ) as e:
        store.replace_fact(tool, policy=PRECEDENCE)
    assert (e.value.decision.action, e.value.decision.decided_by) == ("keep", "source_precedence")
    assert e.value.existing == stored
    assert store.history(*DEADLINE) == [stored]


def test_source_precedence_replaces_and_the_loser_stays_in_history(store: SGAMStore) -> None:
    old = store.replace_fact(fact(said(store, "tool_result").episode_id, "2026-07-15"))
    confirmed = said(store, "user_message", confirmed=True)
    new = store.replace_fact(fact(confirmed.episode_id, "2026-06-30"), policy=PRECEDENCE)
    assert (new.valid_from, new.valid_to) == (old.valid_from, None)
    assert (new.supersedes_fact_id, new.decided_by) == (old.fact_id, "source_precedence")
    assert store.history(*DEADLINE) == [new]
    assert store.fact_at(*DEADLINE).value == "2026-06-30"
    believed_before = new.known_from - timedelta(microseconds=1)
    retired = old.model_copy(update={"known_to": new.known_from})  # retired, no copy
    assert store.history(*DEADLINE, known_at=believed_before) == [retired]
    assert store.fact_at(*DEADLINE, at=E1_AT, known_at=believed_before).value == "2026-07-15"
    assert store.who_said(new) == confirmed


def test_a_replaced_closed_fact_keeps_its_end(store: SGAMStore) -> None:
    store.replace_fact(fact(said(store, "assistant_message").episode_id, "2026-07-15"))
    later = store.replace_fact(fact(said(store, "user_message").episode_id, "2026-06-30", E2_AT))
    new = store.replace_fact(
        fact(said(store, "tool_result").episode_id, "2026-07-10"), policy=PRECEDENCE
    )
    assert new.valid_to == later.valid_from
    assert [f.value for f in store.history(*DEADLINE)] == ["2026-07-10", "2026-06-30"]
    assert store.fact_at(*DEADLINE) == later


def test_latest_recorded_wins_by_when_the_source_was_recorded(store: SGAMStore) -> None:
    older, newer = said(store, "user_message"), said(store, "user_message")
    stored = store.replace_fact(fact(newer.episode_id, "2026-06-30"))
    late_extraction = fact(older.episode_id, "2026-07-15")  # an older episode, extracted later
    with pytest.raises(KeptExistingError, match="latest_recorded_wins kept it"):
        store.replace_fact(late_extraction, policy=LatestRecordedWins())
    newest = said(store, "assistant_message")
    new = store.replace_fact(fact(newest.episode_id, "2026-07-01"), policy=LatestRecordedWins())
    assert (new.decided_by, new.supersedes_fact_id) == ("latest_recorded_wins", stored.fact_id)
    assert store.history(*DEADLINE) == [new]


def test_external_sources_rank_last_and_fall_back_to_fact_recording(store: SGAMStore) -> None:
    store.replace_fact(fact("external:crm", "2026-07-15"))
    new = store.replace_fact(fact("external:import", "2026-06-30"), policy=LatestRecordedWins())
    assert new.decided_by == "latest_recorded_wins"
    user = store.replace_fact(fact(said(store, "user_message").episode_id, "x"), policy=PRECEDENCE)
    assert user.decided_by == "source_precedence"


def test_a_tie_is_a_conflict_unless_a_fallback_decides(store: SGAMStore) -> None:
    store.replace_fact(fact(said(store, "tool_result").episode_id, "2026-07-15"))
    event = fact(said(store, "business_event").episode_id, "2026-06-30")  # same rank as a tool
    with pytest.raises(ConflictError, match="'source_precedence' could not decide") as info:
        store.replace_fact(event, policy=PRECEDENCE)
    assert not isinstance(info.value, KeptExistingError)
    fallback = SourcePrecedence(then=LatestRecordedWins())
    assert store.replace_fact(event, policy=fallback).decided_by == "latest_recorded_wins"


def test_ranks_and_classification_are_the_applications(store: SGAMStore) -> None:
    by_role = SourcePrecedence(
        ranks={"admin": 1, "anyone": 0},
        classify=lambda c: "admin" if c.episode and c.episode.speaker == "ops" else "anyone",
        name="admin_first",
    )
    store.replace_fact(fact(said(store, "user_message", confirmed=True).episode_id, "a"))
    ops = said(store, "tool_result", speaker="ops")
    assert store.replace_fact(fact(ops.episode_id, "b"), policy=by_role).decided_by == "admin_first"


def test_the_write_service_reports_what_a_policy_decided(store: SGAMStore) -> None:
    tool, user = said(store, "tool_result"), said(store, "user_message", confirmed=True)
    store.apply_updates([candidate()], tenant_id="acme", episode_id=tool.episode_id)
    replace = candidate(change="update", value="2026-06-30")
    result = store.apply_updates(
        [replace], tenant_id="acme", episode_id=user.episode_id, policy=PRECEDENCE
    )
    (change,) = result.superseded
    assert change.new.decided_by == "source_precedence" and change.old.value == "2026-07-15"
    assert change.old.known_to == change.new.known_from  # retired, not re-closed

    tool2 = said(store, "tool_result")
    keep = candidate(change="update", value="2026-08-01")
    result = store.apply_updates(
        [keep], tenant_id="acme", episode_id=tool2.episode_id, policy=PRECEDENCE
    )
    assert result.written == []
    (rejection,) = result.rejected
    assert rejection.kind == "kept" and "user_confirmation outranks" in rejection.reason
    assert store.fact_at(*DEADLINE).value == "2026-06-30"


def test_search_follows_a_policy_replacement(vstore: SGAMStore) -> None:
    def text_fact(source: str, text: str) -> MemoryFact:
        return fact(source, "").model_copy(update={"value": {"text": text}})

    vstore.replace_fact(text_fact(said(vstore, "tool_result").episode_id, "drinks green tea"))
    user = said(vstore, "user_message")
    vstore.replace_fact(text_fact(user.episode_id, "drinks black coffee"), policy=PRECEDENCE)
    hits = vstore.search(("acme",), query="drinks tea")
    assert [h.value["text"] for h in hits] == ["drinks black coffee"]


RANK = {"confirmed": 40, "user_message": 30, "tool_result": 20, "business_event": 20}
RANK["assistant_message"] = 10


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(sorted(RANK)), min_size=1, max_size=6))
def test_precedence_then_latest_matches_a_reference_model(kinds: list[str]) -> None:
    """Claims at one instant: a better or equal rank (recorded later) replaces, a worse keeps."""
    policy = SourcePrecedence(then=LatestRecordedWins())
    model: list[tuple[str, int]] = []  # believed value (and its rank) after each step
    with fresh_store() as store:
        instants = []
        for i, kind in enumerate(kinds):
            episode = said(
                store,
                "user_message" if kind == "confirmed" else kind,
                confirmed=kind == "confirmed",
            )
            keeps = bool(model) and RANK[kind] < model[-1][1]
            try:
                store.replace_fact(fact(episode.episode_id, f"v{i}"), policy=policy)
                assert not keeps
            except KeptExistingError:
                assert keeps
            model.append(model[-1] if keeps else (f"v{i}", RANK[kind]))
            instants.append(CLOCK.now())
            (current,) = store.history(*DEADLINE)
            assert current.value == model[-1][0]
        for believed_at, (value, _) in zip(instants, model, strict=True):
            assert store.fact_at(*DEADLINE, at=E1_AT, known_at=believed_at).value == value
