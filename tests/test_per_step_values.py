"""Per-step values as a dataflow question (analyzer/per_step.py and the GS30x rules using it).

Sources: what a class's step-like methods advance or recompute, `group["lr"]` of an optimizer's
param groups, an optimizer-state counter (`state["step"] += 1`, a Python number or one number in
a CPU tensor), a helper's parameter annotated a number or a tensor (`lr: Union[float, Tensor]`)
given a scheduled rate, numbers named like sizes that
callers fill with per-step values, a field kept from a constructor parameter and changed in place
by a method (`pid.h` with `self.h *= factor`) where every constructor call passes a number. Sinks: tensor arithmetic and op arguments, `range()` trip
counts around tensor work. Each case has a look-alike that must stay silent (a per-run setting).
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from graphsafe.analyzer import per_step
from graphsafe.analyzer.grouping import each_use
from tests.helpers import diagnostics, lines_of


def _messages(source: str, code: str) -> list[str]:
    return [d.message for d in diagnostics(textwrap.dedent(source)) if d.code == code]


ADAPTED = """
import math
import torch


class Adapter:
    def __init__(self, step_size, eta):
        self.step_size = step_size
        self.eta = eta
        self.window = 0

    def _update(self, accept: float):
        self.step_size = math.exp(accept * 0.5)
        self.count = 0

    def step(self, accept: float):
        self._update(accept)
        self.window += 1

    def apply(self, z: torch.Tensor):  # graphsafe: region
        z = z * self.eta
        z = z + self.count
        self.step(0.3)
        return z * self.step_size
"""


def test_an_attribute_a_step_calls_recompute_is_reported_where_it_meets_a_tensor():
    # `step` advances a counter, `_update` runs with it: `step_size` changes every step
    assert lines_of(ADAPTED, "GS301") == [24]
    message, = _messages(ADAPTED, "GS301")
    assert "recomputed in `Adapter._update`" in message


def test_per_run_settings_and_literal_resets_are_not_per_step_values():
    # `self.eta` is stored once by the constructor; `self.count = 0` in a step is a reset
    assert 21 not in lines_of(ADAPTED, "GS301") and 22 not in lines_of(ADAPTED, "GS301")


def test_an_attribute_recomputed_only_in_a_method_that_steps_nothing_is_a_setting():
    source = ADAPTED.replace("        self.window += 1\n", "")
    assert lines_of(source, "GS301") == []


def test_a_counter_advanced_by_a_tensors_row_count_is_per_step():
    source = """
    import torch


    class Mean:
        def __init__(self):
            self.seen = 1

        def update(self, y: torch.Tensor):
            self.total = y.sum()
            self.seen += y.shape[0]

        def compute(self, y: torch.Tensor):  # graphsafe: region
            self.update(y)
            return self.total / self.seen
    """
    written = per_step.step_written_attrs(
        cst.parse_module(textwrap.dedent(source)).body[1], lambda value, params, me: False)
    assert set(written) == {"seen"} and written["seen"].how == "advanced"


SIZE_NAMED = """
import torch


def integrate(z: torch.Tensor, step_size, num_steps: int):
    for _ in range(num_steps):
        z = z + step_size * z
    return z


class Sampler:
    def __init__(self, step_size: float, num_steps: int):
        self.step_size = step_size
        self.num_steps = num_steps
        self.t = 0

    def sample(self, z: torch.Tensor):  # graphsafe: region
        self.t += 1
        self.step_size = self.step_size * 0.9
        self.num_steps = self.num_steps + 1
        return integrate(z, {args})
