"""Objects the call graph follows however they reach the code that calls them: an attribute
that one method sets to an instance and another to something unknown here (a value loaded
from disk), an object a factory function makes and a caller passes on, and a class picked
from a module-level table and constructed (`SOLVERS[method](...)` runs that class's
`__init__`)."""

from __future__ import annotations

from tests.helpers import project_diagnostics

BUFFERS = """
import numpy as np
import torch


class Buffer:
    def sample(self, n: int):
        idx = np.random.randint(0, 10, size=n)
        return torch.as_tensor(idx)


class BigLoss:
    def __call__(self, x: torch.Tensor):
        return x.sum().item()


class SmallLoss:
    def __call__(self, x: torch.Tensor):
        return x


def create_loss(big):
    if big:
        return BigLoss()
    return SmallLoss()
"""


def located(found):
    return {(d.path.rpartition("/")[2], d.start.line, d.code) for d in found}


def test_an_attribute_also_set_to_an_unknown_value_still_reaches_its_objects_methods(tmp_path):
    found = project_diagnostics(tmp_path, {"buffers.py": BUFFERS, "base.py": """
        from buffers import Buffer
        from storage import load


        class Algorithm:
            def setup(self):
                self.buffer = Buffer()

            def restore(self, path):
                self.buffer = load(path)
        """, "storage.py": """
        import pickle


        def load(path):
            with open(path, "rb") as f:
                return pickle.load(f)
        """, "algo.py": """
        from base import Algorithm


        class DQN(Algorithm):
            def train(self, n: int):
                return self.buffer.sample(n)
        """}, regions=("DQN.train",))
    assert ("buffers.py", 8, "GS502") in located(found)


def test_an_object_a_factory_makes_and_a_caller_passes_on_is_followed(tmp_path):
    found = project_diagnostics(tmp_path, {"buffers.py": BUFFERS, "train.py": """
        import torch


        def train_one_epoch(x: torch.Tensor, criterion):
            return criterion(x)
        """, "main.py": """
        from buffers import create_loss
        from train import train_one_epoch


        def main(x, big):
            criterion = create_loss(big)
            return train_one_epoch(x, criterion)
        """}, regions=("train_one_epoch",))
    assert ("buffers.py", 14, "GS101") in located(found)


def test_a_class_picked_from_a_table_and_constructed_runs_its_init(tmp_path):
    found = project_diagnostics(tmp_path, {"solvers.py": """
        import torch


        class Euler:
            def __init__(self, y0: torch.Tensor):
                self.scale = y0.abs().max().item()


        class Midpoint:
            def __init__(self, y0: torch.Tensor):
                self.scale = 1.0
        """, "odeint.py": """
        from solvers import Euler, Midpoint

        SOLVERS = {"euler": Euler, "midpoint": Midpoint}


        def odeint(y0, method):
            solver = SOLVERS[method](y0)
            return solver.scale
        """}, regions=("odeint",))
    assert ("solvers.py", 7, "GS101") in located(found)


def test_a_dict_filled_with_objects_by_item_stores_reaches_their_methods(tmp_path):
    found = project_diagnostics(tmp_path, {"stats.py": """
        import torch


        class Welford:
            def __init__(self):
                self.n = 0

            def update(self, x: torch.Tensor):
                self.n += 1
                return x.mean().item()
        """, "adapt.py": """
        import torch
        from stats import Welford


        class Adapter:
            def __init__(self):
                self.schemes = {}

            def configure(self, names):
                for name in names:
                    scheme = Welford()
                    self.schemes[name] = scheme

            def update(self, z: torch.Tensor):
                for name, scheme in self.schemes.items():
                    scheme.update(z)
        """}, regions=("Adapter.update",))
    assert ("stats.py", 11, "GS101") in located(found)


def test_an_attribute_set_to_none_first_and_an_object_later_reaches_its_methods(tmp_path):
    found = project_diagnostics(tmp_path, {"ema.py": """
        import torch


        class ModelEMA:
            def __init__(self):
                self.updates = 0

            def update(self, x: torch.Tensor):
                self.updates += 1
                return x.norm().item()
        """, "trainer.py": """
        from ema import ModelEMA


        class Trainer:
            def __init__(self):
                self.ema = None

            def setup(self):
                self.ema = ModelEMA()

            def optimizer_step(self, x):
                if self.ema:
                    self.ema.update(x)
        """}, regions=("Trainer.optimizer_step",))
    assert ("ema.py", 11, "GS101") in located(found)


def test_an_object_given_in_place_of_a_default_one_reaches_the_defaults_methods(tmp_path):
    found = project_diagnostics(tmp_path, {"sampling.py": """
        import torch


        class NoiseSampler:
            def __call__(self, sigma, sigma_next):
                return torch.randn(3, device="cuda").max().item() * (sigma - sigma_next)


        def sample(x, sigmas, noise_sampler=None):
            noise_sampler = NoiseSampler() if noise_sampler is None else noise_sampler
            for i in range(len(sigmas) - 1):
                x = x + noise_sampler(sigmas[i], sigmas[i + 1])
            return x
        """}, regions=("sample",))
    assert ("sampling.py", 7, "GS101") in located(found)
