"""The worker thread: ordinary jobs in order; a buffer's analysis first, the newest first, once per buffer;
a running analysis gives way to another buffer's and runs again afterwards."""

from __future__ import annotations

import asyncio
import threading
import time

from graphsafe.analyzer import limits
from graphsafe.lsp.worker import MAX_RESTARTS, Worker


def test_the_latest_analysis_runs_first_and_supersedes_the_waiting_one_for_its_buffer():
    ran: list[str] = []

    async def scenario():
        worker = Worker(asyncio.get_running_loop())
        started, release = threading.Event(), threading.Event()

        def long_analysis() -> bool:
            started.set()
            return release.wait(5)

        busy = worker.submit(long_analysis)  # holds the thread while the rest queue up
        assert started.wait(5)
        jobs = {
            "index": worker.submit(ran.append, "index"),
            "a1": worker.submit_latest("a.py", "superseded", ran.append, "a1"),
            "b1": worker.submit_latest("b.py", "superseded", ran.append, "b1"),
            "a2": worker.submit_latest("a.py", "superseded", ran.append, "a2"),
            "settings": worker.submit(ran.append, "settings"),
        }
        release.set()
        results = {name: await asyncio.wait_for(future, 5) for name, future in jobs.items()}
        assert await busy is True
        worker.stop()
        return results

    results = asyncio.run(scenario())
    assert ran == ["a2", "b1", "index", "settings"]  # a.py edited last; a1 never ran
    assert results["a1"] == "superseded" and results["a2"] is None


def test_an_error_in_a_job_reaches_its_awaiter_and_the_worker_goes_on():
    async def scenario():
        worker = Worker(asyncio.get_running_loop())
        failed = worker.submit_latest("a.py", None, lambda: 1 / 0)
        after = worker.submit(lambda: "after")
        try:
            await asyncio.wait_for(failed, 5)
        except ZeroDivisionError:
            pass
        else:
            raise AssertionError("the error was lost")
        assert await asyncio.wait_for(after, 5) == "after"
        worker.stop()

    asyncio.run(scenario())


class _Spinner:
    """A long analysis: Python code looping (under limits.run_limited, as an analysis runs) until released."""

    def __init__(self, name: str, ran: list[str]) -> None:
        self.name, self.ran = name, ran
        self.started, self.release = threading.Event(), threading.Event()

    def __call__(self) -> str:
        self.ran.append(self.name)
        return limits.run_limited(self._spin)

    def _spin(self) -> str:
        self.started.set()
        while not self.release.is_set():
            try:
                sum(range(100))
            except Exception:  # like the walker's per-function guard: must not swallow the cancellation
                pass
        return f"{self.name} done"


def test_a_running_analysis_gives_way_to_another_buffers_and_runs_again_after_it():
    ran: list[str] = []

    async def scenario():
        worker = Worker(asyncio.get_running_loop())
        hold, held = threading.Event(), threading.Event()
        worker.submit(lambda: held.set() or hold.wait(5))  # so that c.py and big.py queue up together
        assert held.wait(5)
        older = worker.submit_latest("c.py", "superseded", ran.append, "c")
        big = _Spinner("big", ran)
        long = worker.submit_latest("big.py", "superseded", big)
        hold.set()
        assert await asyncio.to_thread(big.started.wait, 5)
        asked = time.monotonic()
        small = worker.submit_latest("small.py", "superseded", lambda: ran.append("small") or "small done")
        assert await asyncio.wait_for(small, 5) == "small done"
        waited = time.monotonic() - asked
        assert not long.done()  # its awaiter sees only the run that completes
        big.release.set()
        assert await asyncio.wait_for(long, 5) == "big done"
        await asyncio.wait_for(older, 5)
        worker.stop()
        return waited

    waited = asyncio.run(scenario())
    assert waited < 1.0
    # cancelled, then run again behind the newcomer and ahead of the buffer that waited before it
    assert ran == ["big", "small", "big", "c"]


