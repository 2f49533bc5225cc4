"""Corrections written as new memories: LangMem's tools and manager write a changed fact
under a new key; the supersession review retires the old one only when the model says so.

Real `langmem` tools and manager, a real store on every engine; the model is the packaged
scripted `BaseChatModel` (`sgam_store.testing`, the only fake).
"""

from __future__ import annotations

import json
import logging
import warnings
from typing import Any

import pytest
from langmem import create_manage_memory_tool, create_memory_store_manager

from sgam_store import (
    ConfigurationError,
    ConflictError,
    FactNotFoundError,
    InvalidFactError,
    SGAMStore,
    Verdict,
    create_supersession_manager,
    resolve_supersessions,
)
from sgam_store.core.clock import utc_now
from sgam_store.managers import supersession
from sgam_store.testing import REVIEW_TOOL, ScriptedChatModel, call_tool, say, verdicts

from .conftest import HashEmbeddings

with warnings.catch_warnings():  # moved to langchain.agents in LangGraph 1.x; still shipped
    warnings.simplefilter("ignore", DeprecationWarning)
    from langgraph.prebuilt import create_react_agent

ENGINES = ("sqlite", "postgres")  # store-contract tests: every engine

NS = ("memories", "{langgraph_user_id}")
ALICE = {"configurable": {"langgraph_user_id": "alice", "thread_id": "t-alice"}}


@pytest.fixture
def mem(target: str) -> Any:
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["content"]}
    with SGAMStore.from_conn_string(target, index=index, tenant_at=1) as store:
        store.setup()
        yield store


def contents(store: SGAMStore, query: str, user: str = "alice") -> list[str]:
    hits = store.search(("memories", user), query=query, limit=20)
    return sorted(h.value["content"] for h in hits)


def remember(store: SGAMStore, key: str, content: str, user: str = "alice") -> None:
    store.put(("memories", user), key, {"content": content})


# ---------------------------------------------------------------- LangMem writes, SGAM reviews


def test_a_correction_by_langmems_manager_supersedes_the_old_memory(mem: SGAMStore) -> None:
    writer = ScriptedChatModel(
        replies=[
            call_tool("Memory", "c1", content="Mira's passport deadline is 2026-07-15"),
            call_tool("Memory", "c2", content="Mira's passport deadline is 2026-06-30"),
        ]
    )
    manager = create_memory_store_manager(writer, namespace=NS, store=mem)
    manager.invoke({"messages": [("user", "Mira's passport is due July 15")]}, ALICE)
    manager.invoke({"messages": [("user", "Correction: it moved to June 30")]}, ALICE)
    both = [
        h.value["content"]["content"] for h in mem.search(("memories", "alice"), query="passport")
    ]
    assert len(both) == 2  # LangMem wrote the correction under a new key: both current

    decider = ScriptedChatModel(replies=[verdicts((1, "supersedes"))])
    report = resolve_supersessions(mem, decider, tenant_id="alice")

    hits = mem.search(("memories", "alice"), query="passport deadline")
    assert [h.value["content"]["content"] for h in hits] == [
        "Mira's passport deadline is 2026-06-30"
    ]
    (decision,) = report.superseded
    new = mem.fact_at("alice", "memories", hits[0].key)
    assert new.supersedes_fact_id == decision.old_fact_id and new.decided_by == "supersession"
    chain = mem.history("alice", "memories", hits[0].key)
    assert [f.value["content"]["content"][-10:] for f in chain] == ["2026-07-15", "2026-06-30"]
    assert chain[0].valid_to == chain[1].valid_from  # closed where the correction starts
    assert decision.evidence["old"]["value"]["content"]["content"].endswith("2026-07-15")
    assert "2026-07-15" in decider.prompts[0][-1].content  # the model saw the candidate
    # Reviewed memories leave the queue: a second run asks the model nothing.
    assert resolve_supersessions(mem, ScriptedChatModel(replies=[])).reviewed == 0


