"""GS402 at the call of a helper that builds a device tensor from host data
(analyzer/host_copy_helpers.py): `scalar_like(x, 0.0)` where `scalar_like` returns
`torch.tensor(value, device=x.device)`, in this file or another, is a copy of its own at each
call in the region. A helper given a number that copies nothing stays quiet, and so do library
calls given numbers."""

from __future__ import annotations

from tests.helpers import lines_of, project_findings

HELPER = '''\
import torch


def scalar_like(prototype, fill_value):
    return torch.tensor(fill_value, dtype=prototype.dtype, device=prototype.device)


def scaled(x, factor):
    return x * factor
'''


def test_each_call_of_a_helper_in_another_module_that_copies_a_python_number_is_reported(tmp_path):
    step = ("import torch\n\nfrom pkg.util import scalar_like\n\n\n"
            "def step(x):  # graphsafe: region\n"
            "    lo = scalar_like(x, 0.0)\n    hi = scalar_like(x, float('inf'))\n    return torch.clamp(x, lo, hi)\n")
    found = project_findings(tmp_path, {"pkg/__init__.py": "", "pkg/util.py": HELPER, "pkg/step.py": step}, "GS402")
    assert {(path, line) for path, line, _ in found} == {("step.py", 7), ("step.py", 8), ("util.py", 5)}


def test_a_helper_given_a_number_that_copies_nothing_stays_quiet():
    source = HELPER + "\n\ndef step(x):  # graphsafe: region\n    return scaled(x, 2.0)\n"
    assert lines_of(source, "GS402") == []


def test_a_same_file_copying_helper_is_reported_at_the_call_and_in_its_body():
    source = HELPER + "\n\ndef step(x):  # graphsafe: region\n    return x + scalar_like(x, -1)\n"
    assert lines_of(source, "GS402") == [5, 13]


def test_library_calls_given_numbers_stay_quiet():
    source = "import torch\n\n\ndef step(x):  # graphsafe: region\n    return torch.clamp(x, 0.0, 1.0) + max(1, 2)\n"
    assert lines_of(source, "GS402") == []


def test_a_number_the_helper_does_not_copy_stays_quiet_at_the_call():
    # the helper copies a list it builds; the number passed only shapes it: its own line is the report
    source = ("import math\n\nimport torch\n\n\ndef window(size: int, sigma, device):\n"
              "    return torch.tensor([math.exp(-x / sigma) for x in range(size)], device=device)\n\n\n"
              "def step(x):  # graphsafe: region\n    return x * window(5, 1.5, x.device)\n")
    assert lines_of(source, "GS402") == [7]


def test_a_choice_between_two_numbers_passed_to_a_copying_helper_is_reported():
    source = HELPER + "\n\ndef step(x, greedy: bool):  # graphsafe: region\n    return scalar_like(x, 0.0 if greedy else 1.0)\n"
    assert lines_of(source, "GS402") == [5, 13]
