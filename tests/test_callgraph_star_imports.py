"""Star imports as re-exports: `pkg/__init__.py` doing `from ._impl import *` makes `pkg.Name` the
class or function of `pkg/_impl.py`, through chains of packages (kornia's random generators) and
import cycles, and only for public names (what `import *` takes without an `__all__`)."""

from __future__ import annotations

from tests.helpers import project_findings

_GENERATOR = """
import torch

class AffineGenerator(torch.nn.Module):
    def forward(self, shape):
        return torch.rand(shape).item()

def _private_helper(x):
    return x.item()
"""


def test_a_class_re_exported_by_a_chain_of_star_imports_is_followed(tmp_path):
    found = project_findings(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/gen/__init__.py": "from pkg.gen._2d import *\n",
        "pkg/gen/_2d/__init__.py": "from pkg.gen._2d.affine import *\n",
        "pkg/gen/_2d/affine.py": _GENERATOR,
        "pkg/aug.py": """
            import torch
            from pkg import gen as rg

            class RandomAffine(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.sampler = rg.AffineGenerator()

                def forward(self, x):  # graphsafe: region
                    return x * self.sampler(x.shape)
        """,
    }, "GS101")
    assert found == {("affine.py", 6, "GS101")}


def test_a_private_name_is_not_taken_by_a_star_import(tmp_path):
    found = project_findings(tmp_path, {
        "pkg/__init__.py": "from pkg.impl import *\n",
        "pkg/impl.py": _GENERATOR,
        "main.py": """
            import pkg

            def step(x):  # graphsafe: region
                return pkg._private_helper(x)
        """,
    }, "GS101")
    assert found == set()


def test_modules_star_importing_each_other_resolve_without_looping(tmp_path):
    found = project_findings(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import *\n\ndef sync_a(x):\n    return x.item()\n",
        "pkg/b.py": "from pkg.a import *\n\ndef sync_b(x):\n    return x.item()\n",
        "main.py": """
            from pkg import a, b

            def step(x):  # graphsafe: region
                return a.sync_b(x) + b.sync_a(x) + a.missing(x)
        """,
    }, "GS101")
    assert found == {("a.py", 4, "GS101"), ("b.py", 4, "GS101")}
