"""Runs corpus programs' run() on CPU through one shared tests/program_worker.py process.

`run_program(folder)` behaves as a fresh `python -c` per program did (its own process, one intra-op
thread, no bytecode written into the corpus) without paying torch's import each time. The worker
starts on first use and ends with the test session; a program that hangs past the timeout takes the
worker down with it, and the next call starts a new one."""

from __future__ import annotations

import atexit
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 600


class ProgramRunner:
    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._stderr = None

    def _start(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1")
            env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
            self._stderr = tempfile.TemporaryFile()
            self._process = subprocess.Popen([sys.executable, "-m", "tests.program_worker"], cwd=ROOT, env=env,
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                             text=True, start_new_session=True)
        return self._process

    def run(self, folder: Path, repeat: int = 1) -> dict:
        """The worker's reply: "results" (one dict per call of run()) and "types" (of the first)."""
        process = self._start()
        process.stdin.write(json.dumps({"folder": str(Path(folder).resolve()), "repeat": repeat}) + "\n")
        process.stdin.flush()
        line = self._read_line(process)
        if not line:
            self.close()
            raise AssertionError(f"{Path(folder).name}: the program worker died or timed out after "
                                 f"{TIMEOUT_S} s:\n{self._worker_stderr()}")
        reply = json.loads(line)
        if reply["exit"] != 0 or reply["results"] is None:
            raise AssertionError(f"{Path(folder).name}: run() failed (exit {reply['exit']}):\n{reply['stderr']}")
        return reply

    @staticmethod
    def _read_line(process: subprocess.Popen) -> str:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            if not selector.select(TIMEOUT_S):
                return ""
        return process.stdout.readline()

    def _worker_stderr(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-3000:]

    def close(self) -> None:
        if self._process is not None:
            if self._process.poll() is None:
                os.killpg(self._process.pid, signal.SIGKILL)  # the worker and a hung program it forked
            self._process.wait()
            self._process.stdin.close()
            self._process.stdout.close()
            self._process = None


_RUNNER = ProgramRunner()
atexit.register(_RUNNER.close)
# run() of the unchanged corpus programs, shared by the suites that compare against it (the
# determinism test computes it; the fix and finish tests compare fixed copies with it).
_CORPUS_RESULTS: dict[Path, dict[str, float]] = {}


def run_program(folder: Path) -> dict[str, float]:
    """run(steps=2) of the program in `folder`, in a process of its own: {output name: float}."""
    return _RUNNER.run(folder)["results"][0]


def run_repeatedly(folder: Path, repeat: int) -> dict:
    """`repeat` calls of run(steps=2) on one import of the program, in a process of its own."""
    return _RUNNER.run(folder, repeat)


def corpus_result(folder: Path) -> dict[str, float]:
    """run(steps=2) of an unchanged corpus program, computed once per test session."""
    folder = Path(folder).resolve()
    if folder not in _CORPUS_RESULTS:
        _CORPUS_RESULTS[folder] = run_program(folder)
    return _CORPUS_RESULTS[folder]


def remember_corpus_result(folder: Path, result: dict[str, float]) -> None:
    _CORPUS_RESULTS.setdefault(Path(folder).resolve(), result)
