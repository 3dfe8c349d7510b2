"""Big and deeply nested buffers (limits.needs_isolation) analysed in a child process of their own.

libcst's whole-file parse is native code: for a few hundred kilobytes it holds the process (and
the GIL, in stretches) for seconds, and pathological nesting takes it to gigabytes; neither can be
interrupted or capped from inside the process. So such a buffer's analyses (limits.run_limited's
calls inside `limits.isolated(runner)`) run in a child, under the worker caps:

- one child per buffer, forked from multiprocessing's fork server (a single-threaded process:
  the server has threads, which a fork of the server itself would copy mid-lock), started lazily;
  it keeps the buffer's incremental parser between edits (`parse_in_child`), as the server does
  for smaller buffers;
- the worker thread sends one request and waits; when another buffer's job comes it stops
  waiting (limits.Paused) while the child works on: asked again, the same request finds its
  answer. A different request for the buffer (a newer edit) kills the child, whose parse cannot be
  stopped otherwise, and a fresh one takes it;
- children end with their buffer, at shutdown and exit, and with the server's process however it
  ends: the fork server exits when the server does, and a child gets SIGKILL when the fork server
  exits (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

from graphsafe.analyzer import limits, workers

_POLL_S = 0.05  # how often a waiting worker looks at its cancel event
MAX_CHILDREN = 4  # each holds its buffer's syntax tree: ~80 bytes a character, above ~60 MB of its own
_parser = None  # in a child: its buffer's incremental parser


def parse_in_child(text: str):
    """The `parse` of an isolated buffer's analysis: the child's incremental parser."""
    global _parser
    if _parser is None:
        from graphsafe.analyzer.incremental import IncrementalParser

        _parser = IncrementalParser()
    return _parser.parse(text)


def _context():
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    # what every child needs, imported once in the fork server
    context.set_forkserver_preload(["graphsafe.lsp.isolation", "graphsafe.analyzer.engine"])
    return context


class BufferProcess:
    """The runner (limits.isolated) of one buffer's analyses: its child and the request in flight."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flight: _Flight | None = None

    def __call__(self, function: Callable, args: tuple, stack: int, cpu_limit_s: float):
        request = (function, args, stack, cpu_limit_s, limits.MEMORY_LIMIT_BYTES)
        with self._lock:
            flight = self._flight
            if flight is not None and flight.request not in (None, request):
                flight.end()  # a newer edit: the old parse cannot be interrupted
            if flight is None or flight.dead or flight.request is None:
                idle = flight.child if flight is not None and not flight.dead else None
                flight = self._flight = _Flight(request, idle)
        try:
            outcome = flight.answer()
        except limits.Cancelled:
            raise limits.Paused() from None  # the child goes on; the same request finds its answer
        except BaseException:
            with self._lock:
                if self._flight is flight:
                    self._flight = None
            raise
        with self._lock:
            if self._flight is flight:
                self._flight = _Flight.idle(flight)
        return workers.unwrap(outcome)

    def pid(self) -> int | None:
        flight = self._flight
        return flight.child.pid if flight is not None and flight.child is not None else None

    def end(self) -> None:
        with self._lock:
            if self._flight is not None:
                self._flight.end()
                self._flight = None


class _Child:
    def __init__(self, process, connection) -> None:
        self.process, self.connection = process, connection

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def kill(self) -> None:
        try:
            self.process.kill()
            self.process.join(5)
        except (OSError, ValueError, AssertionError):
            pass
        self.connection.close()


class _Flight:
    """One request to a buffer's child (started, if need be, in a thread of its own: the fork
    server's first start takes a second), and its answer."""

    def __init__(self, request: tuple | None, child: _Child | None) -> None:
        self.request = request
        self.child = child
        self.dead = False
        self._sent = threading.Event()
        self._error: BaseException | None = None
        self._ended = False
        if request is None:  # idle: a child waiting for its next request
            return
        threading.Thread(target=self._send, name="graphsafe-isolate", daemon=True).start()

    @classmethod
    def idle(cls, answered: "_Flight") -> "_Flight":
        return cls(None, answered.child)

    def _send(self) -> None:
        try:
            if self.child is None:
                context = _context()
                mine, theirs = context.Pipe()
                process = context.Process(target=_serve, args=(theirs,), name="graphsafe-buffer", daemon=True)
                process.start()
                theirs.close()
                self.child = _Child(process, mine)
                if self._ended:  # ended while starting
                    self.child.kill()
                    return
            self.child.connection.send(self.request)
        except BaseException as error:  # no child: the analysis reports it (GS002)
            self._error = error
        finally:
            self._sent.set()

    def answer(self) -> tuple[bool, object]:
        """The child's outcome; raises Cancelled when the waiting thread's cancel event is set."""
        while not self._sent.wait(_POLL_S):
            if limits.cancel_requested():
                raise limits.Cancelled()
        if self._error is not None:
            self.dead = True
            raise workers.AnalysisDied(f"could not start an analysis process: {self._error}")
        connection = self.child.connection
        while True:
            try:
                if connection.poll(_POLL_S):
                    return connection.recv()
            except (EOFError, OSError):
                break
            if limits.cancel_requested():
                raise limits.Cancelled()
        self.dead = True
        self.child.process.join(5)
        code = self.child.process.exitcode or 0
        self.child.kill()
        raise workers.death_as_exception(workers.reason_for(-code if code < 0 else None, code))

    def end(self) -> None:
        self._ended = True
        self.dead = True
        if self.child is not None:
            self.child.kill()


class IsolatedBuffers:
    """The children of the server's isolated buffers, by URI (the worker adds; anyone ends); at
    most MAX_CHILDREN, the least recently analysed buffer's child ending first (its next analysis
    starts a fresh one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_uri: OrderedDict[str, BufferProcess] = OrderedDict()

    def runner(self, uri: str) -> BufferProcess:
        with self._lock:
            runner = self._by_uri.setdefault(uri, BufferProcess())
            self._by_uri.move_to_end(uri)
            oldest = self._by_uri.popitem(last=False)[1] if len(self._by_uri) > MAX_CHILDREN else None
        if oldest is not None:
            oldest.end()
        return runner

    def end(self, uri: str) -> None:
        with self._lock:
            runner = self._by_uri.pop(uri, None)
        if runner is not None:
            runner.end()

    def end_all(self) -> None:
        with self._lock:
            runners, self._by_uri = list(self._by_uri.values()), {}
        for runner in runners:
            runner.end()

    def pids(self) -> list[int]:
        with self._lock:
            runners = list(self._by_uri.values())
        return [pid for pid in (r.pid() for r in runners) if pid is not None]


def _serve(connection) -> None:
    """A child's loop: one request at a time, each under the worker caps the server's limits give."""
    import resource

    from graphsafe.analyzer.parsing import no_cyclic_gc

    _die_with_parent()
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    workers.quiet_stderr()
    while True:
        try:
            function, args, stack, cpu_limit_s, memory_limit = connection.recv()
        except (EOFError, OSError):
            return
        limits.CPU_LIMIT_S, limits.MEMORY_LIMIT_BYTES = cpu_limit_s, memory_limit
        limits.arm_worker_limits()
        try:
            with no_cyclic_gc():
                outcome = workers.outcome_of(function, args, stack, cpu_limit_s)
        finally:
            limits.disarm_worker_limits()
        try:
            connection.send(outcome)
        except (OSError, ValueError):
            return


def _die_with_parent() -> None:
    """SIGKILL when the fork server ends (it ends when the language server does)."""
    import ctypes
    import os
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the fork server ended before the call
        os._exit(0)