def test_the_review_runs_after_langmems_tool_in_an_agent(mem: SGAMStore) -> None:
    """LangMem's manage-memory tool in a ReAct agent writes the correction as a new
    memory; the review, chained as one Runnable, retires the old one."""
    model = ScriptedChatModel(
        replies=[
            call_tool("manage_memory", action="create", content="trip to Lisbon on May 3"),
            say("Saved."),
            call_tool("manage_memory", action="create", content="trip to Lisbon moved to May 9"),
            say("Updated."),
        ]
    )
    agent = create_react_agent(model, [create_manage_memory_tool(NS)], store=mem)
    agent.invoke({"messages": [("user", "I fly to Lisbon on May 3")]}, ALICE)
    agent.invoke({"messages": [("user", "The Lisbon trip moved to May 9")]}, ALICE)
    # In the window before the review, search returns both, as any store would.
    assert contents(mem, "Lisbon trip") == [
        "trip to Lisbon moved to May 9",
        "trip to Lisbon on May 3",
    ]

    review = create_supersession_manager(ScriptedChatModel(replies=[verdicts((1, "supersedes"))]),
                                         store=mem)  # fmt: skip
    report = review.invoke({}, ALICE)
    assert len(report.superseded) == 1
    assert contents(mem, "Lisbon trip") == ["trip to Lisbon moved to May 9"]
    (current,) = mem.search(("memories", "alice"))
    new = mem.fact_at("alice", "memories", current.key)
    assert new.fact_id == report.superseded[0].new_fact_id
    assert mem.who_said(new).ref == "t-alice"  # the tool's put cites the agent's thread


def test_the_review_runs_outside_a_graph_with_store(mem: SGAMStore) -> None:
    """Scheduled on its own (a cron job, a script): no LangGraph run, no config at all."""
    remember(mem, "m1", "Mira's passport deadline is 2026-07-15")
    remember(mem, "m2", "Mira's passport deadline is 2026-06-30")
    model = ScriptedChatModel(replies=[verdicts("supersedes")])
    report = create_supersession_manager(model, store=mem).invoke(None)  # every tenant
    assert len(report.superseded) == 1
    assert contents(mem, "passport deadline") == ["Mira's passport deadline is 2026-06-30"]


def test_without_store_outside_a_graph_it_says_to_pass_one(mem: SGAMStore) -> None:
    """It once failed with LangGraph's internal `KeyError: '__pregel_runtime'`."""
    remember(mem, "m1", "Mira's passport deadline is 2026-07-15")
    remember(mem, "m2", "Mira's passport deadline is 2026-06-30")
    review = create_supersession_manager(ScriptedChatModel(replies=[]))
    for config in (None, ALICE):
        with pytest.raises(ConfigurationError, match=r"pass one: .*store="):
            review.invoke({}, config)
    # Nothing was reviewed: both memories are current and still queued.
    assert len(contents(mem, "passport deadline")) == 2
    again = ScriptedChatModel(replies=[verdicts("supersedes")])
    assert resolve_supersessions(mem, again, tenant_id="alice").reviewed == 1


def test_in_a_graph_it_reviews_the_graphs_store_and_only_an_sgam_store(mem: SGAMStore) -> None:
    from langgraph.graph import START, StateGraph
    from langgraph.store.memory import InMemoryStore
    from typing_extensions import TypedDict

    class State(TypedDict, total=False):
        messages: list

    def graph(store: Any, model: ScriptedChatModel) -> Any:
        builder = StateGraph(State)
        builder.add_node("review", create_supersession_manager(model) | (lambda _: {}))
        builder.add_edge(START, "review")
        return builder.compile(store=store)

    remember(mem, "m1", "Mira's passport deadline is 2026-07-15")
    remember(mem, "m2", "Mira's passport deadline is 2026-06-30")
    graph(mem, ScriptedChatModel(replies=[verdicts("supersedes")])).invoke({}, ALICE)
    assert contents(mem, "passport deadline") == ["Mira's passport deadline is 2026-06-30"]

    with pytest.raises(ConfigurationError, match="needs an SGAMStore, got InMemoryStore"):
        graph(InMemoryStore(), ScriptedChatModel(replies=[])).invoke({}, ALICE)
    with pytest.raises(ConfigurationError, match="found no store"):
        graph(None, ScriptedChatModel(replies=[])).invoke({}, ALICE)


# ---------------------------------------------------------------- similarity only nominates


def test_independent_look_alikes_stay_current(mem: SGAMStore) -> None:
    remember(mem, "m1", "Mira's passport deadline is 2026-07-15")
    remember(mem, "m2", "Ana's passport deadline is 2026-08-01")
    remember(mem, "t1", "trip to Lisbon in May")
    remember(mem, "t2", "trip to Lima in June")
    decider = ScriptedChatModel(
        replies=[verdicts((1, "independent")), verdicts((1, "independent"), (2, "independent")),
                 verdicts((1, "independent"), (2, "independent"), (3, "independent"))]
    )  # fmt: skip
    report = resolve_supersessions(mem, decider, tenant_id="alice")
    assert report.decisions and not report.superseded
    assert {d.decision for d in report.decisions} == {"independent"}
    assert len(mem.search(("memories", "alice"), limit=20)) == 4  # nothing retired


