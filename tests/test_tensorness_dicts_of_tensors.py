"""Tensor-ness through dicts: a value read from a dict of tensors is a tensor, its keys are not,
and the same dicts of numbers are silent. A dict of tensors may be a literal, a dict
comprehension, an empty dict filled only with tensors (one number stored in it anywhere keeps
it a plain dict), `collections.defaultdict(lambda: torch.zeros(()))`, `dict(zip(names, [t1,
t2]))`, `{**a, **b}` of two tensor dicts, `dict(a, r=t)`, an `nn.ParameterDict`, or the result
of a function (here or in another file, unannotated or `-> dict[str, Tensor]`). Its values met
in a loop (`.items()`, `.values()`) are tensors; a value tested in `if`/`while`/a conditional
expression is GS201, `.item()` on it GS101, `float(...)` GS105; an `nn.ModuleDict` value called
gives a tensor.
"""

from __future__ import annotations

import pytest

from tests.helpers import lines_of, project_diagnostics


found = lines_of  # the lines where a code is reported


# --------------------------------------------- returned, literal and looped over

def project(tmp_path, files: dict[str, str], code: str) -> set[tuple[str, int]]:
    return {(d.path.rsplit("/", 1)[-1], d.start.line) for d in project_diagnostics(tmp_path, files) if d.code == code}


METRICS = """
import torch


def metrics_of(pred: torch.Tensor){annotation}:
    {body}
"""


TRAINER = """
import torch
from metrics import metrics_of


class Trainer:
    def step(self, pred: torch.Tensor):  # graphsafe: region
        metrics = metrics_of(pred)
        for key in metrics:
            if key == "mase":
                pred = pred * 2
        return float(metrics["mase"])
"""


def test_an_element_of_a_dict_of_tensors_from_another_file_is_a_tensor(tmp_path):
    body = 'return {"mase": pred.mean(), "smape": pred.abs().mean()}'
    files = {"metrics.py": METRICS.format(annotation="", body=body), "trainer.py": TRAINER}
    assert project(tmp_path, files, "GS105") == {("trainer.py", 12)}
    assert project(tmp_path, files, "GS201") == set()  # its keys are strings


def test_a_function_annotated_to_return_a_dict_of_tensors(tmp_path):
    body = 'out = {}\n    out["mase"] = pred.mean()\n    return out'
    files = {"metrics.py": METRICS.format(annotation=" -> dict[str, torch.Tensor]", body=body), "trainer.py": TRAINER}
    assert project(tmp_path, files, "GS105") == {("trainer.py", 12)}


def test_a_dict_of_host_numbers_from_another_file_is_silent(tmp_path):
    body = 'return {"mase": 1.0, "smape": pred.shape[0]}'
    files = {"metrics.py": METRICS.format(annotation="", body=body), "trainer.py": TRAINER}
    assert project(tmp_path, files, "GS105") == set()


def test_a_local_dict_of_tensors_and_a_dict_of_numbers():
    source = """
    import torch


    def step(x: torch.Tensor, n: int):  # graphsafe: region
        stats = {"mean": x.mean(), "max": x.max()}
        sizes = {"n": n, "rows": x.shape[0]}
        return float(stats["mean"]) + float(sizes["n"])
    """
    assert found(source, "GS105") == [8]  # once: `float(sizes["n"])` is a number


DICT_LOOP = """
import torch


def step(x: torch.Tensor):  # graphsafe: region
    stats = {made}
    total = 0.0
    for {loop}:
        total += float({value})
    return total
"""


def test_the_values_of_a_dict_of_tensors_met_in_a_loop_are_tensors():
    made = 'dict(mean=x.mean(), top=x.max())'
    assert found(DICT_LOOP.format(made=made, loop="name, v in stats.items()", value="v"), "GS105") == [9]
    assert found(DICT_LOOP.format(made=made, loop="v in stats.values()", value="v"), "GS105") == [9]


def test_the_keys_and_a_dict_of_numbers_met_in_a_loop_are_silent():
    made = 'dict(mean=x.mean(), top=x.max())'
    assert found(DICT_LOOP.format(made=made, loop="name in stats", value="len(name)"), "GS105") == []
    numbers = 'dict(rows=x.shape[0], cols=x.shape[1])'
    assert found(DICT_LOOP.format(made=numbers, loop="name, v in stats.items()", value="v"), "GS105") == []


def test_a_dict_of_tensors_items_still_binds_tensors():
    # the dict-of-modules branch must not change what `.items()` of a tensor dict gives
    from tests.helpers import lines_of

    source = """\
    import torch


    def step(x: torch.Tensor):  # graphsafe: region
        stats = {"a": x.sum(), "b": x.mean()}
        for k, v in stats.items():
            print(v)
    """
    assert lines_of(source, "GS104") == [7]


# ----------------------------------------------- comprehensions and filled dicts