"""


def test_numbers_named_like_sizes_are_per_step_where_callers_pass_per_step_values():
    # `step_size`, `num_steps` read like shapes, but the caller gives them what each step recomputes
    source = SIZE_NAMED.format(args="self.step_size, self.num_steps")
    assert lines_of(source, "GS301") == [6, 7]


def test_numbers_named_like_sizes_given_settings_stay_silent():
    source = SIZE_NAMED.format(args="0.1, 4")
    assert lines_of(source, "GS301") == []


def test_a_region_roots_size_named_number_with_no_caller_is_not_reported():
    # no caller shows it varying: a size-like name is taken as a per-run setting
    source = """
    import torch

    def integrate(z: torch.Tensor, num_steps: int):  # graphsafe: region
        for _ in range(num_steps):
            z = z * 0.5
        return z
    """
    assert lines_of(source, "GS301") == []


def test_a_range_around_host_work_only_is_no_sink():
    source = """
    import torch

    def names(z: torch.Tensor, steps: int):  # graphsafe: region
        out = []
        for i in range(steps):
            out.append(str(i))
        return z
    """
    assert lines_of(source, "GS301") == []


def test_a_range_trip_count_around_tensor_work_is_a_sink():
    source = """
    import torch

    def unroll(z: torch.Tensor, steps: int):  # graphsafe: region
        for i in range(steps):
            z = z * 0.5
        return z
    """
    assert lines_of(source, "GS301") == [5]


OPTIMIZER = """
import torch


class Clipped(torch.optim.Optimizer):
    def step(self, closure=None):  # graphsafe: region
        for group in self.param_groups:
            lr, eps = group["lr"], group["eps"]
            for p in group["params"]:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = {start}
                    state["avg"] = torch.zeros_like(p)
                state["step"] += 1
                state["avg"] += 1
                correction = 1 - 0.9 ** state["step"]
                p.data.add_(state["avg"], alpha=-lr)
                p.data.mul_(1 - eps)
                p.data.div_(correction)
"""


def test_a_learning_rate_read_from_param_groups_is_per_step_and_eps_is_not():
    source = OPTIMIZER.format(start="0")
    assert 17 in lines_of(source, "GS301") and 18 not in lines_of(source, "GS301")
    assert any('param-group entry `group["lr"]`' in m for m in _messages(source, "GS301"))


def test_an_optimizer_state_counter_is_advanced_in_the_region_and_read_per_step():
    source = OPTIMIZER.format(start="0")
    assert lines_of(source, "GS302") == [14]
    assert 19 in lines_of(source, "GS301")  # `correction` from `state["step"]` meets a tensor


def test_an_optimizer_state_step_kept_as_a_device_tensor_is_device_work():
    # torch's optimizers with capturable=True keep `state["step"]` on the parameter's device: `+= 1` is a kernel
    source = OPTIMIZER.format(start="torch.zeros((), device=p.device)")
    assert lines_of(source, "GS302") == []
    assert 19 not in lines_of(source, "GS301")


@pytest.mark.parametrize("start", ["torch.zeros(())", "torch.tensor(0.0)", "torch.tensor(0, dtype=torch.float32)",
                                   "torch.tensor(0.0, device='cpu')"])
def test_an_optimizer_state_step_kept_in_a_cpu_tensor_is_a_host_counter(start):
    # without capturable=True torch keeps it on the CPU: `+= 1` is CPU work only the capture runs
    source = OPTIMIZER.format(start=start)
    assert lines_of(source, "GS302") == [14]
    assert any('`state["step"]` is a counter in a CPU tensor' in m for m in _messages(source, "GS302"))
    assert 19 in lines_of(source, "GS301")  # `correction` from it meets a tensor, its capture-time value


def test_an_optimizer_state_step_in_a_cpu_tensor_advanced_with_add_is_a_host_counter():
    source = OPTIMIZER.format(start="torch.tensor(0.0)").replace('state["step"] += 1', 'state["step"].add_(1)')
    assert lines_of(source, "GS302") == [14]
    assert lines_of(source.replace("torch.tensor(0.0)", "torch.tensor(0.0, device=p.device)"), "GS302") == []


BANK = """\
import torch


class Bank(torch.nn.Module):
    def __init__(self, size: int):
        super().__init__()
        self.size = size
        self.register_buffer("bank", torch.zeros(size, 4))
        self.register_buffer("ptr", torch.zeros(1, dtype=torch.long))

    def enqueue(self, batch: torch.Tensor):  # graphsafe: region
        n = batch.shape[0]
        ptr = int(self.ptr)
        self.bank[ptr:ptr + n] = batch
        self.ptr[0] = ptr + n
        scale = self.bank.sum().item()
        return batch * scale
