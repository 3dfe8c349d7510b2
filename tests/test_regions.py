"""Region roots of every kind, and call chains across methods, classes and files."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.helpers import codes, diagnostics, project_diagnostics

MODEL = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        return h.sum().item()
"""


def project(tmp_path: Path, files: dict[str, str], **settings):
    return project_diagnostics(tmp_path, files, **settings)


def test_graph_block_reaches_method_in_other_file(tmp_path):
    found = project(tmp_path, {
        "model.py": MODEL,
        "train.py": """
            import torch
            from model import Block

            def main():
                block = Block()
                x = torch.zeros(4, 4)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    y = block(x)
        """,
    })
    assert [d.code for d in found] == ["GS101"]
    d = found[0]
    assert d.path.endswith("model.py") and d.start.line == 13
    assert d.chain == ("torch.cuda.graph block in main (line 9)", "Block.forward")


def test_no_region_no_report():
    assert codes("""
        import torch
        def f(x: torch.Tensor):
            return x.item()
    """) == []


def test_region_star_audits_every_function():
    assert codes("""
        import torch
        def f(x: torch.Tensor):
            return x.item()
    """, regions=("*",)) == ["GS101"]


def test_region_pattern_on_qualified_name():
    source = """
        import torch
        class A:
            def step(self, x: torch.Tensor):
                return x.item()
            def other(self, x: torch.Tensor):
                return x.item()
    """
    found = diagnostics(textwrap.dedent(source), regions=("A.step",))
    assert [d.start.line for d in found] == [5]


def test_region_pattern_with_path(tmp_path):
    files = {"a.py": "import torch\ndef f(x: torch.Tensor):\n    return x.item()\n",
             "b.py": "import torch\ndef f(x: torch.Tensor):\n    return x.item()\n"}
    found = project(tmp_path, files, regions=("a.py::f",))
    assert [Path(d.path).name for d in found] == ["a.py"]


def test_decorator_and_comment_regions():
    assert codes("""
        import torch
        import graphsafe

        @graphsafe.region
        def a(x: torch.Tensor):
            return x.item()

        def b(x: torch.Tensor):  # graphsafe: region
            return x.tolist()

        # graphsafe: region
        def c(x: torch.Tensor):
            return x.cpu()
    """) == ["GS101", "GS102", "GS103"]


def test_make_graphed_callables_module_and_function():
    found = diagnostics(textwrap.dedent("""
        import torch
        from torch import nn

        class Net(nn.Module):
            def forward(self, x):
                torch.cuda.synchronize()
                return x

        def fn(x: torch.Tensor):
            return x.nonzero()

        net = Net()
        graphed = torch.cuda.make_graphed_callables((net, fn), ((torch.zeros(1),), (torch.zeros(1),)))
    """))
    assert sorted(d.code for d in found) == ["GS106", "GS107"]
    assert all(d.region.kind.value == "make_graphed_callables argument" for d in found)


def test_te_make_graphed_callables():
    assert codes("""
        import torch
        import transformer_engine.pytorch as te

        def layer(x: torch.Tensor):
            return x.tolist()

        te.make_graphed_callables(layer, (torch.zeros(1),))
    """) == ["GS102"]


def test_torch_compile_reduce_overhead_decorator_and_call():
    assert codes("""
        import torch

        @torch.compile(mode="reduce-overhead")
        def a(x: torch.Tensor):
            return x.item()

        @torch.compile
        def not_graphed(x: torch.Tensor):
            return x.item()

        def b(x: torch.Tensor):
            return x.tolist()

        compiled = torch.compile(b, mode="reduce-overhead")
    """) == ["GS101", "GS102"]


def test_capture_begin_end_segment():
    found = diagnostics(textwrap.dedent("""
        import torch

        def main(x: torch.Tensor):
            before = x.item()
            g = torch.cuda.CUDAGraph()
            g.capture_begin()
            y = x.item()
            g.capture_end()
            after = x.item()
    """))
    assert [d.start.line for d in found] == [8]  # only the line between begin and end


def test_self_method_super_and_attribute_modules():
    found = diagnostics(textwrap.dedent("""
        import torch
        from torch import nn

        class Base(nn.Module):
            def forward(self, x):
                return x.tolist()

        class Attn(nn.Module):
            def forward(self, x):
                return self.helper(x)
            def helper(self, x):
                return x.cpu()

        class Child(Base):
            def __init__(self):
                super().__init__()
                self.attn = Attn()
                self.layers = nn.ModuleList([Attn() for _ in range(2)])
            def forward(self, x):
                y = super().forward(x)
                for layer in self.layers:
                    x = layer(x)
                return self.attn(x)

        @torch.compile(mode="reduce-overhead")
        def step(model: Child, x):
            m = Child()
            return m(x)
    """))
    by_code = {d.code: d.chain for d in found}
    assert by_code["GS102"] == ("step", "Child.forward", "Base.forward")
    assert by_code["GS103"] == ("step", "Child.forward", "Attn.forward", "Attn.helper")


def test_import_aliases_and_reexports(tmp_path):
    found = project(tmp_path, {
        "pkg/__init__.py": "from .ops import helper\n",
        "pkg/ops.py": "from torch.cuda import synchronize as s\n\ndef helper():\n    s()\n",
        "main.py": """
            import torch as th
            import pkg

            @th.compile(mode="reduce-overhead")
            def step(x):
                pkg.helper()
                th.cuda.synchronize()
        """,
    })
    assert sorted((Path(d.path).name, d.code) for d in found) == [("main.py", "GS106"), ("ops.py", "GS106")]
    ops = next(d for d in found if d.path.endswith("ops.py"))
    assert ops.chain == ("step", "helper")


