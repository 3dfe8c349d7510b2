"""GS401 across methods and files: an attribute that captured code reads, rebound by a method
that runs between replays (`scheduler.set_timesteps()` per request after the first capture)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from graphsafe.analyzer.engine import check_paths, check_source
from graphsafe.config import Settings

SCHEDULER = """
import torch


class Scheduler:
    def __init__(self):
        self.index = 0
        self.sigmas = torch.ones(1)

    def set_timesteps(self, n: int):
        self.sigmas = torch.linspace(1.0, 0.0, n + 1)

    def step(self, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        {step_body}
"""

PIPELINE = """
import torch
from scheduler import Scheduler


class Pipeline:
    def __init__(self, scheduler: Scheduler):
        self.scheduler = scheduler
        self.graph = None

    def denoise(self, x: torch.Tensor) -> torch.Tensor:
        return self.scheduler.step(x * 0.5, x)

    def _capture(self, x: torch.Tensor):
        self.static_x = x.clone()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_out = self.denoise(self.static_x)

    def __call__(self, x: torch.Tensor, n: int):
        {call_body}
        if self.graph is None:
            self._capture(x)
        self.static_x.copy_(x)
        self.graph.replay()
        return self.static_out.clone()
"""

STEP = "return x + (self.sigmas[1] - self.sigmas[0]) * v"


def found(tmp_path: Path, step_body: str = STEP, call_body: str = "self.scheduler.set_timesteps(n)") -> set:
    (tmp_path / "scheduler.py").write_text(textwrap.dedent(SCHEDULER).replace("{step_body}", step_body))
    (tmp_path / "pipeline.py").write_text(textwrap.dedent(PIPELINE).replace("{call_body}", call_body))
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    return {(Path(d.path).name, d.start.line, d.code) for d in result.diagnostics if d.code == "GS401"}


def test_rebinding_read_state_in_the_loop_that_replays(tmp_path):
    assert found(tmp_path) == {("scheduler.py", 11, "GS401")}


@pytest.mark.parametrize("step_body,call_body", [
    (STEP, "pass"),  # set_timesteps is never called between replays
    ("return x + v", "self.scheduler.set_timesteps(n)"),  # the captured code does not read sigmas
    # the captured step rebinds it too: its own state (reported there, in the region)
    ("self.sigmas = self.sigmas[1:]\n        return x + v * self.sigmas[0]", "self.scheduler.set_timesteps(n)"),
])
def test_look_alikes_stay_silent(tmp_path, step_body, call_body):
    assert ("scheduler.py", 11, "GS401") not in found(tmp_path, step_body, call_body)


def test_editor_buffer_sees_the_same(tmp_path):
    found(tmp_path)
    others = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1).facts
    source = (tmp_path / "scheduler.py").read_text()
    result = check_source(source, str(tmp_path / "scheduler.py"), Settings(root=tmp_path),
                          others=[f for f in others if not f.path.endswith("scheduler.py")])
    assert [(d.start.line, d.code) for d in result.diagnostics if d.code == "GS401"] == [(11, "GS401")]


SESSION = """
import torch


class Session:
    def __init__(self, mask: torch.Tensor):
        self.mask = mask
        self.graph = None

    def reset(self, mask: torch.Tensor) -> None:
        self.mask = mask

    def step(self, x: torch.Tensor) -> torch.Tensor:
        return x.masked_fill(self.mask, 0.0)

    def capture(self, x: torch.Tensor) -> None:
        self.static_x = x.clone()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_out = self.step(self.static_x)

    def run(self, n: int) -> None:
        for _ in range(n):
            self.graph.replay()


def translate(session: Session, x: torch.Tensor, masks: list) -> None:
    session.capture(x)
    for mask in masks:
        {driver}
"""


def test_a_driver_that_resets_then_runs_a_replaying_method(tmp_path):
    """`session.reset(mask)` then `session.run()`: the reset is between replays, one call over."""
    (tmp_path / "session.py").write_text(SESSION.format(driver="session.reset(mask)\n        session.run(3)"))
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    assert [(d.start.line, d.code) for d in result.diagnostics] == [(11, "GS401")]


def test_a_driver_that_never_replays_stays_silent(tmp_path):
    (tmp_path / "session.py").write_text(SESSION.format(driver="session.reset(mask)\n        session.step(x)"))
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    assert result.diagnostics == []


# The captured code reads the attribute through the instance (`self.scheduler.sigmas`), in
# another file than the class that rebinds it.
READ_THROUGH_INSTANCE = "self.scheduler.step(x * self.scheduler.sigmas[0], x)"


def _through_instance(tmp_path: Path, denoise: str = READ_THROUGH_INSTANCE, rebind: str | None = None) -> set:
    scheduler = textwrap.dedent(SCHEDULER).replace("{step_body}", "return x + v")
    if rebind is not None:
        scheduler = scheduler.replace("self.sigmas = torch.linspace(1.0, 0.0, n + 1)", rebind)
        scheduler = "from sigmas import make_sigmas\n" + scheduler
        (tmp_path / "sigmas.py").write_text(
            "import torch\n\n\ndef make_sigmas(n: int) -> torch.Tensor:\n    return torch.linspace(1.0, 0.0, n + 1)\n")
    pipeline = textwrap.dedent(PIPELINE).replace("{call_body}", "self.scheduler.set_timesteps(n)")
    pipeline = pipeline.replace("return self.scheduler.step(x * 0.5, x)", f"return {denoise}")
    (tmp_path / "scheduler.py").write_text(scheduler)
    (tmp_path / "pipeline.py").write_text(pipeline)
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    return {(Path(d.path).name, d.start.line, d.code) for d in result.diagnostics if d.code == "GS401"}


def test_an_attribute_read_through_an_instance_in_another_file(tmp_path):
    assert _through_instance(tmp_path) == {("scheduler.py", 11, "GS401")}


def test_a_rebinding_to_what_a_function_in_another_file_returns(tmp_path):
    found = _through_instance(tmp_path, rebind="self.sigmas = make_sigmas(n).to(self.device)")
    assert found == {("scheduler.py", 12, "GS401")}


@pytest.mark.parametrize("denoise", [
    "self.scheduler.step(x * 0.5, x)",  # the captured code reads no sigmas at all
    "self.scheduler.step(x * self.scheduler.index, x)",  # another attribute of the instance
])
def test_instance_reads_of_other_attributes_stay_silent(tmp_path, denoise):
    assert _through_instance(tmp_path, denoise) == set()


def test_a_function_that_returns_no_tensor_stays_silent(tmp_path):
    found = _through_instance(tmp_path, rebind="self.sigmas = make_sigmas(n).tolist()")
    assert found == set()


def test_editor_buffer_sees_readers_in_other_files(tmp_path):
    _through_instance(tmp_path)
    others = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1).facts
    source = (tmp_path / "scheduler.py").read_text()
    result = check_source(source, str(tmp_path / "scheduler.py"), Settings(root=tmp_path),
                          others=[f for f in others if not f.path.endswith("scheduler.py")])
    assert [(d.start.line, d.code) for d in result.diagnostics if d.code == "GS401"] == [(11, "GS401")]


# An attribute set to a tensor in `__init__`, rebound between replays to a value whose kind is
# not known here: an entry of a dict batch, what a module (maybe a graphed one) returns.
LOADER = """
import torch


class Agent:
    def __init__(self, encoder, device: torch.device):
        self.encoder = encoder
        self.device = device
        self.g = {init}
        self.graph = None

    def update(self) -> torch.Tensor:
        return self.g * 2

    def capture(self) -> None:
        self.graph = torch.cuda.CUDAGraph()
        self.graph.capture_begin()
        self.update()
        self.graph.capture_end()

    def load(self, batch: dict, mel: torch.Tensor) -> None:
        {rebind}

    def train(self, batches: list, mel: torch.Tensor) -> None:
        for batch in batches:
            self.load(batch, mel)
            self.graph.replay()
"""


def _loader(tmp_path: Path, rebind: str, init: str = "torch.zeros(4, device=device)") -> list:
    (tmp_path / "agent.py").write_text(LOADER.format(init=init, rebind=rebind))
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    return [(d.start.line, d.code) for d in result.diagnostics]


@pytest.mark.parametrize("rebind", ['self.g = batch["g"].to(self.device)', "self.g = self.encoder(mel)"])
def test_a_rebinding_of_a_tensor_attribute_to_a_value_of_unknown_kind(tmp_path, rebind):
    assert _loader(tmp_path, rebind) == [(22, "GS401")]


@pytest.mark.parametrize("rebind, init", [
    ('self.g.copy_(batch["g"])', "torch.zeros(4, device=device)"),  # copied in place
    ('self.g = batch["g"]', "batch_size_default()"),  # the class never binds it to a tensor
    ('self.g = batch["g"]', "None"),  # None first: may be anything the loader puts there
])
def test_unknown_rebinding_look_alikes_stay_silent(tmp_path, rebind, init):
    assert _loader(tmp_path, rebind, init) == []


# The capture block binds its own output, reads it again, and the eager fallback rebinds it.
OUTPUT = """
import torch


class Task:
    def __init__(self):
        self.static_x = torch.zeros(2)
        self.static_out = torch.zeros(2)
        self.graph = None

    def step(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def capture(self) -> None:
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            {block}
            self.best = self.static_out.argmax(-1)

    def run(self, n: int) -> None:
        for _ in range(n):
            if self.graph is not None:
                self.graph.replay()
            else:
                self.static_out = self.step(self.static_x)
"""


def test_an_output_the_capture_block_binds_and_rereads_is_not_an_input(tmp_path):
    (tmp_path / "task.py").write_text(OUTPUT.format(block="self.static_out = self.step(self.static_x)"))
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    assert result.diagnostics == []


def test_an_attribute_the_block_reads_without_binding_it_is_an_input(tmp_path):
    """The look-alike: the block reads `self.static_out` it did not produce (an input)."""
    (tmp_path / "task.py").write_text(OUTPUT.format(block="self.other = self.step(self.static_x)"))
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    assert [(d.start.line, d.code) for d in result.diagnostics] == [(25, "GS401")]
