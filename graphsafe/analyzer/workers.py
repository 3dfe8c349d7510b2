"""Forked worker processes that analyse files under per-file limits and whose death loses nothing.

A worker takes one job at a time, so when it dies (the kernel's CPU limit, libcst aborting on
a failed allocation under the memory cap, a crash in native code) the parent knows which file
it was on: that file gets a GS000 saying which limit it hit, a fresh worker takes the rest.
A process pool from concurrent.futures cannot say which job killed its worker, and fails every
pending one with it.
"""

from __future__ import annotations

import os
import pickle
import signal
from dataclasses import dataclass
from multiprocessing import Pipe
from multiprocessing.connection import wait
from typing import Callable, Iterator, Sequence

from graphsafe.analyzer import limits


@dataclass(frozen=True)
class WorkerDied:
    """A job whose worker ended before answering, and why (one sentence)."""
    reason: str


def can_fork() -> bool:
    return hasattr(os, "fork")


def run_jobs(function: Callable, jobs: Sequence[tuple], workers: int) -> Iterator[tuple[int, object]]:
    """(index, function(*jobs[index]) or WorkerDied) for every job, in order of completion,
    computed in `workers` forked processes, each job under limits.arm_worker_limits."""
    todo = list(range(len(jobs)))[::-1]  # popped from the end: the given order
    running: dict[object, _Worker] = {}
    try:
        while todo or running:
            while todo and len(running) < workers:
                worker = _Worker.start(function, list(running))
                running[worker.connection] = worker
                worker.give(todo.pop(), jobs)
            for connection in wait(list(running)):
                worker = running[connection]
                answer = worker.answer()
                yield worker.index, answer
                if isinstance(answer, WorkerDied):
                    del running[connection]
                elif todo:
                    worker.give(todo.pop(), jobs)
                else:
                    del running[connection]
                    worker.stop()
    finally:
        for worker in running.values():
            worker.kill()


class _Worker:
    def __init__(self, pid: int, connection) -> None:
        self.pid = pid
        self.connection = connection
        self.index = -1

    @classmethod
    def start(cls, function: Callable, siblings: list) -> "_Worker":
        parent, child = Pipe()
        pid = os.fork()
        if pid == 0:  # the worker: never returns into the caller's code
            for connection in (parent, *siblings):  # so that each worker sees the parent's end alone
                connection.close()
            code = 1
            try:
                _serve(child, function)
                code = 0
            finally:
                os._exit(code)
        child.close()
        return cls(pid, parent)

    def give(self, index: int, jobs: Sequence[tuple]) -> None:
        self.index = index
        self.connection.send((index, jobs[index]))

    def answer(self) -> object:
        try:
            return self.connection.recv()
        except (EOFError, OSError, pickle.UnpicklingError):
            return WorkerDied(self._reap())

    def stop(self) -> None:
        try:
            self.connection.send(None)
        except OSError:
            pass
        self.connection.close()
        _wait(self.pid)

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        self.connection.close()
        _wait(self.pid)

    def _reap(self) -> str:
        self.connection.close()
        status, cpu = _wait(self.pid)
        return death_reason(status, cpu)


def _wait(pid: int) -> tuple[int, float]:
    """The worker's wait status and CPU seconds, once it has ended."""
    try:
        _, status, usage = os.wait4(pid, 0)
    except ChildProcessError:
        return 0, 0.0
    return status, usage.ru_utime + usage.ru_stime


def death_reason(status: int, cpu_seconds: float) -> str:
    """Why a worker ended before answering, as the GS000 message of its file."""
    signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    return reason_for(signum, os.WEXITSTATUS(status) if signum is None else 0, cpu_seconds)


def reason_for(signum: int | None, exit_code: int, cpu_seconds: float = 0.0) -> str:
    """death_reason from the signal that ended a worker (None: it exited with `exit_code`)."""
    if signum == signal.SIGXCPU or cpu_seconds >= limits.CPU_LIMIT_S:
        return limits.cpu_limit_message()
    if signum == signal.SIGABRT:  # libcst's allocator gives up under the address-space cap
        return limits.memory_limit_message()
    if signum == signal.SIGKILL:
        return "the analysis was killed (by the system: out of memory?); file skipped"
    if signum is not None:
        return f"the analysis crashed ({signal.Signals(signum).name}: nesting too deep for libcst's parser?); file skipped"
    return f"the analysis ended unexpectedly (exit code {exit_code}); file skipped"


# -- one analysis in a child process (limits.isolated) --------------------------------------------


class AnalysisDied(Exception):
    """The child process of an isolated analysis ended before answering (a crash in native code)."""


def run_isolated(function: Callable, args: tuple, stack: int, cpu_limit_s: float):
    """A runner for limits.isolated in a process without other threads (the CLI): `function(*args)`
    under run_limited in one forked worker with the worker caps; returns what it returns and
    raises what it raises, as run_limited would here; a death under the memory or CPU cap raises
    MemoryError or CpuTimeExceeded, so that the file's GS000 says it as the pool's does."""
    [(_, answer)] = run_jobs(outcome_of, [(function, args, stack, cpu_limit_s)], 1)
    if isinstance(answer, WorkerDied):
        raise death_as_exception(answer.reason)
    return unwrap(answer)


def outcome_of(function: Callable, args: tuple, stack: int, cpu_limit_s: float) -> tuple[bool, object]:
    """(True, run_limited's value) or (False, what it raised), in a form a pipe can carry."""
    try:
        return True, limits.run_limited(function, *args, stack=stack, cpu_limit_s=cpu_limit_s)
    except BaseException as error:  # handed to the parent, which raises it as run_limited would
        try:
            pickle.dumps(error)
        except Exception:
            error = RuntimeError(f"{type(error).__name__}: {error}")
        return False, error


def unwrap(outcome: tuple[bool, object]):
    ok, value = outcome
    if ok:
        return value
    raise value


def death_as_exception(reason: str) -> BaseException:
    """The exception run_limited would have raised for a child that ended for `reason`."""
    if reason == limits.memory_limit_message():
        return MemoryError()
    if reason == limits.cpu_limit_message():
        return limits.CpuTimeExceeded()
    return AnalysisDied(reason.removesuffix("; file skipped"))


def _serve(connection, function: Callable) -> None:
    """A worker's loop: one job at a time, each under fresh limits."""
    import gc
    import resource

    gc.enable()  # forked while the parent's collector was paused (engine.lasting_objects)
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    quiet_stderr()
    while True:
        try:
            message = connection.recv()
        except EOFError:
            return
        if message is None:
            return
        index, args = message
        limits.arm_worker_limits()
        try:
            result = function(*args)
        except MemoryError:
            result = WorkerDied(limits.memory_limit_message())
        except BaseException as error:  # the parent reports it; the worker goes on
            result = WorkerDied(f"internal error while analysing this file: {type(error).__name__}: {error}")
        finally:
            limits.disarm_worker_limits()
        connection.send(result)


def quiet_stderr() -> None:
    """libcst prints "memory allocation of N bytes failed" and a backtrace as it aborts, and
    faulthandler (pytest's, a user's) a traceback on a crash; the parent reports the file instead."""
    import faulthandler

    faulthandler.disable()
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    except OSError:
        pass
