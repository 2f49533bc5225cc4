"""Run the background memory manager after each agent turn: deferred, debounced per thread.

Why deferred: extraction costs a model call per message and the user is waiting for the
answer, not for memory; the hot-path tools cover what the next turn depends on. Why
debounced: a burst of turns needs one manager run over all of them, not one per turn;
each submission for a thread replaces the one still waiting. Each submission carries the
thread's user messages; the manager skips episodes it has already extracted, so the
latest submission covers everything the replaced ones would have.

- `LocalMemoryScheduler`: in this process, on langmem's `ReflectionExecutor` (a worker
  thread with a per-thread pending task). For scripts, notebooks, tests and single-process
  apps. Memory written by a task still waiting is lost if the process exits first: call
  `close()` (or use it as a context manager) to drain it.
- `ServerMemoryScheduler`: on a LangGraph server, a run of the `memory_manager` graph with
  `after_seconds=N` on a memory thread of its own per conversation, with
  `multitask_strategy="rollback"`: a newer submission deletes the waiting run (debounce).
  Runs are durable (the server's queue survives restarts on LangGraph Platform) and can
  go to other workers. Use "enqueue" instead to never interrupt a manager run that has
  already started (then every submission runs, one after another: no debounce).
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any, Literal

from langchain_core.messages import AnyMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig

from sgam_store import SGAMStore
from sgam_store.tools import MemoryScope, setting, user_messages

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


class LocalMemoryScheduler:
    """In-process scheduling on langmem's ReflectionExecutor, deferred and debounced.

    `store` is passed to the executor explicitly: ReflectionExecutor's own example omits
    it, and in langmem 0.0.30 the worker then runs the manager without a store.
    """

    def __init__(self, manager: Runnable, store: SGAMStore, *, delay_seconds: float = 30.0):
        from langmem import ReflectionExecutor
        from langmem.utils import NamespaceTemplate

        if getattr(manager, "namespace", None) is None:
            # The executor requires the attribute (its `search` helper reads it); our
            # manager scopes itself from the run's configuration instead.
            manager.namespace = NamespaceTemplate(("{tenant_id}", "{user_id}"))  # type: ignore[attr-defined]
        self.manager = manager
        self.store = store
        self.delay_seconds = delay_seconds
        self.executor = ReflectionExecutor(manager, store=store)
        self.submitted: list[Future] = []  # every submission, in order (debounced ones cancel)
        self._latest: dict[str, Future] = {}
        self._requests: dict[str, tuple[dict[str, Any], RunnableConfig]] = {}
        self._lock = threading.Lock()

    def submit(
        self,
        messages: Sequence[AnyMessage],
        scope: MemoryScope,
        settings: dict[str, Any] | None = None,
        *,
        delay_seconds: float | None = None,
    ) -> Future:
        """Queue a manager run for this thread in `delay_seconds`, replacing a waiting one."""
        config: RunnableConfig = {"configurable": {**(settings or {}), **scope.as_context()}}
        payload = {"messages": list(user_messages(messages))}
        delay = self.delay_seconds if delay_seconds is None else delay_seconds
        return self._submit(debounce_key(scope), payload, config, delay)

    def _submit(
        self, key: str, payload: dict[str, Any], config: RunnableConfig, delay: float
    ) -> Future:
        with self._lock:
            # thread_id is the executor's debounce key: a waiting task of the key is cancelled
            future = self.executor.submit(
                payload,
                # the worker adds its runtime to `configurable`: keep ours clean
                config={**config, "configurable": dict(config["configurable"])},
                after_seconds=delay,  # type: ignore[arg-type]
                thread_id=key,
            )
            self._latest[key] = future
            self._requests[key] = (payload, config)
            self.submitted.append(future)
        return future

    async def asubmit(self, *args: Any, **kwargs: Any) -> Future:
        return self.submit(*args, **kwargs)  # submit only enqueues: it never blocks

    def wait(self, timeout: float | None = 60.0) -> list[Any]:
        """Wait for the latest submission of every thread; return their manager outputs."""
        with self._lock:
            futures = list(self._latest.values())
        return [f.result(timeout=timeout) for f in futures if not f.cancelled()]

    def close(self, *, wait: bool = True, timeout: float = 60.0) -> None:
        """Stop the worker; with `wait`, submissions still waiting run now (nothing is lost).

        ReflectionExecutor's own `shutdown` runs whatever is left in its queue, cancelled
        (debounced) tasks included, and its worker dies on the first of those (langmem
        0.0.30 sets a result on a cancelled future there), skipping the rest. So we flush
        first: resubmit each thread's waiting request with no delay (which cancels the
        delayed one), wait for it, let the worker discard the cancelled leftovers, and only
        then stop it.
        """
        if wait:
            with self._lock:
                waiting = [k for k, f in self._latest.items() if not f.done()]
            for key in waiting:
                payload, config = self._requests[key]
                self._submit(key, payload, config, 0)
            with self._lock:
                futures = [f for f in self._latest.values() if not f.cancelled()]
            concurrent.futures.wait(futures, timeout=timeout)
            self._settle(timeout)
        self.executor.shutdown(wait=False, cancel_futures=not wait)

    def _settle(self, timeout: float) -> None:
        """Wait until the worker has popped every queued task (cancelled ones are dropped
        as they are popped); the queue is the executor's, there is no public view of it."""
        queue = self.executor._task_queue  # langmem 0.0.30 LocalReflectionExecutor
        deadline = time.monotonic() + timeout
        while not queue.empty() and time.monotonic() < deadline:
            time.sleep(0.01)

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
    """Scheduling on a LangGraph server: a delayed run of the manager graph per turn."""

    def __init__(
        self,
        assistant_id: str = "memory_manager",
        *,
        url: str | None = None,
        delay_seconds: float = 30.0,
        multitask_strategy: Literal["rollback", "enqueue"] = "rollback",
    ) -> None:
        self.assistant_id = assistant_id
        self.url = url  # None: the in-process server this graph runs on
        self.delay_seconds = delay_seconds
        self.multitask_strategy = multitask_strategy

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
            "after_seconds": round(delay),
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
        """Create the delayed manager run (in-process client inside a server graph)."""
        from langgraph_sdk import get_client

        request = self._request(messages, scope, settings, delay_seconds)
        return await get_client(url=self.url).runs.create(**request)

    def submit(
        self,
        messages: Sequence[AnyMessage],
        scope: MemoryScope,
        settings: dict[str, Any] | None = None,
        *,
        delay_seconds: float | None = None,
    ) -> dict[str, Any]:
        """Synchronous variant; needs `url` (the in-process client is async only)."""
        if self.url is None:
            raise RuntimeError(
                "ServerMemoryScheduler without url runs only inside a LangGraph server, "
                "through the async API (the server runs graphs with astream); pass url= "
                "to submit from synchronous code"
            )
        from langgraph_sdk import get_sync_client

        request = self._request(messages, scope, settings, delay_seconds)
        return get_sync_client(url=self.url).runs.create(**request)


def _wire(message: BaseMessage) -> dict[str, Any]:
    """A user message as the server API takes it (the id keeps its episode id stable)."""
    return {"type": "human", "content": message.content, "id": message.id}
