"""The worker thread: ordinary jobs in order; a buffer's analysis first, the newest first, once per buffer."""

from __future__ import annotations

import asyncio
import threading

from graphsafe.lsp.worker import Worker


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
