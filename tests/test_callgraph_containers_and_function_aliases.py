"""Call graph: modules and callables kept in containers or under other names, each case beside a
look-alike that must stay silent:

- a slice of an `nn.ModuleList` is a ModuleList (`for layer in self.layers[:n]`), calling a slice
  of an `nn.Sequential` runs its modules, and `self.layers[i](x)` runs one element; an index is
  one module, a slice of a list of strings runs nothing;
- objects kept in a list, tuple or dict attribute, called in a loop over it (`for fn in
  self.losses`, `for k, h in self.heads.items()`, `self.heads.values()`) or by key, in this file
  or another;
- objects appended to a local list (`callbacks.append(self.history)`) and handed on: a loop over it
  reaches theirs, whatever an `extend` adds; a list of values of unknown class reaches nothing;
- a `functools.partial` held by an attribute or a module-level name runs its function; an alias
  of a quiet function stays silent;
- a function chosen into an attribute runs wherever the attribute is called: either branch of a
  conditional, any entry of a literal table (of this file or imported, also through a re-export),
  the default of the parameter it keeps, or what the constructor's callers pass for it; a table
  of quiet functions, or of numbers, stays silent.
"""

from __future__ import annotations

import pytest

from tests.helpers import lines_of, project_findings


found = lines_of  # the lines where a code is reported
project = project_findings  # (file name, line, code) of each diagnostic of a small program


# -------------------------------------------------- module lists and sequentials

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


def test_module_list_element_called_by_index():
    source = """
    import torch
    import torch.nn as nn


    class Block(nn.Module):
        def forward(self, x):
            return x.sum().item()


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Block() for _ in range(2)])
            self.spare = nn.ModuleList([Block()])

        def forward(self, x):  # graphsafe: region
            for i in range(len(self.layers)):
                x = self.layers[i](x)
            return x
    """
    assert found(source, "GS101") == [8]
    assert found(source.replace("x = self.layers[i](x)", "x = x + i"), "GS101") == []


# --------------------------------------------------------- containers of objects

LOSSES = """\
import torch


class FocalLoss:
    def __call__(self, x, y):
        return (x - y).abs().sum().item()


class DiceLoss:
    def __call__(self, x, y):
        return (x * y).sum()
"""


LOSS_LOOP = """\
import torch
{imports}


class Crit:
    def __init__(self):
        self.losses = {container}

    def step(self, x: torch.Tensor, y: torch.Tensor):  # graphsafe: region
        total = x.new_zeros(())
        for fn in self.losses:
            total = total + fn(x, y)
        return total
"""


@pytest.mark.parametrize("container", ["[FocalLoss(), DiceLoss()]", "(FocalLoss(), DiceLoss())"])
def test_losses_kept_in_a_list_or_tuple_in_another_file(tmp_path, container):
    train = LOSS_LOOP.format(imports="from losses import FocalLoss, DiceLoss", container=container)
    assert project(tmp_path, {"losses.py": LOSSES, "train.py": train}) == {("losses.py", 6, "GS101")}


def test_losses_kept_in_a_list_in_the_same_file(tmp_path):
    train = LOSSES + "\n\n" + LOSS_LOOP.format(imports="", container="[FocalLoss(), DiceLoss()]")
    assert project(tmp_path, {"train.py": train}) == {("train.py", 6, "GS101")}


def test_quiet_losses_kept_in_a_list_are_silent(tmp_path):
    train = LOSS_LOOP.format(imports="from losses import DiceLoss", container="[DiceLoss(), DiceLoss()]")
    assert project(tmp_path, {"losses.py": LOSSES, "train.py": train}) == set()


HEADS = """\
import torch


class ClsHead(torch.nn.Module):
    def forward(self, x):
        return x.nonzero()


class BoxHead(torch.nn.Module):
    def forward(self, x):
        return x * 2
"""


HEADS_NET = """\
import torch
{imports}


class Net:
    def __init__(self):
        self.heads = {{"cls": {first}(), "box": BoxHead()}}

    def step(self, x: torch.Tensor):  # graphsafe: region
{body}
"""


HEAD_CALLS = {
    "by-key": "        return {k: self.heads[k](x) for k in (\"cls\", \"box\")}",
    "items": "        out = {}\n        for k, h in self.heads.items():\n            out[k] = h(x)\n        return out",
    "values": "        return [h(x) for h in self.heads.values()]",
}


