"""Ids are tenant-scoped (issue 39): a fact id, a decision id or an episode id named with
another tenant is "not found", typed, on every engine; nothing is read, written or told
about the other tenant's row.

Each test is what another tenant's caller can do through the public API: name ids it
learned (or guessed) with its own tenant.
"""

from __future__ import annotations

from typing import Any

import pytest

from sgam_store import (
    EpisodeNotFoundError,
    FactNotFoundError,
    InvalidEpisodeError,
    MemoryFact,
    SGAMStore,
    Verdict,
)

ENGINES = ("sqlite", "postgres")

VICTIM, ATTACKER = "globex", "acme"


def _fact(store: SGAMStore, tenant: str, attribute: str, value: str, at: str) -> Any:
    return store.replace_fact(
        MemoryFact(
            tenant_id=tenant,
            subject="mira",
            attribute=attribute,
            value=value,
            valid_from=at,
            source_episode_id="external:test",
        )
    )


@pytest.fixture
def decided(store: SGAMStore) -> tuple[Any, Any, Any]:
    """The victim's correction written under a new key, and its "supersedes" decision."""
    old = _fact(store, VICTIM, "deadline", "2026-07-15", "2026-06-01T00:00:00Z")
    new = _fact(store, VICTIM, "new_deadline", "2026-06-30", "2026-06-03T00:00:00Z")
    (decision,) = store.apply_supersession(
        new.fact_id,
        [Verdict(old.fact_id, "supersedes", "secret reason", evidence={"quote": "secret"})],
        decided_by="victim-review",
        tenant_id=VICTIM,
    )
    return old, new, decision


# ---------------------------------------------------------------- supersession (item 3)


def test_supersession_decisions_of_another_tenants_fact_are_not_found(
    store: SGAMStore, decided: tuple[Any, Any, Any]
) -> None:
    old, new, decision = decided
    for fact in (old.fact_id, new.fact_id, old):
        with pytest.raises(FactNotFoundError, match="no fact"):
            store.supersession_decisions(fact, tenant_id=ATTACKER)
    # The owner of the facts still sees its decision.
    assert store.supersession_decisions(old, tenant_id=VICTIM) == [decision]


def test_another_tenant_cannot_undo_a_decision(
    store: SGAMStore, decided: tuple[Any, Any, Any]
) -> None:
    old, _, decision = decided
    with pytest.raises(FactNotFoundError, match="no supersession decision"):
        store.undo_supersession(decision.decision_id, tenant_id=ATTACKER)
    # Nothing changed: the old memory stays closed and the decision stands.
    assert store.fact_at(VICTIM, "mira", "deadline") is None
    (still,) = store.supersession_decisions(old, tenant_id=VICTIM)
    assert still.undone_at is None
    restored = store.undo_supersession(decision.decision_id, tenant_id=VICTIM)
    assert restored.tenant_id == VICTIM


def test_another_tenant_cannot_record_a_decision_in_the_victims_tenant(store: SGAMStore) -> None:
    old = _fact(store, VICTIM, "deadline", "2026-07-15", "2026-06-01T00:00:00Z")
    new = _fact(store, VICTIM, "new_deadline", "2026-06-30", "2026-06-03T00:00:00Z")
    verdict = Verdict(old.fact_id, "supersedes", "attacker says so")
    with pytest.raises(FactNotFoundError):
        store.apply_supersession(new.fact_id, [verdict], decided_by="x", tenant_id=ATTACKER)
    # The attacker's own new memory cannot name the victim's old one either; the refusal
    # is "not found", the same as for an id no tenant has.
    mine = _fact(store, ATTACKER, "note", "mine", "2026-06-05T00:00:00Z")
    for old_id in (old.fact_id, 10**12):
        with pytest.raises(FactNotFoundError):
            store.apply_supersession(
                mine.fact_id, [Verdict(old_id, "supersedes", "x")], decided_by="x",
                tenant_id=ATTACKER,
            )  # fmt: skip
    assert store.fact_at(VICTIM, "mira", "deadline").value == "2026-07-15"
    assert store.supersession_decisions(old, tenant_id=VICTIM) == []


def test_a_closed_fact_of_another_tenant_is_not_found_rather_than_no_longer_current(
    store: SGAMStore, decided: tuple[Any, Any, Any]
) -> None:
    """The old memory is closed: naming it as another tenant's must not say so."""
    old, _, _ = decided
    mine = _fact(store, ATTACKER, "note", "mine", "2026-06-05T00:00:00Z")
    with pytest.raises(FactNotFoundError):
        store.apply_supersession(
            old.fact_id, [Verdict(mine.fact_id, "independent", "x")], decided_by="x",
            tenant_id=ATTACKER,
        )  # fmt: skip


# ---------------------------------------------------------------- episode ids (item 14)


def _cite(store: SGAMStore, tenant: str, episode_id: str, attribute: str = "city") -> Any:
    return store.replace_fact(
        MemoryFact(
            tenant_id=tenant,
            subject="mira",
            attribute=attribute,
            value=f"{tenant} value",
            valid_from="2026-06-01T00:00:00Z",
            source_episode_id=episode_id,
        )
    )


