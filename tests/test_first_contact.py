"""A newcomer's first hour with PostgreSQL: a bad URI fails fast with one typed error, a
password is never shown, a second store goes into its own schema, and the docs' examples
run on a database that already holds data."""

from __future__ import annotations

import logging
import os
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sgam_store import SGAMError, SGAMStore, StoreUnavailableError, cli
from sgam_store.engines import mask_uri
from tests import pg
from tests.test_docs import README, ROOT, blocks

PASSWORD = "Zq7sekret"  # one word: a wrapped table title cannot split it at a hyphen
REFUSED = f"postgresql://postgres:{PASSWORD}@localhost:1/x"


def with_password(uri: str) -> str:
    """The test server's URI with a password in it (the server trusts local logins, so
    it accepts any)."""
    assert uri.startswith("postgresql://postgres:@"), uri
    return uri.replace("postgres:@", f"postgres:{PASSWORD}@", 1)


def sgam(*argv: str) -> int | str | None:
    """`sgam ARGV` in-process; argparse's exits become statuses."""
    try:
        return cli.main(list(argv))
    except SystemExit as exc:
        return exc.code


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts TCP connections and never answers: a server that hangs."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


# ---------------------------------------------------------------- failing fast


def test_an_unreachable_server_is_one_typed_error_at_once(caplog) -> None:
    caplog.set_level(logging.DEBUG)
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError) as raised:
        SGAMStore(REFUSED)
    assert time.monotonic() - started < 10
    assert isinstance(raised.value, SGAMError) and isinstance(raised.value, ConnectionError)
    message = str(raised.value)
    assert "localhost:1" in message and "refused" in message.lower()
    assert PASSWORD not in message
    assert not [r for r in caplog.records if r.name.startswith("psycopg")]  # no pool retries


def test_the_connect_timeout_is_honoured(silent_server: int) -> None:
    uri = f"postgresql://postgres:{PASSWORD}@127.0.0.1:{silent_server}/x"
    for options, target, bound in (
        ({"connect_timeout": 2}, uri, (1.5, 4.5)),  # the store's option
        ({}, uri + "?connect_timeout=3", (2.5, 5.5)),  # libpq's, in the URI
        ({}, uri, (1.0, 10.0)),  # the default: a few seconds
    ):
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError, match="timeout") as raised:
            SGAMStore(target, **options)
        took = time.monotonic() - started
        assert bound[0] < took < bound[1], (options, target, took)
        assert f"127.0.0.1:{silent_server}" in str(raised.value)
        assert PASSWORD not in str(raised.value)


def test_the_cli_says_one_line_and_exits_2(capsys) -> None:
    started = time.monotonic()
    assert sgam("stats", "--db", "postgresql://postgres@localhost:1/x") == 2
    assert time.monotonic() - started < 10
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("sgam: error: cannot connect to PostgreSQL")


# ---------------------------------------------------------------- passwords


@pytest.mark.parametrize(
    ("target", "shown"),
    [
        ("postgresql://u:pw@host:5432/db", "postgresql://u:***@host:5432/db"),
        ("postgres://u:p@ss@host/db?sslmode=require", "postgres://u:***@host/db?sslmode=require"),
        ("postgresql://host/db?user=u&password=pw", "postgresql://host/db?user=u&password=***"),
        ("host=h dbname=db password='p w' user=u", "host=h dbname=db password=*** user=u"),
        ("postgresql://u@host/db", "postgresql://u@host/db"),
        ("memory.db", "memory.db"),
    ],
)
def test_mask_uri(target: str, shown: str) -> None:
    assert mask_uri(target) == shown


def test_repr_masks_the_password(pg_server: str) -> None:
    with SGAMStore.from_conn_string(with_password(pg.fresh_database())) as store:
        shown = repr(store)
    assert PASSWORD not in shown and "postgres:***@" in shown and "schema='sgam'" in shown
    assert repr(SGAMStore(":memory:")) == "SGAMStore(':memory:')"