@pytest.mark.parametrize("body", HEAD_CALLS.values(), ids=HEAD_CALLS.keys())
def test_heads_kept_in_a_dict_in_another_file(tmp_path, body):
    net = HEADS_NET.format(imports="from heads import ClsHead, BoxHead", first="ClsHead", body=body)
    assert project(tmp_path, {"heads.py": HEADS, "net.py": net}) == {("heads.py", 6, "GS107")}


@pytest.mark.parametrize("body", HEAD_CALLS.values(), ids=HEAD_CALLS.keys())
def test_heads_kept_in_a_dict_in_the_same_file(tmp_path, body):
    net = HEADS + "\n\n" + HEADS_NET.format(imports="", first="ClsHead", body=body)
    assert project(tmp_path, {"net.py": net}) == {("net.py", 6, "GS107")}


@pytest.mark.parametrize("body", HEAD_CALLS.values(), ids=HEAD_CALLS.keys())
def test_quiet_heads_kept_in_a_dict_are_silent(tmp_path, body):
    net = HEADS_NET.format(imports="from heads import BoxHead", first="BoxHead", body=body)
    assert project(tmp_path, {"heads.py": HEADS, "net.py": net}) == set()


# ------------------------------------------------- partials and function aliases

FUNCTION_ALIASES = """
import functools
import torch
import torch.nn as nn


def log_value(t):
    return t.item()


def quiet(t):
    return t * 2


reduce_fn = functools.partial(log_value)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.reduce = functools.partial(log_value)
        self.post = quiet

    def forward(self, x):  # graphsafe: region
        y = self.fc(x)
        a = self.reduce(y)
        b = self.post(y)
        return y
"""


def test_partial_held_by_an_attribute_runs_the_function():
    assert found(FUNCTION_ALIASES, "GS101") == [8]


def test_partial_held_by_a_module_name_runs_the_function():
    source = FUNCTION_ALIASES.replace("a = self.reduce(y)", "a = reduce_fn(y)")
    assert found(source, "GS101") == [8]


def test_alias_to_a_quiet_function_stays_silent():
    source = FUNCTION_ALIASES.replace("a = self.reduce(y)", "a = self.post(y)")
    assert found(source, "GS101") == []


def test_a_local_bound_to_one_of_two_functions_calls_both_and_hands_them_its_arguments():
    """`func = _multi_tensor_adam if foreach else _single_tensor_adam; func(..., lr=lr)`: the
    optimizers' functional form; the learning rate a param group holds reaches either kernel."""
    source = ("import torch\n\n\ndef _multi(params, *, lr: float, eps: float):\n"
              "    torch._foreach_add_(params, eps)\n    torch._foreach_mul_(params, 1 - lr)\n\n\n"
              "def _single(params, *, lr: float, eps: float):\n    for p in params:\n        p.mul_(1 - lr)\n\n\n"
              "class Opt(torch.optim.Optimizer):\n    def step(self):  # graphsafe: region\n"
              "        for group in self.param_groups:\n"
              "            if group['foreach']:\n                func = _multi\n            else:\n                func = _single\n"
              "            func(group['params'], lr=group['lr'], eps=group['eps'])\n")
    assert lines_of(source, "GS301") == [6, 11]  # lr in both kernels; eps (a per-run setting) nowhere


def test_an_entry_of_a_param_group_read_in_a_loop_over_the_groups_is_no_per_step_number():
    """Another optimizer (not reached) loops over its param groups and hands the shared kernel
    `eps=group['eps']`: a loop over groups, not over steps; only a rewritten key (`lr`) varies."""
    source = ("import torch\n\n\ndef kernel(params, *, lr: float, eps: float):\n"
              "    torch._foreach_add_(params, eps)\n    torch._foreach_mul_(params, 1 - lr)\n\n\n"
              "class A(torch.optim.Optimizer):\n    def step(self):  # graphsafe: region\n"
              "        for group in self.param_groups:\n            kernel(group['params'], lr=group['lr'], eps=1e-8)\n\n\n"
              "class B(torch.optim.Optimizer):\n    def step(self):\n        for group in self.param_groups:\n"
              "            kernel(group['params'], lr=0.1, eps=group['eps'])\n")
    assert lines_of(source, "GS301") == [6]


# -------------------------------------------------- lists filled with objects

