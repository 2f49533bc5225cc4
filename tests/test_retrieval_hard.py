"""The hard retrieval evaluation (benchmarks/hard_memories.py, benchmarks/retrieval_hard.py).

Its numbers are only worth tuning against if the data is what it claims: the same for a
seed, split by conversation with every category on both sides, and every question's
evidence really stored and really answering it. A small run through a real SGAMStore
checks the metrics and that keywords find a question worded like its evidence.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import date, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import pytest
from hard_memories import (
    CATEGORIES,
    SPLITS,
    Conversation,
    Dataset,
    Question,
    generate,
    periods,
)
from hard_templates import EN_DATED, ES_DATED
from retrieval_hard import (
    HASH_DIMS,
    MODES,
    HashEmbeddings,
    VectorFile,
    ask,
    by_language,
    evaluate,
    index_config,
    main,
    misses,
    misses_table,
    outcome,
    store_path,
    summarize,
    table,
)

from sgam_store import SGAMStore

DATASET = generate()


def turns_of(conv: Conversation) -> dict[str, str]:
    return {t.key: t.value()["text"] for t in conv.turns}


def test_same_seed_same_data() -> None:
    assert generate() == DATASET
    assert generate(seed=19) != DATASET
    # A conversation depends on its own index and the seed only, not on how many follow.
    assert generate(english=3, spanish=0, dated=0).conversations == DATASET.conversations[:3]
    # Dated questions come in conversations of their own, after the others: those stay.
    assert generate(dated=0).conversations == DATASET.conversations[:24]


def test_dated_questions_name_their_evidence_period_and_no_distractor() -> None:
    dated = [c for c in DATASET.conversations if c.questions[0].asked is not None]
    assert {c.language for c in dated} == {"english", "spanish"} and len(dated) == 16
    for conv in dated:
        day = {t.key: date.fromisoformat(t.date) for t in conv.turns}
        for q in conv.questions:
            assert q.category == ("dated" if conv.language == "english" else "dated-spanish")
            asked = datetime.fromisoformat(q.asked).date()
            assert asked > max(day.values())  # asked after the conversation
    bank = EN_DATED
    evidence, others = date(2025, 5, 3), [date(2025, 5, 20), date(2025, 7, 1)]
    named = periods(bank, evidence, others, asked=date(2025, 7, 10))
    assert named == ["on May 3"]  # another turn on the matter fell in May
    named = periods(bank, evidence, [date(2025, 3, 1)], asked=date(2025, 5, 17))
    assert named == ["on May 3", "in May", "in May 2025", "two weeks ago"]
    named = periods(ES_DATED, evidence, [date(2025, 3, 1)], asked=date(2025, 6, 7))
    assert named == ["el 3 de mayo", "en mayo", "en mayo de 2025", "el mes pasado",
                     "hace 5 semanas"]  # fmt: skip


@pytest.mark.parametrize("split", SPLITS)
def test_every_category_in_both_splits(split: str) -> None:
    questions = DATASET.split(split).questions
    assert {q.category for q in questions} == set(CATEGORIES)
    assert min(sum(q.category == c for q in questions) for c in CATEGORIES) >= 20


def test_splits_are_disjoint_conversations() -> None:
    tune, test = (DATASET.split(s) for s in SPLITS)
    users = [{c.user for c in part.conversations} for part in (tune, test)]
    assert users[0].isdisjoint(users[1])
    assert users[0] | users[1] == {c.user for c in DATASET.conversations}
    assert len(users[0]) == len(users[1])
    with pytest.raises(ValueError, match="split"):
        DATASET.split("train")


def test_evidence_exists_and_answers() -> None:
    for conv in DATASET.conversations:
        texts = turns_of(conv)
        assert len(texts) == len(conv.turns), "turn keys are unique"
        sessions = {t.key: t.session for t in conv.turns}
        dates = {t.key: t.date for t in conv.turns}
        for q in conv.questions:
            assert q.evidence and all(k in texts for k in q.evidence + q.stale), q
            assert q.user == conv.user
            if q.category == "multi":
                assert len(q.evidence) == 2 and len(set(q.evidence)) == 2
            if q.category == "changing":
                assert q.stale and sessions[q.stale[0]] < sessions[q.evidence[0]]
            evidence = " ".join(texts[k] for k in q.evidence).lower()
            answered = q.answer == dates[q.evidence[0]] or all(
                part in evidence for part in q.answer.lower().split(", ")
            )
            assert answered, (q, evidence)


def test_questions_are_not_copies_of_their_evidence() -> None:
    for conv in DATASET.conversations:
        texts = turns_of(conv)
        for q in conv.questions:
            assert all(q.text.lower() not in texts[k].lower() for k in q.evidence)


def test_metrics_count_the_share_of_evidence_found() -> None:
    two = Question("u", "multi", "q", evidence=("a", "b"), answer="")
    assert outcome(two, ["x", "a", "y"]).recall == (0.0, 0.5, 0.5)
    assert outcome(two, ["x", "a", "y"]).rr == 0.5
    assert outcome(two, ["b", *"cdefghi", "a"]).recall == (0.5, 0.5, 1.0)
    assert outcome(two, ["b", *"cdefghi", "a"]).whole  # both turns in the top 10
    assert not outcome(two, ["b", *"cdefghijk", "a"]).whole  # the second one 11th
    assert not outcome(two, ["a"]).whole
    assert outcome(two, ["x", "b", *"cdefgh", "a"]).rr == 0.5  # the best-ranked one counts
    assert outcome(two, ["x"]).rr == 0.0
    changed = Question("u", "changing", "q", evidence=("new",), answer="", stale=("old",))
    assert outcome(changed, ["old", "new"]).stale_first
    assert not outcome(changed, ["new", "old"]).stale_first
    assert outcome(changed, ["old"]).stale_first  # the current turn missed entirely
    rows = summarize([outcome(two, ["a"]), outcome(changed, ["old", "new"])])
    assert list(rows) == ["multi", "changing", "overall"]
    assert rows["overall"]["recall@1"] == 0.25 and rows["overall"]["mrr"] == 0.75
    # recall@10 counts half of the two-turn question; recall_all@10 counts it missed
    assert rows["multi"]["recall@10"] == 0.5 and rows["multi"]["recall_all@10"] == 0.0
    assert rows["overall"]["recall_all@10"] == 0.5
    assert rows["changing"]["stale_first"] == 1.0


def test_the_table_prints_recall_all_beside_recall() -> None:
    two = Question("u", "multi", "q", evidence=("a", "b"), answer="")
    lines = table(summarize([outcome(two, ["a"]), outcome(two, ["b", "a"])])).splitlines()
    assert "| recall@10 | recall_all@10 | mrr |" in lines[0]
    assert lines[1].count("|") == lines[0].count("|")
    assert lines[2] == "| multi | 2 | 0.500 | 0.750 | 0.750 | 0.500 | 1.000 |"


def words(text: str) -> set[str]:
    return set(re.findall(r"\w{4,}", text.lower()))


def exact_word_questions(dataset: Dataset) -> list[tuple[int, Question]]:
    """(position, question) of questions sharing a word with their evidence that no other
    turn of the conversation has: keywords alone should find those."""
    found = []
    for i, q in enumerate(dataset.questions):
        conv = next(c for c in dataset.conversations if c.user == q.user)
        texts = turns_of(conv)
        evidence = set().union(*(words(texts[k]) for k in q.evidence))
        elsewhere = set().union(*(words(t) for k, t in texts.items() if k not in q.evidence))
        if (words(q.text) & evidence) - elsewhere:
            found.append((i, q))
    return found


def test_small_run_through_a_store(tmp_path: Path) -> None:
    small = generate(english=2, spanish=2, sessions=4, dated=1)
    path = str(tmp_path / "hard.db")
    timings: dict[str, float] = {}
    results = evaluate(path, small, HashEmbeddings(), HASH_DIMS, MODES, timings)
    assert set(results) == set(MODES) and set(timings) == {"load", *MODES}
    present = {q.category for q in small.questions}
    for summary in results.values():
        assert set(summary) == present | {"overall"}
        assert summary["overall"]["n"] == len(small.questions)
        for row in summary.values():
            values = [row["recall@1"], row["recall@5"], row["recall@10"], row["mrr"]]
            assert all(0.0 <= v <= 1.0 for v in values)
            assert row["recall@1"] <= row["recall@5"] <= row["recall@10"]
            assert row["recall_all@10"] <= row["recall@10"]
    assert results["hybrid"]["overall"]["recall@10"] > 0

    index = index_config(HashEmbeddings(), HASH_DIMS)
    for conv in small.conversations:  # each in the store of its own keyword language
        with SGAMStore.from_conn_string(store_path(path, conv.language), index=index) as store:
            assert store.language == conv.language
            texts = turns_of(conv)
            for q in conv.questions:
                for key in q.evidence:
                    item = store.get(conv.namespace, key)
                    assert item is not None and item.value["text"] == texts[key]
                    # valid from its session's evening, its session the source episode
                    (fact,) = store.history(conv.user, "turns", key)
                    turn = next(t for t in conv.turns if t.key == key)
                    assert fact.valid_from.date().isoformat() == turn.date
                    assert fact.source_episode_id == f"session-{turn.session:02d}"

    keyword_only = ask(path, small, index, {"mode": "keyword"})
    hybrid = ask(path, small, index, {})
    spanish = [c.language == "spanish" for c in small.conversations for _ in c.questions]
    assert any(k != h for k, h, es in zip(keyword_only, hybrid, spanish, strict=True) if es)
    mixed = ask(path, small, index, {}, stores={"spanish": {"mode": "keyword"}})
    assert mixed == [k if es else h for k, h, es in zip(keyword_only, hybrid, spanish, strict=True)]
    runs_win = ask(path, small, index, {"mode": "keyword"}, stores={"spanish": {"mode": "vector"}})
    assert runs_win == keyword_only

    exact = exact_word_questions(small)
    assert exact, "some questions share a distinctive word with their evidence"
    outcomes = ask(path, small, index, {"mode": "keyword"})
    missed = [q.text for i, q in exact if outcomes[i].recall[-1] == 0]
    assert missed == []


def test_misses_place_every_missing_evidence_turn_on_each_side(tmp_path: Path) -> None:
    small = generate(english=2, spanish=0, sessions=4, dated=0)
    path = str(tmp_path / "hard.db")
    evaluate(path, small, HashEmbeddings(), HASH_DIMS, {})
    index = index_config(HashEmbeddings(), HASH_DIMS)
    run = {"mode": "vector"}  # misses more than hybrid: something to place
    outcomes = ask(path, small, index, run)
    missing: dict[str, int] = {}
    for q, o in zip(small.questions, outcomes, strict=True):
        found = round(o.recall[-1] * len(q.evidence))
        if found < len(q.evidence):
            missing[q.category] = missing.get(q.category, 0) + len(q.evidence) - found
    assert missing, "the vector mode misses some evidence in the top 10"
    table = misses(path, small, index, run)
    assert {c: sum(table[c]["run"].values()) for c in table} == missing
    for sides in table.values():
        assert list(sides) == ["keyword", "vector", "run"]
        assert len({sum(places.values()) for places in sides.values()}) == 1
        # the run is the vector mode: what it missed in its top 10 ranks past 10 there
        assert sides["run"] == sides["vector"] and "top 10" not in sides["run"]
    lines = misses_table(table).splitlines()
    assert lines[0] == "| category | side | missing | top 10 | 11-30 | 31-100 | past 100 |"
    assert len(lines) == 2 + 3 * len(table)


def test_each_language_gets_its_store_unless_one_is_named() -> None:
    own = by_language(DATASET, None)
    assert set(own) == {"english", "spanish"}
    assert all(c.language == lang for lang, convs in own.items() for c in convs)
    one = by_language(DATASET, "simple")
    assert list(one) == ["simple"] and len(one["simple"]) == len(DATASET.conversations)
    assert store_path("/x/hard.db", "spanish") == "/x/hard.spanish.db"
    assert store_path("/x.y/hard", "spanish") == "/x.y/hard.spanish"


@pytest.mark.slow
def test_command_line_runs_overrides_on_a_split(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    overrides = ['{"mode": "keyword"}', '{"keyword_weight": 0.5, "depth": 10}']
    argv = ["--split", "test", "--embedding", "hash", "--json", str(out)]
    main([*argv, *(a for o in overrides for a in ("--retrieval", o))])
    report = json.loads(out.read_text())
    assert report["split"] == "test"
    assert list(report["results"]) == [json.dumps(json.loads(o), sort_keys=True) for o in overrides]
    for summary in report["results"].values():
        assert summary["overall"]["n"] == len(DATASET.split("test").questions)


def test_a_vector_file_embeds_each_text_once(tmp_path: Path) -> None:
    class Counting(HashEmbeddings):
        calls = 0

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            Counting.calls += len(texts)
            return super().embed_documents(texts)

    path = tmp_path / "vectors.json"
    first = VectorFile(Counting(), path, "hash")
    vectors = first.embed_documents(["a turn", "another turn", "a turn"])
    first.save()
    again = VectorFile(Counting(), path, "hash")
    assert again.embed_documents(["another turn", "a turn"]) == vectors[1::-1]
    assert again.embed_query("a turn") == vectors[0]
    assert Counting.calls == 2  # only the first file embedded, each text once
