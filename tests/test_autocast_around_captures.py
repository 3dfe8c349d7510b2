"""GS702: an autocast block (cache enabled) around a call that reaches a CUDA-graph capture, each
case beside a look-alike that must stay silent:

- a method of a class of this file called on an instance known to be of it (annotation,
  constructor, attribute) is looked into for the capture, and so are the helpers it calls on
  its own `self`; a method that does not capture, or an instance of unknown class, is silent;
- a function or class of another file (imported by name, through the module, or held by an
  attribute) that captures, or calls a helper that does, a few calls deep; the report says so
  and is fixable; warm-ups, a block passing `cache_enabled=False`, and a capture deeper than the
  rule looks are silent.
"""

from __future__ import annotations

from tests.helpers import lines_of, project_diagnostics, project_findings


found = lines_of  # the lines where a code is reported
project = project_findings  # (file name, line, code) of each diagnostic of a small program


# ---------------------------------------------------------- methods of this file

TRAINER = """\
import torch


class Trainer:
    def __init__(self):
        self.graph = torch.cuda.CUDAGraph()

    def step(self, x):
        return x * 2

    def capture(self, x):
        with torch.cuda.graph(self.graph):
            return self.step(x)

    def warm(self, x):
        return self.step(x)


class Runner:
    def __init__(self):
        self.trainer = Trainer()

    def go(self, x):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return self.trainer.{method}(x)


def fit(trainer: Trainer, x):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = trainer.{method}(x)
    other = Trainer()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = other.{method}(x)
    return y
"""


def test_autocast_around_a_capture_method_called_on_an_instance():
    # an annotated parameter, a local built by the constructor, an attribute set in __init__
    assert found(TRAINER.format(method="capture"), "GS702") == [24, 29, 32]


def test_autocast_around_a_method_that_does_not_capture_is_silent():
    assert found(TRAINER.format(method="warm"), "GS702") == []


def test_an_instance_of_a_class_of_another_name_is_not_looked_into():
    # `trainer` of unknown class: its `capture` may be anything
    source = TRAINER.format(method="capture").replace("trainer: Trainer", "trainer")
    assert 29 not in found(source, "GS702")


NESTED = """\
import torch


class Trainer:
    def __init__(self):
        self.graph = torch.cuda.CUDAGraph()

    def _capture(self, x):
        with torch.cuda.graph(self.graph):
            return x * 2

    def _warm(self, x):
        return x * 2

    def setup(self, x):
        self._warm(x)
        return self.{inner}(x)


def fit(trainer: Trainer, x):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return trainer.setup(x)
"""


def test_autocast_around_a_method_whose_own_helper_captures():
    assert found(NESTED.format(inner="_capture"), "GS702") == [21]


def test_autocast_around_a_method_whose_helpers_do_not_capture_is_silent():
    assert found(NESTED.format(inner="_warm"), "GS702") == []


# ----------------------------------------- functions and classes of another file

GRAPHS = """\
import torch


def capture_graphs(g, fn, x):
    with torch.cuda.graph(g):
        return fn(x)


def warm_up(fn, x):
    return fn(x)


def setup(g, fn, x):
    return capture_graphs(g, fn, x)


class Capturer:
    def __init__(self):
        self.g = torch.cuda.CUDAGraph()

    def capture(self, fn, x):
        self.g.capture_begin()
        y = fn(x)
        self.g.capture_end()
        return y

    def warm(self, fn, x):
        return fn(x)
"""


AUTOCAST_MAIN = """\
import torch
from graphs import capture_graphs, warm_up, setup, Capturer


def main(g, x):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = capture_graphs(g, torch.sin, x)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = warm_up(torch.sin, x)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = setup(g, torch.sin, x)
    c = Capturer()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = c.capture(torch.sin, x)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = c.warm(torch.sin, x)
    with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
        y = c.capture(torch.sin, x)
    return y
"""


def test_autocast_around_a_capture_in_another_file(tmp_path):
    # a helper that captures, one that calls one, a class's capture method; not the warm-ups,
    # nor a block that already passes cache_enabled=False
    found = project(tmp_path, {"graphs.py": GRAPHS, "main.py": AUTOCAST_MAIN}, "GS702")
    assert found == {("main.py", 6, "GS702"), ("main.py", 10, "GS702"), ("main.py", 13, "GS702")}


def test_autocast_around_another_file_through_a_module_and_an_attribute(tmp_path):
    main = """\
    import torch
    import graphs


    class Runner:
        def __init__(self):
            self.cap = graphs.Capturer()

        def go(self, g, x):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                graphs.capture_graphs(g, torch.sin, x)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                self.cap.capture(torch.sin, x)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                self.cap.warm(torch.sin, x)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                self.helper(g, x)

        def helper(self, g, x):
            return graphs.setup(g, torch.sin, x)
    """
    found = project(tmp_path, {"graphs.py": GRAPHS, "main.py": main}, "GS702")
    assert found == {("main.py", 10, "GS702"), ("main.py", 12, "GS702"), ("main.py", 16, "GS702")}


def test_autocast_around_another_file_says_so_and_is_fixable(tmp_path):
    diagnostics = [d for d in project_diagnostics(tmp_path, {"graphs.py": GRAPHS, "main.py": AUTOCAST_MAIN})
                   if d.code == "GS702"]
    assert diagnostics and all("a capture in a function it calls" in d.message for d in diagnostics)
    assert all(d.fix is not None for d in diagnostics)


def test_autocast_around_a_capture_too_deep_is_silent(tmp_path):
    # four calls below the block: beyond the helper depth the rule looks into
    deep = GRAPHS + "\n\ndef d1(g, x):\n    return d2(g, x)\n\n\ndef d2(g, x):\n    return d3(g, x)\n\n\n" \
        "def d3(g, x):\n    return d4(g, x)\n\n\ndef d4(g, x):\n    return capture_graphs(g, torch.sin, x)\n"
    main = "import torch\nfrom graphs import d1, d3\n\n\ndef main(g, x):\n" \
        "    with torch.autocast('cuda', dtype=torch.bfloat16):\n        d1(g, x)\n" \
        "    with torch.autocast('cuda', dtype=torch.bfloat16):\n        d3(g, x)\n"
    assert project(tmp_path, {"graphs.py": deep, "main.py": main}, "GS702") == {("main.py", 8, "GS702")}
