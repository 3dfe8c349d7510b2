"""Neighbouring shapes of recent held-out misses (part B), each beside a silent look-alike:

- dicts of tensors made in other ways (`collections.defaultdict(lambda: torch.zeros(()))`,
  `dict(zip(names, [t1, t2]))`, `{**a, **b}` of two tensor dicts, `nn.ParameterDict(...)`):
  a value read from one and tested in `if`/`while`/a conditional expression is GS201, and
  `.item()` on it GS101; the same dicts of numbers are silent;
- `self.logs[k] = torch.vstack([self.logs[k], x])` between replays: the entry's tensor grows,
  so GS404 (docs: growing-buffer), and only GS404: the dict keeps its keys, so it is not a
  GS503 change to the container; an entry of a dict made in this call is silent, and a store
  of something else under a key is still GS503;
- GS108: `~` on a tensor known to hold integers (`torch.arange(n)`, `.long()`, `.argmax()`,
  `.indices`, `dtype=torch.long`, a `torch.LongTensor` parameter, a local bound to one) is a
  bitwise not, so `x[~idx]` is not boolean-mask indexing; `~` of a comparison, `isnan`,
  `.bool()` or a parameter named or annotated as a mask still is;
- GS404: a buffer copied first (`kv = self.kv.float()`, `.to(dev)`, `.contiguous()`), grown
  by a concatenation and stored back on self, and a parameter moved the same way (`cache =
  cache.to(dev)`), grown onto itself and stored back on `self.cache`, are self-concats; a
  fresh buffer, a sliding window, another attribute, or a parameter joined with something
  else and stored are silent.
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


# ------------------------------------------------------------------------ GS108: `~` on integers

INVERT = """\
import torch


def pick(x: torch.Tensor, scores: torch.Tensor, ids: torch.LongTensor, mask: torch.Tensor,
         pad: "torch.Tensor", n: int):  # graphsafe: region
    idx = torch.arange(n, device=x.device)
    {line}
    return out
"""


@pytest.mark.parametrize("line", [
    "out = x[~idx]",
    "out = x[~scores.argmax(-1)]",
    "out = x[~scores.long()]",
    "out = x[~scores.topk(3).indices]",
    "out = x[~ids]",
    "out = x[~torch.zeros(n, dtype=torch.long)]",
    "out = x[~scores.to(torch.int64)]",
    "inv = ~idx\n    out = x[inv]",
    "pos = torch.argsort(scores)\n    out = x[~pos]",
])
def test_bitwise_not_of_an_integer_tensor_is_not_a_mask(line):
    assert found(INVERT.format(line=line), "GS108") == []


@pytest.mark.parametrize("line", [
    "out = x[~(scores > 0)]",
    "out = x[~torch.isnan(scores)]",
    "out = x[~scores.bool()]",
    "out = x[~mask]",
    "out = x[~pad]",  # a tensor of unknown dtype: `~` says it is a mask
    "keep = ~mask\n    out = x[keep]",
    "idx = scores > 0\n    out = x[~idx]",  # the name rebound to a comparison is a mask again
])
def test_bitwise_not_of_a_mask_is_still_a_mask(line):
    assert found(INVERT.format(line=line), "GS108") == [7 + line.count("\n")]  # the indexing line


# ------------------------------------------------------------------------ GS404 through a copy

COPIED = """\
import torch


class Cache:
    def __init__(self, dev):
        self.dev = dev
        self.kv = torch.zeros(0, 4)
        self.cache = torch.zeros(0, 4)

    def step(self, cache: torch.Tensor, new: torch.Tensor):  # graphsafe: region
        {body}
        return new
"""


def _grown(body: str) -> list[int]:
    return found(COPIED.format(body="\n        ".join(body.split("\n"))), "GS404")


@pytest.mark.parametrize("body", [
    "kv = self.kv.float()\nkv = torch.cat([kv, new])\nself.kv = kv",
    "kv = self.kv.to(self.dev)\nkv = torch.vstack((kv, new))\nself.kv = kv",
    "kv = self.kv.contiguous()\nself.kv = torch.cat([kv, new])",
    "kv = self.kv\nkv = kv.float()\nself.kv = torch.cat([kv, new], dim=0)",
    "cache = cache.to(self.dev)\ncache = torch.cat([cache, new])\nself.cache = cache",
    "cache = cache.float().contiguous()\ncache = torch.cat([cache, new])\nself.cache = cache",
    "c = cache.cuda()\nc = torch.cat([c, new])\nc2 = c\nself.cache = c2",
])
def test_a_copy_grown_and_stored_back_grows(body):
    assert _grown(body) == [11 + body.count("\n")]  # reported where it is stored back


@pytest.mark.parametrize("body", [
    "kv = torch.zeros(0, 4)\nkv = torch.cat([kv, new])\nself.kv = kv",  # fresh each step
    "kv = self.kv.float()\nkv = torch.cat([kv, new])\nself.other = kv",  # another attribute
    "kv = self.kv[1:]\nself.kv = torch.cat([kv, new])",  # a sliding window (GS401's)
    "kv = self.kv.float()\nkv = torch.cat([kv, new])\nkv = self.proj(new)\nself.kv = kv",
    "cache = cache.to(self.dev)\nself.cache = torch.cat([cache, new])",  # joined once, not grown
    "ctx = cache.float()\nctx = torch.cat([ctx, new])\nself.ctx = ctx",  # another name
    "cache = self.proj(cache)\ncache = torch.cat([cache, new])\nself.cache = cache",  # not a copy
])
def test_a_fresh_or_differently_stored_tensor_is_silent(body):
    assert _grown(body) == []
