"""Hooks run inside the step: saved-tensor hooks in the forward and backward of their `with` block (the functions
given to `torch.autograd.graph.saved_tensors_hooks(pack, unpack)`, directly or through a
subclass's `super().__init__(pack, unpack)`, activation offloading), and a hook registered in the step
(`h.register_hook(fn)`, `m.register_forward_hook(fn)`) where it is registered."""

from __future__ import annotations

from tests.helpers import project_diagnostics

OFFLOAD = """
import torch
from torch.autograd.graph import saved_tensors_hooks


class Offload(saved_tensors_hooks):
    def __init__(self):
        self.tracker = {}

        def pack(t):
            self.tracker[id(t)] = t.to("cpu", non_blocking=True)
            return id(t)

        def unpack(key):
            return self.tracker.pop(key).cuda()

        super().__init__(pack, unpack)


class Recipe:
    def __init__(self, model):
        self.model = model
        self.ctx = Offload()

    def train(self, x):
        with self.ctx:
            y = self.model(x)
        return y * 2


def step(model, x):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: print(t.shape) or t, lambda t: t):
        return model(x)
"""


def located(found):
    return {(d.path.rpartition("/")[2], d.start.line, d.code) for d in found}


def test_the_hooks_a_subclass_hands_its_base_run_in_each_with_block_of_its_instances(tmp_path):
    found = located(project_diagnostics(tmp_path, {"recipe.py": OFFLOAD}, regions=("Recipe.train",)))
    assert ("recipe.py", 11, "GS103") in found  # pack's copy to the host
    assert ("recipe.py", 15, "GS402") in found  # unpack's copy back


def test_hooks_given_directly_run_in_their_with_block(tmp_path):
    found = located(project_diagnostics(tmp_path, {"recipe.py": OFFLOAD}, regions=("step",)))
    assert ("recipe.py", 32, "GS501") in found


def test_a_closure_in_a_method_reads_the_methods_self_not_its_own_first_parameter(tmp_path):
    found = located(project_diagnostics(tmp_path, {"recipe.py": OFFLOAD}, regions=("Recipe.train",)))
    assert ("recipe.py", 11, "GS503") in found  # `self.tracker[...] = ...` in pack: the Offload's dict


OFFLOAD_FACTORY = """
import contextlib
from typing import Union

import torch
from torch.autograd.graph import saved_tensors_hooks


class Offload(saved_tensors_hooks):
    def __init__(self):
        def pack(t):
            print("offloading", t.shape)
            return t

        super().__init__(pack, lambda t: t)


def offload_context(enable: bool) -> Union[Offload, contextlib.nullcontext]:
    if enable:
        ctx = Offload()
    else:
        ctx = contextlib.nullcontext()
    return ctx
"""

RECIPE = """
from offloading import offload_context


class Recipe:
    def __init__(self, model, enable):
        self.model = model
        self.ctx = offload_context(enable)

    def train(self, x):
        with self.ctx:
            return self.model(x)
"""


def test_a_context_kept_from_a_factory_of_another_file_runs_its_hooks_in_the_with_block(tmp_path):
    found = located(project_diagnostics(tmp_path, {"offloading.py": OFFLOAD_FACTORY, "recipe.py": RECIPE},
                                        regions=("Recipe.train",)))
    assert ("offloading.py", 12, "GS501") in found  # the factory's `Union[...]` names the project class


def test_constructing_the_hooks_outside_a_with_block_runs_nothing(tmp_path):
    found = located(project_diagnostics(tmp_path, {"recipe.py": OFFLOAD}, regions=("Recipe.__init__",)))
    assert not any(line in (11, 15) for _, line, _ in found)


GRAD_HOOKS = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stats = []
        self.lin = torch.nn.Linear(4, 4)
        self.lin.register_forward_hook(self._outside)

    def _outside(self, module, inp, out):
        print("registered before the step")

    def _grad_norm(self, grad):
        self.stats.append(grad.norm().item())
        return grad

    def forward(self, x: torch.Tensor):
        h = self.lin(x)
        h.register_hook(self._grad_norm)
        return h.relu()
"""


def test_a_hook_registered_in_the_step_runs_in_it(tmp_path):
    found = located(project_diagnostics(tmp_path, {"net.py": GRAD_HOOKS}, regions=("Net.forward",)))
    assert ("net.py", 16, "GS101") in found  # the gradient hook runs in the captured backward
    assert not any(line == 13 for _, line, _ in found)  # registered in __init__: not followed (yet)


CHOSEN_HOOK = """
import torch
from torch.autograd.graph import saved_tensors_hooks


class Offload(saved_tensors_hooks):
    def __init__(self, use_streams: bool):
        def pack(t):
            return t

        def unpack_one(t):
            return t

        def unpack_with_streams(t):
            torch.cuda.current_stream().synchronize()
            return t

        unpack = unpack_with_streams if use_streams else unpack_one
        super().__init__(pack, unpack)


class Recipe:
    def __init__(self, model):
        self.model = model
        self.ctx = Offload(True)

    def train(self, x):
        with self.ctx:
            return self.model(x)
"""


def test_a_hook_chosen_between_nested_functions_runs_either(tmp_path):
    found = located(project_diagnostics(tmp_path, {"recipe.py": CHOSEN_HOOK}, regions=("Recipe.train",)))
    assert any(line == 15 for _, line, _ in found)