def test_nested_function_call():
    assert codes("""
        import torch
        def outer(x: torch.Tensor):  # graphsafe: region
            def inner():
                return x.sum().item()
            return inner()
    """) == ["GS101"]


def test_unreachable_function_in_same_file_is_silent():
    found = diagnostics(textwrap.dedent("""
        import torch
        def loader(batch: torch.Tensor):
            return batch.item()
        def step(x: torch.Tensor):  # graphsafe: region
            return x * 2
    """))
    assert found == []


def test_same_module_name_in_two_script_folders(tmp_path):
    """examples/a/model.py and examples/b/model.py, each imported as `import model`."""
    clean = "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"
    dirty = "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x.item()\n"
    main = (
        "import torch\nfrom model import Net\n\n"
        "def main():\n    net = Net()\n    g = torch.cuda.CUDAGraph()\n"
        "    with torch.cuda.graph(g):\n        net(torch.zeros(1))\n"
    )
    found = project(tmp_path, {"a/model.py": dirty, "a/run.py": main, "b/model.py": clean, "b/run.py": main})
    assert [(Path(d.path).parent.name, Path(d.path).name, d.code) for d in found] == [("a", "model.py", "GS101")]
    assert found[0].chain == ("torch.cuda.graph block in main (line 7)", "Net.forward")


AUGMENTATIONS = {
    "base.py": """
        import torch

        class Augmentation(torch.nn.Module):
            def forward(self, x):
                params = self.draw(x)
                return self.apply_transform(x, params)

            def draw(self, x):
                return {}

            def apply_transform(self, x, params):
                raise NotImplementedError
    """,
    "impls.py": """
        import torch
        from base import Augmentation

        class Affine(Augmentation):
            def apply_transform(self, x, params):
                return x * x.sum().item()

        class Crop(Augmentation):
            def apply_transform(self, x, params):
                print("crop")
                return x
    """,
}


def test_pattern_names_a_method_the_class_inherits(tmp_path):
    found = project(tmp_path, AUGMENTATIONS, regions=("impls.py::Affine.forward",))
    assert [(d.code, d.start.line) for d in found] == [("GS101", 7)]
    assert found[0].region.display == "Affine.forward"
    assert found[0].region.receiver is not None and found[0].region.receiver.endswith("Affine")


def test_inherited_method_calls_only_the_named_classes_overrides(tmp_path):
    # capturing Crop's forward reaches Crop.apply_transform, not the sibling Affine's `.item()`
    found = project(tmp_path, AUGMENTATIONS, regions=("Crop.forward",))
    assert [(d.code, d.path.rpartition("/")[2], d.start.line) for d in found] == [("GS501", "impls.py", 11)]


def test_region_on_the_base_method_still_reaches_every_override(tmp_path):
    # nothing says which subclass runs `Augmentation.forward`: each override may
    found = project(tmp_path, AUGMENTATIONS, regions=("Augmentation.forward",))
    assert sorted(d.code for d in found) == ["GS101", "GS501"]


def test_cli_accepts_a_pattern_on_an_inherited_method(tmp_path, capsys):
    from tests.helpers import run_cli

    for name, source in AUGMENTATIONS.items():
        (tmp_path / name).write_text(textwrap.dedent(source))
    code, out, err = run_cli(capsys, "check", str(tmp_path), "--region", "Affine.forward", "--output-format", "concise")
    assert code == 1 and "GS101" in out and "GS501" not in out and "matches no function" not in err
    code, out, err = run_cli(capsys, "check", str(tmp_path), "--region", "Affine.forwad")
    assert code == 2 and "matches no function" in err


def test_a_class_built_from_a_module_table_reaches_each_classes_methods(tmp_path):
    found = project(tmp_path, {
        "solvers.py": """
            import torch

            class Euler:
                def integrate(self, t: torch.Tensor):
                    return t.sum().item()

            class RK4(Euler):
                def integrate(self, t: torch.Tensor):
                    print("rk4")
                    return t
        """,
        "odeint.py": """
            from solvers import Euler, RK4

            SOLVERS = {"euler": Euler, "rk4": RK4}

            def odeint(t, method="rk4"):  # graphsafe: region
                solver = SOLVERS[method]()
                return solver.integrate(t)
        """,
    })
    assert sorted(d.code for d in found) == ["GS101", "GS501"]


def test_a_class_an_attribute_holds_builds_the_object_the_region_calls(tmp_path):
    found = project(tmp_path, {
        "buffers.py": """
            import numpy as np

            class ReplayBuffer:
                def sample(self, n):
                    return np.random.randint(0, 10, size=n)
        """,
        "algo.py": """
            import torch
            from buffers import ReplayBuffer

            class Algo:
                def __init__(self, replay_buffer_class=None):
                    self.replay_buffer_class = replay_buffer_class

                def setup(self):
                    if self.replay_buffer_class is None:
                        self.replay_buffer_class = ReplayBuffer
                    self.replay_buffer = self.replay_buffer_class(10)

                def train(self, x: torch.Tensor):  # graphsafe: region
                    idx = self.replay_buffer.sample(4)
                    return x * 2
        """,
    })
    assert [(d.code, d.path.rpartition("/")[2]) for d in found] == [("GS502", "buffers.py")]
