"""`sgam copy` moves a whole store between engines: after SQLite -> PostgreSQL -> SQLite,
every point-in-time and belief-time answer, every episode and provenance link, every
candidate and the search results are the same as in the original."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from sgam_store import MemoryFact, SGAMStore
from sgam_store.cli import main
from sgam_store.managers.consolidation import list_candidates
from tests import pg

from .conftest import HashEmbeddings
from .seed import E1_CANDIDATES, E2_CANDIDATES, record_seed

ENGINES = ("sqlite", "postgres")  # tests that take `target` run on every engine
INDEX = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
INSTANTS = ["2026-05-01T00:00:00Z", "2026-06-02T00:00:00Z", "2026-06-04T00:00:00Z", None]


def build(path: str) -> list[datetime]:
    """A store with history in both clocks; returns belief instants between its writes."""
    believed: list[datetime] = []
    with SGAMStore.from_conn_string(path, index=INDEX) as store:
        store.setup()
        e1, e2 = record_seed(store)
        store.apply_updates(E1_CANDIDATES, tenant_id="acme", episode_id=e1.episode_id)
        believed.append(_between())
        store.apply_updates(E2_CANDIDATES, tenant_id="acme", episode_id=e2.episode_id)
        believed.append(_between())
        store.replace_fact(
            MemoryFact(tenant_id="globex", subject="leo", attribute="city", value="Lima",
                       valid_from="2026-05-20T00:00:00Z", source_episode_id="external:crm")
        )  # fmt: skip
        for text in ("likes trains", "likes planes"):
            store.put(("acme", "mira"), "travel", {"text": text})
        believed.append(_between())
        store.put(("acme", "bob"), "note", {"text": "gone soon"})
        store.delete(("acme", "bob"), "note")
        store.put(("acme", "mira"), "limited", {"text": "expires"}, ttl=60)
    return believed


def _between() -> datetime:
    time.sleep(0.002)
    instant = datetime.now(UTC)
    time.sleep(0.002)
    return instant


def answers(path: str, believed: list[datetime]) -> dict[str, Any]:
    """Everything a reader can ask, as plain data."""
    with SGAMStore.from_conn_string(path, index=INDEX) as store:
        keys = sorted({(f.tenant_id, f.subject, f.attribute) for f in store.ledger()})
        out: dict[str, Any] = {"ledger": [f.model_dump() for f in store.ledger()]}
        for known in [*believed, None]:
            out[f"ledger@{known}"] = [f.model_dump() for f in store.ledger(known_at=known)]
            for key in keys:
                out[f"history{key}@{known}"] = [f.model_dump() for f in store.history(*key, known)]
                for at in INSTANTS:
                    fact = store.fact_at(*key, at=at, known_at=known)
                    out[f"fact_at{key}@{at},{known}"] = fact and fact.model_dump()
        deadline = store.fact_at("acme", "mira", "passport_deadline")
        out["who_said"] = store.who_said(deadline).model_dump()
        out["candidates"] = [c.model_dump() for c in list_candidates(store, "acme", status=None)]
        out["items"] = [i.dict() for i in store.search(("acme",), limit=50)]
        out["search"] = sorted(
            (tuple(i.namespace), i.key) for i in store.search(("acme",), query="deadline trains")
        )
        out["as_of"] = [
            i.dict() for i in store.as_of("2026-06-02T00:00:00Z").search(("acme",), limit=50)
        ]
        out["namespaces"] = store.list_namespaces()
    return out


def test_copy_round_trips_a_store_through_postgres(tmp_path: Any, pg_server: str) -> None:
    original = str(tmp_path / "original.db")
    believed = build(original)
    before = answers(original, believed)
    uri = pg.fresh_database()
    assert main(["copy", "--from", original, "--to", uri, "--json"]) == 0
    assert answers(uri, believed) == before
    back = str(tmp_path / "back.db")
    assert main(["copy", "--from", uri, "--to", back]) == 0
    assert answers(back, believed) == before
    # The copies take new writes after the copied ids: a correction supersedes as usual.
    for target in (uri, back):
        with SGAMStore.from_conn_string(target, index=INDEX) as store:
            store.put(("acme", "mira"), "travel", {"text": "likes boats"})
            *_, previous, latest = store.history("acme", "mira", "travel")
            assert latest.supersedes_fact_id == previous.fact_id
            assert latest.fact_id > max(f["fact_id"] for f in before["ledger"])


def test_copy_refuses_a_target_that_holds_a_store(target: str, tmp_path: Any) -> None:
    source = str(tmp_path / "source.db")
    build(source)
    with SGAMStore.from_conn_string(target) as store:
        store.put(("acme", "x"), "k", {"text": "already here"})
    assert main(["copy", "--from", source, "--to", target]) == 2
    with SGAMStore.from_conn_string(target) as store:
        assert [f.attribute for f in store.ledger()] == ["k"]
