"""Run the background memory manager after each agent turn: deferred, debounced per thread.

Why deferred: extraction costs a model call per message and the user is waiting for the
answer, not for memory; the hot-path tools cover what the next turn depends on. Why
debounced: a burst of turns needs one manager run over all of them, not one per turn;
each submission for a thread replaces the one still waiting. Each submission carries the
thread's user messages; the manager skips episodes it has already extracted, so the
latest submission covers everything the replaced ones would have.

- `LocalMemoryScheduler`: in this process, on `DebouncedExecutor` (below: one worker
  thread, one waiting task per debounce key). For scripts, notebooks, tests and
  single-process apps. Memory written by a task still waiting is lost if the process
  exits first: call `close()` (or use it as a context manager) to run it.
- `ServerMemoryScheduler`: on a LangGraph server, a run of the `memory_manager` graph with
  `after_seconds=N` on a memory thread of its own per conversation, with
  `multitask_strategy="rollback"`: a newer submission deletes the waiting run (debounce),
  which then never runs. Runs are durable (the server's queue survives restarts on
  LangGraph Platform) and can go to other workers. "rollback" also cancels a manager run
  that has started; the model call its node is in still finishes in its thread, and the
  manager extracts each episode under a lock, once (graphs/manager.py), so the newer run
  skips what it wrote. Use "enqueue" to never interrupt a started run (then every
  submission runs, one after another: no debounce). `close()` refuses later submissions
  and waits, bounded, for those being sent; the runs already created stay on the server.

Why not LangMem's `ReflectionExecutor` locally (it was used up to issue 19): its public
surface cannot give these guarantees, whatever the caller does. `submit` after
`shutdown` queues a task that no worker will run; `shutdown(wait=True)` runs the whole
queue, debounced (cancelled) tasks included, and its worker dies on the first of those;
when the worker drops a cancelled task it forgets the key's *newer* pending task, so the
next submission no longer replaces it (the debounce is lost); and there is no public way
to learn whether the worker is idle. Working around that needed its private queue. A
heap of due tasks under one condition variable is about a hundred lines and makes every
guarantee below hold by construction.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from langchain_core.messages import AnyMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.pregel import Pregel

from sgam_store import SGAMError, SGAMStore
from sgam_store.tools import MemoryScope, setting, user_messages

logger = logging.getLogger(__name__)

# Settings of the agent's run that its background manager run inherits.
FORWARDED = (
    "model",
    "memory_model",
    "min_confidence",
    "recurrence",
    "repeat_memory_types",
    "repeat_attributes",
)
MEMORY_THREADS = uuid.UUID("5f0c3d43-0c4e-4d0a-9a51-6c1f3b8a9e27")  # uuid5 namespace
RECENT = 256  # submissions, and threads' latest results, a local scheduler keeps
REQUEST_TIMEOUT = 10.0  # seconds a server submission may take (the SDK's default is 300)


def forwarded_settings(config: RunnableConfig | None, context: Any) -> dict[str, Any]:
    """The agent run's settings the manager run should see too (model names, thresholds)."""
    out = {}
    for name in FORWARDED:
        value = setting(name, config, context)
        if value is not None:
            out[name] = value
    return out


def debounce_key(scope: MemoryScope) -> str:
    return f"{scope.tenant_id}/{scope.thread_id or scope.user_id}"


class SchedulerClosedError(SGAMError, RuntimeError):
    """A submission reached a scheduler after `close()`: nothing was queued or sent.

    Defined here, not in `sgam_store.core.errors`, because only the graphs' schedulers
    raise it. A RuntimeError, like `concurrent.futures.Executor.submit` after shutdown.
    """


def _refused(key: str) -> SchedulerClosedError:
    return SchedulerClosedError(
        f"the memory scheduler is closed; the run for {key!r} was not queued"
    )


@dataclass(frozen=True)
class CloseReport:
    """What `close()` left undone, by debounce key (both empty: everything ran)."""

    cancelled: tuple[str, ...] = ()  # waiting runs that will never run
    running: tuple[str, ...] = ()  # still in progress at return (a run; on a server, a
    # submission being sent); it finishes later

    @property
    def complete(self) -> bool:
        return not self.cancelled and not self.running


