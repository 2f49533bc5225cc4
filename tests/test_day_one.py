"""Day one: the headline correction, written LangMem's way, retires the old value.

The exact sequence a LangMem user writes (issue 32): LangMem's own manage-memory tool
saves a deadline and then its correction as two memories under new keys; the review,
with the packaged scripted model, retires the old one. On a plain install (no index:
keyword search, calibrated scores) and with the bundled MiniLM as the index.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from langmem import create_manage_memory_tool, create_search_memory_tool

from sgam_store import SGAMStore, default_index, resolve_supersessions
from sgam_store.managers.supersession import ALONE, Dismissal
from sgam_store.testing import ScriptedChatModel, verdicts

ENGINES = ("sqlite", "postgres")

CFG = {"configurable": {"langgraph_user_id": "alice"}}
NS = ("memories", "{langgraph_user_id}")
OLD = "Alice's passport deadline is 2026-07-15"
NEW = "Correction: Alice's passport deadline moved to 2026-06-30"


def replay_and_review(store: SGAMStore) -> dict[str, Any]:
    """The issue's sequence through LangMem's tools, then the review; what it left."""
    manage = create_manage_memory_tool(NS, store=store)
    manage.invoke({"content": OLD, "action": "create"}, CFG)
    manage.invoke({"content": NEW, "action": "create"}, CFG)
    before = store.search(("memories", "alice"), query="passport deadline")
    assert sorted(h.value["content"] for h in before) == sorted([OLD, NEW])

    model = ScriptedChatModel(replies=[verdicts("supersedes")])
    report = resolve_supersessions(store, model, tenant_id="alice")
    hits = store.search(("memories", "alice"), query="passport deadline")
    return {"report": report, "hits": hits, "model": model}


def check_retired(store: SGAMStore, outcome: dict[str, Any]) -> None:
    report, hits = outcome["report"], outcome["hits"]
    assert [h.value["content"] for h in hits] == [NEW]
    (decision,) = report.superseded
    first = store.history("alice", "memories", hits[0].key)
    assert [f.value["content"] for f in first] == [OLD, NEW]  # the chain across keys
    assert first[0].valid_to == first[1].valid_from and first[0].fact_id == decision.old_fact_id
    # The first memory had nothing before it: dismissed, and the report says so.
    assert report.reviewed == 1 and report.dismissals == [Dismissal(first[0].fact_id, ALONE)]
    assert OLD in outcome["model"].prompts[0][-1].content  # the model was asked about it
    # LangMem's own search tool sees the correction only.
    search = create_search_memory_tool(NS, store=store, response_format="content_and_artifact")
    call = {"type": "tool_call", "id": "s1", "name": search.name, "args": {"query": "passport"}}
    found = search.invoke(call, CFG).artifact
    assert [m.value["content"] for m in found] == [NEW]


@pytest.fixture
def plain() -> Iterator[SGAMStore]:
    store = SGAMStore(":memory:", tenant_at=1)
    store.setup()
    yield store
    store.close()


def test_the_correction_retires_the_old_deadline_on_a_plain_install(plain: SGAMStore) -> None:
    outcome = replay_and_review(plain)
    check_retired(plain, outcome)
    # Keyword scores are calibrated: the query's words, all in the memory, score 1.
    assert outcome["hits"][0].score == 1.0


def test_the_same_on_every_engine(target: str) -> None:
    with SGAMStore.from_conn_string(target, tenant_at=1) as store:
        store.setup()
        check_retired(store, replay_and_review(store))


@pytest.mark.slow
def test_the_correction_retires_the_old_deadline_with_minilm() -> None:
    index = default_index()
    assert index is not None, "the local extra (MiniLM) is installed for the tests"
    store = SGAMStore(":memory:", tenant_at=1, index=index)
    store.setup()
    try:
        outcome = replay_and_review(store)
        check_retired(store, outcome)
        assert 0.3 < outcome["hits"][0].score <= 1  # a cosine similarity
    finally:
        store.close()


def test_the_scripted_model_is_not_imported_with_the_package() -> None:
    """`sgam_store.testing` brings LangChain's model stack: only those who use it pay."""
    probe = "import sys, sgam_store; print('sgam_store.testing' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