"""


def test_a_number_read_from_the_device_selecting_rows_or_stored_in_a_slot_is_frozen():
    # the read is GS105 (line 13); the slice bound and the stored value are replayed as captured
    assert lines_of(BANK, "GS105") == [13]
    assert sorted(set(lines_of(BANK, "GS301"))) == [14, 15]  # both bounds on line 14


def test_a_number_read_from_the_device_in_arithmetic_is_one_cause_with_its_read():
    assert lines_of(BANK, "GS101") == [16]
    assert 17 not in lines_of(BANK, "GS301")


CROP = """\
import torch


def crop(image: torch.Tensor, boxes: torch.Tensor):  # graphsafe: region
    x1l, x2l = torch.stack([boxes[:, 0], boxes[:, 1]]).tolist()
    first = image[..., x1l[0]:x2l[0]]
    rest = [image[i:i + 1, :, x1l[i]:x2l[i]] for i in range(1, len(x1l))]
    return first * (x2l[0] - x1l[0]), rest
"""


def test_elements_of_a_list_read_from_the_device_selecting_are_frozen_once_per_read():
    # the read is GS102 (line 5); its elements as slice bounds are one value, reported once with
    # its every selecting use; in arithmetic (line 8) the read is the one cause
    found = [d for d in diagnostics(CROP) if d.code == "GS301"]
    assert [d.start.line for d in found] == [6]
    assert sorted({u.start.line for u in each_use(found)}) == [6, 7]
    assert lines_of(CROP, "GS102") == [5]


def test_step_written_attrs_follows_self_calls_only_from_methods_that_step(monkeypatch):
    source = """
    class Tracker:
        def reset(self):
            self.rate = self.compute_rate()

        def compute_rate(self):
            return 0.5

        def advance(self, n):
            self.count += 1
            self.refresh(n)

        def refresh(self, n):
            self.rate = n * 2
    """
    walked = []
    original = per_step._self_calls

    def recording(method, self_name):
        walked.append(method.name.value)
        return original(method, self_name)

    monkeypatch.setattr(per_step, "_self_calls", recording)
    written = per_step.step_written_attrs(
        cst.parse_module(textwrap.dedent(source)).body[0], lambda value, params, me: type(value) is cst.BinaryOperation)
    # `refresh` runs every step because `advance` (a step) calls it; `reset` is no step and is not walked
    assert written["rate"] == per_step.StepWrite("refresh", "recomputed")
    assert sorted(walked) == ["advance", "refresh"]


CONTROLLED = """\
import math
import torch


class Controller:
    def __init__(self, h, safety=0.8):
        self.h = h
        self.safety = safety

    def propose(self, error):
        factor = 1 + math.atan(error - 1)
        {update}
        return factor >= self.safety


def solve(x, t_end, h_init=0.05, forward=True):
    s = t_end * 0
    pid = Controller({given})
    while s < t_end:  # graphsafe: region
        t = torch.minimum(t_end, s + pid.h)
        pid.propose(0.5)
        s = t
    return x
"""


def test_a_field_kept_from_the_constructor_and_changed_in_place_is_per_step_where_callers_give_a_number():
    for given in ("h_init", "abs(h_init) * (1 if forward else -1)", "max(h_init, 1e-3)"):
        source = CONTROLLED.format(update="self.h *= factor", given=given)
        assert lines_of(source, "GS301") == [20], given


def test_a_field_kept_from_the_constructor_stays_silent_when_given_a_tensor_or_never_changed():
    assert lines_of(CONTROLLED.format(update="self.h *= factor", given="torch.ones(())"), "GS301") == []
    assert lines_of(CONTROLLED.format(update="factor = factor * 2", given="h_init"), "GS301") == []


UNION_LR = """\
from typing import Union

