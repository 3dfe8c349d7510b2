"""Neighbouring shapes of recent held-out misses (part B), each beside a silent look-alike:

- dicts of tensors made in other ways (`collections.defaultdict(lambda: torch.zeros(()))`,
  `dict(zip(names, [t1, t2]))`, `{**a, **b}` of two tensor dicts, `nn.ParameterDict(...)`):
  a value read from one and tested in `if`/`while`/a conditional expression is GS201, and
  `.item()` on it GS101; the same dicts of numbers are silent;
- `self.logs[k] = torch.vstack([self.logs[k], x])` between replays: the entry's tensor grows,
  so GS404 (docs: growing-buffer), and only GS404: the dict keeps its keys, so it is not a
  GS503 change to the container; an entry of a dict made in this call is silent, and a store
  of something else under a key is still GS503;
"""

from __future__ import annotations

import pytest

from tests.helpers import lines_of

found = lines_of  # the lines where a code is reported

# ------------------------------------------------------------------------ dicts of tensors

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


# ------------------------------------------------------------------------ a grown dict entry

GROWN = """\
import torch


class Recorder:
    def __init__(self, keys):
        self.logs = {{k: torch.zeros(0, 4) for k in keys}}
        self.rows = [torch.zeros(0, 4)]

    def step(self, x: torch.Tensor, k: str, logs: dict):  # graphsafe: region
        {line}
        return x
"""


@pytest.mark.parametrize("line", [
    "self.logs[k] = torch.vstack([self.logs[k], x])",
    "self.logs['loss'] = torch.cat([self.logs['loss'], x], dim=0)",
    "self.logs[k] = torch.cat(tensors=(self.logs[k], x[None]))",
    "self.rows[0] = torch.row_stack([self.rows[0], x])",
    "logs[k] = torch.cat([logs[k], x])",  # a parameter's dict outlives the call too
])
def test_a_dict_entry_concatenated_onto_itself_grows(line):
    source = GROWN.format(line=line)
    assert found(source, "GS404") == [10]
    assert found(source, "GS503") == []  # the keys stay the same


@pytest.mark.parametrize("line", [
    "mine = {'a': x[:0]}\n        mine['a'] = torch.cat([mine['a'], x])",  # made in this call
    "self.logs[k] = torch.cat([self.logs['other'], x])",  # another entry: no growth
    "self.logs[k].copy_(x)",
])
def test_an_entry_not_grown_onto_itself_is_not_gs404(line):
    assert found(GROWN.format(line=line), "GS404") == []


def test_a_store_of_something_else_under_a_key_is_still_gs503():
    source = GROWN.format(line="self.logs[k] = torch.cat([self.logs['other'], x])")
    assert found(source, "GS503") == [10]
