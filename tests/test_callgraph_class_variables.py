"""A class chosen through a variable is constructed and called like one named directly:
`cls = Impl if flag else Other; self.impl = cls(...)`, and a class passed as an argument or a
default (`impl_cls=Impl`) then called. Every candidate class's forward is reached."""

from __future__ import annotations

from tests.helpers import project_diagnostics

IMPLS = """
import torch
from torch import nn


class FastAttention(nn.Module):
    def forward(self, x: torch.Tensor):
        if x.sum() > 0:
            x = x * 2
        return x


class SlowAttention(nn.Module):
    def forward(self, x):
        return x + x.max().item()
"""

FAST_BRANCH = ("impls.py", 8, "GS201")
SLOW_ITEM = ("impls.py", 15, "GS101")


def located(found):
    return {(d.path.rpartition("/")[2], d.start.line, d.code) for d in found}


def test_a_class_chosen_by_a_conditional_expression_reaches_both_candidates(tmp_path):
    found = project_diagnostics(tmp_path, {"impls.py": IMPLS, "model.py": """
        from torch import nn
        from impls import FastAttention, SlowAttention


        class Model(nn.Module):
            def __init__(self, fast):
                super().__init__()
                cls = FastAttention if fast else SlowAttention
                self.attn = cls()

            def forward(self, x):
                return self.attn(x)
        """}, regions=("Model.forward",))
    assert {FAST_BRANCH, SLOW_ITEM} <= located(found)


def test_a_class_passed_as_a_default_argument_is_called_by_its_holder(tmp_path):
    found = project_diagnostics(tmp_path, {"impls.py": IMPLS, "model.py": """
        from torch import nn
        from impls import FastAttention


        class Model(nn.Module):
            def __init__(self, attn_cls=FastAttention):
                super().__init__()
                self.attn = attn_cls()

            def forward(self, x):
                return self.attn(x)
        """}, regions=("Model.forward",))
    assert FAST_BRANCH in located(found)


def test_a_class_passed_by_the_caller_is_called_by_its_holder(tmp_path):
    found = project_diagnostics(tmp_path, {"impls.py": IMPLS, "model.py": """
        from torch import nn


        class Model(nn.Module):
            def __init__(self, impl_cls):
                super().__init__()
                self.attn = impl_cls()

            def forward(self, x):
                return self.attn(x)
        """, "build.py": """
        from impls import SlowAttention
        from model import Model


        def build():
            return Model(impl_cls=SlowAttention)
        """}, regions=("Model.forward",))
    assert SLOW_ITEM in located(found)


def test_a_class_held_in_a_variable_that_is_never_called_reaches_nothing(tmp_path):
    found = project_diagnostics(tmp_path, {"impls.py": IMPLS, "model.py": """
        from torch import nn
        from impls import FastAttention, SlowAttention


        class Model(nn.Module):
            def __init__(self, fast):
                super().__init__()
                self.kind = FastAttention if fast else SlowAttention
                self.attn = nn.Linear(2, 2)

            def forward(self, x):
                return self.attn(x)
        """}, regions=("Model.forward",))
    assert not {FAST_BRANCH, SLOW_ITEM} & located(found)


def test_a_class_default_and_the_class_a_caller_passes_are_both_reached(tmp_path):
    found = project_diagnostics(tmp_path, {"impls.py": IMPLS, "model.py": """
        from torch import nn
        from impls import FastAttention


        class Model(nn.Module):
            def __init__(self, attn_cls=FastAttention):
                super().__init__()
                self.attn = attn_cls()

            def forward(self, x):
                return self.attn(x)
        """, "build.py": """
        from impls import SlowAttention
        from model import Model


        def build():
            return Model(attn_cls=SlowAttention)
        """}, regions=("Model.forward",))
    assert {FAST_BRANCH, SLOW_ITEM} <= located(found)
