"""Per-file resource limits: CPU time (in every process), memory (in worker processes) and stack.

One file's analysis runs in a thread of its own, for two reasons:
- its CPU time can be read from outside (the thread's CPU clock): a file is stopped after
  `CPU_LIMIT_S` seconds of *CPU* time, so a loaded machine does not stop cheap files (a
  wall-clock limit did);
- its stack is sized for the file: libcst's native parser recurses once per link of an
  `a and b and ...` chain (~2 KiB each), which CPython accepts at any length, and overflowing
  the 8 MiB main-thread stack is a segmentation fault, not an exception.

The CPU limit is raised in the analysing thread as an asynchronous exception, so it stops Python
code anywhere; native code (libcst's parser) is stopped when it returns, or, in a worker
process, by RLIMIT_CPU (see `arm_worker_limits`). Worker processes also get an address-space
cap; libcst aborts the process when an allocation fails there, which the pool reports (workers.py).

The same asynchronous exception cancels an analysis nobody wants any more (the language server's
worker, when another buffer's job arrives): see `cancellable`.

libcst's whole-file parse is native: it can neither be interrupted nor bounded in memory from inside
the process (it aborts the process when an allocation fails). Texts that are big or deeply nested
(`needs_isolation`) are therefore analysed in a child process where a front end asks for it (see
`isolated`): the CLI forks one under the worker caps (workers.run_isolated), the language server
keeps one per big buffer (lsp/isolation.py), which it can leave working or kill.
"""

from __future__ import annotations

import ctypes
import itertools
import math
import os
import sys
import threading
import time
from contextlib import contextmanager

CPU_LIMIT_S = 120.0
MEMORY_LIMIT_BYTES = 4 << 30  # per file, in a worker process, above what the worker held before it
# A worker stuck in native code past the CPU limit is stopped by the kernel this much later.
CPU_GRACE_S = 10

STACK_PER_LINK = 4096  # bytes of native stack per nested libcst node (measured: ~2 KiB per `and`)
_MIN_STACK = 32 << 20
MAX_STACK = 4 << 30  # address space only: untouched stack pages take no memory
# libcst nesting that CPython bounds (its compiler stops near 3,000 levels; libcst spends up to
# ~4 nodes on one of them) plus the chains it does not bound (`and`/`or`, adjacent strings)
_BOUNDED_LINKS = 12_000

_POLL_S = 0.1

# Texts analysed in a child process where a front end asks for it (`isolated`): longer than this
# (libcst: ~4 s of native parsing and ~300 MB for 330 KB), or nested more than this by
# `nesting_weight` (measured: 20 lines of a 199-deep `f(lambda: ...)`, 44 KB weighing 792,020, take
# libcst 3.9 GB; 500 lines of a 30-deep call, 48 KB weighing 450,000, 1.1 GB; torch/_tensor.py, 70 KB,
# weighs 1,501 and takes 20 MB).
ISOLATE_MIN_CHARS = 64 * 1024
NESTING_WEIGHT_LIMIT = 20_000
_BRACKETS = b"([{)]}"
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(_BRACKETS)))
_STEP = {code: 1 if code in b"([{" else -1 for code in _BRACKETS}


class LimitExceeded(BaseException):
    """Raised in an analysing thread; a BaseException so that no `except Exception` swallows it."""


class CpuTimeExceeded(LimitExceeded):
    pass


class Cancelled(BaseException):
    """Raised in an analysing thread (and then in its caller) when the caller's cancel event is
    set; a BaseException for the same reason as LimitExceeded: no function's guard may turn it
    into a diagnostic. The analysis is abandoned whole: its caller keeps no partial result."""


class Paused(Cancelled):
    """Cancelled while waiting for an analysis that goes on in a child process: nothing is lost,
    the same request finds its answer when it is asked again (lsp/isolation.py)."""


# The cancel event of the analyses run_limited starts from this thread (see `cancellable`), and
# the runner of the analyses it isolates (see `isolated`)
_cancel = threading.local()
_isolation = threading.local()


