"""Concurrent async gets of one scope, run together: one worker-thread hop and one
statement per batch.

The engines are synchronous, so every `abatch` costs a hop to a worker thread and the
GIL hand-offs around it. Under many concurrent coroutines (a LangGraph server's
requests) that hop, not the database, bounds throughput: 64 tasks of `aget` on
PostgreSQL ran 1,807 calls/s one hop each, 10,744 coalesced, against 9,904 for
LangGraph's AsyncPostgresStore (`benchmarks/bench_async.py`, 4,000 facts). So gets that
arrive while earlier ones are in flight wait and go as one batch: one snapshot, one
`get_many` statement. A few batches per scope run at once, so the database still serves
them in parallel.

Only gets are coalesced here; concurrent puts share a commit in `write/group.py`, which
reruns a failed group caller by caller, so one caller's conflict never fails another's
put. Searches gain nothing from sharing a hop (each is several statements of its own)
and measured slower coalesced: 133 against 186 searches/s at 64 tasks. Should a
combined batch fail, each caller's gets run again on their own, so every caller gets its
own answer or its own error.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import GetOp, Op, Result

Run = Callable[[list[Op], Any], list[Result]]
Waiting = list[tuple[list[Op], asyncio.Future[list[Result]]]]

# Batches of one scope in flight at once: enough to keep a connection pool and both
# cores busy, few enough that waiting gets gather into batches.
PARALLEL = 4


def only_gets(ops: list[Op]) -> bool:
    return bool(ops) and all(isinstance(op, GetOp) for op in ops)


@dataclass
class _LoopState:
    waiting: dict[Hashable, Waiting] = field(default_factory=dict)
    running: dict[Hashable, int] = field(default_factory=dict)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)  # held, or GC may drop them


class GetCoalescer:
    """Gathers concurrent get batches per scope and event loop; `run(ops, scope)` is the
    store's synchronous batch, called in a worker thread."""

    def __init__(self, run: Run, parallel: int = PARALLEL) -> None:
        self.run = run
        self.parallel = parallel
        self.loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary()
        )

    async def submit(self, ops: list[Op], scope: Hashable) -> list[Result]:
        loop = asyncio.get_running_loop()
        state = self.loops.setdefault(loop, _LoopState())
        future: asyncio.Future[list[Result]] = loop.create_future()
        state.waiting.setdefault(scope, []).append((ops, future))
        if state.running.get(scope, 0) < self.parallel:
            state.running[scope] = state.running.get(scope, 0) + 1
            task = loop.create_task(self._drain(state, scope))
            state.tasks.add(task)
            task.add_done_callback(state.tasks.discard)
        return await future

    async def _drain(self, state: _LoopState, scope: Hashable) -> None:
        """Run what is waiting for `scope`, batch after batch, until nothing is. No await
        lies between the last empty check and leaving, so no submit is stranded."""
        try:
            while waiting := state.waiting.pop(scope, None):
                await self._run_together(waiting, scope)
        finally:
            state.running[scope] -= 1

    async def _run_together(self, waiting: Waiting, scope: Hashable) -> None:
        combined = [op for ops, _ in waiting for op in ops]
        try:
            results = await asyncio.to_thread(self.run, combined, scope)
        except Exception as error:
            if len(waiting) == 1:
                _fail(waiting[0][1], error)
                return
            for ops, future in waiting:  # whose error was it: each on its own
                try:
                    _settle(future, await asyncio.to_thread(self.run, ops, scope))
                except Exception as own:
                    _fail(future, own)
            return
        start = 0
        for ops, future in waiting:
            _settle(future, results[start : start + len(ops)])
            start += len(ops)


def _settle(future: asyncio.Future[list[Result]], results: list[Result]) -> None:
    if not future.done():  # its caller may have been cancelled meanwhile
        future.set_result(results)


def _fail(future: asyncio.Future[list[Result]], error: Exception) -> None:
    if not future.done():
        future.set_exception(error)
