"""Moving in: LangGraph's SqliteStore file and PostgresStore database, an InMemoryStore and
a JSONL dump become facts, valid from each item's updated_at, with `import:` provenance;
the source is read only, and a second run adds nothing."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore

from sgam_store import ForeignDatabaseError, InvalidFactError, SGAMStore, cli

from . import pg
from .conftest import HashEmbeddings

ENGINES = ("sqlite", "postgres")

ITEMS = {
    (("memories", "alice"), "m1"): {"content": "Alice's passport expires in June"},
    (("memories", "alice"), "m2"): {"content": "Alice prefers short answers"},
    (("memories", "bob"), "m1"): {"content": "Bob lives in Lima", "tags": ["home"]},
    (("acme", "mira", "prefs"), "style"): {"text": "formal"},
}


def sqlitestore_file(path: Path) -> Path:
    with SqliteStore.from_conn_string(str(path)) as source:
        source.setup()
        for (namespace, key), value in ITEMS.items():
            source.put(namespace, key, value)
    return path


def imported(store: SGAMStore) -> dict:
    return {(tuple(i.namespace), i.key): i.value for i in store.search((), limit=100)}


def test_a_sqlitestore_file_comes_in_once_and_is_left_untouched(
    target: str, tmp_path: Path
) -> None:
    source = sqlitestore_file(tmp_path / "langgraph.db")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    with SGAMStore.from_conn_string(target) as store:
        report = store.import_items(str(source))
        assert (report.read, report.written, report.unchanged) == (4, 4, 0)
        assert imported(store) == ITEMS
        fact = store.fact_at("memories", "bob", "m1")
        assert fact.source_episode_id == "import:langgraph.db"
        with SqliteStore.from_conn_string(str(source)) as lg:
            item = lg.get(("memories", "bob"), "m1")
        assert fact.valid_from == item.updated_at.replace(tzinfo=UTC)

        again = store.import_items(str(source))
        assert (again.written, again.unchanged) == (0, 4)
        assert len(store.history("memories", "bob", "m1")) == 1
    assert hashlib.sha256(source.read_bytes()).hexdigest() == digest


def test_an_item_changed_at_the_source_is_a_new_version(tmp_path: Path, db_path: str) -> None:
    source = sqlitestore_file(tmp_path / "langgraph.db")
    with SGAMStore.from_conn_string(db_path) as store:
        store.import_items(str(source))
        with SqliteStore.from_conn_string(str(source)) as lg:
            lg.put(("memories", "bob"), "m1", {"content": "Bob moved to Quito"})
        report = store.import_items(str(source))
        assert (report.written, report.unchanged) == (1, 3)
        values = [f.value["content"] for f in store.history("memories", "bob", "m1")]
        assert values == ["Bob lives in Lima", "Bob moved to Quito"]
        assert store.get(("memories", "bob"), "m1").value == {"content": "Bob moved to Quito"}


def test_a_postgresstore_database_comes_in(pg_server: str, db_path: str) -> None:
    uri = pg.fresh_database()
    with PostgresStore.from_conn_string(uri) as source:
        source.setup()
        for (namespace, key), value in ITEMS.items():
            source.put(namespace, key, value)
    with SGAMStore.from_conn_string(db_path) as store:
        report = store.import_items(uri, label="production")
        assert report.written == 4 and imported(store) == ITEMS
        assert store.fact_at("acme", "mira.prefs", "style").source_episode_id == (
            "import:production"
        )


def test_an_in_memory_store_comes_in_with_vectors_from_the_target_index(target: str) -> None:
    source = InMemoryStore()
    for (namespace, key), value in ITEMS.items():
        source.put(namespace, key, value)
    index = {"dims": 64, "embed": HashEmbeddings(64), "fields": ["content"]}
    with SGAMStore.from_conn_string(target, index=index) as store:
        report = store.import_items(source)
        assert report.written == 4 and imported(store) == ITEMS  # deeper namespaces once
        found = store.search(("memories",), query="passport expires", limit=1)
        assert [(i.namespace, i.key) for i in found] == [(("memories", "alice"), "m1")]
        assert store.fact_at("memories", "alice", "m1").source_episode_id == (
            "import:InMemoryStore"
        )


def test_a_jsonl_dump_comes_in_and_a_bad_line_is_a_typed_error(tmp_path: Path) -> None:
    dump = tmp_path / "items.jsonl"
    when = datetime(2026, 3, 1, tzinfo=UTC)
    lines = [
        json.dumps({"namespace": list(ns), "key": k, "value": v, "updated_at": when.isoformat()})
        for (ns, k), v in ITEMS.items()
    ]
    dump.write_text("\n".join(lines) + "\n")
    with SGAMStore.from_conn_string(str(tmp_path / "m.db")) as store:
        assert store.import_items(str(dump)).written == 4
        assert store.fact_at("memories", "alice", "m2").valid_from == when
        assert store.as_of(when - timedelta(days=1)).search(()) == []

        bad = tmp_path / "bad.jsonl"
        bad.write_text(lines[0] + "\n" + '{"namespace": "memories", "key": "x", "value": {}}\n')
        with pytest.raises(InvalidFactError, match=r"bad\.jsonl:2"):
            store.import_items(str(bad))
        naive = tmp_path / "naive.jsonl"
        naive.write_text(json.dumps({"namespace": ["a", "b"], "key": "k", "value": {},
                                     "updated_at": "2026-03-01T00:00:00"}) + "\n")  # fmt: skip
        with pytest.raises(ValueError, match=r"naive|offset|timezone"):
            store.import_items(str(naive))
        assert store.fact_at("a", "b", "k") is None


def test_expired_items_stay_behind(tmp_path: Path, db_path: str) -> None:
    path = tmp_path / "ttl.db"
    with SqliteStore.from_conn_string(str(path), ttl={"default_ttl": 60}) as source:
        source.setup()
        source.put(("memories", "alice"), "fresh", {"content": "still here"})
        source.put(("memories", "alice"), "old", {"content": "gone"})
        source.conn.execute(
            "UPDATE store SET expires_at = datetime('now', '-1 minute') WHERE key = 'old'"
        )
        source.conn.commit()
    with SGAMStore.from_conn_string(db_path) as store:
        report = store.import_items(str(path))
        assert (report.written, report.expired) == (1, 1)
        assert store.get(("memories", "alice"), "old") is None


def test_a_file_that_is_not_a_langgraph_store_is_refused(tmp_path: Path, db_path: str) -> None:
    other = tmp_path / "other.db"
    with SGAMStore.from_conn_string(str(other)) as sgam:
        sgam.setup()
    with SGAMStore.from_conn_string(db_path) as store:
        with pytest.raises(ForeignDatabaseError, match="no LangGraph SqliteStore"):
            store.import_items(str(other))
        with pytest.raises(ForeignDatabaseError, match="no such file"):
            store.import_items(str(tmp_path / "missing.db"))


def test_sgam_import_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = sqlitestore_file(tmp_path / "langgraph.db")
    target = tmp_path / "sgam.db"
    assert cli.main(["import", "--from", str(source), "--db", str(target), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["written"] == 4 and out["read"] == 4
    assert cli.main(["import", "--from", str(source), "--db", str(target), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unchanged"] == 4