def test_the_same_episode_id_in_two_tenants_is_two_episodes(store: SGAMStore) -> None:
    """Recording an id another tenant holds succeeds (no "already recorded": nothing tells
    the caller what another tenant recorded), and each tenant reads, cites and erases its
    own episode of that id."""
    store.record_episode(VICTIM, "victim's words", source_kind="user_message", episode_id="ep-u")
    mine = store.record_episode(
        ATTACKER, "attacker's words", source_kind="user_message", episode_id="ep-u"
    )
    assert (mine.tenant_id, mine.content) == (ATTACKER, "attacker's words")
    for tenant, words in ((VICTIM, "victim's words"), (ATTACKER, "attacker's words")):
        assert store.get_episode("ep-u", tenant_id=tenant).content == words
    victim_fact, attacker_fact = _cite(store, VICTIM, "ep-u"), _cite(store, ATTACKER, "ep-u")
    assert store.who_said(victim_fact, tenant_id=VICTIM).content == "victim's words"
    assert store.who_said(attacker_fact, tenant_id=ATTACKER).content == "attacker's words"
    # One tenant's episode erased: the other's, and the fact citing it, stay.
    report = store.purge_episode(ATTACKER, "ep-u")
    assert report.fact_ids == [attacker_fact.fact_id] and report.deleted["episodes"] == 1
    assert store.get_episode("ep-u", tenant_id=VICTIM).content == "victim's words"
    assert store.who_said(victim_fact, tenant_id=VICTIM).content == "victim's words"
    # Within one tenant an id is still recorded once.
    with pytest.raises(InvalidEpisodeError, match="already recorded"):
        store.record_episode(VICTIM, "again", source_kind="user_message", episode_id="ep-u")


def test_an_id_held_by_several_tenants_needs_its_tenant(store: SGAMStore) -> None:
    for tenant in (VICTIM, ATTACKER):
        store.record_episode(tenant, "words", source_kind="user_message", episode_id="ep-x")
    with pytest.raises(InvalidEpisodeError, match="several tenants"):
        store.get_episode("ep-x")
    store.record_episode(VICTIM, "alone", source_kind="user_message", episode_id="ep-only")
    assert store.get_episode("ep-only").tenant_id == VICTIM


def test_provenance_resolves_in_the_facts_own_tenant(store: SGAMStore) -> None:
    """A fact citing an id that another tenant recorded cites its own tenant's episode of
    that id (none here): who_said never returns the other tenant's text, and erasing
    either tenant's episode leaves the other tenant's rows alone (issue 39, item 19)."""
    store.record_episode(VICTIM, "victim's secret", source_kind="user_message", episode_id="ep-v")
    borrowed = _cite(store, ATTACKER, "ep-v")
    with pytest.raises(EpisodeNotFoundError, match="acme"):
        store.who_said(borrowed, tenant_id=ATTACKER)
    store.purge_episode(ATTACKER, "ep-v")  # the attacker's own (unrecorded) episode
    assert store.get_episode("ep-v", tenant_id=VICTIM).content == "victim's secret"
    kept = _cite(store, ATTACKER, "ep-v", "pet")
    store.purge_episode(VICTIM, "ep-v")
    assert store.fact_at(ATTACKER, "mira", "pet").fact_id == kept.fact_id


# ---------------------------------------------------------------- purge counts (item 15)


def test_a_purge_report_counts_every_row_it_removed(store: SGAMStore) -> None:
    """A weak signal held from an episode (a candidate and its support row) and the
    episode's extraction mark go with the episode, and the report counts each."""
    from sgam_store.managers.consolidation import (
        ConsolidationConfig,
        consolidate,
        list_candidates,
    )

    habits = ConsolidationConfig(recurrence=3, repeat_memory_types=frozenset({"habit"}))
    episode = store.record_episode(
        VICTIM, "Export it as CSV please", source_kind="user_message", episode_id="e1"
    )
    held = {
        "evidence": "as CSV please",
        "subject": "mira",
        "attribute": "export_format",
        "current_value": None,
        "change": "new",
        "value": "CSV",
        "valid_from": "2026-06-01T09:00:00Z",
        "memory_type": "habit",
        "confidence": 0.9,
    }
    consolidate(
        store, [held], tenant_id=VICTIM, episode_id=episode.episode_id, config=habits,
        extractor="test-model",
    )  # fmt: skip
    assert len(list_candidates(store, VICTIM)) == 1
    rehearsal = store.purge_episode(VICTIM, "e1", dry_run=True)
    report = store.purge_episode(VICTIM, "e1")
    expected = {
        "episodes": 1,
        "candidate_support": 1,
        "memory_candidates": 1,
        "episode_extractions": 1,
    }
    assert {t: report.deleted[t] for t in expected} == expected
    assert rehearsal.deleted == report.deleted
    assert list_candidates(store, VICTIM) == []
    # A whole-tenant purge counts a subject's candidates and their support the same way.
    again = store.record_episode(
        VICTIM, "as CSV please", source_kind="user_message", episode_id="e2"
    )
    consolidate(store, [held], tenant_id=VICTIM, episode_id=again.episode_id, config=habits)
    whole = store.purge(VICTIM)
    assert (whole.deleted["memory_candidates"], whole.deleted["candidate_support"]) == (1, 1)


def test_an_extraction_mark_is_its_tenants_alone(store: SGAMStore) -> None:
    """A background manager skips episodes marked extracted: another tenant's mark on the
    same id must not make it skip this tenant's (graphs/manager.py asks by tenant)."""
    from sgam_store.managers.consolidation import consolidate, is_extracted

    for tenant in (VICTIM, ATTACKER):
        store.record_episode(tenant, "hello", source_kind="user_message", episode_id="msg:1")
    consolidate(store, [], tenant_id=ATTACKER, episode_id="msg:1", extractor="model")
    assert is_extracted(store, "msg:1", tenant_id=ATTACKER)
    assert not is_extracted(store, "msg:1", tenant_id=VICTIM)
