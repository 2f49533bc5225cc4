"""Scenario files and replay: the seed's passport check, offline and through a chat model."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from sgam_store import SGAMStore
from sgam_store.core.errors import InvalidScenarioError
from sgam_store.harness.baseline import DescriptionMemory, word_cosine, words
from sgam_store.harness.scenario import (
    Answer,
    Scenario,
    Turn,
    bundled_names,
    judge,
    load_scenario,
    parse_scenario,
    replay,
    statements,
    tally,
)

from .seed import DEADLINE
from .test_extraction import ScriptedChatModel, calls

SMALL = """
episodes:
  - id: a1
    tenant: acme
    at: 2026-06-01T09:00:00Z
    speaker: mira
    text: My passport deadline is 2026-07-15.
  - id: a2
    tenant: acme
    at: 2026-06-03T10:00:00Z
    speaker: mira
    text: Correction, the passport deadline is 2026-06-30.
questions:
  - ask: What is Mira's passport deadline?
    tenant: acme
    subject: Mira
    attribute: Passport Deadline
    expect: 2026-06-30
  - ask: What was it on June 2?
    tenant: acme
    subject: mira
    attribute: passport_deadline
    at: 2026-06-02T00:00:00Z
    expect: 2026-07-15
"""


def deadline(value: str, at: str, evidence: str, current: str | None = None) -> dict:
    return {
        "evidence": evidence,
        "subject": "mira",
        "attribute": "passport_deadline",
        "current_value": current,
        "change": "update" if current else "new",
        "value": value,
        "valid_from": at,
    }


def run(store: SGAMStore, scenario: Scenario, **kwargs) -> tuple[list[Turn], list[Answer]]:
    events = list(replay(store, scenario, baseline=DescriptionMemory("keyword"), **kwargs))
    return [e for e in events if isinstance(e, Turn)], [e for e in events if isinstance(e, Answer)]


def test_the_bundled_passport_replay_ends_in_the_seed_ledger(store: SGAMStore) -> None:
    scenario = load_scenario()
    assert bundled_names() == ["passport"] and scenario.name == "passport"
    turns, answers = run(store, scenario)

    now = store.fact_at(*DEADLINE)
    june2 = store.fact_at(*DEADLINE, at="2026-06-02T00:00:00Z")
    may31 = store.fact_at(*DEADLINE, at="2026-05-31T00:00:00Z")
    assert (now.value, now.source_episode_id) == ("2026-06-30", "e2")
    assert (june2.value, june2.source_episode_id) == ("2026-07-15", "e1")
    assert (may31.value, may31.source_episode_id) == ("2026-08-01", "e0")
    assert may31.valid_to == june2.valid_from and now.supersedes_fact_id == june2.fact_id
    assert store.fact_at("globex", "mira", "passport_deadline").value == "2026-09-10"

    # e0 is recorded at its turn and extracted last, by the background manager
    assert [(t.spec.id, t.background, t.result is None) for t in turns] == [
        ("e0", False, True),
        ("e1", False, False),
        ("g1", False, False),
        ("e2", False, False),
        ("e3", False, False),
        ("e0", True, False),
    ]
    assert all(a.sgam.verdict == "ok" for a in answers)
    assert tally(answers)["sgam"] == {"ok": 7, "stale": 0, "missing": 0, "wrong": 0}
    # word overlap puts e1 above its correction e2: the seed's naive match
    first_now = next(a for a in answers if a.question.ask == "What is Mira's passport deadline?")
    assert (first_now.baseline.value, first_now.baseline.source) == ("2026-07-15", "e1")
    assert first_now.baseline.verdict == "stale"
    assert tally(answers)["baseline"]["stale"] == 4


def test_a_question_asked_after_a_hot_turn_sees_that_turn_and_nothing_later(
    store: SGAMStore,
) -> None:
    events = list(replay(store, load_scenario(), baseline=DescriptionMemory("keyword")))
    labels = [e.spec.id if isinstance(e, Turn) else e.question.after for e in events]
    assert labels[:7] == ["e0", "e1", "g1", "e2", "e3", "e3", "e0"]
    hot = events[5]
    assert isinstance(hot, Answer) and hot.sgam.value == "detailed"
    assert hot.sgam.source == "e3"


def test_yaml_times_stay_strings_and_names_normalize() -> None:
    scenario = parse_scenario(SMALL)
    assert scenario.questions[0].expect == "2026-06-30"
    assert scenario.questions[0].subject == "mira"
    assert scenario.questions[0].attribute == "passport_deadline"
    assert scenario.episodes[0].at == "2026-06-01T09:00:00.000000Z"
    assert scenario.episodes[0].path == "hot" and scenario.episodes[0].kind == "user_message"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("episodes: [", "not valid YAML"),
        ("- just a list", "a scenario is a mapping"),
        ("episodes: []", "episodes: List should have at least 1 item"),
        (SMALL.replace("09:00:00Z", "09:00:00"), "is naive"),
        (SMALL.replace("id: a2", "id: a1"), "repeated: a1"),
        (SMALL + "    after: nope\n", "no such episode"),
        (
            SMALL.replace(
                "speaker: mira\n    text: My", "speaker: mira\n    colour: red\n    text: My"
            ),
            "colour: Extra inputs are not permitted",
        ),
        (SMALL.replace("tenant: acme", "tenant: a.b", 1), "episodes.0.tenant"),
        (
            SMALL.replace(
                "speaker: mira", "speaker: mira\n    extracted_at: 2026-06-09T00:00:00Z", 1
            ),
            "extracted_at is for background episodes",
        ),
        (
            SMALL.replace(
                "speaker: mira",
                "speaker: mira\n    path: background\n    extracted_at: 2026-05-01T00:00:00Z",
                1,
            ),
            "extracted_at is before the episode's at",
        ),
    ],
)
def test_a_bad_scenario_is_one_line_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(InvalidScenarioError) as info:
        parse_scenario(text, origin="s.yaml")
    assert str(info.value).startswith("s.yaml: ") and message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_missing_scenario_names_the_bundled_ones(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match=r"bundled name \(passport\)"):
        load_scenario("nope")
    with pytest.raises(FileNotFoundError, match="no scenario file"):
        load_scenario(tmp_path / "missing.yaml")
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    assert load_scenario(path).name == "small"


def test_with_a_model_candidates_come_from_the_text_and_the_model_sees_stored_values(
    store: SGAMStore,
) -> None:
    scenario = parse_scenario(SMALL)  # no candidates in the file
    model = ScriptedChatModel(
        replies=calls(
            [deadline("2026-07-15", "2026-06-01T09:00:00Z", "My passport deadline is 2026-07-15.")],
            [
                deadline(
                    "2026-06-30",
                    "2026-06-03T10:00:00Z",
                    "the passport deadline is 2026-06-30.",
                    current="2026-07-15",
                )
            ],
        )
    )
    turns, answers = run(store, scenario, model=model)
    assert [len(t.result.written) for t in turns] == [1, 1]
    assert 'current_value "2026-07-15"' in model.prompts[1][-1].content
    assert [a.sgam.verdict for a in answers] == ["ok", "ok"]
    # the baseline reads an episode the way the writer did: with the model's candidates
    assert answers[0].baseline.value in ("2026-07-15", "2026-06-30")


def test_a_rejected_candidate_is_reported_and_the_replay_goes_on(store: SGAMStore) -> None:
    made_up = deadline("2026-01-01", "2026-06-01T09:00:00Z", "words nobody said")
    text = SMALL.replace(
        "    text: My passport deadline is 2026-07-15.\n",
        "    text: My passport deadline is 2026-07-15.\n    candidates:\n"
        f"      - {json.dumps(made_up)}\n",
    )
    turns, answers = run(store, parse_scenario(text))
    (rejection,) = turns[0].result.rejected
    assert rejection.kind == "invalid" and "does not occur in the episode" in rejection.reason
    assert answers[0].sgam.verdict == "missing"


def test_judging_an_answer() -> None:
    assert judge("2026-06-30", "2026-06-30", []) == "ok"
    assert judge(None, None, []) == "ok"
    assert judge("2026-07-15", "2026-06-30", ["2026-07-15", "2026-06-30"]) == "stale"
    assert judge(None, "2026-06-30", []) == "missing"
    assert judge("soon", "2026-06-30", ["2026-07-15"]) == "wrong"


def test_statements_read_candidates_as_the_writer_would() -> None:
    said = statements(
        [
            {"subject": "Mira", "attribute": "Answer Style", "change": "new", "value": "short"},
            {
                "subject": "mira",
                "attribute": "city",
                "change": "no_change",
                "current_value": "Lima",
            },
            {"subject": "!!", "attribute": "x", "value": 1},
            "not a candidate",
        ]
    )
    assert said == {("mira", "answer_style"): "short", ("mira", "city"): "Lima"}
    with pytest.raises(InvalidScenarioError, match=r"questions\.0\.subject"):  # same rule
        parse_scenario(SMALL.replace("subject: Mira", "subject: '!!'"))


def test_the_baseline_is_scoped_to_the_tenant_and_the_instant(store: SGAMStore) -> None:
    memory = DescriptionMemory("keyword")
    for episode_id, tenant, at, text in [
        ("b1", "acme", "2026-06-01T09:00:00Z", "Mira's passport deadline is 2026-07-15."),
        ("b2", "acme", "2026-06-03T10:00:00Z", "Mira's passport deadline is 2026-06-30."),
        ("b3", "globex", "2026-06-02T09:00:00Z", "Mira's passport deadline is 2026-09-10."),
    ]:
        memory.add(
            store.record_episode(
                tenant, text, source_kind="user_message", occurred_at=at, episode_id=episode_id
            )
        )
    question = "What is Mira's passport deadline?"
    assert memory.top("acme", question).episode_id == "b2"  # a tie goes to the newer episode
    june2 = datetime(2026, 6, 2, tzinfo=UTC)
    assert memory.top("acme", question, at=june2).episode_id == "b1"
    assert memory.top("globex", question).episode_id == "b3"
    assert memory.top("initech", question) is None
    assert memory.label == "top-1 episode by word overlap"


def test_word_cosine() -> None:
    assert word_cosine(words("Mira's deadline"), words("the deadline of Mira")) == pytest.approx(
        2 / (3 * 4) ** 0.5
    )
    assert word_cosine(words(""), words("x")) == 0.0


# ---------------------------------------------------------------- belief time


def test_the_replay_believes_on_the_scenario_clock(store: SGAMStore) -> None:
    """Transaction time is the conversation's: each turn at its message's time, the
    delayed extraction at its own `extracted_at`, so known_at questions have answers."""
    run(store, load_scenario("passport"))
    at = {e.episode_id: e.recorded_at for e in map(store.get_episode, ["e0", "e1", "e2"])}
    assert at["e1"] == datetime(2026, 6, 1, 9, tzinfo=UTC)
    assert at["e0"] == datetime(2026, 5, 30, 8, tzinfo=UTC)  # recorded at its turn
    # on June 2 the store believed e1's deadline, open; e2 and e0 were not yet known
    june2 = store.ledger("acme", "mira", "passport_deadline", known_at="2026-06-02T00:00:00Z")
    assert [(f.value, f.valid_to, f.source_episode_id) for f in june2] == [
        ("2026-07-15", None, "e1")
    ]
    june4 = store.ledger("acme", "mira", "passport_deadline", known_at="2026-06-04T00:00:00Z")
    assert {f.source_episode_id for f in june4} == {"e1", "e2"}
    delayed = next(f for f in store.history("acme", "mira", "passport_deadline")
                   if f.source_episode_id == "e0")  # fmt: skip
    assert delayed.known_from == datetime(2026, 6, 5, 2, tzinfo=UTC)  # the nightly run
    # what the store believed is now unchanged by the replay's past: current reads agree
    assert store.fact_at("acme", "mira", "passport_deadline").value == "2026-06-30"


def test_writes_outside_a_replay_keep_the_wall_clock(store: SGAMStore) -> None:
    """The scenario clock is the replay's alone: a put after it (or beside it) is now."""
    run(store, load_scenario("passport"))
    before = datetime.now(UTC)
    store.put(("acme", "mira"), "note", {"value": "after the replay"})
    fact = store.fact_at("acme", "mira", "note")
    assert fact is not None and fact.known_from >= before and fact.recorded_at >= before


def test_a_scenario_out_of_time_order_still_writes_in_order(store: SGAMStore) -> None:
    """Episodes listed out of order: belief time never goes back (a microsecond on)."""
    text = SMALL.replace("2026-06-03T10:00:00Z", "2026-05-03T10:00:00Z")
    run(store, parse_scenario(text))
    first, second = store.get_episode("a1"), store.get_episode("a2")
    assert first is not None and second is not None
    assert second.recorded_at > first.recorded_at == datetime(2026, 6, 1, 9, tzinfo=UTC)
