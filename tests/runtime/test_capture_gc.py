"""Trial capture runs as the PyTorch guidance asks: warm-up on a side stream, then capture with
Python's cyclic GC collected first and paused (a collection during capture can destroy another
graph and invalidate the capture, pytorch/pytorch#161037). CPU tests with the simulated backend."""

from __future__ import annotations

import contextlib
import gc

import torch

from graphsafe.runtime.capture import _SimulatedBackend, collector_paused, trial_capture


class _RecordingBackend(_SimulatedBackend):
    """The simulated backend, saying when the trial is inside its side-stream context."""

    def __init__(self) -> None:
        super().__init__()
        self.on_side_stream = False

    @contextlib.contextmanager
    def side_stream(self):
        self.on_side_stream = True
        try:
            yield
        finally:
            self.on_side_stream = False


def _recording_step(backend: _RecordingBackend, seen: list[tuple[bool, bool]]):
    def step(x: torch.Tensor) -> torch.Tensor:
        seen.append((backend.on_side_stream, gc.isenabled()))
        return x * 2
    return step


def test_warmup_runs_on_the_side_stream_and_capture_runs_with_the_collector_paused():
    backend, seen = _RecordingBackend(), []
    report = trial_capture(_recording_step(backend, seen), (torch.ones(3),), warmup=2, replays=1, timing=False,
                           _backend=backend)
    assert report.status == "ok", report.to_text()
    # two warm-up steps on the side stream with the collector on, then the capture with it off
    assert seen[:3] == [(True, True), (True, True), (False, False)]
    assert all(enabled for _, enabled in seen[3:])  # replays and eager reference: collector back on
    assert gc.isenabled()


def test_a_collector_the_caller_paused_stays_paused_after_the_trial():
    backend, seen = _RecordingBackend(), []
    gc.disable()
    try:
        trial_capture(_recording_step(backend, seen), (torch.ones(3),), warmup=1, replays=1, timing=False,
                      _backend=backend)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_runs_before_the_capture_so_no_stale_cycle_is_left_to_finalize_during_it():
    finalized = []

    class Cycle:
        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:
            finalized.append(gc.isenabled())

    gc.disable()  # keep the cycle alive until collector_paused collects it
    try:
        Cycle()
        assert finalized == []
        with collector_paused():
            assert finalized == [False] and not gc.isenabled()
    finally:
        gc.enable()