@contextmanager
def cancellable(event: threading.Event):
    """Inside the block, run_limited calls made by this thread stop with Cancelled within about
    _POLL_S once `event` is set (native code, such as libcst's parser, first returns)."""
    previous = getattr(_cancel, "event", None)
    _cancel.event = event
    try:
        yield
    finally:
        _cancel.event = previous


def cancel_requested() -> bool:
    """True once the event of an enclosing `cancellable` block is set (for runners that wait)."""
    event = getattr(_cancel, "event", None)
    return event is not None and event.is_set()


@contextmanager
def isolated(runner, when=None):
    """Inside the block, a run_limited call made by this thread whose text (its longest string
    argument: the source; paths and module names are short) satisfies `when` (every call when
    None) returns `runner(function, args, stack, cpu_limit_s)` instead of running here. Not in a
    worker process, which is under the caps already."""
    previous = getattr(_isolation, "rule", None)
    _isolation.rule = (runner, when)
    try:
        yield
    finally:
        _isolation.rule = previous


def nesting_weight(text: str) -> int:
    """The sum, over the brackets of `text`, of their nesting depth: what libcst's memory grows
    with beyond the text's length (brackets in strings and comments count too: an upper bound
    for all but contrived text). ~0.3 ms for 70 KB."""
    brackets = text.encode("utf-8", "surrogateescape").translate(None, _NOT_BRACKETS)
    return sum(itertools.accumulate(map(_STEP.__getitem__, brackets)))


def needs_isolation(text: str) -> bool:
    """A text whose analysis may hold a process's native code for seconds or take gigabytes."""
    return len(text) > ISOLATE_MIN_CHARS or nesting_weight(text) > NESTING_WEIGHT_LIMIT


def _isolating_runner(args: tuple):
    rule = getattr(_isolation, "rule", None)
    if rule is None or _worker_base is not None:
        return None
    runner, when = rule
    if when is not None:
        text = max((a for a in args if isinstance(a, str)), key=len, default="")
        if not when(text):
            return None
    return runner


def cpu_limit_message(limit_s: float = None) -> str:
    return f"CPU-time limit exceeded ({_seconds(CPU_LIMIT_S if limit_s is None else limit_s)} of CPU time); file skipped"


def memory_limit_message(limit: int = None) -> str:
    return f"memory limit exceeded ({_gib(MEMORY_LIMIT_BYTES if limit is None else limit)}); file skipped"


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _gib(value: int) -> str:
    return f"{value / 2**30:g} GiB" if value >= 2**30 else f"{value / 2**20:g} MiB"


def stack_bytes(text: str) -> int:
    """Native stack enough for the deepest libcst tree `text` can have (an upper bound: every
    `and`/`or` and every other quote counted as one link of a chain)."""
    links = _BOUNDED_LINKS + text.count("and") + text.count("or") + (text.count("'") + text.count('"')) // 2
    return min(MAX_STACK, max(_MIN_STACK, links * STACK_PER_LINK))


# threading.stack_size is process-wide: set it and start the thread under one lock
_start_lock = threading.Lock()


def run_limited(function, *args, stack: int = _MIN_STACK, cpu_limit_s: float | None = None):
    """`function(*args)` in a new thread with `stack` bytes of stack, stopped with
    CpuTimeExceeded after `cpu_limit_s` (default CPU_LIMIT_S) seconds of its CPU time, or with
    Cancelled once the event of an enclosing `cancellable` block is set; in a child process
    instead inside an `isolated` block that wants its text isolated."""
    limit = CPU_LIMIT_S if cpu_limit_s is None else cpu_limit_s
    cancel = getattr(_cancel, "event", None)
    if cancel is not None and cancel.is_set():
        raise Cancelled()
    runner = _isolating_runner(args)
    if runner is not None:
        return runner(function, args, stack, limit)
    outcome: list = []
    clock: list = []

    def target():
        try:
            clock.append(_own_cpu_clock())  # taken here: a finished thread's handle must not be used
            try:
                outcome.append((True, function(*args)))
            except BaseException as error:  # handed to the caller's thread
                outcome.append((False, error))
        except BaseException:  # a stop that came as the thread ended: the outcome (or none) stands
            pass

    worker = threading.Thread(target=target, name="graphsafe-analysis", daemon=True)
    _cap_address_space(stack)
    with _start_lock:
        previous = threading.stack_size()
        threading.stack_size(stack)
        try:
            worker.start()
        finally:
            threading.stack_size(previous)
    stopped_by = _watch(worker, clock, limit, cancel, outcome)
    if not outcome:  # stopped between returning and handing its result over
        raise (stopped_by or CpuTimeExceeded)()
    ok, value = outcome[0]
    if ok:
        return value
    raise value


