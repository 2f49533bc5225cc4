"""Versioned DDL: idempotent, safe for two processes at once, refuses newer files; and the
database written by schema v1 (tests/fixtures/schema_v1.db) still reads with today's code."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sgam_store import ForeignDatabaseError, SchemaVersionError, SGAMStore
from sgam_store.cli import main
from sgam_store.engines.sqlite import connection, migrations, reads
from tests.fixtures.make_fixture import FIXTURE, INDEX

ROOT = Path(__file__).resolve().parent.parent
SETUP_AT = """
import sys, time
from pathlib import Path
from langchain_core.embeddings import DeterministicFakeEmbedding
from sgam_store import SGAMStore
path, ready, go = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
index = {"dims": 8, "embed": DeterministicFakeEmbedding(size=8)}
with SGAMStore.from_conn_string(path, index=index) as store:
    ready.touch()
    while not go.exists():  # every process calls setup() at the same instant
        time.sleep(0.0005)
    store.setup()
"""


def schema_of(path: str) -> list[tuple]:
    conn = connection.connect(path)
    try:
        objects = conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
        return [*objects, ("user_version", conn.execute("PRAGMA user_version").fetchone()[0])]
    finally:
        conn.close()


def test_migrate_is_idempotent(db_path: str) -> None:
    conn = connection.connect(db_path)
    assert migrations.migrate(conn) == 0
    first = schema_of(db_path)
    assert migrations.migrate(conn) == migrations.LATEST
    assert schema_of(db_path) == first
    conn.close()


def test_two_processes_set_up_one_new_file_at_once(tmp_path: Path) -> None:
    reference = str(tmp_path / "reference.db")
    with SGAMStore.from_conn_string(reference, index=INDEX) as store:
        store.setup()
    path, go = str(tmp_path / "race.db"), tmp_path / "go"
    procs = []
    for n in range(2):
        ready = tmp_path / f"ready{n}"
        command = [sys.executable, "-c", SETUP_AT, path, str(ready), str(go)]
        procs.append(
            (ready, subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True))
        )
    deadline = time.time() + 60
    while not all(ready.exists() for ready, _ in procs) and time.time() < deadline:
        time.sleep(0.01)
    go.touch()
    for _, proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    assert schema_of(path) == schema_of(reference)


def test_a_newer_database_is_refused(db_path: str, capsys: pytest.CaptureFixture) -> None:
    with SGAMStore.from_conn_string(db_path) as store:
        store.setup()
        store.conn.execute(f"PRAGMA user_version = {migrations.LATEST + 1}")
    with SGAMStore.from_conn_string(db_path) as store:
        with pytest.raises(SchemaVersionError, match="newer than this sgam-store"):
            store.setup()
        with pytest.raises(SchemaVersionError):
            store.get(("acme",), "anything")  # lazy setup refuses it too
    assert main(["stats", "--db", db_path]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sgam: error: database schema v") and err.count("\n") == 1


@pytest.fixture
def v1_copy(tmp_path: Path) -> str:
    path = tmp_path / "schema_v1.db"
    shutil.copy(FIXTURE, path)
    return str(path)


def test_the_v1_fixture_reads_with_todays_code(v1_copy: str) -> None:
    with SGAMStore.from_conn_string(v1_copy, index=INDEX) as store:
        store.setup()
        assert store.stats()["schema_version"] == migrations.LATEST
        answers = {
            at: store.fact_at("acme", "mira", "passport_deadline", at=at).value
            for at in (None, "2026-06-02T00:00:00Z", "2026-05-31T00:00:00Z")
        }
        assert answers == {
            None: "2026-06-30",
            "2026-06-02T00:00:00Z": "2026-07-15",
            "2026-05-31T00:00:00Z": "2026-08-01",
        }
        history = store.history("acme", "mira", "passport_deadline")
        assert [f.source_episode_id for f in history] == ["e0", "e1", "e2"]
        assert history[2].supersedes_fact_id == history[1].fact_id
        assert store.fact_at("globex", "mira", "passport_deadline").value == "2026-09-10"
        assert store.get(("acme", "mira"), "tone").value == {"text": "prefers short answers"}
        assert store.get(("acme", "mira"), "nickname") is None  # deleted: history only
        assert len(store.history("acme", "mira", "nickname")) == 1
        past = store.as_of("2026-06-02T00:00:00Z").get(("acme", "mira"), "passport_deadline")
        assert past.value == {"value": "2026-07-15"}
        assert store.search(("acme",), query="short answers")[0].key == "tone"
        assert {item.key for item in store.search(("acme", "mira"))} == {
            "passport_deadline",
            "tone",
        }
        assert set(store.list_namespaces()) == {("acme", "mira"), ("globex", "mira")}
        assert store.for_tenant("globex").get(("mira",), "passport_deadline") is not None
        episode = store.get_episode("e1", tenant_id="acme")
        assert episode.thread_id == "t1" and "July 15" in episode.content

        # v2 renumbered the keyword rows per tenant: keyword search stays tenant-scoped.
        keywords = SGAMStore(store.conn, retrieval={"mode": "keyword"})
        assert [i.key for i in keywords.search(("acme",), query="short answers")] == ["tone"]
        assert keywords.search(("globex",), query="short answers") == []
        found = keywords.search(("globex",), query="passport deadline")
        assert [(i.namespace, i.key) for i in found] == [(("globex", "mira"), "passport_deadline")]
        assert len(keywords.search((), query="passport deadline")) == 2

        # v5 moved the vectors out of vec0 into a plain table: every one came along, and
        # a vector search that reads the table (no mirror) ranks them.
        assert store.conn.execute("SELECT COUNT(*) FROM vector_rows").fetchone()[0] == 6
        table = SGAMStore(store.conn, index=INDEX, retrieval={"mode": "vector"}, vector_cache=False)
        assert table.search(("acme",), query="prefers short answers")[0].key == "tone"
        past = table.as_of("2026-06-02T00:00:00Z").search(("acme",), query="passport deadline")
        assert past[0].value == {"value": "2026-07-15"}

        # And today's writes and lifecycle work on it.
        store.put(("acme", "mira"), "tone", {"text": "prefers bullet points"})
        assert len(store.history("acme", "mira", "tone")) == 2
        assert store.purge_episode("acme", "e1").deleted["episodes"] == 1
        assert store.run_retention().invalid == []


def _snapshot(path: Path) -> dict[str, bytes]:
    """Every file of the database (main, journal, WAL), byte for byte."""
    return {p.name: p.read_bytes() for p in sorted(path.parent.iterdir())}


def _langgraph_sqlite_store_file(path: Path) -> None:
    from langgraph.store.sqlite import SqliteStore

    with SqliteStore.from_conn_string(str(path)) as store:
        store.setup()
        store.put(("acme", "mira"), "passport_deadline", {"value": "2026-06-30"})


def _unrelated_facts_table(path: Path) -> None:
    conn = connection.driver().connect(str(path))
    conn.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, what TEXT)")
    conn.execute("INSERT INTO facts (what) VALUES ('the sky is blue')")
    conn.commit()
    conn.close()


def _not_sqlite(path: Path) -> None:
    path.write_text("name,value\nmira,2026-06-30\n")


@pytest.mark.parametrize(
    "make, says",
    [
        (_langgraph_sqlite_store_file, "LangGraph's SqliteStore"),
        (_unrelated_facts_table, "another program"),
        (_not_sqlite, "not a SQLite database"),
    ],
    ids=["langgraph-sqlitestore", "unrelated-facts-table", "not-sqlite"],
)
def test_a_file_another_program_wrote_is_refused_untouched(tmp_path: Path, make, says) -> None:
    path = tmp_path / "theirs" / "langgraph.db"
    path.parent.mkdir()
    make(path)
    before = _snapshot(path)
    with (
        pytest.raises(ForeignDatabaseError, match=says) as raised,
        SGAMStore.from_conn_string(str(path)) as store,
    ):
        store.setup()
    assert "sgam import" in str(raised.value) or says == "not a SQLite database"
    assert _snapshot(path) == before
    # a connection opened by the caller is checked at setup(), before any DDL
    conn = connection.driver().connect(str(path), isolation_level=None)
    with pytest.raises(ForeignDatabaseError):
        SGAMStore(conn).setup()
    conn.close()
    assert _snapshot(path) == before


def test_sgam_commands_refuse_a_foreign_file(tmp_path: Path, capsys) -> None:
    path = tmp_path / "langgraph.db"
    _langgraph_sqlite_store_file(path)
    assert main(["ledger", "--db", str(path)]) == 2
    assert "LangGraph's SqliteStore" in capsys.readouterr().err


def test_an_upgraded_file_reads_a_users_scope_from_an_index_alone(
    v1_copy: str, tmp_path: Path
) -> None:
    """V9 put fact_id into facts_current_count: an old file gets the index a new one has,
    and the scope a per-user search reads (`reads.in_scope`) never reads the table."""
    fresh = str(tmp_path / "fresh.db")
    for path in (v1_copy, fresh):
        with SGAMStore.from_conn_string(path, index=INDEX) as store:
            store.setup()
    indexes = [
        [row for row in schema_of(path) if row[0] == "index" and row[1] == "facts_current_count"]
        for path in (v1_copy, fresh)
    ]
    assert indexes[0] == indexes[1] and "fact_id" in indexes[0][0][2]
    with SGAMStore.from_conn_string(v1_copy, index=INDEX) as store:
        where, params = reads._search_scope(None, None, "acme", ("acme", "mira"), None)
        plan = store.conn.execute(
            f"EXPLAIN QUERY PLAN SELECT f.fact_id, f.row_id, f.expires_at FROM facts f "
            f"WHERE {where} LIMIT 500",
            params,
        ).fetchall()
        assert sorted(reads.in_scope(store.conn, None, None, "acme", ("acme", "mira"), None, 500))
    assert "COVERING INDEX facts_current_count" in " ".join(row[3] for row in plan), plan


def test_an_upgraded_file_drops_the_current_ns_index_and_seeks_the_count_index(
    v1_copy: str, tmp_path: Path
) -> None:
    """V10 dropped facts_current_ns, which held facts_current_count's rows under its
    leading columns: an old file ends with the indexes a new one has, and a tenant's
    current scope (a filtered search, an exact vector scan) still seeks an index instead
    of walking every current fact."""
    fresh = str(tmp_path / "fresh.db")
    for path in (v1_copy, fresh):
        with SGAMStore.from_conn_string(path, index=INDEX) as store:
            store.setup()
    indexes = [
        sorted(row[1] for row in schema_of(path) if row[0] == "index") for path in (v1_copy, fresh)
    ]
    assert indexes[0] == indexes[1]
    assert "facts_current_ns" not in indexes[0] and "facts_current_count" in indexes[0]
    with SGAMStore.from_conn_string(v1_copy, index=INDEX) as store:
        where, params = reads._search_scope(
            None, None, "acme", ("acme", "mira"), {"text": "prefers short answers"}
        )
        plan = store.conn.execute(
            f"EXPLAIN QUERY PLAN SELECT f.value FROM facts f WHERE {where}", params
        ).fetchall()
        found = store.search(("acme", "mira"), filter={"text": "prefers short answers"})
    assert [item.key for item in found] == ["tone"]
    assert "SEARCH f USING INDEX facts_current_count" in " ".join(row[3] for row in plan), plan
