"""PostgreSQL connections for SGAM: a psycopg pool, the schema on the search path, and
timestamps read back in the ledger's stored text form.

The ledger compares and returns timestamps as fixed-width UTC text (`clock.fmt`). The
columns here are `timestamptz`, so the database can enforce interval rules with ranges;
a loader turns each value back into the same text the SQLite engine returns, so every
engine-neutral module sees identical rows.
"""

from __future__ import annotations

import re
from typing import Any

from psycopg import Connection, adapt, sql
from psycopg_pool import ConnectionPool

from sgam_store.core.errors import ConfigurationError

DEFAULT_SCHEMA = "sgam"
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# Text output of timestamptz with TimeZone = UTC: "2026-01-02 03:04:05.123456+00".
_PG_TIME = re.compile(r"^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?\+00$")


def check_schema_name(schema: str) -> str:
    """A schema name we can put in DDL unquoted-safe: lowercase identifier."""
    if not _SCHEMA_NAME.match(schema):
        raise ConfigurationError(
            f"PostgreSQL schema must be a lowercase identifier (a-z, 0-9, _): {schema!r}"
        )
    return schema


class StoredTimeLoader(adapt.Loader):
    """timestamptz -> the ledger's stored text (`clock.fmt`), without a datetime."""

    def load(self, data: Any) -> str:
        text = bytes(data).decode()
        m = _PG_TIME.match(text)
        if m is None:  # e.g. a year past 9999, which the clock never writes
            raise ValueError(f"unexpected timestamptz text: {text!r}")
        year, month, day, hour, minute, second, frac = m.groups()
        return f"{year}-{month}-{day}T{hour}:{minute}:{second}.{(frac or '').ljust(6, '0')}Z"


def configure(schema: str) -> Any:
    """The pool's per-connection set-up: UTC, our schema first, text timestamps."""

    def setup(conn: Connection) -> None:
        conn.adapters.register_loader("timestamptz", StoredTimeLoader)
        search_path = sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema))
        conn.execute(search_path)
        conn.execute("SET TIME ZONE 'UTC'")
        conn.commit()

    return setup


def open_pool(
    conninfo: str,
    *,
    schema: str = DEFAULT_SCHEMA,
    max_size: int = 8,
    prepare_threshold: int | None = 5,
) -> ConnectionPool:
    """A pool of autocommit connections; transactions are opened explicitly.

    `prepare_threshold=None` turns server-side prepared statements off (PgBouncer in
    transaction mode). Keepalives are on so a dead TCP peer is noticed.
    """
    kwargs = {
        "autocommit": True,
        "prepare_threshold": prepare_threshold,
        "keepalives": 1,
        "keepalives_idle": 30,
    }
    pool = ConnectionPool(
        conninfo,
        min_size=1,
        max_size=max_size,
        kwargs=kwargs,
        configure=configure(check_schema_name(schema)),
        check=ConnectionPool.check_connection,
        open=False,
    )
    pool.open(wait=True, timeout=30)
    return pool