import torch
from torch import Tensor


def _update(params, *, lr: {annotation}):
    for p in params:
        p.add_(p.grad, alpha=-lr)


class Plain(torch.optim.Optimizer):
    def step(self, closure=None):  # graphsafe: region
        for group in self.param_groups:
            _update(group["params"], lr={passed})
"""


@pytest.mark.parametrize("annotation", ["Union[float, Tensor]", "float | Tensor", "Tensor | float"])
def test_a_parameter_annotated_a_number_or_a_tensor_is_per_step_where_callers_pass_a_scheduled_rate(annotation):
    source = UNION_LR.format(annotation=annotation, passed='group["lr"]')
    assert lines_of(source, "GS301") == [9]
    assert lines_of(UNION_LR.format(annotation=annotation, passed="1e-3"), "GS301") == []


def test_a_parameter_annotated_a_tensor_or_none_is_not_a_number():
    assert lines_of(UNION_LR.format(annotation="Union[Tensor, None]", passed='group["lr"]'), "GS301") == []


TWO_OPTIMIZERS = """\
import torch


def _scaled_add(p, update, scale):
    p.add_(update, alpha=scale)


class Alpha(torch.optim.Optimizer):
    def step(self, closure=None):{alpha_region}
        for group in self.param_groups:
            for p in group["params"]:
                _scaled_add(p, p.grad, -group["lr"])


class Beta(torch.optim.Optimizer):
    def step(self, closure=None):{beta_region}
        for group in self.param_groups:
            for p in group["params"]:
                _scaled_add(p, p.grad, group["lr"] * 0.5)
"""


@pytest.mark.parametrize("region", ["Alpha", "Beta"])
def test_a_helpers_per_step_path_starts_at_the_region_that_reaches_it(region):
    marks = {f"{name.lower()}_region": "  # graphsafe: region" if name == region else "" for name in ("Alpha", "Beta")}
    messages = _messages(TWO_OPTIMIZERS.format(**marks), "GS301")
    assert len(messages) == 1 and f"path: `{region}.step` passes" in messages[0], messages


RECURRENT = """\
import torch


class DAdapt(torch.optim.Optimizer):
    def step(self, closure=None):  # graphsafe: region
        group = self.param_groups[0]
        d, gsq = group["d"], group["gsq"]
        total = 0.0
        for group in self.param_groups:
            k = group["k"]
            for p in group["params"]:
                total += p.grad.abs().sum()
        gsq = 0.9 * gsq + 1.0
        d = max(d, 1.0 / gsq)
        for group in self.param_groups:
            group["gsq"] = gsq
            group["d"] = d
            group["seen"] = group.get("seen", 0)
            group["lr0"] = group["lr"]
            group["total"] = total
            for p in group["params"]:
                p.data.add_(p.grad, alpha=-group["lr0"])
            group["k"] = k + 1
"""


def test_param_group_entries_written_from_their_last_values_are_state_the_step_advances():
    assert lines_of(RECURRENT, "GS302") == [16, 17, 23]
    assert any('`group["d"]` is a Python value kept across steps, computed from its last value' in m
               for m in _messages(RECURRENT, "GS302"))


def test_an_entrys_own_default_a_copy_of_another_entry_and_a_tensor_are_not_advanced_state():
    # lines 18-20: `.get("seen", 0)` of itself, the lr copied, a tensor kept (device work)
    assert not {18, 19, 20} & set(lines_of(RECURRENT, "GS302"))


def test_an_entry_carried_back_unchanged_or_set_afresh_is_not_advanced_state():
    # `g0 = group["g0"]`, replaced only on the first step: the value written is the old one or a new one
    source = RECURRENT.replace('d, gsq = group["d"], group["gsq"]',
                               'd, gsq, g0 = group["d"], group["gsq"], group["g0"]\n        if k == 0:\n'
                               '            g0 = 2.0').replace('group["seen"] = group.get("seen", 0)', 'group["g0"] = g0')
    assert lines_of(source, "GS302") == [18, 19, 25]

