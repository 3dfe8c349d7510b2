"""GS402 where a helper moves a CPU tensor it is given to the GPU (analyzer/cpu_tested.py,
analyzer/host_move_helpers.py): the move under a test that the tensor is on the CPU
(`if t.device.type == "cpu": return t.to(device, non_blocking=True)`, the test possibly kept in
a flag) is a host-to-device copy whenever it runs, and each call in the region that hands the
helper a value that may be such a tensor is a copy of its own, also through a helper that hands
the value on. Values that cannot be CPU tensors, helpers without the CPU test and
library calls stay quiet."""

from __future__ import annotations

from tests.helpers import lines_of, project_diagnostics, project_findings

MOVER = '''\
import torch


def to_device(tensor, device, dtype=None):
    moving = tensor.device.type == "cpu" and device.type == "cuda" and not tensor.is_pinned()
    if moving:
        return tensor.to(device=device, non_blocking=True)
    return tensor.to(device=device, dtype=dtype)


def as_tensor(data, device, dtype=None):
    if isinstance(data, torch.Tensor):
        return to_device(data, device, dtype)
    return data


def same_place(tensor, device):
    return tensor.to(device=device)
'''


def test_calls_handing_a_drawn_tensor_to_a_moving_helper_in_another_module_are_reported(tmp_path):
    step = ("import torch\n\nfrom pkg.util import as_tensor, to_device\n\n\n"
            "def step(x, params):  # graphsafe: region\n"
            "    src = to_device(params['src'], x.device, x.dtype)\n"
            "    angle = as_tensor(params['angle'], x.device)\n"
            "    return x * src + angle\n")
    found = project_findings(tmp_path, {"pkg/__init__.py": "", "pkg/util.py": MOVER, "pkg/step.py": step}, "GS402")
    # the two calls, the helper's CPU-tested move, and the helper that hands its parameter on
    assert {(path, line) for path, line, _ in found} == {
        ("step.py", 7), ("step.py", 8), ("util.py", 7), ("util.py", 13)}


def test_the_cpu_tested_move_says_which_test_makes_it_a_host_copy(tmp_path):
    source = MOVER + "\n\ndef step(x, params):  # graphsafe: region\n    return x * to_device(params['s'], x.device)\n"
    assert lines_of(source, "GS402") == [7, 22]
    move = next(d.message for d in project_diagnostics(tmp_path, {"step.py": source}) if d.start.line == 7)
    assert "`moving` says it is a CPU tensor" in move


def test_a_helper_without_a_cpu_test_stays_quiet_at_its_calls():
    source = MOVER + "\n\ndef step(x, params):  # graphsafe: region\n    return x * same_place(params['s'], x.device)\n"
    assert lines_of(source, "GS402") == []


def test_values_that_cannot_be_cpu_tensors_are_not_reported_at_the_call():
    source = MOVER + ("\n\ndef step(x, params):  # graphsafe: region\n"
                      "    a = to_device(x.to(x.device), x.device)\n"
                      "    b = to_device(torch.ones(3, device=x.device), x.device)\n"
                      "    c = as_tensor(2.0, x.device)\n"
                      "    d = as_tensor(tuple(x.shape), x.device)\n"
                      "    return a + b + c + d\n")
    # the helper's own move (line 7) and hand-on (13) are reached: only the calls stay quiet
    assert [line for line in lines_of(source, "GS402") if line > 19] == []


def test_a_move_under_a_test_that_the_tensor_is_on_the_device_stays_quiet():
    source = ("import torch\n\n\ndef step(x, t):  # graphsafe: region\n"
              "    if t.device.type == 'cuda':\n        t = t.to(x.device, non_blocking=True)\n    return x * t\n")
    assert lines_of(source, "GS402") == []


def test_a_flag_that_is_once_bound_to_something_else_proves_nothing():
    source = ("import torch\n\n\ndef move(t, device, force: bool):\n"
              "    moving = t.device.type == 'cpu'\n    if force:\n        moving = True\n"
              "    if moving:\n        return t.to(device, non_blocking=True)\n    return t\n\n\n"
              "def step(x, params):  # graphsafe: region\n    return x * move(params['s'], x.device, False)\n")
    assert lines_of(source, "GS402") == []


def test_is_cpu_and_str_device_tests_count_and_a_move_to_the_cpu_does_not():
    source = ("import torch\n\n\ndef step(x, t, u):  # graphsafe: region\n"
              "    if t.is_cpu:\n        t = t.cuda()\n"
              "    if str(u.device) == 'cpu':\n        w = u.to('cpu')\n        u = u.to(x.device)\n"
              "    return x * t * u\n")
    assert lines_of(source, "GS402") == [6, 9]


def test_library_calls_given_tensors_stay_quiet():
    source = MOVER + "\n\ndef step(x, params):  # graphsafe: region\n    return torch.add(x, params['s'])\n"
    assert lines_of(source, "GS402") == []