def test_a_newer_job_for_the_running_buffer_cancels_it_and_supersedes_it():
    ran: list[str] = []

    async def scenario():
        worker = Worker(asyncio.get_running_loop())
        first = _Spinner("a1", ran)
        old = worker.submit_latest("a.py", "superseded", first)
        assert await asyncio.to_thread(first.started.wait, 5)
        new = worker.submit_latest("a.py", "superseded", lambda: ran.append("a2") or "a2 done")
        results = await asyncio.wait_for(old, 1.0), await asyncio.wait_for(new, 1.0)
        worker.stop()
        return results

    assert asyncio.run(scenario()) == ("superseded", "a2 done")
    assert ran == ["a1", "a2"]  # the old version never runs to its end


def test_an_idle_job_is_dropped_when_a_buffers_analysis_arrives():
    ran: list[str] = []

    async def scenario():
        worker = Worker(asyncio.get_running_loop())
        head_start = _Spinner("prepare", ran)
        idle = worker.submit(head_start, idle=True)
        assert await asyncio.to_thread(head_start.started.wait, 5)
        analysis = worker.submit_latest("a.py", None, lambda: ran.append("a") or "a done")
        results = await asyncio.wait_for(analysis, 1.0), await asyncio.wait_for(idle, 1.0)
        worker.stop()
        return results

    assert asyncio.run(scenario()) == ("a done", None)
    assert ran == ["prepare", "a"]


def test_an_ordinary_job_is_never_cancelled():
    async def scenario():
        worker = Worker(asyncio.get_running_loop())
        job = _Spinner("index", [])
        ordinary = worker.submit(job)
        assert await asyncio.to_thread(job.started.wait, 5)
        analysis = worker.submit_latest("a.py", None, lambda: "a done")
        await asyncio.sleep(0.3)
        assert not analysis.done()  # waits for the ordinary job, which is not interrupted
        job.release.set()
        results = await asyncio.wait_for(ordinary, 5), await asyncio.wait_for(analysis, 5)
        worker.stop()
        return results

    assert asyncio.run(scenario()) == ("index done", "a done")


def test_an_analysis_gives_way_at_most_max_restarts_times_then_runs_to_its_end():
    ran: list[str] = []

    async def scenario():
        worker = Worker(asyncio.get_running_loop())
        big = _Spinner("big", ran)
        long = worker.submit_latest("big.py", "superseded", big)
        for i in range(MAX_RESTARTS + 1):
            assert await asyncio.to_thread(big.started.wait, 5)
            big.started.clear()
            small = worker.submit_latest(f"s{i}.py", "superseded", lambda i=i: ran.append(f"s{i}") or "ok")
            if i < MAX_RESTARTS:
                assert await asyncio.wait_for(small, 5) == "ok"
        await asyncio.sleep(0.3)
        assert not small.done()  # the last small buffer waits: the big one no longer gives way
        big.release.set()
        assert await asyncio.wait_for(long, 5) == "big done"
        assert await asyncio.wait_for(small, 5) == "ok"
        worker.stop()

    asyncio.run(scenario())
    # cancelled and run again MAX_RESTARTS times, then to its end before the last small buffer
    assert ran == ["big"] + [name for i in range(MAX_RESTARTS) for name in (f"s{i}", "big")] + [f"s{MAX_RESTARTS}"]


class _Waiter(_Spinner):
    """A big buffer's analysis waiting for its child process: gives way with limits.Paused (nothing lost)."""

    def __call__(self) -> str:
        self.ran.append(self.name)
        self.started.set()
        while not self.release.wait(0.01):
            if limits.cancel_requested():
                raise limits.Paused()
        return f"{self.name} done"


def test_an_analysis_waiting_for_its_child_gives_way_every_time_without_counting_restarts():
    ran: list[str] = []

    async def scenario():
        worker = Worker(asyncio.get_running_loop())
        big = _Waiter("big", ran)
        long = worker.submit_latest("big.py", "superseded", big)
        for i in range(MAX_RESTARTS + 2):
            assert await asyncio.to_thread(big.started.wait, 5)
            big.started.clear()
            small = worker.submit_latest(f"s{i}.py", "superseded", lambda i=i: ran.append(f"s{i}") or "ok")
            assert await asyncio.wait_for(small, 5) == "ok"  # past MAX_RESTARTS too
        assert await asyncio.to_thread(big.started.wait, 5)
        big.release.set()
        assert await asyncio.wait_for(long, 5) == "big done"
        worker.stop()

    asyncio.run(scenario())
    assert ran == ["big"] + [name for i in range(MAX_RESTARTS + 2) for name in (f"s{i}", "big")]
