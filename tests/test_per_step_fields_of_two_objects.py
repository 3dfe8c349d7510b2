"""Arithmetic on two numbers each of which varies only if the project says so (a field of this
class and a field of an object it holds, each decided project-wide): the result varies where
either does, so the field that the program does change is not hidden by the one it does not
(`self.trajectory_length / self.step_size` with the step size adapted by a held adapter).
"""

from __future__ import annotations

from tests.helpers import project_diagnostics

ADAPTER = """
import math


class Adapter:
    def __init__(self, step_size=1.0):
        self.step_size = step_size
        self.log_step = 0.0

    def update(self, accept):
        self.log_step = self.log_step + 0.1 * (0.8 - accept)
        self.step_size = math.exp(self.log_step)
"""

KERNEL = """
import torch
from adapter import Adapter


class Kernel:
    def __init__(self, step_size=1.0, trajectory_length=1.0):
        self._adapter = Adapter(step_size)
        self.trajectory_length = trajectory_length

    @property
    def step_size(self):
        return self._adapter.step_size

    @property
    def num_steps(self):
        return max(1, int(self.trajectory_length / self.step_size))

    def sample(self, z: torch.Tensor, accept: float):  # graphsafe: region
        for _ in range(self.num_steps):
            z = z * 2
        self._adapter.update(accept)
        return z
"""


def gs301_lines(tmp_path, files):
    return {(d.path.rpartition("/")[2], d.start.line) for d in project_diagnostics(tmp_path, files) if d.code == "GS301"}


def test_a_trip_count_from_a_fixed_field_and_an_adapted_field_of_a_held_object_varies(tmp_path):
    found = gs301_lines(tmp_path, {"adapter.py": ADAPTER, "kernel.py": KERNEL})
    assert ("kernel.py", 20) in found


def test_the_same_trip_count_stays_silent_where_neither_field_changes(tmp_path):
    fixed = ADAPTER.replace("        self.step_size = math.exp(self.log_step)\n", "")
    found = gs301_lines(tmp_path, {"adapter.py": fixed, "kernel.py": KERNEL})
    assert ("kernel.py", 20) not in found


def test_conditions_joined_twice_keep_every_part_and_hold_where_one_does():
    from graphsafe.analyzer.facts import ANY_OF, any_of, parts_of

    inner = any_of([("pkg.A", "x"), ("not", "pkg.B", "y")])
    outer = any_of([inner, ("pkg.C", "z"), ("pkg.A", "x")])
    assert outer[0] == ANY_OF
    assert parts_of(outer) == [("pkg.A", "x"), ("not", "pkg.B", "y"), ("pkg.C", "z")]
    assert any_of([("pkg.A", "x")]) == ("pkg.A", "x")
