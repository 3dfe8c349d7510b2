"""Tensor-ness of names bound by loops and unpacking, and of what calls return, each case beside
a look-alike that must stay silent:

- `for name, p in model.named_parameters()` (also under `enumerate`) binds a tensor to `p`, not
  to `name`;
- `self.a, self.b = (t.to(dev).clone() for t in batch)` binds tensor attributes (and a
  `self.a = None` beside a tensor no longer hides that it is one); `.to(dev)` alone may be a
  module's method;
- `torch.max(a, b)` / `a.max(b)` with `b` a tensor is one tensor (elementwise), not the
  (values, indices) pair of `torch.max(a, 1)`;
- `super().forward(x)` of a torch module class returns a tensor;
- `any(...)`/`all(...)` of tensors in an `if`/`assert` test branch on tensors (GS201), taking
  the loop variable's element kind; a module's own `any` is not the builtin.
"""

from __future__ import annotations

from tests.helpers import lines_of


found = lines_of  # the lines where a code is reported


# --------------------------------------------------- loop and unpacking bindings

def test_named_parameters_binds_the_tensor():
    source = """\
        import torch
        import torch.nn as nn


        def clip(model: nn.Module, c: float):  # graphsafe: region
            for _, p in model.named_parameters():
                norm = p.grad.data.norm(2)
                if c / (norm + 1e-6) < 1:
                    p.grad.data.mul_(0.5)
        """
    assert found(source, "GS201") == [8]


def test_named_parameters_name_test_stays_silent():
    source = """\
        import torch
        import torch.nn as nn


        def freeze(model: nn.Module):  # graphsafe: region
            for name, p in model.named_parameters():
                if "last_layer" in name and p.grad is not None:
                    p.grad.zero_()
        """
    assert found(source, "GS201") == []


def test_enumerate_of_named_parameters_binds_the_tensor():
    source = """\
        import torch
        import torch.nn as nn


        def check(model: nn.Module):  # graphsafe: region
            for i, (name, p) in enumerate(model.named_parameters()):
                if p.sum() > 0:
                    p.mul_(0.5)
                if i > 2 and name.endswith("bias"):
                    p.zero_()
        """
    assert found(source, "GS201") == [7]


STATIC = """
import torch


class Runner:
    def __init__(self, model):
        self.model = model
        self.static_x = self.static_y = None

    def capture(self, batch, device):
        self.static_x, self.static_y = ({element} for t in batch)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = self.step(self.static_x, self.static_y)

    def step(self, x, y):
        if (y > 0).any():
            raise ValueError("negative")
        return self.model(x)
"""


def test_attributes_unpacked_from_a_generator_of_tensor_copies_are_tensors():
    assert found(STATIC.format(element="t.to(device).clone()"), "GS201") == [17]


def test_attributes_unpacked_from_a_generator_of_moved_values_stay_unknown():
    # `.to(device)` is also a module's method: the elements may be modules
    assert found(STATIC.format(element="t.to(device)"), "GS201") == []


# -------------------------------------------------------------- results of calls

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


def test_super_forward_of_a_torch_module_is_a_tensor():
    source = """
    import torch.nn as nn


    class Layer(nn.Linear):
        def forward(self, x):  # graphsafe: region
            y = super().forward(x)
            if y.sum() > 0:
                y = -y
            return y


    class Plain(nn.Module):
        def forward(self, x):  # graphsafe: region
            y = super().forward(x)
            if y:
                pass
            return y
    """
    assert found(source, "GS201") == [8]


# ------------------------------------------------------------------- any and all

ANY_ALL = """
import torch


def step(x: torch.Tensor, grads: list[torch.Tensor], params, sizes: list[int]):  # graphsafe: region
    if any(torch.isnan(p.grad).any() for p in params):
        pass
    if not all(torch.isfinite(g).all() for g in grads):
        pass
    assert all(torch.isfinite(x))
    if any(p.grad is None for p in params):
        pass
    if any(s > 2 for s in sizes):
        pass
    if all(d > 1 for d in x.shape):
        pass
    flags = [torch.isnan(g).any() for g in grads]
    return x
"""


def test_any_all_of_tensors_in_a_test():
    assert found(ANY_ALL, "GS201") == [6, 8, 10]


def test_any_shadowed_by_a_local_function_is_not_the_builtin():
    source = ANY_ALL.replace("import torch\n", "import torch\n\n\ndef any(xs):\n    return False\n", 1)
    assert found(source, "GS201") == [12, 14]  # `all` still counts; the module's own `any` does not


def test_any_over_a_loop_variable_takes_the_element_kind():
    source = """
    import torch


    def step(grads: list[torch.Tensor], sizes: list[int]):  # graphsafe: region
        if any((g != g).any() for g in grads):
            pass
        if any((s != 0) for s in sizes):
            pass
        return grads
    """
    assert found(source, "GS201") == [6]
