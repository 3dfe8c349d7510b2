"""A class reached through `functools.partial`, a variable, an attribute or a literal table is
constructed like one named directly, and calls on the instance reach that class's methods:
`partial(MuSGD, muon=m)(params)` then `optimizer.step()`, `factory = partial(Block, dim=d)` in
a ModuleList, `self.opt_cls = AdamW if adam else MuSGD`, `{"a": A, "b": B}[name](...)`."""

from __future__ import annotations

from tests.helpers import project_diagnostics

OPTIMIZER = """
import torch


class MuSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=0.1, muon=0.5):
        super().__init__(params, dict(lr=lr))
        self.muon = muon

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                p.add_(p.grad, alpha=-p.grad.norm().item())
"""
STEP_ITEM = ("opt.py", 14, "GS101")

BLOCKS = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x + x.max().item()


class Other(nn.Module):
    def forward(self, x):
        return x * x.min().item()
"""
BLOCK_ITEM = ("blocks.py", 12, "GS101")
OTHER_ITEM = ("blocks.py", 17, "GS101")


def located(found):
    return {(d.path.rpartition("/")[2], d.start.line, d.code) for d in found}


def trainer_findings(tmp_path, trainer: str):
    return located(project_diagnostics(tmp_path, {"opt.py": OPTIMIZER, "trainer.py": trainer},
                                       regions=("Trainer.optimizer_step",)))


def model_findings(tmp_path, model: str):
    return located(project_diagnostics(tmp_path, {"blocks.py": BLOCKS, "model.py": model}, regions=("Model.forward",)))


def test_an_optimizer_built_through_a_functools_partial_reaches_its_step(tmp_path):
    assert STEP_ITEM in trainer_findings(tmp_path, """
        import functools
        from opt import MuSGD


        class Trainer:
            def __init__(self, model):
                make = functools.partial(MuSGD, muon=0.2)
                self.optimizer = make(model.parameters())

            def optimizer_step(self):
                self.optimizer.step()
        """)


def test_a_partial_chosen_against_a_dynamic_lookup_and_returned_by_a_builder_reaches_its_step(tmp_path):
    # one branch names no class (`getattr(optim, name)`): the class the other names is a candidate
    assert STEP_ITEM in trainer_findings(tmp_path, """
        from functools import partial
        import torch
        from opt import MuSGD


        class Trainer:
            def __init__(self, model, use_muon):
                self.optimizer = self.build_optimizer(model, use_muon)

            def build_optimizer(self, model, use_muon, name="SGD"):
                optimizer = (partial(MuSGD, muon=0.2) if use_muon else getattr(torch.optim, name))(params=model.parameters())
                return optimizer

            def optimizer_step(self):
                self.optimizer.step()
        """)


def test_an_optimizer_class_chosen_into_an_attribute_reaches_its_step(tmp_path):
    assert STEP_ITEM in trainer_findings(tmp_path, """
        import torch
        from opt import MuSGD


        class Trainer:
            def __init__(self, model, adam):
                self.opt_cls = torch.optim.AdamW if adam else MuSGD
                self.optimizer = self.opt_cls(model.parameters())

            def optimizer_step(self):
                self.optimizer.step()
        """)


def test_a_class_held_in_a_plain_variable_is_constructed(tmp_path):
    assert BLOCK_ITEM in model_findings(tmp_path, """
        from torch import nn
        from blocks import Block


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                cls = Block
                self.impl = cls(4)

            def forward(self, x):
                return self.impl(x)
        """)


def test_a_partial_of_a_class_fills_a_module_list(tmp_path):
    assert BLOCK_ITEM in model_findings(tmp_path, """
        from functools import partial
        from torch import nn
        from blocks import Block


        class Model(nn.Module):
            def __init__(self, d, n):
                super().__init__()
                factory = partial(Block, dim=d)
                self.layers = nn.ModuleList([factory() for _ in range(n)])

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x
        """)


def test_a_partial_of_a_class_variable_is_constructed(tmp_path):
    assert {BLOCK_ITEM, OTHER_ITEM} <= model_findings(tmp_path, """
        from functools import partial
        from torch import nn
        from blocks import Block, Other


        class Model(nn.Module):
            def __init__(self, d, fast):
                super().__init__()
                cls = Block if fast else Other
                make = partial(cls, d)
                self.impl = make()

            def forward(self, x):
                return self.impl(x)
        """)


def test_a_class_picked_from_a_literal_table_reaches_every_entry(tmp_path):
    assert {BLOCK_ITEM, OTHER_ITEM} <= model_findings(tmp_path, """
        from torch import nn
        from blocks import Block, Other


        class Model(nn.Module):
            def __init__(self, name):
                super().__init__()
                self.impl = {"a": Block, "b": Other}[name]()

            def forward(self, x):
                return self.impl(x)
        """)


def test_a_partial_of_a_class_held_in_an_attribute_is_constructed_there(tmp_path):
    assert BLOCK_ITEM in model_findings(tmp_path, """
        from functools import partial
        from torch import nn
        from blocks import Block


        class Model(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.block_factory = partial(Block, dim=d)
                self.impl = self.block_factory()

            def forward(self, x):
                return self.impl(x)
        """)


def test_a_module_level_partial_of_a_class_is_constructed(tmp_path):
    assert BLOCK_ITEM in model_findings(tmp_path, """
        from functools import partial
        from torch import nn
        from blocks import Block

        BlockFactory = partial(Block, dim=2)


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.impl = BlockFactory()

            def forward(self, x):
                return self.impl(x)
        """)


def test_a_local_shadowing_a_module_level_class_name_is_not_constructed(tmp_path):
    found = model_findings(tmp_path, """
        from functools import partial
        from torch import nn
        from blocks import Block

        Factory = partial(Block, dim=2)


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                Factory = nn.Linear
                self.impl = Factory(2, 2)

            def forward(self, x):
                return self.impl(x)
        """)
    assert BLOCK_ITEM not in found


def test_classes_held_in_variables_but_never_constructed_in_reach_are_not_reported(tmp_path):
    found = model_findings(tmp_path, """
        from functools import partial
        from torch import nn
        from blocks import Block, Other


        class Model(nn.Module):
            def __init__(self, name):
                super().__init__()
                self.factory = partial(Block, dim=2)
                self.kinds = {"a": Block, "b": Other}
                cls = Other
                self.lin = nn.Linear(2, 2)

            def forward(self, x):
                return self.lin(x)
        """)
    assert not {BLOCK_ITEM, OTHER_ITEM} & found


def test_an_instance_of_one_chosen_class_does_not_reach_another_class_of_the_table(tmp_path):
    # receiver precision: the region runs on what `self.impl` holds, not on every class nearby
    found = model_findings(tmp_path, """
        from functools import partial
        from torch import nn
        from blocks import Block, Other


        class Model(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.other_factory = partial(Other)
                self.impl = partial(Block, dim=d)()

            def forward(self, x):
                return self.impl(x)
        """)
    assert BLOCK_ITEM in found
    assert OTHER_ITEM not in found


def test_a_grad_scaler_step_runs_the_optimizers_own_step(tmp_path):
    # torch's GradScaler.step(optimizer) calls optimizer.step(): a project optimizer's hazards count
    assert STEP_ITEM in trainer_findings(tmp_path, """
        import torch
        from opt import MuSGD


        class Trainer:
            def __init__(self, model, xpu):
                self.scaler = torch.amp.GradScaler("xpu" if xpu else "cuda") if xpu else torch.cuda.amp.GradScaler()
                self.optimizer = MuSGD(model.parameters())

            def optimizer_step(self):
                self.scaler.unscale_(self.optimizer)
                self.scaler.step(self.optimizer)
                self.scaler.update()
        """)


def test_a_step_method_of_another_object_given_an_optimizer_does_not_run_its_step(tmp_path):
    found = trainer_findings(tmp_path, """
        import torch
        from opt import MuSGD


        class Logger:
            def step(self, optimizer):
                pass


        class Trainer:
            def __init__(self, model):
                self.logger = Logger()
                self.optimizer = MuSGD(model.parameters())

            def optimizer_step(self):
                self.logger.step(self.optimizer)
        """)
    assert STEP_ITEM not in found


def test_an_optimizer_built_through_a_partial_in_a_builder_is_stepped_through_a_grad_scaler(tmp_path):
    assert STEP_ITEM in trainer_findings(tmp_path, """
        from functools import partial
        import torch
        from opt import MuSGD


        class Trainer:
            def __init__(self, model, use_muon):
                self.scaler = torch.amp.GradScaler("cuda")
                self.optimizer = self.build_optimizer(model, use_muon)

            def build_optimizer(self, model, use_muon, name="SGD"):
                optimizer = (partial(MuSGD, muon=0.2) if use_muon else getattr(torch.optim, name))(params=model.parameters())
                return optimizer

            def optimizer_step(self):
                self.scaler.step(self.optimizer)
                self.scaler.update()
        """)
