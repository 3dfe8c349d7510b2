"""One daemon thread that runs analysis jobs and hands results back to the event loop.

One thread, because jobs share the workspace state and the analysis is CPU-bound (threads
would only contend for the GIL); a daemon, so that a long analysis never delays `exit`.

Two lanes: ordinary jobs run in the order they were submitted; keyed jobs (a buffer's
analysis, keyed by its URI) run before them, the most recently submitted first, and a newer
job for a key replaces the one still waiting. So the buffer being edited is served first,
and a buffer edited many times while another was analysed is analysed once, at its latest.

A keyed job that is running when another keyed job arrives is cancelled (analyzer/limits.py:
the analysis stops with Cancelled within about 0.1 s, once native code such as libcst's parser
returns) and waits again in its place among the keyed jobs: behind the newcomer, unless the
newcomer is a newer job for its own key, which replaces it. Its awaiter sees only the result of
the run that completes. Jobs submitted with `idle=True` (a head start on the next edit) are
cancelled the same way and dropped. A job that was only waiting for a child process (a big
buffer's analysis, lsp/isolation.py: limits.Paused) lost nothing and gives way without limit.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

from graphsafe.analyzer.limits import Cancelled, Paused, cancellable

log = logging.getLogger("graphsafe.lsp")
# Times a buffer's analysis gives way to other buffers' before it runs to its end regardless:
# typing on in a small buffer must not keep a big one's diagnostics stale for ever.
MAX_RESTARTS = 3


@dataclass
class _Job:
    fn: Callable[..., Any]
    args: tuple
    future: asyncio.Future
    key: Hashable = None  # keyed jobs only
    superseded: Any = None  # what the future gets if a newer job for `key` replaces this one
    order: int = 0  # keyed jobs: when submitted (a cancelled job waits again in its place)
    idle: bool = False  # dropped, not re-queued, when cancelled
    restarts: int = 0  # times it was cancelled for another buffer's job and queued again
    cancel: threading.Event = field(default_factory=threading.Event)


class Worker:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._ready = threading.Condition()
        self._jobs: deque[_Job] = deque()  # ordinary jobs, first in first out
        self._latest: dict[Hashable, _Job] = {}  # key → its waiting job, in submission order
        self._order = itertools.count()
        self._running: _Job | None = None
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="graphsafe-worker", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any, idle: bool = False) -> asyncio.Future:
        """Run `fn(*args)` after every ordinary job submitted before it; await the result on the loop.
        An `idle` job is dropped (its future resolves to None) if a keyed job arrives while it runs."""
        future = self._loop.create_future()
        with self._ready:
            self._jobs.append(_Job(fn, args, future, idle=idle))
            self._ready.notify()
        return future

    def submit_latest(self, key: Hashable, superseded: Any, fn: Callable[..., Any], *args: Any) -> asyncio.Future:
        """Run `fn(*args)` before ordinary jobs, newest key first, cancelling the keyed (or idle)
        job that runs meanwhile. If another job for `key` comes while this one waits (or runs),
        this one is dropped and its future resolves to `superseded`."""
        future = self._loop.create_future()
        with self._ready:
            replaced = self._latest.pop(key, None)
            self._latest[key] = _Job(fn, args, future, key, superseded, next(self._order))
            running = self._running
            if running is not None and (running.idle or running.key == key or (
                    running.key is not None and running.restarts < MAX_RESTARTS)):
                running.cancel.set()
            self._ready.notify()
        if replaced is not None:
            self._loop.call_soon_threadsafe(self._deliver, replaced.future, superseded, None)
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

    def _next(self) -> _Job | None:
        with self._ready:
            while not (self._stopped or self._latest or self._jobs):
                self._ready.wait()
            if self._stopped:
                return None
            if self._latest:
                job = self._latest.pop(next(reversed(self._latest)))
            else:
                job = self._jobs.popleft()
            self._running = job
            return job

    def _cancelled(self, job: _Job, lost_work: bool) -> tuple[bool, Any]:
        """A cancelled job: (True, what its future gets) when it is finished with, else
        (False, None) once it waits again among the keyed jobs, in the place its submission gave it;
        a restart counts against MAX_RESTARTS only when the job `lost_work`."""
        with self._ready:
            self._running = None
            if job.idle or job.key is None:
                return True, None
            if job.key in self._latest:  # a newer job for its key replaced it
                return True, job.superseded
            job.cancel = threading.Event()
            job.restarts += lost_work
            waiting = sorted([*self._latest.values(), job], key=lambda j: j.order)
            self._latest = {j.key: j for j in waiting}
            return False, None

    def _run(self) -> None:
        while (job := self._next()) is not None:
            value, error, finished = None, None, True
            try:
                with cancellable(job.cancel):
                    value = job.fn(*job.args)
            except Cancelled as stop:
                finished, value = self._cancelled(job, lost_work=not isinstance(stop, Paused))
            except BaseException as exc:  # delivered to the awaiting handler, which logs it
                error = exc
            with self._ready:
                self._running = None
            if not finished:
                continue
            try:
                self._loop.call_soon_threadsafe(self._deliver, job.future, value, error)
            except RuntimeError:  # the loop is closed: the server is exiting
                return
