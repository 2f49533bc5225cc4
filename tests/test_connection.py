"""The connection layer works on Pythons whose sqlite3 cannot load extensions."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from sgam_store import ConfigurationError, SGAMStore
from sgam_store.engines.sqlite import connection


def test_driver_loads_sqlite_vec_and_fts5(db_path: str) -> None:
    conn = connection.connect(db_path)
    assert conn.execute("SELECT vec_version()").fetchone()[0].startswith("v")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == connection.BUSY_TIMEOUT_MS
    conn.close()


def test_fallback_when_stdlib_cannot_load_extensions() -> None:
    chosen = connection.driver()
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        assert chosen is not sqlite3  # this machine's default python3: sqlean-py takes over
    assert connection._try_driver("no_such_driver_module") is None


def test_the_connect_timeout_is_the_stores_else_the_uris_else_a_few_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sgam_store.engines.postgres import connection as pg_connection

    timeout = pg_connection.connect_timeout
    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    assert timeout({}, None) == pg_connection.DEFAULT_CONNECT_TIMEOUT
    assert timeout({"connect_timeout": "3"}, None) == 3
    assert timeout({"connect_timeout": "3"}, 7) == 7
    assert (timeout({}, 0.5), timeout({}, 2.2)) == (2, 3)  # whole seconds, libpq's least 2
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "4")
    assert timeout({}, None) == 4
    for params, explicit in (({}, -1), ({"connect_timeout": "soon"}, None)):
        with pytest.raises(ConfigurationError, match="connect_timeout"):
            timeout(params, explicit)


def test_a_malformed_uri_is_a_configuration_error_without_its_password() -> None:
    with pytest.raises(ConfigurationError, match="bogus") as raised:
        SGAMStore("postgresql://u:Zq7sekret@h/db?bogus=1")
    assert "Zq7sekret" not in str(raised.value) and "u:***@h/db" in str(raised.value)


def test_none_bytes_and_bool_bind_as_they_are_without_the_adaptation_search(
    db_path: str,
) -> None:
    """The driver asks every None, bytes and bool parameter to adapt (two attribute
    misses, each an AttributeError raised and cleared) unless an adapter is registered
    for its exact type: the driver holds one for each, and the stored values are the ones
    the search found (NULL, a blob, an integer)."""
    module = connection.driver()
    for kind in (type(None), bytes, bool):
        assert (kind, module.PrepareProtocol) in module.adapters
    conn = connection.connect(db_path)
    conn.execute("CREATE TABLE t (a, b, c, d)")
    conn.execute("INSERT INTO t VALUES (?, ?, ?, ?)", (None, b"\x00\x01", True, False))
    assert conn.execute("SELECT typeof(a), typeof(b), typeof(c), c, d, b FROM t").fetchall() == [
        ("null", "blob", "integer", 1, 0, b"\x00\x01")
    ]
    conn.close()


def test_an_adapter_registered_before_the_store_opens_is_kept(tmp_path: Path) -> None:
    """A process that registered its own adapter for None keeps it: the store registers
    only where the driver has none. In a fresh interpreter, since adapters belong to the
    driver module, shared by the whole process."""
    script = f"""
import sqlean
def mine(value):
    return value
sqlean.register_adapter(type(None), mine)
from sgam_store import SGAMStore
with SGAMStore.from_conn_string({str(tmp_path / "s.db")!r}, index=None) as store:
    store.setup()
    store.put(("acme", "mira"), "k", {{"v": 1}})
    assert store.get(("acme", "mira"), "k").value == {{"v": 1}}
print(sqlean.adapters[(type(None), sqlean.PrepareProtocol)] is mine)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