def commands(uri: str, tmp: Path) -> list[list[str]]:
    """Every `sgam` command that takes a database, on `uri` (its demo facts first)."""
    key = ["--tenant", "acme", "--subject", "mira", "--attribute", "passport_deadline"]
    jsonl = tmp / "items.jsonl"
    jsonl.write_text('{"namespace": ["acme", "lin"], "key": "k", "value": {"v": 1}}\n')
    copied = str(tmp / "copied.db")
    return [
        ["demo", "--db", uri],
        ["replay", "--db", uri, "--schema", "replay", "--baseline", "keyword"],
        ["ledger", "--db", uri],
        ["history", "--db", uri, *key],
        ["timeline", "--db", uri],
        ["get", "--db", uri, *key],
        ["search", "passport", "--db", uri, "--tenant", "acme"],
        ["recall", "passport deadline", "--db", uri, "--tenant", "acme"],
        ["retention", "--db", uri],
        ["purge", "--db", uri, "--tenant", "globex", "--whole-tenant"],
        ["stats", "--db", uri],
        ["vacuum", "--db", uri],
        ["backfill", "--db", uri],
        ["reindex", "--db", uri, "--language", "simple"],
        ["import", "--from", str(jsonl), "--db", uri, "--db-schema", "imported"],
        ["copy", "--from", uri, "--to", copied],
        ["copy", "--from", copied, "--to", uri, "--schema", "copied"],
        ["ledger", "--db", uri, "--json"],
        ["changes", "--db", uri, "--since", "2000-01-01T00:00:00Z"],
        ["changes", "--db", uri, "--schema", "copied", "--since", "2000-01-01T00:00:00Z"],
        ["stats", "--db", REFUSED],  # and the error line of one that fails
    ]


def test_no_command_shows_the_password(pg_server: str, tmp_path: Path, capsys, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    uri = with_password(pg.fresh_database())
    shown = []
    for argv in commands(uri, tmp_path):
        status = sgam(*argv)
        out, err = capsys.readouterr()
        assert status == (2 if REFUSED in argv else 0), (argv, err)
        shown.append(out + err)
    text = "".join(shown) + "".join(r.getMessage() for r in caplog.records)
    assert PASSWORD not in re.sub(r"[\s│┃|]", "", text)  # even where a title wrapped
    assert "postgres:***@" in shown[2]  # the ledger's title names the database, masked


# ---------------------------------------------------------------- a schema of one's own


def test_copy_into_a_new_schema_of_a_server_that_holds_a_store(
    pg_server: str, tmp_path: Path, capsys
) -> None:
    uri = pg.fresh_database()
    with SGAMStore.from_conn_string(uri) as store:  # someone's store is there already
        store.put(("globex",), "k", {"v": 1})
    source = str(tmp_path / "memory.db")
    with SGAMStore.from_conn_string(source) as store:
        store.put(("acme", "mira"), "deadline", {"value": "2026-07-15"})
        store.put(("acme", "mira"), "deadline", {"value": "2026-06-30"})
    assert sgam("copy", "--from", source, "--to", uri) == 2
    assert "not empty" in capsys.readouterr().err
    assert sgam("copy", "--from", source, "--to", uri, "--schema", "mine") == 0
    with SGAMStore.from_conn_string(uri, schema="mine") as store:
        assert [f.value for f in store.history("acme", "mira", "deadline")] == [
            {"value": "2026-07-15"},
            {"value": "2026-06-30"},
        ]
    with SGAMStore.from_conn_string(uri) as store:  # the other store is untouched
        assert store.history("acme", "mira", "deadline") == []
        assert store.get(("globex",), "k").value == {"v": 1}
    capsys.readouterr()
    assert sgam("ledger", "--db", uri, "--schema", "mine", "--json") == 0
    assert '"2026-06-30"' in capsys.readouterr().out
    assert sgam("stats", "--db", source, "--schema", "mine") == 2  # not on SQLite
    assert "PostgreSQL" in capsys.readouterr().err


# ---------------------------------------------------------------- the docs, on used databases


def test_the_postgres_example_runs_after_the_quick_start(pg_server: str, monkeypatch) -> None:
    """The issue's sequence: README's quick start pointed at a PostgreSQL database, then
    docs/postgres.md's example on the same database, twice."""
    monkeypatch.setenv("SGAM_PG_URI", pg.fresh_database())
    quick = blocks(README, "python")[0].replace('":memory:"', 'os.environ["SGAM_PG_URI"]')
    example = next(c for c in blocks(ROOT / "docs" / "postgres.md", "python") if "SGAM_PG" in c)
    for code in (quick, example, example):
        exec(compile(code, "example", "exec"), {"os": os, "__name__": "docs_example"})