CALLBACKS = """\
import torch


class History:
    def __init__(self):
        self.samples_seen = 0

    def on_batch_end(self, logs):
        self.samples_seen += logs["batch_size"]


class Container:
    def __init__(self, callbacks):
        self.callbacks = callbacks

    def on_batch_end(self, logs):
        for callback in self.callbacks:
            callback.on_batch_end(logs)


class Model:
    def __init__(self, net, custom_callbacks):
        self.net = net
        callbacks = []
        self.history = History()
        callbacks.{fill}
        callbacks.extend(custom_callbacks)
        self.container = Container(callbacks)

    def train_batch(self, x):  # graphsafe: region
        self.container.on_batch_end({{"batch_size": x.shape[0]}})
        return self.net(x)
"""


@pytest.mark.parametrize("fill", ["append(self.history)", "insert(0, History())"])
def test_objects_appended_to_a_local_list_are_reached_through_it(fill):
    assert found(CALLBACKS.format(fill=fill), "GS302") == [9]


def test_a_list_filled_only_with_values_of_unknown_class_reaches_nothing():
    assert found(CALLBACKS.format(fill="append(make_callback())"), "GS302") == []


CENTERS = """\
import torch
import torch.distributed as dist


def center_mean(x):
    c = x.mean(0)
    dist.all_reduce(c)
    return c


def center_print(x):
    print(x)
    return x


def quiet(x):
    return x * 2


CENTERS = {"mean": center_mean}
QUIET = {"quiet": quiet}
WEIGHTS = {"mean": 0.5}
"""

CENTERED = """\
import torch
{imports}


class Center(torch.nn.Module):
    def __init__(self, mode="mean", ddp=False):
        super().__init__()
        self.center_fn = {chosen}

    def forward(self, x):  # graphsafe: region
        return self.center_fn(x)
"""


@pytest.mark.parametrize("chosen, expected", [
    ("center_mean if ddp else center_print", {("model.py", 7, "GS901"), ("model.py", 12, "GS501")}),
    ("CENTERS[mode]", {("model.py", 7, "GS901")}),
    ("CENTERS.get(mode)", {("model.py", 7, "GS901")}),
    ("quiet if ddp else QUIET[mode]", set()),
])
def test_a_function_chosen_into_an_attribute_in_the_same_file_runs_where_it_is_called(tmp_path, chosen, expected):
    model = CENTERS + "\n\n" + CENTERED.format(imports="", chosen=chosen)
    assert project(tmp_path, {"model.py": model}) == expected


@pytest.mark.parametrize("imports, chosen", [
    ("from centers import CENTERS", "CENTERS[mode]"),
    ("from pkg import CENTERS", "CENTERS[mode]"),  # re-exported by the package
    ("import centers", "centers.center_mean if ddp else centers.quiet"),
])
def test_a_function_picked_from_a_table_of_another_file_runs_where_it_is_called(tmp_path, imports, chosen):
    files = {"centers.py": CENTERS, "pkg/__init__.py": "from centers import CENTERS\n",
             "model.py": CENTERED.format(imports=imports, chosen=chosen)}
    assert project(tmp_path, files) == {("centers.py", 7, "GS901")}


def test_a_table_of_numbers_or_quiet_functions_of_another_file_runs_nothing(tmp_path):
    for table in ("QUIET", "WEIGHTS"):
        files = {"centers.py": CENTERS, "model.py": CENTERED.format(imports=f"from centers import {table}",
                                                                   chosen=f"{table}[mode]")}
        assert project(tmp_path, files) == set()


KEPT = """\
import torch


def gumbel(x):
    return x.argmax(-1).item()


class Codebook(torch.nn.Module):
    def __init__(self, sample=gumbel):
        super().__init__()
        self.sample = sample

    def forward(self, x):  # graphsafe: region
        return self.sample(x)
"""


def test_the_default_function_a_constructor_keeps_runs_where_it_is_called(tmp_path):
    assert project(tmp_path, {"model.py": KEPT}) == {("model.py", 5, "GS101")}


def test_a_function_the_constructors_callers_pass_runs_where_it_is_called(tmp_path):
    build = "from model import Codebook\n\n\ndef loud(x):\n    print(x)\n    return x\n\n\n" \
            "def build():\n    return Codebook(sample=loud)\n"
    found = project(tmp_path, {"model.py": KEPT.replace("sample=gumbel", "sample=None"), "build.py": build})
    assert found == {("build.py", 5, "GS501")}
