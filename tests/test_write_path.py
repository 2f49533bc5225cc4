"""The write service: the seed's episodes end in the expected ledger; bad candidates write nothing.

Chosen semantics (documented in sgam_store/write/service.py): invalid candidates are
rejected and reported, the accepted candidates of the episode land together in one
transaction, and any unexpected failure rolls back the whole episode.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sgam_store import EpisodeNotFoundError, MemoryUpdate, SGAMStore
from tests.db import scalar

from .seed import (
    DEADLINE,
    E1_AT,
    E1_CANDIDATES,
    E1_TEXT,
    E2_AT,
    E2_CANDIDATES,
    E2_TEXT,
    candidate,
    fresh_store,
    record_seed,
)

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine


def row_count(store: SGAMStore) -> int:
    return scalar(store, "SELECT COUNT(*) FROM facts")


def test_the_seed_episodes_end_in_the_expected_ledger(store: SGAMStore) -> None:
    e1, e2 = record_seed(store)
    first = store.apply_updates(E1_CANDIDATES, tenant_id="acme", episode_id=e1.episode_id)
    second = store.apply_updates(E2_CANDIDATES, tenant_id="acme", episode_id=e2.episode_id)
    assert first.rejected == second.rejected == []

    preference = store.fact_at("acme", "mira", "answer_style")
    assert (preference.value, preference.memory_type) == ("concise", "preference")
    now = store.fact_at(*DEADLINE)
    june2 = store.fact_at(*DEADLINE, at="2026-06-02T00:00:00Z")
    assert (now.value, now.source_episode_id) == ("2026-06-30", e2.episode_id)
    assert (june2.value, june2.source_episode_id) == ("2026-07-15", e1.episode_id)
    assert now.supersedes_fact_id == june2.fact_id
    assert june2.valid_to == now.valid_from == store.fact_at(*DEADLINE, at=E2_AT).valid_from

    (change,) = second.superseded
    assert (change.new.fact_id, change.old.fact_id) == (now.fact_id, june2.fact_id)
    assert change.old.value == "2026-07-15" and change.old.valid_to == now.valid_from
    assert (store.who_said(now).content, store.who_said(now).speaker) == (E2_TEXT, "mira")
    assert store.who_said(june2).content == E1_TEXT
    assert [f.attribute for f in first.written] == ["answer_style", "passport_deadline"]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (candidate(evidence="Her passport deadline is 2026-08-01."), "does not occur"),
        (candidate(tenant_id="globex"), "come from the request"),
        (candidate(source_episode_id="e0"), "come from the request"),
        (candidate(valid_from="2026-06-01T09:00:00"), "naive"),
        (candidate(subject="Mira/Lopez"), "does not normalize"),
        (candidate(value=None), "needs a value"),
    ],
)
def test_a_bad_candidate_is_rejected_and_writes_nothing(
    store: SGAMStore, bad: dict, reason: str
) -> None:
    e1, _ = record_seed(store)
    result = store.apply_updates([bad], tenant_id="acme", episode_id=e1.episode_id)
    assert result.written == [] and result.superseded == []
    (rejection,) = result.rejected
    assert rejection.candidate is bad and rejection.kind == "invalid"
    assert reason in rejection.reason
    assert row_count(store) == 0
    assert store.search(("acme",), query="passport deadline") == []
    assert store.search(("globex",)) == []


def test_partly_invalid_episode_lands_the_valid_candidates_together(store: SGAMStore) -> None:
    e1, _ = record_seed(store)
    bad = [
        candidate(evidence="Mira hates long answers."),
        candidate(attribute="city", tenant_id="acme"),  # even its own tenant: rejected, not used
        candidate(attribute="visa", valid_from="2026-06-01 09:00"),
    ]
    result = store.apply_updates(
        [bad[0], E1_CANDIDATES[0], bad[1], E1_CANDIDATES[1], bad[2]],
        tenant_id="acme",
        episode_id=e1.episode_id,
    )
    assert [r.candidate for r in result.rejected] == bad
    assert {f.attribute for f in result.written} == {"answer_style", "passport_deadline"}
    assert len({f.known_from for f in result.written}) == 1  # one transaction
    assert store.fact_at("acme", "mira", "city") is None
    assert row_count(store) == 2


def test_tenant_and_source_come_only_from_the_request(store: SGAMStore) -> None:
    e1, _ = record_seed(store)
    (fact,) = store.apply_updates([candidate()], tenant_id="acme", episode_id=e1.episode_id).written
    assert (fact.tenant_id, fact.source_episode_id) == ("acme", e1.episode_id)


def test_the_episode_must_be_recorded_for_the_tenant(store: SGAMStore) -> None:
    e1, _ = record_seed(store)
    with pytest.raises(EpisodeNotFoundError, match="not recorded for tenant 'globex'"):
        store.apply_updates([candidate()], tenant_id="globex", episode_id=e1.episode_id)
    with pytest.raises(EpisodeNotFoundError):
        store.apply_updates([candidate()], tenant_id="acme", episode_id="never-recorded")
    assert row_count(store) == 0


def test_no_change_is_dropped(store: SGAMStore) -> None:
    e1, _ = record_seed(store)
    repeat = candidate(current_value="2026-07-15", change="no_change", value=None, valid_from=None)
    result = store.apply_updates([repeat], tenant_id="acme", episode_id=e1.episode_id)
    assert [u.change for u in result.unchanged] == ["no_change"]
    assert result.written == result.rejected == []
    assert row_count(store) == 0


def test_a_candidate_is_checked_against_this_episode_not_another(store: SGAMStore) -> None:
    _, e2 = record_seed(store)
    built_for_e1 = MemoryUpdate(**candidate())
    result = store.apply_updates([built_for_e1], tenant_id="acme", episode_id=e2.episode_id)
    assert result.written == [] and "does not occur" in result.rejected[0].reason


def test_equal_valid_from_is_a_reported_conflict_not_an_overwrite(store: SGAMStore) -> None:
    e1, e2 = record_seed(store)
    store.apply_updates([candidate()], tenant_id="acme", episode_id=e1.episode_id)
    clash = candidate(evidence="It is now 2026-06-30.", value="2026-06-30", change="update")
    other = candidate(evidence="Mira corrected the deadline.", attribute="corrected", value=True)
    result = store.apply_updates([clash, other], tenant_id="acme", episode_id=e2.episode_id)
    assert [(r.candidate, r.kind) for r in result.rejected] == [(clash, "conflict")]
    assert "already has a fact valid from" in result.rejected[0].reason
    assert [f.attribute for f in result.written] == ["corrected"]
    assert store.fact_at(*DEADLINE).value == "2026-07-15"


def test_two_candidates_of_one_key_and_instant_are_not_both_applied(store: SGAMStore) -> None:
    e1, _ = record_seed(store)
    twice = [candidate(), candidate(evidence="passport deadline", value="2026-07-16")]
    result = store.apply_updates(twice, tenant_id="acme", episode_id=e1.episode_id)
    assert [f.value for f in result.written] == ["2026-07-15"]
    assert result.rejected[0].candidate is twice[1] and result.rejected[0].kind == "conflict"


def test_one_episode_lands_whole_or_not_at_all(store: SGAMStore) -> None:
    """A failure inside the transaction (here, a policy that crashes) rolls back every fact."""

    class Crashing:
        name = "crashing"

        def decide(self, existing: object, incoming: object) -> None:
            raise RuntimeError("policy backend down")

    e1, e2 = record_seed(store)
    store.apply_updates([candidate()], tenant_id="acme", episode_id=e1.episode_id)
    before = row_count(store)
    batch = [
        candidate(evidence="Mira corrected the deadline.", attribute="corrected", value=True),
        candidate(evidence="It is now 2026-06-30.", value="2026-06-30", change="update"),
    ]
    with pytest.raises(RuntimeError, match="policy backend down"):
        store.apply_updates(batch, tenant_id="acme", episode_id=e2.episode_id, policy=Crashing())
    assert row_count(store) == before
    assert store.fact_at("acme", "mira", "corrected") is None


def test_a_value_over_the_size_limit_is_rejected(db_path: str) -> None:
    with SGAMStore.from_conn_string(db_path, max_value_bytes=64) as store:
        e1, _ = record_seed(store)
        result = store.apply_updates(
            [candidate(value="x" * 100)], tenant_id="acme", episode_id=e1.episode_id
        )
        assert "limit is 64" in result.rejected[0].reason and row_count(store) == 0


DEFECTS = {
    "fabricated": {"evidence": "Her passport deadline is tomorrow."},
    "tenant": {"tenant_id": "globex"},
    "naive": {"valid_from": "2026-06-01T09:00:00"},
    "no_value": {"value": None},
}


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["ok", *DEFECTS]), st.integers(0, 5), st.integers(0, 999)),
        max_size=8,
        unique_by=lambda t: t[1],
    )
)
def test_exactly_the_valid_candidates_land(plan: list[tuple[str, int, int]]) -> None:
    """Random mixes of valid and defective candidates, each on its own attribute."""
    with fresh_store() as store:
        e1, _ = record_seed(store)
        batch = [
            candidate(**{"attribute": f"a{slot}", "value": n, **DEFECTS.get(kind, {})})
            for kind, slot, n in plan
        ]
        result = store.apply_updates(batch, tenant_id="acme", episode_id=e1.episode_id)
        valid = {f"a{slot}": n for kind, slot, n in plan if kind == "ok"}
        assert {f.attribute: f.value for f in result.written} == valid
        assert len(result.rejected) == len(plan) - len(valid)
        assert row_count(store) == len(valid)
        for attribute, n in valid.items():
            assert store.fact_at("acme", "mira", attribute).value == n
        assert all(f.valid_from.isoformat().startswith(E1_AT[:19]) for f in result.written)