def _watch(worker: threading.Thread, clock: list, limit: float, cancel: threading.Event | None,
           outcome: list) -> type[BaseException] | None:
    """Wait for `worker`, raising CpuTimeExceeded in it once its CPU clock passes `limit`
    (wall-clock time where the platform has no per-thread CPU clock), or Cancelled once `cancel`
    is set; returns the exception raised, if any. Waits until the thread has ended either way:
    what it was changing (a buffer's incremental parser) is the caller's again only then."""
    started = time.monotonic()
    stopped_by = None
    while True:
        worker.join(_POLL_S)
        if not worker.is_alive():
            return stopped_by
        if stopped_by is not None or outcome:  # already stopped, or finished: nothing to interrupt
            continue
        if cancel is not None and cancel.is_set():
            exception = Cancelled
        else:
            used = _cpu_seconds(clock[0]) if clock and clock[0] is not None else time.monotonic() - started
            exception = CpuTimeExceeded if used is not None and used > limit else None
        if exception is not None and _raise_in(worker, exception):  # delivered when native code returns
            stopped_by = exception


def _own_cpu_clock():
    try:
        return time.pthread_getcpuclockid(threading.get_ident())
    except (AttributeError, OSError):
        return None


def _cpu_seconds(clock) -> float | None:
    try:
        return time.clock_gettime(clock)
    except OSError:  # the thread has just ended
        return None


def _raise_in(worker: threading.Thread, exception: type[BaseException]) -> bool:
    set_async = ctypes.pythonapi.PyThreadState_SetAsyncExc
    return set_async(ctypes.c_ulong(worker.ident), ctypes.py_object(exception)) == 1


# Raising the recursion limit is process-wide: one deep analysis at a time does it.
_deep_lock = threading.Lock()


def run_with_recursion_limit(limit: int, function, *args):
    """`function(*args)` with Python's recursion limit raised to `limit` (never lowered); the
    caller runs on a stack sized for that depth (run_limited)."""
    with _deep_lock:
        previous = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous, limit))
        try:
            return function(*args)
        finally:
            sys.setrecursionlimit(previous)


# In a worker process: the address space it held before its current file (arm_worker_limits)
_worker_base: int | None = None
_ADDRESS_SLACK = 256 << 20  # the analysis thread's malloc arena and libraries' mappings


def arm_worker_limits() -> None:
    """In a worker process, before one file: the kernel ends the process CPU_GRACE_S seconds
    after its CPU limit (native code the asynchronous exception cannot stop), and allocations
    past MEMORY_LIMIT_BYTES fail (the cap is set once the analysis thread's stack is known)."""
    import resource

    global _worker_base
    used = resource.getrusage(resource.RUSAGE_SELF)
    _set_soft(resource, resource.RLIMIT_CPU, math.ceil(used.ru_utime + used.ru_stime + CPU_LIMIT_S + CPU_GRACE_S))
    _worker_base = _address_space()


def _cap_address_space(stack: int) -> None:
    if _worker_base is not None:
        import resource

        _set_soft(resource, resource.RLIMIT_AS, _worker_base + MEMORY_LIMIT_BYTES + stack + _ADDRESS_SLACK)


def disarm_worker_limits() -> None:
    import resource

    global _worker_base
    _worker_base = None
    for kind in (resource.RLIMIT_CPU, resource.RLIMIT_AS):
        _set_soft(resource, kind, resource.RLIM_INFINITY)


def _set_soft(resource, kind: int, value: int) -> None:
    soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY and (value == resource.RLIM_INFINITY or value > hard):
        value = hard
    try:
        resource.setrlimit(kind, (value, hard))
    except (ValueError, OSError):
        pass


def _address_space() -> int | None:
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None
