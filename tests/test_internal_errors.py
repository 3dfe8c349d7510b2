"""GS000 is for files that cannot be read or parsed; a failure of graphsafe's own analysis of one
function is GS002 for that function only, and the file's other functions are still analysed."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from graphsafe.analyzer.walker import FileWalker
from tests.helpers import diagnostics


def _check(source: str):
    return diagnostics(textwrap.dedent(source))


def test_a_function_rebinding_itself_as_a_partial_is_analysed():
    found = _check("""\
        import functools
        from functools import partial
        import torch

        def scaled(x, scale=1.0):
            return (x * scale).item()

        def setup(x):
            fn = scaled
            fn = partial(fn, scale=2.0)
            return fn(x)

        @torch.compile(mode="reduce-overhead")
        def step(x: torch.Tensor):
            return setup(x)
        """)
    assert [(d.code, d.start.line) for d in found] == [("GS101", 6)]
    assert found[0].chain == ("step", "setup", "scaled")


def test_a_local_partial_of_the_global_it_shadows_is_analysed_without_an_error():
    # `scaled = partial(scaled, ...)` in a function reads the local before it is bound (Python
    # raises UnboundLocalError): the call leads nowhere, but the file is analysed, not dropped
    found = _check("""\
        from functools import partial
        import torch

        def scaled(x, scale=1.0):
            return (x * scale).item()

        def setup(x):
            scaled = partial(scaled, scale=2.0)
            return scaled(x)

        @torch.compile(mode="reduce-overhead")
        def step(x: torch.Tensor):
            return setup(x)
        """)
    assert not [d for d in found if d.code in ("GS000", "GS002")]


def test_a_partial_of_a_partial_calls_the_innermost_function():
    found = _check("""\
        from functools import partial
        import torch

        def g(x, a, b):
            return x.item() + a + b

        def step(x: torch.Tensor):  # graphsafe: region
            h = partial(g, 1)
            h = partial(h, 2)
            return h(x)
        """)
    assert [(d.code, d.start.line, d.chain) for d in found] == [("GS101", 5, ("step", "g"))]


def _fail_on_boom(monkeypatch, error: Exception):
    """Make the walker's call resolution fail on calls of `boom(...)`, as an analyzer bug would."""
    original = FileWalker._call_refs

    def failing(self, func):
        if type(func) is cst.Name and func.value == "boom":
            raise error
        return original(self, func)

    monkeypatch.setattr(FileWalker, "_call_refs", failing)


TWO_REGIONS = """\
    import torch

    def bad(x: torch.Tensor):  # graphsafe: region
        y = boom(x)
        return y

    def good(x: torch.Tensor):  # graphsafe: region
        return x.item()
    """


@pytest.mark.parametrize("error", [RecursionError("maximum recursion depth exceeded"), KeyError("k")],
                         ids=["RecursionError", "KeyError"])
def test_an_internal_error_in_one_function_leaves_the_others_analysed(monkeypatch, error):
    _fail_on_boom(monkeypatch, error)
    found = _check(TWO_REGIONS)
    assert [(d.code, d.start.line) for d in found] == [("GS002", 3), ("GS101", 8)]
    notice = found[0].message
    assert "internal error while analysing `bad`" in notice and type(error).__name__ in notice
    assert "recursion depth" not in notice  # a RecursionError's text says nothing to a user


def test_the_internal_error_notice_is_no_parse_error_and_can_be_ignored(monkeypatch):
    _fail_on_boom(monkeypatch, RecursionError())
    assert "GS000" not in [d.code for d in _check(TWO_REGIONS)]
    found = diagnostics(textwrap.dedent(TWO_REGIONS), ignore=["GS002"])
    assert [d.code for d in found] == ["GS101"]


def test_fixes_are_withheld_in_a_file_with_an_internal_error(monkeypatch):
    source = """\
        import torch

        def bad(x: torch.Tensor):  # graphsafe: region
            return boom(x)

        def train(model):
            opt = torch.optim.Adam(model.parameters())
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                opt.step()
        """
    fixed = [d for d in _check(source) if d.code == "GS701"]
    assert fixed and fixed[0].fix.offered  # without the failure, a fix is offered
    _fail_on_boom(monkeypatch, RecursionError())
    withheld = [d for d in _check(source) if d.code == "GS701"]
    assert withheld and not withheld[0].fix.offered
    assert "`bad`" in withheld[0].fix.reason and "GS002" in withheld[0].fix.reason


def test_an_internal_error_outside_functions_is_gs002_for_the_file(monkeypatch):
    _fail_on_boom(monkeypatch, RecursionError())
    found = _check("""\
        import torch
        value = boom(1)
        """)
    assert [(d.code, d.start.line) for d in found] == [("GS002", 1)]
    assert "outside its functions" in found[0].message and "RecursionError" in found[0].message


def test_noqa_comments_are_not_called_unused_in_a_file_with_an_internal_error(monkeypatch):
    # what the failed function's `# noqa` comments hold back is unknown: GS001 (and its fix,
    # which deletes them) would be a guess
    source = TWO_REGIONS.replace("y = boom(x)", "y = boom(x).item()  # noqa: GS101")
    assert [d.code for d in diagnostics(textwrap.dedent(source), extend_select=["GS001"])] == ["GS101"]
    _fail_on_boom(monkeypatch, RecursionError())
    found = diagnostics(textwrap.dedent(source), extend_select=["GS001"])
    assert [d.code for d in found] == ["GS002", "GS101"]
