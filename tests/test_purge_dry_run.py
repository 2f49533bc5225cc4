"""`purge(..., dry_run=True)`: the real purge's report, and nothing erased meanwhile."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from sgam_store import SGAMStore
from sgam_store.cli import main
from tests.test_erasure import PASSPORT, TOKEN, mira_fact

ENGINES = ("sqlite", "postgres")


def seed(store: SGAMStore) -> None:
    """acme/mira with a history, vectors and episodes; acme/bob and globex beside it."""
    for episode, value, valid_from in PASSPORT:
        store.record_episode(
            "acme", f"Mira ({TOKEN}): deadline {value}", source_kind="user_message",
            episode_id=episode, thread_id="t1",
        )  # fmt: skip
        store.replace_fact(mira_fact(episode, value, valid_from))
    store.put(("acme", "mira"), "tone", {"text": f"{TOKEN} prefers short answers"})
    store.put(("acme", "bob"), "tone", {"text": "bob prefers long answers"})
    store.record_episode("globex", "globex note", source_kind="user_message", episode_id="g1")
    store.replace_fact(mira_fact("g1", "2026-09-10", "2026-06-02T12:00:00Z", tenant="globex"))


def state(store: SGAMStore) -> dict[str, Any]:
    """What the read API shows of the seeded data: histories, searches (the vector mirror
    answers current ones on SQLite), listings and episodes."""
    keys = [("acme", "mira", "passport_deadline"), ("acme", "mira", "tone")]
    keys += [("acme", "bob", "tone"), ("globex", "mira", "passport_deadline")]
    hits = lambda prefix, q: [(i.key, i.value, i.score) for i in store.search(prefix, query=q)]  # noqa: E731
    return {
        "history": [store.history(*k) for k in keys],
        "search": hits(("acme",), f"{TOKEN} deadline"),
        "search all": hits((), TOKEN),
        "namespaces": store.list_namespaces(prefix=("acme",)),
        "episodes": [store.get_episode(e, tenant_id="acme") for e in ("e0", "e1", "e2")],
        "globex": store.get_episode("g1", tenant_id="globex"),
    }


PURGES: dict[str, Callable[..., Any]] = {
    "subject": lambda s, **kw: s.purge("acme", "mira", **kw),
    "attribute": lambda s, **kw: s.purge("acme", "mira", "passport_deadline", **kw),
    "tenant": lambda s, **kw: s.purge("acme", **kw),
    "episode": lambda s, **kw: s.purge_episode("acme", "e1", **kw),
}


@pytest.mark.parametrize("kind", PURGES)
def test_dry_run_reports_the_purge_and_erases_nothing(vstore: SGAMStore, kind: str) -> None:
    seed(vstore)
    purge = PURGES[kind]
    before = state(vstore)
    assert before["search"] and all(before["episodes"])  # the checks can see the data
    dry = purge(vstore, dry_run=True)
    assert dry.fact_ids or dry.episode_ids  # it found something to erase
    assert state(vstore) == before
    again = purge(vstore, dry_run=True, secure_delete=True)  # no rewrite either
    assert again == dry and again.checkpointed is None
    assert state(vstore) == before
    real = purge(vstore)
    assert real.to_dict() == dry.to_dict()
    assert state(vstore) != before  # and the real one erased


def test_dry_run_of_nothing_reports_nothing(store: SGAMStore) -> None:
    seed(store)
    before = state(store)
    report = store.purge("acme", "nobody", dry_run=True)
    assert report.fact_ids == [] and not any(report.deleted.values())
    assert state(store) == before


def test_cli_dry_run_previews_the_purge(
    store: SGAMStore, target: str, capsys: pytest.CaptureFixture
) -> None:
    seed(store)
    before = state(store)
    whole = ["purge", "--db", target, "--tenant", "acme"]
    assert main([*whole, "--dry-run", "--json"]) == 0  # a preview needs no --whole-tenant
    dry = json.loads(capsys.readouterr().out)
    assert dry["deleted"]["episodes"] == 3 and state(store) == before
    assert main([*whole, "--dry-run"]) == 0
    assert "would erase from" in capsys.readouterr().out
    assert main([*whole, "--whole-tenant", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == dry
