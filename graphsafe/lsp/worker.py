"""One daemon thread that runs analysis jobs in order and hands results back to the event loop.

One thread, because jobs share the workspace state and the analysis is CPU-bound (threads
would only contend for the GIL); a daemon, so that a long analysis never delays `exit`.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from typing import Any, Callable

log = logging.getLogger("graphsafe.lsp")

_STOP = object()


class Worker:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="graphsafe-worker", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> asyncio.Future:
        """Run `fn(*args)` after every job submitted before it; await the result on the loop."""
        future = self._loop.create_future()
        self._jobs.put((fn, args, future))
        return future

    def stop(self) -> None:
        self._jobs.put(_STOP)

    def _deliver(self, future: asyncio.Future, value: Any, error: BaseException | None) -> None:
        if future.cancelled():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _STOP:
                return
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
