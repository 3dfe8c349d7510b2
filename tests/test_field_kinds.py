"""Fields of objects of classes defined in other files: `batch.probs` with a dataclass field
`probs: torch.Tensor`, `self.scheduler.sigmas` set from a function that returns a tensor.

The per-file walk cannot see the other class; the field is pending (`field:<class>:<attr>`) and
resolved project-wide from the class's attribute slots (a tensor, or what a project call
returns), through base classes. Look-alikes keep numbers or lists in the same fields.
(Held-out set 6: dqn_update's replay `Batch`, cfg_sampler's `KarrasScheduler.sigmas`.)
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphsafe.analyzer.engine import check_paths
from graphsafe.config import Settings


def found(tmp_path: Path, files: dict[str, str]) -> set[tuple[str, int, str]]:
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    return {(Path(d.path).name, d.start.line, d.code) for d in result.diagnostics}


BATCH = """
    from dataclasses import dataclass

    import torch


    @dataclass
    class Batch:
        obs: torch.Tensor
        probs: {annotation}
"""

AGENT = """
    import torch
    from replay import Batch


    def update(batch: Batch, step: int):  # graphsafe: region
        assert (batch.probs > 0).all(), f"zero-priority sample at {step}"
        return batch.obs * 2
"""


def test_a_tensor_field_of_a_dataclass_in_another_file(tmp_path: Path):
    got = found(tmp_path, {"replay.py": BATCH.format(annotation="torch.Tensor"), "agent.py": AGENT})
    assert ("agent.py", 7, "GS201") in got


def test_a_number_field_of_a_dataclass_in_another_file_stays_silent(tmp_path: Path):
    got = found(tmp_path, {"replay.py": BATCH.format(annotation="list[float]"), "agent.py": AGENT})
    assert not {d for d in got if d[0] == "agent.py"}


SCHEDULER = """
    import torch


    def make_sigmas(n: int) -> {returns}:
        return {value}


    class Base:
        def __init__(self, n: int):
            self.sigmas = make_sigmas(n)


    class Scheduler(Base):
        pass
"""

SAMPLER = """
    import torch
    from schedules import Scheduler
    from steps import euler_step


    class Sampler:
        def __init__(self):
            self.scheduler = Scheduler(10)

        def step(self, x: torch.Tensor, i: int):  # graphsafe: region
            sigmas = self.scheduler.sigmas
            sigma_next = sigmas[i + 1]
            print(f"sigma {sigma_next:.3f}")
            return euler_step(x, sigma_next)
"""

STEPS = """
    def euler_step(x, sigma_next):
        if sigma_next > 0:
            x = x * 2
        return x
"""


def test_a_field_set_from_a_tensor_function_reaches_the_reader_and_its_callee(tmp_path: Path):
    files = {"schedules.py": SCHEDULER.format(returns="torch.Tensor", value="torch.linspace(1, 0, n)"),
             "sampler.py": SAMPLER, "steps.py": STEPS}
    got = found(tmp_path, files)
    # the f-string of a tensor (through a base class's field), and the callee's branch on it
    assert {("sampler.py", 14, "GS104"), ("steps.py", 3, "GS201")} <= got


def test_a_field_set_from_a_list_function_stays_silent(tmp_path: Path):
    files = {"schedules.py": SCHEDULER.format(returns="list", value="[1.0 - k / n for k in range(n)]"),
             "sampler.py": SAMPLER, "steps.py": STEPS}
    got = found(tmp_path, files)
    assert not {d for d in got if d[2] in ("GS104", "GS201")}


LOSSES = """
    from dataclasses import dataclass

    import torch


    @dataclass
    class Terms:
        loss: torch.Tensor
        kl_per_dim: {annotation}


    def elbo(x: torch.Tensor){returns}:
        return Terms(loss=x.sum(), kl_per_dim=x.mean(0))
"""

TRAIN = """
    import torch
    from losses import elbo


    def train_step(x: torch.Tensor):  # graphsafe: region
        terms = elbo(x)
        collapsed = terms.kl_per_dim.max() < 0.1
        if collapsed:
            x = x * 2
        return terms.loss
"""


def test_a_tensor_field_of_an_object_returned_from_another_file(tmp_path: Path):
    got = found(tmp_path, {"losses.py": LOSSES.format(annotation="torch.Tensor", returns=" -> Terms"), "train.py": TRAIN})
    assert ("train.py", 9, "GS201") in got


def test_a_returned_constructor_call_names_the_class_without_an_annotation(tmp_path: Path):
    got = found(tmp_path, {"losses.py": LOSSES.format(annotation="torch.Tensor", returns=""), "train.py": TRAIN})
    assert ("train.py", 9, "GS201") in got


def test_a_number_field_of_a_returned_object_stays_silent(tmp_path: Path):
    got = found(tmp_path, {"losses.py": LOSSES.format(annotation="float", returns=" -> Terms"), "train.py": TRAIN})
    assert ("train.py", 9, "GS201") not in got
