"""Open SQLite connections that can load sqlite-vec, on any Python build.

Many CPython builds (pyenv, some macOS and distro builds) compile `sqlite3` without
`enable_load_extension`; LangGraph's SqliteStore fails there with AttributeError.
We try the standard library first and fall back to sqlean-py, a packaged SQLite
with extension loading and FTS5, declared as a dependency.
"""

from __future__ import annotations

import functools
import importlib
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import sqlite_vec

from sgam_store.core.errors import ExtensionLoadError, StoreBusyError

# Driver modules in order of preference; each must offer a DB-API `connect`.
DRIVERS = ("sqlite3", "sqlean", "pysqlite3.dbapi2")
BUSY_TIMEOUT_MS = 5_000
# Reads of one store at once (a reader beyond them waits for a connection): one per core.
# More only add threads contending for the GIL: 4 threads of a 20k-fact tenant vector
# search ran 0.70x one thread with 8 readers and 0.78x with 2, on 2 cores, while the
# SQLite-heavy searches gained as much with 2 (benchmarks/bench_parallel_reads.py).
READERS = max(2, os.cpu_count() or 2)
T = TypeVar("T")


def _try_driver(name: str) -> ModuleType | None:
    """Return the driver module if it can load extensions and has FTS5, else None."""
    try:
        module = sqlite3 if name == "sqlite3" else importlib.import_module(name)
    except ImportError:
        return None
    if not hasattr(module.Connection, "enable_load_extension"):
        return None
    try:
        probe = module.connect(":memory:")
        try:
            _load_vec(probe)
            probe.execute("CREATE VIRTUAL TABLE temp.fts_probe USING fts5(t)")
        finally:
            probe.close()
    except Exception:
        return None
    return module


def _load_vec(conn: Any) -> None:
    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)


_DRIVER: ModuleType | None = None

# Parameters the driver binds as they are, but only after asking them to adapt: it
# skips the question for exact int, float and str alone. For None, bytes and bool it
# looks up an adapter, then tries `PrepareProtocol.__adapt__` and the value's
# `__conform__`, and each miss raises and clears an AttributeError with its message
# formatted. A put binds dozens of NULLs (an open fact's end, no expiry, no decision):
# in a batched put, 18% of all instructions went to that search (callgrind). An adapter
# registered for the exact type is found first and binds the same value.
_AS_IS = (type(None), bytes, bool)


def _bind_as_is(module: ModuleType) -> None:
    """Register an identity adapter for each of _AS_IS the driver has none for (one a
    user registered is left alone): the bound values do not change, only the search."""
    for kind in _AS_IS:
        if (kind, module.PrepareProtocol) not in module.adapters:
            module.register_adapter(kind, _as_is)


def _as_is(value: object) -> object:
    return value


def driver() -> ModuleType:
    """The first SQLite driver on this machine that loads sqlite-vec (cached)."""
    global _DRIVER
    if _DRIVER is None:
        for name in DRIVERS:
            module = _try_driver(name)
            if module is not None:
                _bind_as_is(module)
                _DRIVER = module
                break
        else:
            raise ExtensionLoadError(
                "no SQLite driver here can load sqlite-vec with FTS5: this Python's sqlite3 lacks "
                "enable_load_extension and sqlean-py is not importable; `pip install sqlean.py`"
            )
    return _DRIVER


MMAP_BYTES = 256 * 1024 * 1024