BALANCER = """\
import torch


class Balancer:
    def __init__(self, weights: dict, device):
        self.norm_ema = {values}
        self.scale = 2.0

    def balance(self, losses: dict, anchor: torch.Tensor):  # graphsafe: region
        total = anchor.sum() * 0
        for name, loss in losses.items():
            gain = self.scale / self.norm_ema[name] if self.norm_ema[name] > 1e-8 else 1.0
            total = total + gain * loss
        return total
"""


def test_a_dict_comprehension_of_tensors_holds_tensors():
    source = BALANCER.format(values="{k: torch.ones((), device=device) for k in weights}")
    assert found(source, "GS201") == [12]


def test_a_dict_comprehension_of_numbers_is_silent():
    assert found(BALANCER.format(values="{k: 1.0 for k in weights}"), "GS201") == []
    assert found(BALANCER.format(values="{k: float(v) for k, v in weights.items()}"), "GS201") == []


FILLED = """\
import torch


class Tracker:
    def __init__(self, names, device):
        self.norm_ema = {{}}
        for n in names:
            self.norm_ema[n] = {value}

    def step(self, x: torch.Tensor, name: str):  # graphsafe: region
        if self.norm_ema[name] > 1e-8:
            x = x / 2
        return x
"""


def test_an_empty_dict_filled_with_tensors_holds_tensors():
    assert found(FILLED.format(value="torch.ones((), device=device)"), "GS201") == [11]


def test_an_empty_dict_filled_with_numbers_is_silent():
    assert found(FILLED.format(value="1.0"), "GS201") == []
    mixed = FILLED.format(value="torch.ones((), device=device)").replace(
        "    def step", "    def reset(self):\n        self.norm_ema['x'] = 0.0\n\n    def step")
    assert found(mixed, "GS201") == []


# ------------------------------- defaultdicts, zips, spreads and parameter dicts

DICTS = """\
import collections
from collections import defaultdict

import torch
from torch import nn


class Tracker(nn.Module):
    def __init__(self, names):
        super().__init__()
        self.names = names
        self.made = {made}

    def step(self, x: torch.Tensor, t1: torch.Tensor, t2: torch.Tensor):  # graphsafe: region
        a = {{"p": t1}}
        b = {{"q": t2}}
        local = {local}
        {use}
        return x
"""


TENSOR_DICTS = [
    ("collections.defaultdict(lambda: torch.zeros(()))", "{}", "self.made"),
    ("defaultdict(lambda: torch.zeros(3, device='cuda'))", "{}", "self.made"),
    ("nn.ParameterDict({'p': nn.Parameter(torch.zeros(3))})", "{}", "self.made"),
    ("{}", "dict(zip(self.names, [t1, t2]))", "local"),
    ("{}", "{**a, **b}", "local"),
    ("{}", "{**a, 'r': t1 * 2}", "local"),
    ("{}", "dict(a, r=t2)", "local"),
]


NUMBER_DICTS = [
    ("collections.defaultdict(int)", "{}", "self.made"),
    ("defaultdict(lambda: 0.0)", "{}", "self.made"),
    ("{}", "dict(zip(self.names, [1, 2]))", "local"),
    ("{}", "dict(zip(self.names, ['a', 'b']))", "local"),
    ("{}", "{**{'p': 1}, **{'q': 2}}", "local"),
    ("{}", "{**a, 'r': 3}", "local"),  # a number among the tensors: not a dict of tensors
]


USES = [
    ("if {d}['p'] > 0:\n            x = x + 1", "GS201"),
    ("while {d}['p'] > 0:\n            x = x + 1", "GS201"),
    ("x = x + (1 if {d}['p'] else 2)", "GS201"),
    ("y = {d}['p'].item()", "GS101"),
]


def _program(made, local, d, use):
    return DICTS.format(made=made, local=local, use=use.format(d=d))


@pytest.mark.parametrize("use,code", USES)
@pytest.mark.parametrize("made,local,d", TENSOR_DICTS)
def test_a_value_of_a_dict_of_tensors_is_a_tensor(made, local, d, use, code):
    assert found(_program(made, local, d, use), code) == [18]


@pytest.mark.parametrize("use,code", USES)
@pytest.mark.parametrize("made,local,d", NUMBER_DICTS)
def test_a_value_of_a_dict_of_numbers_is_silent(made, local, d, use, code):
    assert found(_program(made, local, d, use), code) == []


def test_a_parameter_dict_value_reduced_and_compared_is_a_tensor():
    use = "if self.made['p'].sum() > 0:\n            x = x + 1"
    source = _program("nn.ParameterDict({'p': nn.Parameter(torch.zeros(3))})", "{}", "", use)
    assert found(source, "GS201") == [18]


def test_a_module_dict_value_called_gives_a_tensor():
    use = "if self.made['lin'](x).sum() > 0:\n            x = x + 1"
    assert found(_program("nn.ModuleDict({'lin': nn.Linear(3, 3)})", "{}", "", use), "GS201") == [18]
    use = "if self.made['lin'].training:\n            x = x + 1"  # a module's flag: a setting
    assert found(_program("nn.ModuleDict({'lin': nn.Linear(3, 3)})", "{}", "", use), "GS201") == []
