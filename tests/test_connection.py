"""The connection layer works on Pythons whose sqlite3 cannot load extensions."""

from __future__ import annotations

import sqlite3

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
