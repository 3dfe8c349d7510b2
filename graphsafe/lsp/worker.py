"""One daemon thread that runs analysis jobs and hands results back to the event loop.

One thread, because jobs share the workspace state and the analysis is CPU-bound (threads
would only contend for the GIL); a daemon, so that a long analysis never delays `exit`.

Two lanes: ordinary jobs run in the order they were submitted; keyed jobs (a buffer's
analysis, keyed by its URI) run before them, the most recently submitted first, and a newer
job for a key replaces the one still waiting. So the buffer being edited is served first,
and a buffer edited many times while another was analysed is analysed once, at its latest.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from typing import Any, Callable, Hashable

log = logging.getLogger("graphsafe.lsp")


class Worker:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._ready = threading.Condition()
        self._jobs: deque = deque()  # ordinary jobs, first in first out
        self._latest: dict[Hashable, tuple] = {}  # key → its waiting job; the newest key last
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="graphsafe-worker", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> asyncio.Future:
        """Run `fn(*args)` after every ordinary job submitted before it; await the result on the loop."""
        future = self._loop.create_future()
        with self._ready:
            self._jobs.append((fn, args, future))
            self._ready.notify()
        return future

    def submit_latest(self, key: Hashable, superseded: Any, fn: Callable[..., Any], *args: Any) -> asyncio.Future:
        """Run `fn(*args)` before ordinary jobs, newest key first. If another job for `key` comes
        while this one waits, this one is dropped and its future resolves to `superseded`."""
        future = self._loop.create_future()
        with self._ready:
            replaced = self._latest.pop(key, None)
            self._latest[key] = (fn, args, future)
            self._ready.notify()
        if replaced is not None:
            self._loop.call_soon_threadsafe(self._deliver, replaced[2], superseded, None)
        return future

    def stop(self) -> None:
        """End the thread after the job it is running (waiting jobs are dropped: the server is exiting)."""
        with self._ready:
            self._stopped = True
            self._ready.notify()

    def _deliver(self, future: asyncio.Future, value: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def _next(self) -> tuple | None:
        with self._ready:
            while not (self._stopped or self._latest or self._jobs):
                self._ready.wait()
            if self._stopped:
                return None
            if self._latest:
                return self._latest.pop(next(reversed(self._latest)))
            return self._jobs.popleft()

    def _run(self) -> None:
        while (job := self._next()) is not None:
            fn, args, future = job
            value, error = None, None
            try:
                value = fn(*args)
            except BaseException as exc:  # delivered to the awaiting handler, which logs it
                error = exc
            try:
                self._loop.call_soon_threadsafe(self._deliver, future, value, error)
            except RuntimeError:  # the loop is closed: the server is exiting
                return