@dataclass(eq=False)
class _Task:
    key: str
    run: Callable[[], Any]
    due: float  # time.monotonic()
    future: Future = field(default_factory=Future)


class DebouncedExecutor:
    """One worker thread running callables when due, at most one waiting per key.

    Every state change happens under one condition variable, so each guarantee is a
    statement about that state: a task runs only if it is the key's waiting task when
    the worker takes it (a replaced task leaves `_waiting` before its future is
    cancelled, so it can never start); after `close` starts, `submit` raises and the
    worker only drains or stops; `close` waits on the same condition, with a deadline.
    The worker is a daemon thread, so a scheduler nobody closed never blocks the
    interpreter's exit.
    """

    def __init__(self, name: str = "sgam-memory-scheduler") -> None:
        self._cond = threading.Condition()
        self._waiting: dict[str, _Task] = {}
        self._heap: list[tuple[float, int, _Task]] = []  # may hold replaced tasks: skipped
        self._order = itertools.count()  # ties on `due` never compare tasks
        self._running: _Task | None = None
        self._closed = False
        self._drain = False  # closing with wait: run every waiting task now
        self._worker = threading.Thread(target=self._work, name=name, daemon=True)
        self._worker.start()

    def submit(self, key: str, run: Callable[[], Any], delay_seconds: float) -> Future:
        """Run `run()` in `delay_seconds`, replacing the key's waiting task (cancelled)."""
        task = _Task(key, run, time.monotonic() + delay_seconds)
        with self._cond:
            if self._closed:
                raise _refused(key)
            replaced = self._waiting.get(key)
            self._waiting[key] = task
            heapq.heappush(self._heap, (task.due, next(self._order), task))
            self._cond.notify_all()
        if replaced is not None:
            replaced.future.cancel()  # outside the lock: cancel() runs the future's callbacks
        return task.future

    def close(self, *, wait: bool = True, timeout: float = 60.0) -> CloseReport:
        """Refuse new tasks; with `wait`, run the waiting ones now. Returns within
        `timeout` with what is still undone; waiting tasks left are cancelled."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._closed = True
            self._drain = wait
            self._cond.notify_all()
            while wait and (self._waiting or self._running):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            dropped = list(self._waiting.values())
            self._waiting.clear()
            self._heap.clear()
            running = self._running
            self._cond.notify_all()
        for task in dropped:
            task.future.cancel()
        if running is None:  # the worker has nothing left: it exits at once
            self._worker.join(max(0.0, deadline - time.monotonic()))
        return CloseReport(
            cancelled=tuple(t.key for t in dropped),
            running=() if running is None else (running.key,),
        )

    def _work(self) -> None:
        while (task := self._take()) is not None:
            try:
                # False: cancelled by its caller since it was taken; it must not start
                if task.future.set_running_or_notify_cancel():
                    try:
                        result = task.run()
                    except Exception as error:  # the worker outlives any manager error
                        logger.exception("background memory run for %r failed", task.key)
                        task.future.set_exception(error)
                    else:
                        task.future.set_result(result)
            finally:
                with self._cond:
                    self._running = None
                    self._cond.notify_all()

    def _take(self) -> _Task | None:
        """The next task once it is due (at once while draining); None: stop the worker."""
        with self._cond:
            while True:
                task = self._first()
                if task is None:
                    if self._closed:
                        return None
                    self._cond.wait()
                    continue
                left = 0.0 if self._drain else task.due - time.monotonic()
                if left <= 0:
                    heapq.heappop(self._heap)
                    del self._waiting[task.key]
                    self._running = task
                    return task
                self._cond.wait(left)

    def _first(self) -> _Task | None:
        """The earliest waiting task, dropping heap entries of tasks replaced since."""
        while self._heap:
            task = self._heap[0][2]
            if self._waiting.get(task.key) is task:
                return task
            heapq.heappop(self._heap)
        return None


class LocalMemoryScheduler:
    """In-process scheduling of the manager, deferred and debounced per thread.

    The manager graph gets `store` as its own (a copy of the graph with it, through
    Pregel's public `copy`), since a run started on the worker thread has no parent run
    to inherit a store from. A runnable that is not a graph must reach the store itself.
    """

    def __init__(self, manager: Runnable, store: SGAMStore, *, delay_seconds: float = 30.0):
        self.manager = manager.copy({"store": store}) if isinstance(manager, Pregel) else manager
        self.store = store
        self.delay_seconds = delay_seconds
        self.executor = DebouncedExecutor()
        # The latest RECENT submissions, in order (debounced ones are cancelled): bounded,
        # since a scheduler lives as long as its process.
        self.submitted: deque[Future] = deque(maxlen=RECENT)
        self._latest: dict[str, Future] = {}  # per thread, in submission order
        self._lock = threading.RLock()  # a future's callback may submit again

    def submit(
        self,
        messages: Sequence[AnyMessage],
        scope: MemoryScope,
        settings: dict[str, Any] | None = None,
        *,
        delay_seconds: float | None = None,
    ) -> Future:
        """Queue a manager run for this thread in `delay_seconds`, replacing a waiting one.

        Raises `SchedulerClosedError` after `close()`.
        """
        config: RunnableConfig = {"configurable": {**(settings or {}), **scope.as_context()}}
        payload = {"messages": list(user_messages(messages))}
        delay = self.delay_seconds if delay_seconds is None else delay_seconds
        key = debounce_key(scope)
        with self._lock:  # `submitted` and `_latest` in the executor's order
            future = self.executor.submit(key, partial(self.manager.invoke, payload, config), delay)
            self._latest.pop(key, None)  # re-inserted last: the dict stays in submission order
            self._latest[key] = future
            self.submitted.append(future)
            self._forget_finished()
        return future

    def _forget_finished(self) -> None:
        """Keep the latest submission of at most RECENT threads, dropping the oldest that
        are done; one still waiting or running is always kept (under the lock)."""
        excess = len(self._latest) - RECENT
        if excess > 0:
            done = [key for key, future in self._latest.items() if future.done()]
            for key in done[:excess]:
                del self._latest[key]

    async def asubmit(self, *args: Any, **kwargs: Any) -> Future:
        return self.submit(*args, **kwargs)  # submit only enqueues: it never blocks

    def wait(self, timeout: float | None = 60.0) -> list[Any]:
        """Wait for the latest submission of every thread (of the RECENT last submitted, and
        any still waiting); return their manager outputs."""
        with self._lock:
            futures = list(self._latest.values())
        return [f.result(timeout=timeout) for f in futures if not f.cancelled()]

    def close(self, *, wait: bool = True, timeout: float = 60.0) -> CloseReport:
        """Refuse further submissions; with `wait`, run the waiting ones now (nothing is
        lost), without it cancel them. Returns within `timeout` (a manager run cannot be
        interrupted: one still in progress then finishes in the background), with the
        keys it left undone. Closing again is harmless."""
        report = self.executor.close(wait=wait, timeout=timeout)
        if not report.complete:
            logger.warning(
                "memory scheduler closed with runs undone: cancelled %s, still running %s",
                list(report.cancelled),
                list(report.running),
            )
        return report

    def __enter__(self) -> LocalMemoryScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def memory_thread_id(scope: MemoryScope) -> str:
    """The server thread that runs a conversation's memory manager (a stable uuid5).

    Not the conversation's own thread: that one is busy with the agent run that submits,
    and "rollback" there would cancel the agent's own run.
    """
    return str(uuid.uuid5(MEMORY_THREADS, debounce_key(scope)))


class ServerMemoryScheduler:
    """Scheduling on a LangGraph server: a delayed run of the manager graph per turn.

    Each submission is its own short-lived SDK client (the in-process one inside a server
    graph, or `url`'s), so nothing is left open between turns and any event loop may
    submit. A submission takes at most `request_timeout` seconds; then the SDK's
    `httpx.TimeoutException` reaches the caller (the agent logs it and answers anyway).
    """

    def __init__(
        self,
        assistant_id: str = "memory_manager",
        *,
        url: str | None = None,
        delay_seconds: float = 30.0,
        multitask_strategy: Literal["rollback", "enqueue"] = "rollback",
        request_timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        self.assistant_id = assistant_id
        self.url = url  # None: the in-process server this graph runs on
        self.delay_seconds = delay_seconds
        self.multitask_strategy = multitask_strategy
        self.request_timeout = request_timeout
        self._cond = threading.Condition()
        self._closed = False
        self._sending: list[str] = []  # debounce keys of submissions in flight

    def _request(
        self,
        messages: Sequence[AnyMessage],
        scope: MemoryScope,
        settings: dict[str, Any] | None,
        delay_seconds: float | None,
    ) -> dict[str, Any]:
        delay = self.delay_seconds if delay_seconds is None else delay_seconds
        return {
            "thread_id": memory_thread_id(scope),
            "assistant_id": self.assistant_id,
            "input": {"messages": [_wire(m) for m in user_messages(messages)]},
            "context": {**(settings or {}), **scope.as_context()},
            "multitask_strategy": self.multitask_strategy,
            "after_seconds": math.ceil(max(delay, 0.0)),  # whole seconds, never early
            "if_not_exists": "create",
        }

    async def asubmit(
        self,
        messages: Sequence[AnyMessage],
        scope: MemoryScope,
        settings: dict[str, Any] | None = None,
        *,
        delay_seconds: float | None = None,
    ) -> dict[str, Any]:
        """Create the delayed manager run (in-process client inside a server graph).

        Raises `SchedulerClosedError` after `close()`.
        """
        from langgraph_sdk import get_client

        request = self._request(messages, scope, settings, delay_seconds)
        with self._in_flight(debounce_key(scope)):
            async with get_client(url=self.url, timeout=self.request_timeout) as client:
                return await client.runs.create(**request)

    def submit(
        self,
        messages: Sequence[AnyMessage],
        scope: MemoryScope,
        settings: dict[str, Any] | None = None,
        *,
        delay_seconds: float | None = None,
    ) -> dict[str, Any]:
        """Synchronous variant; needs `url` (the in-process client is async only).

        Raises `SchedulerClosedError` after `close()`.
        """
        if self.url is None:
            raise RuntimeError(
                "ServerMemoryScheduler without url runs only inside a LangGraph server, "
                "through the async API (the server runs graphs with astream); pass url= "
                "to submit from synchronous code"
            )
        from langgraph_sdk import get_sync_client

        request = self._request(messages, scope, settings, delay_seconds)
        with (
            self._in_flight(debounce_key(scope)),
            get_sync_client(url=self.url, timeout=self.request_timeout) as client,
        ):
            return client.runs.create(**request)

    @contextmanager
    def _in_flight(self, key: str) -> Iterator[None]:
        """Count a submission as being sent, or refuse it once closed."""
        with self._cond:
            if self._closed:
                raise _refused(key)
            self._sending.append(key)
        try:
            yield
        finally:
            with self._cond:
                self._sending.remove(key)
                self._cond.notify_all()

    def close(self, *, timeout: float = 60.0) -> CloseReport:
        """Refuse further submissions and wait up to `timeout` for those being sent.
        Returns with the keys of any still in flight (`running`). The runs already
        created are the server's: they stay queued and run there. Closing again is
        harmless."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._closed = True
            while self._sending and (left := deadline - time.monotonic()) > 0:
                self._cond.wait(left)
            report = CloseReport(running=tuple(self._sending))
        if not report.complete:
            logger.warning("memory scheduler closed with submissions in flight: %s", report.running)
        return report

    def __enter__(self) -> ServerMemoryScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _wire(message: BaseMessage) -> dict[str, Any]:
    """A user message as the server API takes it (the id keeps its episode id stable)."""
    return {"type": "human", "content": message.content, "id": message.id}