def connect(
    path: str,
    *,
    timeout_ms: int = BUSY_TIMEOUT_MS,
    check: Callable[[Any], None] | None = None,
    read_only: bool = False,
) -> Any:
    """Open `path` with WAL, a busy timeout, foreign keys on and sqlite-vec loaded.

    `isolation_level=None` leaves transactions to us: the ledger opens its own
    `BEGIN IMMEDIATE` so the write lock is taken before the first read. `check` runs
    before the switch to WAL, the first change to the file, and may refuse it.
    `read_only`: SQLite's `mode=ro`, so the file cannot be created or written through
    this connection, and the journal mode is left as the file has it.
    """
    module = driver()
    conn = module.connect(
        read_only_uri(path) if read_only else path,
        isolation_level=None,
        check_same_thread=False,
        factory=_connection_class(module),
        uri=read_only,
    )
    _load_vec(conn)
    conn.execute(f"PRAGMA busy_timeout = {int(timeout_ms)}")
    if check is not None:
        try:
            check(conn)
        except BaseException:
            conn.close()
            raise
    conn.execute("PRAGMA foreign_keys = ON")
    if not in_memory(path) and not read_only:
        retry_busy(lambda: conn.execute("PRAGMA journal_mode = WAL"))
        # WAL + NORMAL stays durable across application crashes (only an OS crash can lose
        # the last transactions), and avoids an fsync per commit.
        conn.execute("PRAGMA synchronous = NORMAL")
        # Reads map the file instead of copying pages through read(): search checks its
        # candidates one B-tree seek each, at random places (measured at 100k facts: 180
        # candidates 0.57 -> 0.33 ms). Pages stay in the OS cache, shared by connections.
        conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    return conn


def read_only_uri(path: str) -> str:
    """`path` as a URI that SQLite opens read-only and never creates (`mode=ro`); the
    path is percent-encoded, so a '?' or '#' in a file name stays part of the name.

    A file that nothing can change (`unchangeable`) is also `immutable=1`: SQLite reads a
    WAL-mode file through its -shm index, which it creates beside the file, and on a
    read-only mount it cannot, so the open failed; immutable reads the file alone."""
    file = Path(path).resolve()
    return file.as_uri() + ("?mode=ro&immutable=1" if unchangeable(file) else "?mode=ro")


def unchangeable(file: Path) -> bool:
    """The file is on a read-only file system and no write-ahead log beside it holds
    pages the file lacks (immutable would skip them: a log there needs its -shm too)."""
    statvfs = getattr(os, "statvfs", None)  # POSIX only
    if statvfs is None:
        return False
    try:
        read_only_mount = bool(statvfs(file.parent).f_flag & os.ST_RDONLY)
        wal = Path(f"{file}-wal")
        return read_only_mount and (not wal.exists() or wal.stat().st_size == 0)
    except OSError:
        return False


def in_memory(path: str) -> bool:
    """True for an in-memory database: private to its connection, so it cannot be pooled."""
    return path == ":memory:" or path.startswith("file::memory:") or "mode=memory" in path


@functools.cache
def _connection_class(module: ModuleType) -> type:
    """The driver's connection class, with a trace callback that follows a store's reads.

    A store reads through a pool of connections (`ReaderPool`) besides its writer; tracing
    the connection it shows (`store.conn.set_trace_callback`) must still show every
    statement of the store, so the writer passes its callback on to the pool's readers.
    """

    class Connection(module.Connection):  # type: ignore[name-defined,misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.followers: list[Any] = []  # a pool's readers
            self.trace: Callable[[str], object] | None = None

        def set_trace_callback(self, callback: Callable[[str], object] | None) -> None:
            super().set_trace_callback(callback)
            self.trace = callback
            for follower in self.followers:
                follower.set_trace_callback(callback)

    return Connection


