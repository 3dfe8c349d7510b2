"""Shapes of the retired twelfth set (codec_train, molecule_property) the analyzer missed,
each beside a look-alike that must stay silent:

- `for layer in self.layers[:n_active]: layer(x)`: a slice of a ModuleList is a ModuleList,
  so its elements' forward is reached (an index still gives one element);
- `keep = ~pad` then `h[keep]`: `~` on a tensor makes a mask wherever the result goes, as
  `h[~pad]` already did (`-pad` does not);
- `self.norm_ema = {k: torch.ones(()) for k in weights}`: a dict comprehension of tensors is a
  dict of tensors like the literal, so `x if self.norm_ema[k] > 0 else y` tests a tensor;
- `torch.max(a, b)` / `a.max(b)` with `b` a tensor is one tensor (elementwise), not the
  (values, indices) pair of `torch.max(a, 1)`: indexing it is no list lookup (GS105);
- neighbours: calling a slice of an nn.Sequential runs its modules; a mask returned by a
  helper in another file (`keep = keep_mask(pad)`) is resolved as a mask (the what-if run
  that decides whether a project call is worth resolving takes its value to be a mask);
  `self.norm_ema = {}` filled only with tensors (`self.norm_ema[k] = torch.ones(())`) is a
  dict of tensors too (one number stored in it anywhere keeps it a plain dict).
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import lines_of, project_diagnostics

found = lines_of  # the lines where a code is reported


LAYERS = """\
import torch
import torch.nn as nn


class Leaf(nn.Module):
    def forward(self, z: torch.Tensor):
        return z.nonzero()


class Stack(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.layers = nn.ModuleList(Leaf() for _ in range(n))

    def forward(self, z: torch.Tensor, k: int):  # graphsafe: region
        for layer in {iterable}:
            z = layer(z)
        return z
"""


def test_a_slice_of_a_module_list_reaches_its_modules():
    assert found(LAYERS.format(iterable="self.layers[:k]"), "GS107") == [7]
    assert found(LAYERS.format(iterable="self.layers[1:]"), "GS107") == [7]


def test_an_index_of_a_module_list_is_one_module_not_a_list():
    # `self.layers[0]` is one Leaf: iterating it is not calling a Leaf
    assert found(LAYERS.format(iterable="self.layers[0]"), "GS107") == []


MASK = """\
import torch


def readout(h: torch.Tensor, pad: torch.Tensor):  # graphsafe: region
    keep = {keep}
    node_h = h[keep]
    idx = torch.arange(h.shape[0], device=h.device)[:, None].expand_as(pad)[keep]
    return node_h, idx
"""


def test_an_inverted_tensor_bound_to_a_name_is_a_mask():
    assert found(MASK.format(keep="~pad"), "GS108") == [6, 7]


def test_a_negated_tensor_or_an_inverted_number_is_no_mask():
    assert found(MASK.format(keep="-pad"), "GS108") == []
    assert found(MASK.format(keep="~3"), "GS108") == []


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


EXTREME = """\
import torch


def loss(a: torch.Tensor, b: torch.Tensor, valid: torch.Tensor):  # graphsafe: region
    picked = {expr}[valid]
    return picked.mean()
"""


def test_an_elementwise_max_of_two_tensors_is_one_tensor():
    assert found(EXTREME.format(expr="torch.max(a, b)"), "GS105") == []
    assert found(EXTREME.format(expr="a.min(b)"), "GS105") == []
    assert found(EXTREME.format(expr="torch.max(a, other=b)"), "GS105") == []


def test_a_max_over_a_dim_is_still_a_pair():
    assert found(EXTREME.format(expr="torch.max(a, 1)"), "GS105") == [5]
    assert found(EXTREME.format(expr="a.max(-1)"), "GS105") == [5]


SEQUENTIAL = """\
import torch
import torch.nn as nn


class Leaf(nn.Module):
    def forward(self, z: torch.Tensor):
        return z.unique()


class Stack(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.blocks = nn.Sequential(*[Leaf() for _ in range(n)])
        self.names = ["a", "b"]

    def forward(self, z: torch.Tensor, k: int):  # graphsafe: region
        return {call}
"""


def test_calling_a_slice_of_a_sequential_runs_its_modules():
    assert found(SEQUENTIAL.format(call="self.blocks[:k](z)"), "GS107") == [7]


def test_a_slice_of_a_list_of_strings_runs_nothing():
    assert found(SEQUENTIAL.format(call="z * len(self.names[:k])"), "GS107") == []


HELPERS = """\
import torch


def keep_mask(pad: torch.Tensor):
    return ~pad


def positions(pad: torch.Tensor):
    return torch.arange(pad.shape[-1], device=pad.device)
"""

READOUT = """\
import torch
from helpers import keep_mask, positions


def readout(h: torch.Tensor, pad: torch.Tensor):  # graphsafe: region
    keep = {helper}(pad)
    return h[keep]
"""


def test_a_mask_returned_by_a_helper_in_another_file_is_a_mask(tmp_path):
    got = project_diagnostics(tmp_path, {"helpers.py": HELPERS, "model.py": READOUT.format(helper="keep_mask")})
    assert [(Path(d.path).name, d.start.line) for d in got if d.code == "GS108"] == [("model.py", 7)]


def test_an_index_tensor_returned_by_a_helper_is_no_mask(tmp_path):
    got = project_diagnostics(tmp_path, {"helpers.py": HELPERS, "model.py": READOUT.format(helper="positions")})
    assert [d for d in got if d.code == "GS108"] == []


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
