"""PostgreSQL connections for SGAM: a psycopg pool, the schema on the search path, and
timestamps read back in the ledger's stored text form.

Opening fails fast: one probe connection, bounded by a connect timeout, comes before the
pool, so an unreachable server or a refused login is one `StoreUnavailableError` naming
host and port (never the password) within seconds, not a pool retrying in the background
until its own timeout, logging each attempt.

The ledger compares and returns timestamps as fixed-width UTC text (`clock.fmt`). The
columns here are `timestamptz`, so the database can enforce interval rules with ranges;
a loader turns each value back into the same text the SQLite engine returns, so every
engine-neutral module sees identical rows.
"""

from __future__ import annotations

import os
import re
import select
import struct
from typing import Any

import numpy as np
import psycopg
from psycopg import Connection, adapt, conninfo, pq, sql
from psycopg_pool import ConnectionPool, PoolTimeout

from sgam_store.core.errors import ConfigurationError, StoreUnavailableError
from sgam_store.engines import MASK, mask_uri

DEFAULT_SCHEMA = "sgam"
# Seconds to wait for a server to answer. libpq's own default waits forever (psycopg:
# 130 s); `connect_timeout=` on the store, or in the connection string, overrides it.
DEFAULT_CONNECT_TIMEOUT = 5
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


class BinaryVector(bytes):
    """A query vector in pgvector's binary input form: dimensions and a reserved word
    (int16 each), then big-endian float32s. Sent with no type (OID 0), so the statement's
    `::vector` cast types the parameter and the server reads it with `vector_recv`:
    no float is printed by the client or parsed by the server."""

    @classmethod
    def of(cls, query_vec: bytes) -> BinaryVector:
        """From the store's float32 bytes (native order)."""
        floats = np.frombuffer(query_vec, dtype=np.float32)
        return cls(struct.pack(">HH", floats.size, 0) + floats.astype(">f4").tobytes())


class BinaryVectorDumper(adapt.Dumper):
    """Sends a `BinaryVector` as it is, in binary format, untyped."""

    format = pq.Format.BINARY

    def dump(self, obj: Any) -> bytes:
        return bytes(obj)


def configure(schema: str, read_only: bool = False) -> Any:
    """The pool's per-connection set-up: UTC, our schema first, text timestamps, binary
    query vectors; `read_only`: every transaction of the session is read-only, so the
    server refuses a write whatever path it comes by."""

    def setup(conn: Connection) -> None:
        conn.adapters.register_loader("timestamptz", StoredTimeLoader)
        conn.adapters.register_dumper(BinaryVector, BinaryVectorDumper)
        search_path = sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema))
        conn.execute(search_path)
        conn.execute("SET TIME ZONE 'UTC'")
        if read_only:
            conn.execute("SET default_transaction_read_only = on")
        conn.commit()

    return setup


def check_quietly(conn: Connection) -> None:
    """The pool's check at every checkout, without a round trip when nothing is wrong.

    An idle connection has nothing to read: a server that shut down or restarted, or
    closed the session, has sent its notice and end of stream, which makes the socket
    readable. Only then, or when libpq already knows the connection is bad, does the
    pool's own check (an empty query, 0.05 ms plus its Python) run, and a failure sends
    the pool to another connection. A peer that vanished without a word is noticed by
    the statement itself, as by the empty query (keepalives bound both)."""
    if not conn.closed and conn.pgconn.status == pq.ConnStatus.OK:
        readable, _, _ = select.select([conn.pgconn.socket], [], [], 0)
        if not readable:
            return
    ConnectionPool.check_connection(conn)


def _params(target: str) -> dict[str, Any]:
    """The connection string's parameters; a malformed one is a ConfigurationError that
    shows it without its password."""
    try:
        return conninfo.conninfo_to_dict(target)
    except psycopg.ProgrammingError as exc:
        raise ConfigurationError(
            f"not a PostgreSQL connection string: {mask_uri(target)} ({exc})"
        ) from None


def connect_timeout(params: dict[str, Any], explicit: float | None) -> int:
    """Seconds a connection attempt may take: `explicit`, else the string's
    `connect_timeout` (or PGCONNECT_TIMEOUT), else DEFAULT_CONNECT_TIMEOUT. libpq counts
    whole seconds and takes 2 as its least, so the value is rounded up, at least 2."""
    given = explicit if explicit is not None else params.get("connect_timeout")
    given = given if given is not None else os.environ.get("PGCONNECT_TIMEOUT")
    try:
        seconds = float(given) if given is not None else DEFAULT_CONNECT_TIMEOUT
    except ValueError:
        raise ConfigurationError(
            f"connect_timeout must be a number of seconds: {given!r}"
        ) from None
    if seconds <= 0:
        raise ConfigurationError(f"connect_timeout must be positive, got {given!r}")
    return max(2, -int(-seconds // 1))


def server_of(params: dict[str, Any]) -> str:
    """Where the store tried to connect, as a person reads it: host and port, the
    database and the user, never the password."""
    host = params.get("host") or params.get("hostaddr") or os.environ.get("PGHOST")
    port = params.get("port") or os.environ.get("PGPORT") or "5432"
    where = f"{host or 'the default socket'}:{port}"
    details = [f"{k} {params[k]}" for k in ("dbname", "user") if params.get(k)]
    return f"{where} ({', '.join(details)})" if details else where


def _reason(exc: Exception, params: dict[str, Any]) -> str:
    """libpq's one-line reason (the first failure it reports), without the password."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    line = next((x for x in lines if "failed: " in x), lines[0] if lines else repr(exc))
    reason = line.rsplit("failed: ", 1)[-1]
    password = params.get("password")
    return reason.replace(password, MASK) if password else reason


def unavailable(params: dict[str, Any], timeout: int, exc: Exception) -> StoreUnavailableError:
    return StoreUnavailableError(
        f"cannot connect to PostgreSQL at {server_of(params)} within {timeout} s: "
        f"{_reason(exc, params)}"
    )


def open_pool(
    target: str,
    *,
    schema: str = DEFAULT_SCHEMA,
    max_size: int = 8,
    prepare_threshold: int | None = 5,
    timeout: float | None = None,
    read_only: bool = False,
) -> ConnectionPool:
    """A pool of autocommit connections; transactions are opened explicitly.

    `prepare_threshold=None` turns server-side prepared statements off (PgBouncer in
    transaction mode). Keepalives are on so a dead TCP peer is noticed. `timeout`: the
    connect timeout in seconds (see `connect_timeout`); each of the pool's connections
    is bounded by it too. `read_only`: see `configure`.
    """
    schema = check_schema_name(schema)
    params = _params(target)
    seconds = connect_timeout(params, timeout)
    kwargs = {"connect_timeout": seconds, "keepalives": 1, "keepalives_idle": 30}
    try:  # the probe: its failure is the reason, and no pool thread has logged yet
        psycopg.connect(target, **kwargs).close()
    except psycopg.OperationalError as exc:
        raise unavailable(params, seconds, exc) from None
    pool = ConnectionPool(
        target,
        min_size=1,
        max_size=max_size,
        kwargs={**kwargs, "autocommit": True, "prepare_threshold": prepare_threshold},
        configure=configure(schema, read_only),
        check=check_quietly,
        open=False,
    )
    try:
        pool.open(wait=True, timeout=seconds + 1)
    except PoolTimeout as exc:  # the server went away between the probe and the pool
        pool.close()
        raise unavailable(params, seconds, exc) from None
    return pool
