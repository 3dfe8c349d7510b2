"""Which code a region reaches when the objects it calls are defined, built or passed elsewhere.

Shapes from training and decoding programs: blocks graphed one by one through an attribute path
whose classes live in other files, a model passed to a helper as a parameter, attributes bound
by tuple assignment or annotated `X | None = None`, `self(obs)`, and `x.unique().tolist()`.
Each case has a look-alike that must stay silent.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphsafe.analyzer.engine import check_paths
from graphsafe.config import Settings
from tests.helpers import diagnostics

BLOCK = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 0:
            y = y * 2
        return y


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(2)])
"""


def write(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))


def found(tmp_path: Path) -> set[tuple[str, int, str]]:
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    return {(Path(d.path).name, d.start.line, d.code) for d in result.diagnostics}


def test_blocks_graphed_through_an_attribute_path_across_files(tmp_path):
    write(tmp_path, {
        "model.py": BLOCK,
        "module.py": """
            import torch
            from model import GPT

            class Lit(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.model = GPT()
            """,
        "train.py": """
            import torch
            from module import Lit

            class Trainer:
                def __init__(self, dev):
                    self.module = Lit().to(dev)

                def graph_blocks(self, h):
                    for i, block in enumerate(self.module.model.blocks):
                        self.module.model.blocks[i] = torch.cuda.make_graphed_callables(block, (h,))
            """,
    })
    assert found(tmp_path) == {("model.py", 13, "GS201")}


def test_an_attribute_path_to_something_that_is_not_graphed_stays_silent(tmp_path):
    write(tmp_path, {
        "model.py": BLOCK,
        "train.py": """
            import torch
            from model import GPT

            class Trainer:
                def __init__(self):
                    self.model = GPT()

                def run(self, h):
                    for block in self.model.blocks:
                        block(h)
            """,
    })
    assert found(tmp_path) == set()


HELPER = """
import torch
from torch import nn


def forward_twice(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return model(x) + model(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x) * torch.tensor(2.0, device=x.device)


class Trainer:
    def __init__(self):
        self.net = Net()

    def step(self, x: torch.Tensor):  # graphsafe: region
        return {call}
"""


def test_a_model_passed_to_a_helper_is_followed_into_its_forward():
    source = HELPER.format(call="forward_twice(self.net, x)")
    assert [(d.start.line, d.code) for d in diagnostics(source)] == [(16, "GS402")]


def test_a_helper_given_only_torch_modules_reaches_nothing_of_the_project():
    source = HELPER.format(call="forward_twice(torch.nn.Linear(4, 4), x)")
    assert diagnostics(source) == []


TUPLE_ATTRS = """
import torch
from torch import nn


class Decoder(nn.Module):
    def forward(self, x: torch.Tensor):
        if x.sum() > 0:
            x = x * 2
        return x


class Session:
    def __init__(self, model: Decoder, cfg):
        {assignment}

    def step(self, x: torch.Tensor):  # graphsafe: region
        return self.model(x)
"""


def test_attributes_bound_by_tuple_assignment_keep_their_classes():
    source = TUPLE_ATTRS.format(assignment="self.model, self.cfg = model, cfg")
    assert [d.code for d in diagnostics(source)] == ["GS201"]


def test_a_tuple_assignment_of_other_values_binds_no_class():
    source = TUPLE_ATTRS.format(assignment="self.model, self.cfg = cfg, model")
    assert diagnostics(source) == []


def test_an_attribute_annotated_with_a_class_and_set_to_none_holds_that_class():
    source = textwrap.dedent("""
        import torch


        class Fabric:
            def __init__(self):
                self.logged = {}

            def log(self, name: str, value) -> None:
                self.logged[name].append(value)


        class Module(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.fabric: Fabric | None = None

            def step(self, x: torch.Tensor):  # graphsafe: region
                self.fabric.log("x", x)
        """)
    # the append in `Fabric.log` is reached (the call itself is a logging call: GS501)
    assert [(d.start.line, d.code) for d in diagnostics(source)] == [(10, "GS503"), (19, "GS501")]


def test_calling_self_runs_forward_and_gives_its_tensors():
    source = textwrap.dedent("""
        import torch
        from torch import nn


        class Actor(nn.Module):
            def __init__(self):
                super().__init__()
                self.trunk = nn.Linear(3, 4)

            def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                mean, log_std = self.trunk(obs).chunk(2, dim=-1)
                return mean, log_std

            def get_action(self, obs: torch.Tensor):  # graphsafe: region
                mean, {name} = self(obs)
                std = log_std.exp()
                if (std < 1e-6).any():
                    std = std.clamp_min(1e-6)
                return std
        """)
    assert [d.code for d in diagnostics(source.replace("{name}", "log_std"))] == ["GS201"]
    # `log_std` is not bound from the call here: its kind is unknown (and nothing else says `std`
    # is a tensor: `.exp()`/`.clamp_min()` would, tests/test_tensorness_from_use.py)
    unbound = source.replace("{name}", "_").replace("log_std.exp()", "log_std_of(obs)")
    assert diagnostics(unbound.replace("std.clamp_min(1e-6)", "1e-6")) == []


def test_a_row_of_a_returned_tensor_compared_is_a_mask():
    source = textwrap.dedent("""
        import torch


        def box_iou(a: torch.Tensor, b: torch.Tensor):
            return a * b


        def nms(order: torch.Tensor, boxes: torch.Tensor):  # graphsafe: region
            ious = box_iou(boxes, boxes)[0]
            keep = order[1:][ious <= 0.5]
            first = order[1:][ious[:1].long()]
            return keep, first
        """)
    assert [(d.start.line, d.code) for d in diagnostics(source)] == [(11, "GS108")]