def test_a_model_that_answers_nothing_retires_nothing(mem: SGAMStore) -> None:
    remember(mem, "m1", "Mira's passport deadline is 2026-07-15")
    remember(mem, "m2", "Mira's passport deadline is 2026-06-30")
    silent = ScriptedChatModel(replies=[call_tool(REVIEW_TOOL, verdicts=[])])
    report = resolve_supersessions(mem, silent)
    assert report.reviewed == 1 and report.decisions == []
    assert len(contents(mem, "passport")) == 2


def test_a_duplicate_is_recorded_and_changes_no_fact(mem: SGAMStore) -> None:
    remember(mem, "m1", "Mira likes green tea")
    remember(mem, "m2", "Mira likes green tea a lot")
    report = resolve_supersessions(mem, ScriptedChatModel(replies=[verdicts((1, "duplicate"))]))
    assert [d.decision for d in report.decisions] == ["duplicate"]
    assert len(contents(mem, "green tea")) == 2
    assert mem.supersession_decisions(report.decisions[0].old_fact_id) == report.decisions


def test_candidates_come_from_the_same_tenant_and_namespace(mem: SGAMStore) -> None:
    remember(mem, "b1", "passport deadline is 2026-07-15", user="bob")
    mem.put(("notes", "alice"), "n1", {"content": "passport deadline is 2026-07-15"})
    remember(mem, "a1", "passport deadline is 2026-06-30")
    # Nothing like a1 in alice's ("memories",) namespace: no model call at all.
    report = resolve_supersessions(mem, ScriptedChatModel(replies=[]))
    assert report.reviewed == 0 and report.dismissed == 3
    assert len(mem.search(("memories",), query="passport", limit=10)) == 2


# ---------------------------------------------------------------- nominating, never dropping


@pytest.fixture
def plain(target: str) -> Any:
    """A store with no index, as a plain install opens one: keyword scores only."""
    with SGAMStore.from_conn_string(target, tenant_at=1) as store:
        store.setup()
        yield store


def test_a_small_namespace_nominates_every_earlier_memory_without_a_search(
    plain: SGAMStore,
) -> None:
    """A correction that shares no word with the memory it replaces is still put to
    the model: in a namespace of at most SMALL_NAMESPACE memories all earlier ones are
    candidates, numbered from 1, newest first."""
    remember(plain, "m1", "Mira's passport deadline is 2026-07-15")
    remember(plain, "m2", "Mira likes green tea")
    remember(plain, "m3", "It moved: June 30 now")
    decider = ScriptedChatModel(replies=[verdicts("independent"),
                                         verdicts("independent", "supersedes")])  # fmt: skip
    report = resolve_supersessions(plain, decider, tenant_id="alice")
    assert report.reviewed == 2
    assert report.dismissals == [supersession.Dismissal(_fid(plain, "m1"), supersession.ALONE)]
    listed = decider.prompts[1][-1].content
    assert listed.index("1. 'Mira likes green tea'") < listed.index("2. \"Mira's passport")
    (done,) = report.superseded
    assert done.old_fact_id == _fid(plain, "m1")
    assert done.score is None  # nominated without a search
    assert contents(plain, "passport deadline tea June") == [
        "It moved: June 30 now",
        "Mira likes green tea",
    ]


def test_a_large_namespace_nominates_by_calibrated_score(plain: SGAMStore) -> None:
    """Above SMALL_NAMESPACE memories, search nominates: the keyword score is calibrated,
    so a plain store's near-copy clears MIN_SCORE and unrelated memories do not."""
    for n in range(supersession.SMALL_NAMESPACE):
        remember(plain, f"n{n:02d}", f"note number {n} about topic {n % 3} and travel plans")
    remember(plain, "old", "Mira's passport deadline is 2026-07-15")
    _dequeue_all(plain)
    remember(plain, "new", "Correction: Mira's passport deadline moved to 2026-06-30")
    remember(plain, "odd", "Zebra crossings glow purple")
    decider = ScriptedChatModel(replies=[verdicts("supersedes")])
    report = resolve_supersessions(plain, decider, tenant_id="alice")
    assert report.dismissals == [
        supersession.Dismissal(_fid(plain, "odd"), supersession.BELOW_CUTOFF)
    ]
    (done,) = report.superseded
    assert done.old_fact_id == _fid(plain, "old")
    assert done.score is not None and done.score >= supersession.MIN_SCORE
    assert "note number" not in decider.prompts[0][-1].content  # one candidate listed


