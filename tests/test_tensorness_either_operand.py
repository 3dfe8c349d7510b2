"""Arithmetic and comparisons over values whose kinds only the project knows: the result is a
tensor when any operand is one, so each operand's project call is asked about, not only the
first (`self.kinetic(r) + energy_of(z)`: `kinetic` returns a number, `energy_of` a tensor)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphsafe.analyzer.engine import check_paths
from graphsafe.analyzer.pids import either
from graphsafe.config import Settings

OPS = """
import torch


def energy_of(z):
    pe = torch.zeros(())
    for v in z.values():
        pe = pe + (v * v).sum()
    return pe


def count_of(z):
    return len(z)
"""

STEP = """
from ops import {callee}


class Sampler:
    def kinetic(self, r):
        total = 0.0
        for v in r.values():
            total = total + v.dot(v)
        return 0.5 * total

    def step(self, z, r):  # graphsafe: region
        energy = self.kinetic(r) + {callee}(z)
        direction = 1 if self.threshold < -energy else -1
        return direction
"""


def branch_messages(tmp_path: Path, callee: str) -> list[tuple[int, str]]:
    (tmp_path / "ops.py").write_text(textwrap.dedent(OPS))
    (tmp_path / "step.py").write_text(textwrap.dedent(STEP.format(callee=callee)))
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    return [(d.start.line, d.message) for d in result.diagnostics if d.code == "GS201"]


def test_a_sum_is_a_tensor_when_its_second_operand_comes_from_a_helper_returning_one(tmp_path):
    found = branch_messages(tmp_path, "energy_of")
    assert [line for line, _ in found] == [14]
    assert "`energy_of(...)` returns a tensor" in found[0][1]


def test_a_sum_of_helpers_returning_numbers_stays_silent(tmp_path):
    assert branch_messages(tmp_path, "count_of") == []


def test_either_joins_pending_ids_once_each_and_skips_missing_ones():
    assert either(None, None) is None
    assert either("global:a.f", None) == "global:a.f"
    assert either("global:a.f", "global:a.g||global:a.f") == "global:a.f||global:a.g"
