"""`f = partial(f, ...)` rebinding a name to a partial of itself (in a function, in a loop, at
module level) is followed to the function defined before, and never drops the file (GS000)."""

from __future__ import annotations

from tests.helpers import project_diagnostics

HELPERS = """
import torch


def scale(x: torch.Tensor, factor: float = 1.0, shift: float = 0.0):
    return x * factor + x.max().item() + shift
"""

ITEM = ("helpers.py", 6, "GS101")


def located(found):
    return {(d.path.rpartition("/")[2], d.start.line, d.code) for d in found}


def test_a_name_rebound_to_a_partial_of_itself_in_a_loop_is_followed(tmp_path):
    found = project_diagnostics(tmp_path, {"helpers.py": HELPERS, "step.py": """
        import functools
        from helpers import scale


        def step(x, factors):
            f = scale
            for k in factors:
                f = functools.partial(f, factor=k)
            f = functools.partial(f, shift=1.0)
            return f(x)
        """}, regions=("step",))
    assert ITEM in located(found)
    assert not any(d.code == "GS000" for d in found)


def test_a_module_level_partial_of_itself_is_followed(tmp_path):
    found = project_diagnostics(tmp_path, {"helpers.py": HELPERS, "step.py": """
        from functools import partial
        from helpers import scale

        scale = partial(scale, factor=2.0)
        scale = partial(scale, shift=1.0)


        def step(x):
            return scale(x)
        """}, regions=("step",))
    assert ITEM in located(found)
    assert not any(d.code == "GS000" for d in found)


def test_partials_of_itself_in_a_method_keep_the_rest_of_the_file(tmp_path):
    found = project_diagnostics(tmp_path, {"helpers.py": HELPERS, "step.py": """
        import functools
        import torch
        from helpers import scale


        class Runner:
            def run(self, x, steps):
                fn = scale
                for i in range(steps):
                    fn = functools.partial(fn, factor=float(i))
                    fn = functools.partial(fn, shift=float(i))
                return fn(x)

            def other(self, x: torch.Tensor):
                return x.sum().item()
        """}, regions=("Runner.*",))
    assert ITEM in located(found)
    assert ("step.py", 16, "GS101") in located(found)
    assert not any(d.code == "GS000" for d in found)


def test_names_that_hold_partials_of_each_other_end_the_lookup(tmp_path):
    found = project_diagnostics(tmp_path, {"helpers.py": HELPERS, "step.py": """
        import functools
        from helpers import scale


        def step(x, n):
            f = scale
            g = f
            for _ in range(n):
                f = functools.partial(g, factor=2.0)
                g = functools.partial(f, shift=1.0)
                f = g
            return f(x) + g(x)
        """}, regions=("step",))
    assert not any(d.code in ("GS000", "GS002") for d in found)
