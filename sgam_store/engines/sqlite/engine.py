"""The SQLite engine: one connection, its lock, write transactions with the busy retry,
schema set-up and read snapshots.

The write services, episodes, recall and backfill receive this object (never the store),
so the next engine is a second implementation of the same few methods.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from sgam_store.core import namespaces
from sgam_store.core.errors import StoreBusyError
from sgam_store.engines.sqlite import (
    backfill,
    candidates,
    connection,
    episodes,
    erasure,
    filters,
    indexing,
    migrations,
    reads,
    retention,
    stats,
    supersession,
    transfer,
    versions,
)
from sgam_store.engines.sqlite.vector_cache import VectorCache

T = TypeVar("T")
MAX_ATTEMPTS = 8


class SQLiteEngine:
    """A database file (or ':memory:', or a connection the caller opened) ready for SGAM."""

    # The statement sets the engine-neutral layers call, each a module of functions
    # that take a connection or cursor first; another engine supplies the same names.
    versions = versions  # fact versions: the ledger's lookups, writes and bitemporal reads
    reads = reads  # get, listing, candidate checks, keyword and vector rankings
    indexing = indexing  # keyword and vector rows of a transaction
    episodes = episodes
    candidates = candidates  # the memory manager's candidate tables
    supersession = supersession  # new keys awaiting review, and the decisions taken
    retention = retention  # which rows a retention policy or ended session reaches
    backfill = backfill  # re-embedding
    erasure = erasure
    stats = stats
    transfer = transfer  # whole-store export and import (sgam copy)
    filters = filters  # BaseStore filters, checked before any write and compiled to SQL

    def __init__(
        self, target: str | Any, *, dims: int | None = None, tenant_at: int | None = None
    ) -> None:
        """`dims`: the vector table's dimensions when the store has an index config;
        `tenant_at`: where namespaces name their tenant (None: as the database says)."""
        self.owns_connection = isinstance(target, str)
        self.conn = (
            connection.connect(target, check=migrations.check_owned)
            if isinstance(target, str)
            else target
        )
        # One connection serves every thread of the store; statements and transactions
        # take this lock (reentrant: a transaction body reads through the same methods).
        self.lock = threading.RLock()
        self.dims = dims
        self.requested_tenant_at = tenant_at
        self.layout = namespaces.Layout(tenant_at or 0)  # settled by setup()
        self.ready = False

    def setup(self) -> None:
        """Create or upgrade the schema (idempotent; safe across processes)."""
        with self.lock:
            connection.retry_busy(lambda: migrations.migrate(self.conn))
            tenant_at = connection.retry_busy(
                lambda: migrations.settle_tenant_at(self.conn, self.requested_tenant_at)
            )
            self.layout = namespaces.Layout(tenant_at)
            dims = self.dims
            if dims is not None:
                connection.retry_busy(lambda: migrations.ensure_vector_table(self.conn, dims))
            self.ready = True

    def ensure_ready(self) -> None:
        if not self.ready:
            self.setup()

    def transaction(
        self,
        body: Callable[[Any], T],
        *,
        committed: Callable[[T], None] | None = None,
        max_attempts: int = MAX_ATTEMPTS,
    ) -> T:
        """Run `body(cursor)` in `BEGIN IMMEDIATE`, retried whole on busy/locked.

        IMMEDIATE takes the write lock before the first read, so the interval rule never
        decides on a state another writer is about to change. `committed(result)` runs
        after COMMIT, still under the lock, so an in-process mirror applies commits in
        commit order.
        """
        self.ensure_ready()
        for attempt in range(max_attempts):
            try:
                with self.lock:
                    result = self._once(body)
                    if committed is not None:
                        committed(result)
                    return result
            except Exception as exc:
                if not connection.is_busy(exc):
                    raise
                if attempt + 1 < max_attempts:  # no pointless sleep before giving up
                    time.sleep(min(0.5, 0.01 * 2**attempt) * random.uniform(0.5, 1.5))
        raise StoreBusyError(f"database stayed locked after {max_attempts} attempts")

    def _once(self, body: Callable[[Any], T]) -> T:
        cur = self.conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            result = body(cur)
            cur.execute("COMMIT")
        except BaseException:
            # SQLite may already have rolled back (e.g. SQLITE_FULL); a second ROLLBACK
            # would raise "no transaction is active" and hide the real error.
            if self.conn.in_transaction:
                cur.execute("ROLLBACK")
            raise
        return result

    def reading(self) -> _Reading:
        """The connection, set up and locked, for one or more read statements."""
        return _Reading(self)

    @contextmanager
    def snapshot(self) -> Iterator[Any]:
        """One read transaction: every statement inside sees the same committed state.

        A hybrid search runs several statements; without this, a write committed by
        another connection between them could surface the superseded fact as well.
        Reentrant: inside an open transaction it adds nothing.
        """
        with self.lock:
            if self.conn.in_transaction:
                yield self.conn
                return
            self.conn.execute("BEGIN")
            try:
                yield self.conn
            finally:
                self.conn.execute("COMMIT")

    def vector_mirror(self, dims: int) -> VectorCache:
        """An in-process copy of the current vectors, which every current search scans:
        this connection sees every commit of this process, so the copy stays exact."""
        return VectorCache(dims)

    def close(self) -> None:
        if self.owns_connection:
            self.conn.close()


class _Reading:
    """`SQLiteEngine.reading()`: a plain class, not a generator, because every get enters
    it and a generator-based context manager costs more than the rest of a get's Python."""

    __slots__ = ("engine",)

    def __init__(self, engine: SQLiteEngine) -> None:
        self.engine = engine

    def __enter__(self) -> Any:
        self.engine.ensure_ready()
        self.engine.lock.acquire()
        return self.engine.conn

    def __exit__(self, *exc: object) -> None:
        self.engine.lock.release()