def test_unique_then_tolist_syncs_twice_and_unique_with_counts_is_a_tuple():
    source = textwrap.dedent("""
        import torch


        def step(labels: torch.Tensor):  # graphsafe: region
            for c in labels.unique().tolist():
                pass
            values, counts = labels.unique(return_counts=True)
            return values
        """)
    got = [(d.start.line, d.code) for d in diagnostics(source)]
    assert sorted(got) == [(6, "GS102"), (6, "GS107"), (8, "GS107")]


# Set 4 (moco_train): the step calls `self.model(...)`, which is the MoCo module or its DDP
# wrapper, and records its meters through a dict comprehension of AverageMeter objects.
WRAPPED = """
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel


class Meter:
    def __init__(self):
        self.count = 0

    def record(self, n: int):
        self.count += n


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x) * torch.tensor(2.0, device=x.device)


class Trainer:
    def __init__(self, distributed: bool):
        self.net = Net()
        self.model = {model}
        self.meters = {meters}

    def step(self, x: torch.Tensor):  # graphsafe: region
        self.meters["n"].record(x.shape[0])
        return self.model(x)
"""


def test_a_ddp_wrapped_module_runs_the_wrapped_forward():
    source = WRAPPED.format(model="DistributedDataParallel(self.net, device_ids=[0])", meters="{}")
    assert [(d.start.line, d.code) for d in diagnostics(source)] == [(21, "GS402")]


def test_an_attribute_bound_to_a_module_or_its_wrapper_reaches_the_module():
    source = WRAPPED.format(model="self.net", meters="{}").replace(
        "        self.meters = {}\n",
        "        self.meters = {}\n        if distributed:\n            self.model = DistributedDataParallel(self.net)\n")
    assert [(d.start.line, d.code) for d in diagnostics(source)] == [(21, "GS402")]


def test_two_project_classes_bound_to_one_attribute_both_run():
    source = WRAPPED.format(model="Net() if distributed else Meter()", meters="{}")
    assert [(d.start.line, d.code) for d in diagnostics(source)] == [(21, "GS402")]


def test_a_wrapper_of_something_unknown_reaches_nothing():
    source = WRAPPED.format(model="DistributedDataParallel(build())", meters="{}")
    assert diagnostics(source) == []


def test_a_dict_of_objects_runs_their_methods():
    for meters in ('{name: Meter() for name in ("n", "m")}', '{"n": Meter(), "m": Meter()}'):
        source = WRAPPED.format(model="self.net", meters=meters)
        assert [(d.start.line, d.code) for d in diagnostics(source)] == [(12, "GS302"), (21, "GS402")], meters


def test_a_dict_of_other_values_binds_no_class():
    for meters in ('{name: 0 for name in ("n", "m")}', '{"n": Meter(), **extra}', '{"n": Meter(), "m": 0}'):
        source = WRAPPED.format(model="self.net", meters=meters)
        assert [(d.start.line, d.code) for d in diagnostics(source)] == [(21, "GS402")], meters


DECODER = """
import torch
from torch import nn


class Decoder(nn.Module):
    def forward(self, x):
        return x * x.sum().item()


class Whisper(nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = Decoder()

    def decoder_step(self, x):
        return x
"""

TASK = """
import torch
from model import Whisper


class Task:
    def __init__(self, model: Whisper):
        self.model = model

    def step(self, x: torch.Tensor) -> torch.Tensor:
        return self.model.{call}(x)

    def capture(self, x: torch.Tensor) -> None:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.out = self.step(x)
"""


def test_a_submodule_called_through_an_instance_from_another_file(tmp_path):
    """`self.model.decoder(x)`: `decoder` is no method of Whisper but a module it holds."""
    write(tmp_path, {"model.py": DECODER, "task.py": TASK.format(call="decoder")})
    assert found(tmp_path) == {("model.py", 8, "GS101")}


def test_a_method_of_the_instance_does_not_reach_its_submodule(tmp_path):
    """The look-alike: `self.model.decoder_step(x)` is a method; the submodule is not called."""
    write(tmp_path, {"model.py": DECODER, "task.py": TASK.format(call="decoder_step")})
    assert found(tmp_path) == set()


ADAPTER = """
import torch
from torch import nn


class Adapter(nn.Module):
    def __init__(self, base: nn.Linear):
        super().__init__()
        self.base = base

    def forward(self, x):
        return self.base(x) * x.sum().item()


def inject(model: nn.Module, names: tuple) -> None:
    for _, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if child_name in names:
                {install}
"""

NET = """
import torch
from torch import nn
from adapter import inject


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x)


class Teacher(Net):
    pass


class Trainer:
    def __init__(self):
        self.model = Net()
        inject({target}, ("proj",))

    def step(self, x: torch.Tensor):  # graphsafe: region
        return self.model(x)
"""


def test_a_module_installed_into_the_model_by_setattr_runs_in_its_forward(tmp_path):
    """Module surgery (LoRA): `setattr(module, name, Adapter(child))` over `model.named_modules()`."""
    write(tmp_path, {"adapter.py": ADAPTER.format(install="setattr(module, child_name, Adapter(child))"),
                     "net.py": NET.format(target="self.model")})
    assert found(tmp_path) == {("adapter.py", 12, "GS101")}


def test_setattr_look_alikes_install_nothing_into_the_captured_model(tmp_path):
    # another model (class) is injected; then a setattr on an object not walked from the model
    write(tmp_path, {"adapter.py": ADAPTER.format(install="setattr(module, child_name, Adapter(child))"),
                     "net.py": NET.format(target="Teacher()")})
    assert found(tmp_path) == set()
    write(tmp_path, {"adapter.py": ADAPTER.format(install="setattr(names, child_name, Adapter(child))"),
                     "net.py": NET.format(target="self.model")})
    assert found(tmp_path) == set()
