"""Group commit: writes that arrive while a write transaction is in progress wait, and
go together into the next one.

What a lone put pays is mostly per commit, not per put: the WAL commit and FTS5's new
segment (a put alone writes 26.8 pages, one in a batch of 100 writes 6.4:
benchmarks/put_accounting.py). Callers that write at the same time, a LangGraph
server's agent turns, can share those.

Leader and followers. A caller who finds no transaction of this store in progress
leads at once, so a lone put waits for no timer. Callers arriving meanwhile queue; when
the leader's commit is done, the first of them leads the next transaction with
everything queued by then, in arrival order, so the interval rule sees the puts in the
order they arrived. A caller returns only after the commit that holds its work: an
acknowledged put is durable and readable, and a process killed mid-group loses only
puts that no caller was told about.

Failures stay with their caller. An error raised inside the transaction body rolls
all of it back; each caller's work then runs again in its own transaction, in arrival
order, so one caller's bad put fails that caller alone and the others commit (coalesced
gets do the same: read/coalesce.py). An error outside the body (COMMIT itself failing,
a database that stayed locked) is every caller's, and is raised to each of them.

A database whose rows are confined to a tenant (PostgreSQL's row security) groups only
writes of the same tenant, since one transaction runs in one tenant's scope.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import weakref
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sgam_store import ledger
from sgam_store.write.facts import FactWriter

W = TypeVar("W")
C = TypeVar("C")
R = TypeVar("R")

Outcome = Any  # a call's result, or the exception it raises

# The most puts a group's transaction takes, unless one caller's batch alone is larger:
# a bound on how long its first caller waits under a steady stream of writes, on how long
# other processes wait for SQLite's write lock, and on PostgreSQL's lock table (a lock
# per key, see docs/postgres.md).
LIMIT = 256


class _Ticket:
    """One caller's wait: how many of its works are not settled yet, and its wake-up
    (a condition on the group's lock, so only this caller is woken)."""

    __slots__ = ("left", "wake")

    def __init__(self, lock: threading.Lock, left: int) -> None:
        self.left = left
        self.wake = threading.Condition(lock)


@dataclass(slots=True)
class _Work(Generic[W]):
    key: Hashable  # works of one key may share a transaction
    work: W
    size: int  # its puts
    ticket: _Ticket
    error: BaseException | None = None


class GroupCommit(Generic[W]):
    """Commits works of concurrent callers together. `apply(tx, works)` writes works,
    in order, inside one write transaction of `facts`, maybe several times (works that
    queued meanwhile); `facts.finish` then writes the transaction's index rows once.
    `size(work)` is how many puts a work holds (counted against LIMIT)."""

    def __init__(
        self,
        facts: FactWriter,
        apply: Callable[[ledger.Tx, list[W]], None],
        size: Callable[[W], int] = lambda _: 1,
    ) -> None:
        self.facts = facts
        self.apply = apply
        self.size = size
        self._lock = threading.Lock()
        self._queue: list[_Work[W]] = []
        self._leading = False

    def submit(self, works: Sequence[tuple[Hashable, W]]) -> list[BaseException | None]:
        """Commit each `(key, work)`, with whatever else is queued; return each work's
        error, None for a committed one. Returns when every one is settled."""
        with self._lock:
            ticket = _Ticket(self._lock, len(works))
            mine = [_Work(key, work, self.size(work), ticket) for key, work in works]
            self._queue.extend(mine)
            while ticket.left:
                if self._leading:
                    ticket.wake.wait()
                    continue
                self._leading = True
                group = self._take(self._queue[0].key, LIMIT)
                self._lock.release()
                try:
                    self._commit(group)
                finally:
                    self._lock.acquire()
                    self._settle(group)
        return [work.error for work in mine]

    def _take(self, key: Hashable, room: int) -> list[_Work[W]]:
        """(Under the lock.) Queued works of `key`, in arrival order, while they fit in
        `room` puts (the first one always does when `room` is LIMIT)."""
        taken: list[_Work[W]] = []
        for work in self._queue:
            if work.key != key:
                continue
            if work.size > room and (taken or room < LIMIT):
                break  # a later one of the key may not overtake it
            taken.append(work)
            room -= work.size
        if taken:
            chosen = {id(work) for work in taken}
            self._queue = [work for work in self._queue if id(work) not in chosen]
        return taken

    def _settle(self, group: list[_Work[W]]) -> None:
        """(Under the lock.) Wake the callers whose works are all settled, and the first
        queued caller, who leads next."""
        self._leading = False
        for work in group:
            work.ticket.left -= 1
            if not work.ticket.left:
                work.ticket.wake.notify()
        if self._queue:
            self._queue[0].ticket.wake.notify()

    def _commit(self, group: list[_Work[W]]) -> None:
        """One transaction for the group; caller by caller if its body failed."""
        key = group[0].key
        try:
            failed = self._run(key, group, absorb=True)
            if failed is None:
                return
            error, inside = failed
            if not inside or len(group) == 1:
                for work in group:
                    work.error = error
                return
            for work in group:  # whose error was it: each on its own
                again = self._run(key, [work], absorb=False)
                work.error = again[0] if again else None
        except BaseException as error:  # the leader interrupted: nobody is acknowledged
            for work in group:
                work.error = work.error or error
            raise

    def _run(
        self, key: Hashable, group: list[_Work[W]], *, absorb: bool
    ) -> tuple[Exception, bool] | None:
        """Run one transaction of `group`; None once committed, else the error and
        whether the body raised it (then nothing was written, so a retry is safe).
        With `absorb`, works of the key that queued while the body ran join the group,
        before COMMIT, up to LIMIT puts. It runs in a fresh context, in the works'
        tenant scope, not the leader's."""
        raised: list[Exception] = []  # by the body's last attempt (the engine retries)

        def body(tx: ledger.Tx) -> None:
            raised.clear()
            done = 0
            try:
                while done < len(group):
                    self.apply(tx, [work.work for work in group[done:]])
                    done = len(group)
                    room = LIMIT - sum(work.size for work in group)
                    if absorb and room > 0:
                        with self._lock:
                            group.extend(self._take(key, room))
                self.facts.finish(tx)
            except Exception as error:
                raised.append(error)
                raise

        try:
            contextvars.Context().run(self._transaction, key, body)
        except Exception as error:
            # The last attempt's body failed: that attempt rolled back, and none committed.
            return error, bool(raised)
        return None

    def _transaction(self, key: Hashable, body: Callable[[ledger.Tx], None]) -> None:
        with self.facts.engine.tenant_scope(key):
            self.facts.run(body)


@dataclass
class _LoopState:
    waiting: list[tuple[Any, asyncio.Future[Any]]] = field(default_factory=list)
    running: int = 0
    tasks: set[asyncio.Task[None]] = field(default_factory=set)  # held, or GC may drop them


class AsyncGather(Generic[C]):
    """Gathers one event loop's concurrent calls and hands them to a worker thread
    together: `run(calls)` returns each call's outcome, a result or an exception.

    Without it, each `aput` would hold a worker thread of the loop's executor (a few on
    a small machine) while it waits for its group, so groups could be no larger than the
    executor. Two hops run at once: one prepares its calls while the other commits."""

    def __init__(self, run: Callable[[list[C]], list[Outcome]], parallel: int = 2) -> None:
        self.run = run
        self.parallel = parallel
        self.loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary()
        )

    async def submit(self, call: C) -> Any:
        loop = asyncio.get_running_loop()
        state = self.loops.setdefault(loop, _LoopState())
        future: asyncio.Future[Any] = loop.create_future()
        state.waiting.append((call, future))
        if state.running < self.parallel:
            state.running += 1
            task = loop.create_task(self._drain(state))
            state.tasks.add(task)
            task.add_done_callback(state.tasks.discard)
        return await future

    async def _drain(self, state: _LoopState) -> None:
        """Hand over what is waiting, hop after hop, until nothing is. No await lies
        between the last empty check and leaving, so no call is stranded."""
        try:
            while state.waiting:
                waiting, state.waiting = state.waiting, []
                try:
                    outcomes = await asyncio.to_thread(self.run, [call for call, _ in waiting])
                except Exception as error:
                    outcomes = [error] * len(waiting)
                for (_, future), outcome in zip(waiting, outcomes, strict=True):
                    if future.done():  # its caller was cancelled meanwhile
                        continue
                    if isinstance(outcome, BaseException):
                        future.set_exception(outcome)
                    else:
                        future.set_result(outcome)
        finally:
            state.running -= 1