class ReaderPool:
    """Read connections to one database file, each lent to one thread for one read.

    WAL lets readers run beside each other and beside the one writer: a read sees the
    commits finished when its read transaction starts, and a connection lent for one read
    holds no transaction once it is given back (so it never serves a stale snapshot).
    Lent per read rather than kept per thread, so threads that come and go (asyncio's
    executor, a server's workers) leave no connection behind; at most `size` are open.

    The pool also counts the threads reading through it, so that `drained()` can give the
    writer a moment when nobody reads: the engine commits and updates its vector mirror
    there, and a read then sees the mirror and the rows of one and the same commit.
    """

    def __init__(
        self, path: str, writer: Any, size: int = READERS, *, read_only: bool = False
    ) -> None:
        self.path = path
        self.read_only = read_only  # its readers open the file as the writer did
        self.writer = writer  # whose trace callback the readers follow
        self.size = size
        self._idle: list[Any] = []
        self._open = 0  # connections opened and not closed
        self._reading = 0  # threads counted as reading (lent a connection, not paused)
        self._draining = False
        self._closed = False
        # Every read passes through here twice: the plain lock on the way, the condition
        # (a Python-level object, slower) only when someone has to wait.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._waiting = 0

    def lend(self) -> Any:
        """A connection for one read, counted as reading; waits while the writer drains."""
        with self._lock:
            if self._idle and not self._draining:  # the common case, kept short
                self._reading += 1
                return self._idle.pop()
            conn = self._lend_waiting()
        return conn if conn is not None else self._open_one()

    def _lend_waiting(self) -> Any | None:
        """`lend` (lock held) when it must wait: an idle connection, or None when a new
        one is to be opened (its place is taken)."""
        self._wait(lambda: self._draining or (not self._idle and self._open >= self.size))
        if self._closed:  # what the closed writer says, too
            raise driver().ProgrammingError("Cannot operate on a closed database.")
        self._reading += 1
        if self._idle:
            return self._idle.pop()
        self._open += 1
        return None

    def _open_one(self) -> Any:
        """Open the connection `_lend_waiting` made room for (not under the lock: it takes
        about a millisecond)."""
        try:
            conn = connect(self.path, read_only=self.read_only)
        except BaseException:
            with self._lock:
                self._reading -= 1
                self._open -= 1
                self._wake()
            raise
        self.writer.followers.append(conn)
        if self.writer.trace is not None:
            conn.set_trace_callback(self.writer.trace)
        return conn

    def _wait(self, blocked: Callable[[], bool]) -> None:
        """Wait (lock held) until `blocked()` is false or the pool is closed."""
        self._waiting += 1
        try:
            while not self._closed and blocked():
                self._cond.wait()
        finally:
            self._waiting -= 1

    def _wake(self) -> None:
        if self._waiting:
            self._cond.notify_all()

    def give_back(self, conn: Any) -> None:
        """Return a lent connection."""
        with self._lock:
            self._reading -= 1
            closed = self._closed
            if closed:
                self._open -= 1
            else:
                self._idle.append(conn)
            if self._waiting:  # `_wake`, inlined: every read passes here
                self._cond.notify_all()
        if closed:
            self._forget(conn)

    def pause(self) -> None:
        """Stop counting this thread as reading (it keeps its connection): it is about to
        wait for the writer, which may be waiting in `drained()` for it."""
        with self._lock:
            self._reading -= 1
            self._wake()

    def resume(self) -> None:
        with self._lock:
            self._wait(lambda: self._draining)
            self._reading += 1

    @contextmanager
    def drained(self) -> Iterator[None]:
        """Run the body while no thread reads: new reads wait, running ones finish first.
        One caller at a time (the engine calls it holding its writer's lock)."""
        with self._lock:
            self._draining = True
            self._wait(lambda: self._reading > 0)
        try:
            yield
        finally:
            with self._lock:
                self._draining = False
                self._wake()

    def close(self) -> None:
        """Close the idle connections now, and each lent one when it is given back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._open -= len(idle)
            self._wake()
        for conn in idle:
            self._forget(conn)

    def _forget(self, conn: Any) -> None:
        self.writer.followers.remove(conn)
        conn.close()


def is_busy(exc: BaseException) -> bool:
    """True for 'database is locked/busy' from any driver (their classes differ)."""
    text = str(exc).lower()
    return type(exc).__name__ == "OperationalError" and ("locked" in text or "busy" in text)


def retry_busy(step: Callable[[], T], attempts: int = 40) -> T:
    """Run `step`, retrying on busy/locked with jitter.

    For set-up steps that SQLite does not cover with the busy handler (switching a new
    file to WAL while another process opens it).
    """
    for _ in range(attempts):
        try:
            return step()
        except Exception as exc:
            if not is_busy(exc):
                raise
            last = exc
            time.sleep(0.05 * random.uniform(0.5, 1.5))
    raise StoreBusyError(f"database stayed locked after {attempts} attempts: {last}") from last
