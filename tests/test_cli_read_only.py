"""Read-only opens (`SGAMStore(..., read_only=True)`, and the CLI's read commands through
it): the database's bytes, schema and expiries are what they were, whatever is asked.
A missing or empty file, an empty PostgreSQL schema and an older schema version are
refused with a typed error, and writes with ReadOnlyViewError."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import psycopg
import pytest

from sgam_store import (
    MemoryFact,
    ReadOnlyViewError,
    SchemaVersionError,
    SGAMStore,
    StoreUnavailableError,
)
from sgam_store.cli import main
from tests import pg
from tests.fixtures.make_fixture import FIXTURE

ENGINES = ("sqlite", "postgres")
TTL = {"default_ttl": 60.0, "refresh_on_read": True}


def digest(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def expiries(target: str) -> list[tuple]:
    """Every version's expiry, read behind the store's back."""
    statement = "SELECT row_id, expires_at FROM {}facts ORDER BY row_id"
    if target.startswith("postgresql://"):
        with psycopg.connect(target) as conn:
            return conn.execute(statement.format("sgam.")).fetchall()
    conn = sqlite3.connect(f"file:{target}?mode=ro", uri=True)
    try:
        return conn.execute(statement.format("")).fetchall()
    finally:
        conn.close()


def written(target: str) -> None:
    with SGAMStore.from_conn_string(target, ttl=TTL) as store:
        store.setup()
        store.put(("acme", "mira"), "city", {"value": "Lyon"})
        store.put(("acme", "mira"), "city", {"value": "Paris"})


def test_a_read_only_store_reads_and_changes_nothing(target: str) -> None:
    written(target)
    before = expiries(target)
    sqlite = not target.startswith("postgresql://")
    bytes_before = digest(target) if sqlite else None
    with SGAMStore.from_conn_string(target, ttl=TTL, read_only=True) as store:
        assert store.read_only
        assert store.get(("acme", "mira"), "city").value == {"value": "Paris"}
        assert [i.key for i in store.search(("acme",), query="Paris")] == ["city"]
        assert len(store.history("acme", "mira", "city")) == 2
        assert store.changes("2000-01-01T00:00:00Z")
        assert store.stats()["rows"]["current_facts"] == 1
        fact = MemoryFact(
            tenant_id="acme", subject="mira", attribute="city", value="Rome",
            valid_from="2026-01-01T00:00:00Z", source_episode_id="e9",
        )  # fmt: skip
        for write in (
            lambda: store.put(("acme", "mira"), "city", {"value": "Rome"}),
            lambda: store.delete(("acme", "mira"), "city"),
            lambda: store.replace_fact(fact),
            lambda: store.record_episode("acme", "said", source_kind="user_message"),
            lambda: store.purge("acme"),
            lambda: store.vacuum(),
        ):
            with pytest.raises(ReadOnlyViewError):
                write()
    assert expiries(target) == before  # refresh_on_read moved no expiry
    if sqlite:
        assert digest(target) == bytes_before


async def test_an_async_put_on_a_read_only_store_is_refused(db_path: str) -> None:
    written(db_path)
    with SGAMStore.from_conn_string(db_path, read_only=True) as store:
        with pytest.raises(ReadOnlyViewError):
            await store.aput(("acme", "mira"), "city", {"value": "Rome"})
        assert (await store.aget(("acme", "mira"), "city")).value == {"value": "Paris"}


def test_an_empty_file_is_refused_and_stays_empty(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(StoreUnavailableError, match="holds no sgam-store database"):
        SGAMStore(str(empty), read_only=True).setup()
    assert empty.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


def test_a_missing_file_or_a_directory_is_refused_and_nothing_created(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailableError, match="no database file"):
        SGAMStore(str(tmp_path / "typo.db"), read_only=True)
    with pytest.raises(StoreUnavailableError, match="is a directory"):
        SGAMStore(str(tmp_path), read_only=True)
    assert list(tmp_path.iterdir()) == []


def test_an_older_schema_is_refused_untouched_naming_the_upgrade(tmp_path: Path) -> None:
    old = tmp_path / "v1.db"
    shutil.copy(FIXTURE, old)
    before = digest(old)
    with pytest.raises(SchemaVersionError, match=r"older.*sgam migrate --db"):
        SGAMStore(str(old), read_only=True).setup()
    assert digest(old) == before


@pytest.mark.usefixtures("pg_server")
def test_a_postgres_schema_that_is_not_there_is_not_created() -> None:
    uri = pg.fresh_database()
    written(uri)
    with pytest.raises(StoreUnavailableError, match=r"schema 'nope'.*holding one: sgam"):
        SGAMStore(uri, schema="nope", read_only=True).setup()
    with psycopg.connect(uri) as conn:
        schemas = conn.execute(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'nope'"
        ).fetchone()
    assert schemas == (0,)


@pytest.mark.usefixtures("pg_server")
def test_an_older_postgres_schema_is_refused_untouched() -> None:
    uri = pg.fresh_database()
    written(uri)
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("UPDATE sgam.sgam_meta SET value = '1' WHERE key = 'schema_version'")
    with pytest.raises(SchemaVersionError, match="sgam migrate"):
        SGAMStore(uri, read_only=True).setup()
    with psycopg.connect(uri) as conn:
        found = conn.execute("SELECT value FROM sgam.sgam_meta WHERE key = 'schema_version'")
        assert found.fetchone() == ("1",)


# ---------------------------------------------------------------- the CLI's read commands

READS = (
    ["ledger"],
    ["get", "--tenant", "acme", "--subject", "mira", "--attribute", "city"],
    ["history", "--tenant", "acme", "--subject", "mira", "--attribute", "city"],
    ["timeline"],
    ["search", "Paris", "--tenant", "acme"],
    ["changes", "--since", "2000-01-01T00:00:00Z"],
    ["stats"],
    ["recall", "where", "--tenant", "acme"],
)


def sgam(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    return status, capsys.readouterr().err


@pytest.mark.parametrize("command", READS, ids=lambda c: c[0])
def test_read_commands_leave_the_file_as_it_was(tmp_path, capsys, command) -> None:
    """An older file is refused untouched (today's code migrated it), naming the upgrade;
    a current one is read, its bytes unchanged."""
    old = tmp_path / "v1.db"
    shutil.copy(FIXTURE, old)
    status, err = sgam(capsys, *command, "--db", str(old))
    assert (status, digest(old)) == (2, digest(FIXTURE))
    assert f"run `sgam migrate --db {old}`" in err
    db = str(tmp_path / "m.db")
    written(db)
    before = digest(db)
    assert sgam(capsys, *command, "--db", db, "--json")[0] == 0
    assert digest(db) == before


@pytest.mark.parametrize("command", READS, ids=lambda c: c[0])
def test_read_commands_refuse_an_empty_file_in_one_line(tmp_path, capsys, command) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    status, err = sgam(capsys, *command, "--db", str(empty))
    assert status == 2
    no_store = "it holds no sgam-store database, and a read-only open creates none"
    assert err == f"sgam: error: --db {empty}: {no_store}\n"
    assert empty.stat().st_size == 0


def test_sgam_migrate_upgrades_an_older_file_for_the_read_commands(tmp_path, capsys) -> None:
    old = tmp_path / "v1.db"
    shutil.copy(FIXTURE, old)
    assert sgam(capsys, "ledger", "--db", str(old))[0] == 2
    assert sgam(capsys, "migrate", "--db", str(old), "--json")[0] == 0
    assert sgam(capsys, "ledger", "--db", str(old), "--json")[0] == 0


def test_a_directory_is_named_as_such(tmp_path, capsys) -> None:
    status, err = sgam(capsys, "ledger", "--db", str(tmp_path))
    assert (status, err) == (
        2,
        f"sgam: error: --db {tmp_path}: a directory, not a database file (expected an "
        "existing database file or a PostgreSQL URI)\n",
    )


@pytest.mark.usefixtures("pg_server")
def test_a_postgres_schema_that_is_not_there_is_refused_not_created(capsys) -> None:
    uri = pg.fresh_database()
    written(uri)
    status, err = sgam(capsys, "ledger", "--db", uri, "--schema", "nope")
    assert status == 2
    assert err.startswith("sgam: error: --schema 'nope': it holds no sgam-store database")
    with psycopg.connect(uri) as conn:
        assert conn.execute(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'nope'"
        ).fetchone() == (0,)
