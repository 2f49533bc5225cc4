"""WAL checkpoints on a thread of their own, so that a commit does not copy pages.

In WAL mode a commit appends pages to the -wal file; a checkpoint copies them into the
database file and syncs both, so that the WAL can start over from its beginning. SQLite
runs one on the committing connection once the WAL holds `wal_autocheckpoint` pages
(1000 by default): that commit, and every writer queued behind the store's lock, waits
for the copy.

`Checkpointer` copies them beside the writer instead: a thread runs a PASSIVE checkpoint,
which blocks neither the writer nor readers, once the writer has changed `CHANGED` rows
since the last one. Two things it cannot do alone:

- Catch up. A PASSIVE checkpoint copies what was committed when it began, and the WAL
  starts over only when a write transaction begins with every page copied, which a writer
  that never pauses rarely allows: the WAL would grow without end. So the writer keeps its
  own automatic checkpoint, at `CAP` pages (the catch-up point): past it, each commit
  checkpoints the few pages the thread has not copied yet, until the WAL starts over, as
  SQLite does at 1000 pages without the thread; the thread keeps out of its way meanwhile.
  The WAL stays near `CAP` pages, plus what the writers append while a pass that began
  below it ends (measured with 8 writers: 1.2-2x `CAP`; 48x without the catch-up).
- Share the checkpoint lock. SQLite takes it without waiting (no busy handler), so a
  TRUNCATE checkpoint (a secure purge, vacuum) fails at once, `(1, -1, -1)`, while another
  checkpoint runs. `truncate()` pauses every checkpointer of this process on the file,
  waits for a running pass to end, and retries while another process's holds the lock.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

# The writer's own checkpoint starts at this many WAL pages (16 MiB at 4 KiB pages).
CAP = 4000
# Rows the writer changes before the thread checkpoints: a pass costs two syncs, so it
# waits for enough pages to be worth them (a lone put changes about 12 rows and writes
# about as many pages; in a batch of 100, 5 rows and a third of a page).
CHANGED = 1000
# How often the thread looks at the writer's change count: soon after writes, then less
# and less often while nothing changes (an idle store wakes a few times a second).
POLL_S = 0.002
IDLE_POLL_S = 0.25
# How long the thread leaves the checkpoint lock to the writer once the WAL is past `CAP`:
# SQLite does not wait for that lock, so each of the thread's passes could cost the
# writer's catch-up a commit's turn.
CATCH_UP_S = 0.05
# How long `truncate` retries while another process's checkpoint holds the lock.
TRUNCATE_WAIT_S = 5.0

_lock = threading.Lock()
_by_file: dict[str, weakref.WeakSet[Checkpointer]] = {}


class Checkpointer:
    """Checkpoints `path`'s WAL on a daemon thread while `writer` commits.

    It opens its connection (`open_conn`) at its first pass, so a store that writes little
    never opens one. It stops when closed or when the writer is garbage-collected.
    """

    def __init__(self, path: str, writer: Any, open_conn: Callable[[], Any]) -> None:
        self.file = file_of(writer)
        self._writer = weakref.ref(writer)
        self._open_conn = open_conn
        self._conn: Any = None
        self._cond = threading.Condition()
        self._paused = 0
        self._running = False  # a pass is copying pages
        self._stopped = False
        self.passes = 0  # checkpoints run, for tests and benchmarks
        writer.execute(f"PRAGMA wal_autocheckpoint = {CAP}")
        with _lock:
            _by_file.setdefault(self.file, weakref.WeakSet()).add(self)
        self.thread = threading.Thread(
            target=self._run, name=f"sgam-checkpoint {os.path.basename(path)}", daemon=True
        )
        self.thread.start()

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            self._close_conn()

    def _loop(self) -> None:
        """Look at the writer's change count, now and then; pass when it moved enough."""
        seen = self._changes() or 0
        wait = POLL_S
        while self._sleep(wait):
            changes = self._changes()
            if changes is None:
                break
            wait = POLL_S if changes != seen else min(IDLE_POLL_S, wait * 2)
            if changes - seen >= CHANGED and self._begin():
                seen = changes
                try:
                    log = self._pass()
                finally:
                    self._end()
                if log >= CAP:  # the writer's own checkpoint's turn: keep out of its way
                    wait = CATCH_UP_S

    @property
    def running(self) -> bool:
        """A pass is copying pages now (and holds SQLite's checkpoint lock)."""
        return self._running

    def _changes(self) -> int | None:
        """The writer's count of changed rows; None once it is gone or closed."""
        writer = self._writer()
        if writer is None:
            return None
        try:
            return int(writer.total_changes)
        except Exception:  # closed under us: the store is closing
            return None

    def _sleep(self, seconds: float) -> bool:
        """Wait `seconds` (or until closed); False when closed."""
        with self._cond:
            if not self._stopped:
                self._cond.wait(seconds)
            return not self._stopped

    def _begin(self) -> bool:
        """Mark a pass as running, unless paused or closed."""
        with self._cond:
            if self._paused or self._stopped:
                return False
            self._running = True
            return True

    def _end(self) -> None:
        with self._cond:
            self._running = False
            self._cond.notify_all()

    def _pass(self) -> int:
        """One PASSIVE checkpoint; the WAL's length in pages. Busy is no failure: the pages
        wait for the next pass or for the writer's own checkpoint."""
        if self._conn is None:
            self._conn = self._open_conn()
        _, log, _ = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self.passes += 1
        return int(log)

    def _close_conn(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No pass runs in the body: a running one ends first."""
        with self._cond:
            self._paused += 1
            while self._running:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._paused -= 1
                self._cond.notify_all()

    def close(self) -> None:
        """Stop the thread and close its connection: no checkpoint of it runs afterwards.
        The writer's close then checkpoints the rest, as SQLite does for the last
        connection to a file."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self.thread is not threading.current_thread():
            self.thread.join()
        with _lock:
            peers = _by_file.get(self.file)
            if peers is not None:
                peers.discard(self)
                if not peers:
                    del _by_file[self.file]


def file_of(conn: Any) -> str:
    """The path of `conn`'s main database, as SQLite resolved it ('' in memory)."""
    for _, name, file in conn.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return os.path.realpath(file) if file else ""
    return ""


@contextmanager
def paused(conn: Any) -> Iterator[None]:
    """Pause every checkpointer of this process on `conn`'s file for the body."""
    with _lock:
        peers = list(_by_file.get(file_of(conn), ()))
    with ExitStack() as stack:
        for peer in peers:
            stack.enter_context(peer.paused())
        yield


def truncate(conn: Any, wait_s: float = TRUNCATE_WAIT_S) -> bool:
    """Copy the whole WAL into the file and truncate it to zero bytes; False when a reader
    or writer of another connection kept it from completing.

    `(1, -1, -1)` means the checkpoint lock was taken: by another process's checkpoint
    (this process's are paused), which ends soon, so it retries for up to `wait_s`.
    """
    deadline = time.monotonic() + wait_s
    with paused(conn):
        while True:
            busy, log, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not (busy and log == -1) or time.monotonic() >= deadline:
                return busy == 0
            time.sleep(0.005)
