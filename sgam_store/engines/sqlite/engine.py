"""The SQLite engine: a writer connection and its lock, a pool of reader connections,
write transactions with the busy retry, schema set-up and read snapshots.

The write services, episodes, recall and backfill receive this object (never the store),
so the next engine is a second implementation of the same few methods.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

from sgam_store.core import namespaces
from sgam_store.core.errors import ConfigurationError, StoreBusyError, StoreUnavailableError
from sgam_store.engines.common.engine import MAX_ATTEMPTS, StatementSets, refuse_writes
from sgam_store.engines.sqlite import connection, migrations
from sgam_store.engines.sqlite.vector_cache import VectorCache, data_version, top_rowid

T = TypeVar("T")


class _ThreadState:
    """What one thread holds of the engine: the reader lent to it and how deeply its reads
    nest, and whether it is inside a write transaction (its reads then use the writer)."""

    __slots__ = ("depth", "reader", "writing")

    def __init__(self) -> None:
        self.reader: Any = None
        self.depth = 0
        self.writing = 0


class _Threads(threading.local):
    """Each thread's `_ThreadState`: one thread-local lookup per read, then plain slots."""

    def __init__(self) -> None:
        self.state = _ThreadState()


class SQLiteEngine(StatementSets, package=__package__):
    """A database file (or ':memory:', or a connection the caller opened) ready for SGAM."""

    # A small scope's vectors are in process (the mirror, or a local file): centering a
    # search costs a few array operations, so it is on unless the config says otherwise.
    centers_by_default = True

    def __init__(
        self,
        target: str | Any,
        *,
        dims: int | None = None,
        tenant_at: int | None = None,
        read_only: bool = False,
    ) -> None:
        """`dims`: the vector table's dimensions when the store has an index config;
        `tenant_at`: where namespaces name their tenant (None: as the database says);
        `read_only`: open an existing store's file read-only (see `open_read_only`)."""
        self.owns_connection = isinstance(target, str)
        self.read_only = read_only
        self.conn = (
            open_read_only(target)
            if read_only
            else connection.connect(target, check=migrations.check_owned)
            if isinstance(target, str)
            else target
        )
        # The writer: write transactions and set-up take this lock (reentrant: a
        # transaction body reads through the same methods, on this connection).
        self.lock = threading.RLock()
        # Reads of a file go to a pool of reader connections, so threads read side by side
        # (WAL). ':memory:' exists on its connection alone, and a caller's connection is
        # theirs to share: both keep every statement on the one connection, under the lock.
        self.pool = (
            connection.ReaderPool(target, self.conn, read_only=read_only)
            if isinstance(target, str) and not connection.in_memory(target)
            else None
        )
        self.mirror: _SharedMirror | None = None  # set by vector_mirror() on a pool
        self._threads = _Threads()
        self.dims = dims
        self.requested_tenant_at = tenant_at
        self.layout = namespaces.Layout(tenant_at or 0)  # settled by setup()
        self.ready = False

    def setup(self) -> None:
        """Create or upgrade the schema (idempotent; safe across processes). Read-only:
        check it instead, recording nothing (`open_read_only` checked the version)."""
        if self.read_only:
            with self._writer():
                tenant_at = migrations.read_settings(self.conn, self.requested_tenant_at, self.dims)
                self.layout = namespaces.Layout(tenant_at)
                self.ready = True
            return
        with self._writer():
            connection.retry_busy(lambda: migrations.migrate(self.conn))
            tenant_at = connection.retry_busy(
                lambda: migrations.settle_tenant_at(self.conn, self.requested_tenant_at)
            )
            self.layout = namespaces.Layout(tenant_at)
            dims = self.dims
            if dims is not None:
                connection.retry_busy(lambda: migrations.ensure_vector_table(self.conn, dims))
            self.ready = True

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
        commit order; with a pool, COMMIT and `committed` run while no reader reads
        (`quiet`), so a read sees the mirror and the rows of the same commits.
        """
        self.ensure_ready()
        refuse_writes(self)
        for attempt in range(max_attempts):
            try:
                with self._writer():
                    return self._once(body, committed)
            except Exception as exc:
                if not connection.is_busy(exc):
                    raise
                if attempt + 1 < max_attempts:  # no pointless sleep before giving up
                    time.sleep(min(0.5, 0.01 * 2**attempt) * random.uniform(0.5, 1.5))
        raise StoreBusyError(f"database stayed locked after {max_attempts} attempts")

    def _once(self, body: Callable[[Any], T], committed: Callable[[T], None] | None) -> T:
        cur = self.conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            result = body(cur)
            with self.quiet():
                cur.execute("COMMIT")
                if committed is not None:
                    committed(result)
        except BaseException:
            # SQLite may already have rolled back (e.g. SQLITE_FULL); a second ROLLBACK
            # would raise "no transaction is active" and hide the real error.
            if self.conn.in_transaction:
                cur.execute("ROLLBACK")
            raise
        return result

    @contextmanager
    def _writer(self) -> Iterator[None]:
        """Hold the writer's lock. A thread that is reading stops counting as a reader
        while it waits (the lock's holder may be waiting in `quiet()` for it), and counts
        again before the lock is released, so no commit of ours lands in between."""
        state = self._threads.state
        pool = self.pool if state.depth and not state.writing else None
        if pool is not None:
            pool.pause()
        with self.lock:
            state.writing += 1
            try:
                yield
            finally:
                state.writing -= 1
                if pool is not None:
                    pool.resume()  # nobody drains: that takes this lock

    def quiet(self) -> AbstractContextManager[None]:
        """While held (with the writer's lock), no reader reads: the vector mirror may
        change. Nothing to wait for without a pool or without a mirror."""
        if self.pool is None or self.mirror is None:
            return nullcontext()
        return self.pool.drained()

    def reading(self) -> _Reading:
        """A connection, set up, for one or more read statements: a reader lent from the
        pool, or the writer (locked) inside a write transaction or without a pool."""
        return _Reading(self)

    @contextmanager
    def snapshot(self) -> Iterator[Any]:
        """One read transaction: every statement inside sees the same committed state.

        A hybrid search runs several statements; without this, a write committed by
        another connection between them could surface the superseded fact as well.
        Reentrant: inside an open transaction it adds nothing. On a reader, the vector
        mirror is made exact for this snapshot as it begins, and stays so: nothing in this
        process commits until the snapshot ends (see `quiet`).
        """
        with self.reading() as conn:
            if conn.in_transaction:
                yield conn
                return
            conn.execute("BEGIN")
            try:
                if self.mirror is not None and conn is not self.conn:
                    self.mirror.settle(conn)
                yield conn
            finally:
                conn.execute("COMMIT")

    def maintenance(self) -> _Reading:
        """A connection for VACUUM: a reading one (SQLite has no row security to step
        outside of)."""
        refuse_writes(self)
        return self.reading()

    def tenant_scope(self, tenant: str | None) -> AbstractContextManager[None]:
        """Nothing to confine: SQLite has no row security, the statements' tenant
        predicates are the isolation (see the PostgreSQL engine's)."""
        return nullcontext()

    def vector_mirror(self, dims: int) -> VectorCache:
        """An in-process copy of the current vectors, which every current search scans.
        Without a pool, the one connection sees every commit of this process, so the copy
        stays exact; with one, `_SharedMirror` keeps it exact for every reader."""
        if self.pool is None:
            return VectorCache(dims)
        self.mirror = _SharedMirror(self, dims)
        return self.mirror

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        if self.owns_connection:
            self.conn.close()


def open_read_only(target: Any) -> Any:
    """The writer connection of a read-only engine: SQLite's `mode=ro`, which never
    creates the file, on a file that holds sgam-store's schema at its latest version
    (`migrations.check_readable`); anything else is refused with the file unchanged."""
    if not isinstance(target, str) or connection.in_memory(target):
        raise ConfigurationError("read_only=True opens a database file by its path")
    path = Path(target)
    if path.is_dir():
        raise StoreUnavailableError(f"{target} is a directory, not a database file")
    if not path.is_file():
        raise StoreUnavailableError(f"no database file at {target}; a read-only open creates none")
    try:
        return connection.connect(target, check=migrations.check_readable, read_only=True)
    except StoreUnavailableError as exc:
        raise StoreUnavailableError(f"{target}: {exc}") from None
    except connection.driver().OperationalError as exc:
        if "unable to open" not in str(exc):
            raise
        raise StoreUnavailableError(
            f"{target}: SQLite cannot read it here: a WAL-mode file is read through the "
            f"{path.name}-shm (and -wal) files beside it, which {path.parent} does not let "
            "this process create; copy the file into a directory you can write"
        ) from None


class _Reading:
    """`SQLiteEngine.reading()`: a plain class, not a generator, because every get enters
    it and a generator-based context manager costs more than the rest of a get's Python.
    A thread's nested reads share the reader lent to its outermost one."""

    __slots__ = ("engine", "pooled")

    def __init__(self, engine: SQLiteEngine) -> None:
        self.engine = engine

    def __enter__(self) -> Any:
        engine = self.engine
        if not engine.ready:
            engine.setup()
        state, pool = engine._threads.state, engine.pool
        self.pooled = pool is not None and not state.writing
        if not self.pooled:
            engine.lock.acquire()
            return engine.conn
        if state.depth == 0:
            state.reader = pool.lend()  # type: ignore[union-attr]
        state.depth += 1
        return state.reader

    def __exit__(self, *exc: object) -> None:
        engine = self.engine
        if not self.pooled:
            engine.lock.release()
            return
        state = engine._threads.state
        state.depth -= 1
        if state.depth == 0:
            reader, state.reader = state.reader, None
            engine.pool.give_back(reader)  # type: ignore[union-attr]


class _SharedMirror(VectorCache):
    """The vector mirror of an engine whose reads use a pool of connections.

    `PRAGMA data_version` is per connection: it changes when *another* connection
    committed. A reader's therefore changes on every commit of our own writer, whose
    changes `apply` already received; only the writer's tells another process's commit
    from ours. So a reader's version only says "nothing at all was committed since this
    reader last saw the mirror exact" (the common case, checked without any lock); when
    it moved, `settle` asks the writer's, under the writer's lock. The mirror changes only
    while no reader reads (`SQLiteEngine.quiet`): on our commits, and on a rebuild.
    """

    def __init__(self, engine: SQLiteEngine, dims: int) -> None:
        super().__init__(dims)
        self.engine = engine
        # reader connection -> its data_version when the mirror was last exact for it
        self.exact_for: dict[Any, int] = {}

    def ensure(self, conn: Any) -> None:
        """Exact for the state `conn` reads (the search's call, inside a read)."""
        engine = self.engine
        if conn is engine.conn:  # a read inside a write transaction: the writer's own view
            with engine.quiet():
                super().ensure(conn)
        elif not conn.in_transaction:  # a snapshot was settled when it began
            self.settle(conn)

    def settle(self, conn: Any) -> None:
        """Make the mirror exact for what reader `conn` reads: its open snapshot, or (none
        open) what it reads from now on."""
        if self.blocks is not None and self.exact_for.get(conn) == data_version(conn):
            return
        engine, snapshot = self.engine, conn.in_transaction
        if snapshot:  # hold no read transaction while waiting: the writer may checkpoint
            conn.execute("COMMIT")
        with engine._writer():  # no commit of ours from here on, and every one applied
            writer_before = data_version(engine.conn)
            if snapshot:  # begin again, now that no commit of ours can land in between
                conn.execute("BEGIN")
            version = data_version(conn)  # in a snapshot, this statement starts it
            writer_after = data_version(engine.conn)
            unreported = top_rowid(conn) > self.max_rowid  # see VectorCache's doc
            # Unchanged writer versions around `version`: no other connection committed
            # since the mirror was last exact, so it is exact for `conn` too.
            if (
                self.blocks is None
                or not writer_before == writer_after == self.data_version
                or unreported
            ):
                with engine.quiet():
                    self.invalidate()
                    super().ensure(conn)  # built from what `conn` reads
                # Written after the build: from here a change of the writer's version means
                # another connection committed (perhaps during the build: then once more).
                self.data_version = writer_before
            self.exact_for[conn] = version