def test_dismissals_say_why_and_are_logged(
    plain: SGAMStore, caplog: pytest.LogCaptureFixture
) -> None:
    remember(plain, "m1", "Mira's passport deadline is 2026-07-15")
    remember(plain, "gone", "a memory deleted before the review")
    plain.delete(("memories", "alice"), "gone")
    with caplog.at_level(logging.INFO, logger=supersession.__name__):
        report = resolve_supersessions(plain, ScriptedChatModel(replies=[]), tenant_id="alice")
    reasons = {d.fact_id: d.reason for d in report.dismissals}
    assert reasons == {
        _fid(plain, "m1"): supersession.ALONE,
        _fid(plain, "gone"): supersession.NOT_CURRENT,
    }
    assert report.dismissed == 2 and report.reviewed == 0 and report.decisions == []
    (record,) = [r for r in caplog.records if r.name == supersession.__name__]
    assert record.levelno == logging.INFO and "dismissed 2" in record.getMessage()
    assert supersession.NOT_CURRENT in record.getMessage()


def _fid(store: SGAMStore, key: str) -> int:
    """The fact id of alice's memory `key`, current or closed since."""
    return store.history("alice", "memories", key)[0].fact_id


def _dequeue_all(store: SGAMStore) -> None:
    """Review what is queued so far with a model that is never asked (all dismissed)."""
    resolve_supersessions(store, ScriptedChatModel(replies=[verdicts(
        *["independent"] * supersession.SMALL_NAMESPACE)] * 40))  # fmt: skip


# ---------------------------------------------------------------- undo, history intact


def test_a_wrong_decision_is_undone_with_history_intact(mem: SGAMStore) -> None:
    remember(mem, "m1", "Mira's passport deadline is 2026-07-15")
    remember(mem, "m2", "Ana's passport deadline is 2026-08-01")
    report = resolve_supersessions(mem, ScriptedChatModel(replies=[verdicts((1, "supersedes"))]))
    (wrong,) = report.superseded
    assert contents(mem, "passport") == ["Ana's passport deadline is 2026-08-01"]
    believed_wrongly = utc_now()

    restored = mem.undo_supersession(wrong.decision_id)
    assert restored.value == {"content": "Mira's passport deadline is 2026-07-15"}
    assert restored.decided_by == f"undo:{wrong.decision_id}"
    assert contents(mem, "passport") == [
        "Ana's passport deadline is 2026-08-01",
        "Mira's passport deadline is 2026-07-15",
    ]
    assert mem.fact_at("alice", "memories", "m2").supersedes_fact_id is None
    # History: the closed version, then the restored one from the same instant.
    m1 = mem.history("alice", "memories", "m1")
    assert [f.valid_to is None for f in m1] == [False, True]
    assert m1[0].valid_to == m1[1].valid_from
    # The wrong belief is still readable as what the store believed then.
    then = mem.as_of(utc_now(), known_at=believed_wrongly)
    assert [h.key for h in then.search(("memories", "alice"), query="passport")] == ["m2"]
    assert mem.supersession_decisions(wrong.new_fact_id)[0].undone_at is not None
    with pytest.raises(ConflictError):
        mem.undo_supersession(wrong.decision_id)


# ---------------------------------------------------------------- what is queued


def test_only_new_searchable_keys_are_queued(target: str) -> None:
    with SGAMStore.from_conn_string(target, tenant_at=1) as store:
        remember(store, "m1", "Mira's passport deadline is 2026-07-15")
        remember(store, "m1", "Mira's passport deadline is 2026-06-30")  # same key: a version
        store.put(("memories", "alice"), "hidden", {"content": "passport"}, index=False)
        with store.engine.reading() as conn:
            queued = store.engine.supersession.queued(conn, None, 10)
        assert queued == [(store.history("alice", "memories", "m1")[0].fact_id, "alice")]
    with SGAMStore.from_conn_string(target, review_new_keys=False) as store:
        remember(store, "m9", "Mira's passport deadline is 2026-05-01")
        with store.engine.reading() as conn:
            assert len(store.engine.supersession.queued(conn, None, 10)) == 1


