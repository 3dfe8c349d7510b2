"""Growing buffers (GS404) and rebindings (GS401), each case beside a look-alike that must stay
silent:

- every concatenation of a buffer onto itself (`torch.cat`, `vstack`, `hstack`, `concat`,
  `concatenate`, `row_stack`, `stack`) is GS404 only; a sliding window
  (`torch.vstack([self.log[1:], x])`) is a GS401 rebinding;
- `x = self.embed(x); x = torch.cat((cls, x))` is no growing buffer, a parameter grown onto
  itself is;
- `self.logs[k] = torch.vstack([self.logs[k], x])`: a dict entry grown onto itself is GS404, and
  not a GS503 change to the container (its keys stay); an entry of a dict made in this call, or
  another entry, is silent, and a store of something else under a key is still GS503;
- a buffer copied first (`kv = self.kv.float()`, `.to(dev)`, `.contiguous()`), grown and stored
  back on self, and a parameter moved the same way, grown onto itself and stored back, are
  self-concats; a fresh buffer, a sliding window, another attribute, or a parameter joined once
  are silent.
"""

from __future__ import annotations

import pytest

from tests.helpers import lines_of


found = lines_of  # the lines where a code is reported


# ------------------------------------------------------------------- onto itself

def test_cat_onto_a_rebound_parameter_is_not_a_growing_buffer():
    source = """\
        import torch


        def forward(self, x: torch.Tensor, cache: torch.Tensor):  # graphsafe: region
            x = self.embed(x)
            x = torch.cat((self.cls, x), dim=1)
            cache = torch.cat((cache, x), dim=1)
            return x, cache
        """
    assert found(source, "GS404") == [7]


LOG = """\
import torch


class Tracker(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.log = torch.zeros(0, 4)

    def forward(self, x):  # graphsafe: region
        self.log = {value}
        return x
"""


@pytest.mark.parametrize("func", ["cat", "concat", "concatenate", "stack", "vstack", "hstack", "row_stack"])
def test_a_buffer_joined_onto_itself_is_growth_only(func):
    source = LOG.format(value=f"torch.{func}([self.log, x[None]])")
    assert found(source, "GS404") == [10]
    assert found(source, "GS401") == []


@pytest.mark.parametrize("func", ["vstack", "concatenate"])
def test_a_sliding_window_of_fixed_size_is_still_a_rebinding(func):
    source = LOG.format(value=f"torch.{func}([self.log[1:], x[None]])")
    assert found(source, "GS404") == []
    assert found(source, "GS401") == [10]


# ------------------------------------------------------------------ dict entries

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


# ---------------------------------------------------------------- through a copy

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