def test_erasure_takes_decisions_and_queue_rows_along(mem: SGAMStore) -> None:
    remember(mem, "m1", "Mira's passport deadline is 2026-07-15")
    remember(mem, "m2", "Mira's passport deadline is 2026-06-30")
    remember(mem, "m3", "Mira's visa deadline is 2026-09-01")
    report = resolve_supersessions(mem, ScriptedChatModel(replies=[verdicts((1, "supersedes"))]),
                                   limit=2)  # fmt: skip
    purged = mem.purge("alice")
    assert purged.deleted["supersession_decisions"] == len(report.decisions) == 1
    assert purged.deleted["supersession_queue"] >= 1
    assert mem.supersession_decisions(report.decisions[0].new_fact_id) == []


# ---------------------------------------------------------------- bad verdicts write nothing


def test_bad_verdicts_are_typed_errors_and_write_nothing(mem: SGAMStore) -> None:
    remember(mem, "m1", "Mira's passport deadline is 2026-07-15")
    remember(mem, "m2", "Mira's passport deadline is 2026-06-30")
    remember(mem, "b1", "Bob's passport deadline", user="bob")
    old, new = (mem.fact_at("alice", "memories", k) for k in ("m1", "m2"))
    bob = mem.fact_at("bob", "memories", "b1")
    with pytest.raises(InvalidFactError, match="decision"):
        mem.apply_supersession(new.fact_id, [Verdict(old.fact_id, "retire", "?")], decided_by="t")
    with pytest.raises(FactNotFoundError, match="tenant"):  # another tenant's: not found
        mem.apply_supersession(
            new.fact_id, [Verdict(bob.fact_id, "supersedes", "?")], decided_by="t"
        )
    with pytest.raises(ConflictError, match="before"):  # the old one must start first
        mem.apply_supersession(
            old.fact_id, [Verdict(new.fact_id, "supersedes", "?")], decided_by="t"
        )
    assert mem.supersession_decisions(new) == []
    assert len(contents(mem, "passport")) == 2


def test_sgam_history_prints_the_chain_across_keys(
    mem: SGAMStore, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from sgam_store.cli import main

    remember(mem, "old-key", "Mira's passport deadline is 2026-07-15")
    remember(mem, "new-key", "Mira's passport deadline is 2026-06-30")
    resolve_supersessions(mem, ScriptedChatModel(replies=[verdicts((1, "supersedes"))]))
    old, new = (mem.fact_at("alice", "memories", k, at=utc_now()) for k in ("old-key", "new-key"))
    assert old is None and new is not None
    args = ["history", "--db", target, "--tenant", "alice", "--subject", "memories"]
    assert main([*args, "--attribute", "new-key", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["subject"], r["attribute"]) for r in rows] == [
        ("memories", "old-key"),
        ("memories", "new-key"),
    ]
    assert rows[1]["supersedes_fact_id"] == rows[0]["fact_id"]
    assert main([*args, "--attribute", "new-key"]) == 0
    out = capsys.readouterr().out
    assert "old-key" in out and "supersedes chain:" in out and "←" in out


def test_the_memory_manager_graph_reviews_new_memories(target: str) -> None:
    from graphs.manager import build_memory_manager

    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["content"]}
    with SGAMStore.from_conn_string(target, index=index) as store:
        store.put(("acme", "mira"), "n1", {"content": "passport deadline is 2026-07-15"})
        store.put(("acme", "mira"), "n2", {"content": "passport deadline is 2026-06-30"})
        model = ScriptedChatModel(replies=[verdicts((1, "supersedes"))])
        manager = build_memory_manager(model, store=store)
        config = {"configurable": {"tenant_id": "acme", "user_id": "mira", "thread_id": "t"}}
        out = manager.invoke({"messages": []}, config)
        assert out["supersession_report"]["decisions"] == [
            ("supersedes", store.fact_at("acme", "mira", "n2").fact_id,
             store.history("acme", "mira", "n1")[0].fact_id)
        ]  # fmt: skip
        assert [h.key for h in store.search(("acme", "mira"), query="passport")] == ["n2"]
        # Nothing new: the next run asks the model nothing (its script is spent).
        assert manager.invoke({"messages": []}, config)["supersession_report"]["reviewed"] == 0
