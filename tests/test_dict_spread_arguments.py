"""Steps called with their static batch unpacked as keywords (`self.step(**self.static, lr=lr)`),
as serving engines and PPO loops write them: a dict of tensors (annotated `dict[str, Tensor]`,
built by a `-> dict[str, torch.Tensor]` method or a literal of tensors) gives a tensor to every
parameter no other argument names; a dict of anything else, or a keyword written beside the
spread, keeps its own kind. A dict of tensors that a capture block binds is a graph output
like a tensor (GS407 when kept across replays).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from graphsafe.analyzer.engine import check_paths
from graphsafe.config import Settings

ENGINE = """
import torch


class Engine:
    def __init__(self):
        self.static: {annotation} = {{}}
        self.flag = False

    def build(self) -> dict[str, torch.Tensor]:
        return {{"tokens": torch.zeros(4), "lens": torch.ones(4)}}

    def decode(self, tokens, lens, penalty: float):
        full = lens >= 8
        if full.any():
            tokens = tokens * 2
        return tokens

    def capture(self):
        self.static = {static}
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.out = self.decode({call})

    def step(self):
        batch = {batch}
        return self.decode(**batch, penalty=0.1)
"""


def branches(tmp_path, **parts) -> list[tuple[str, int, str]]:
    values = {"annotation": "dict[str, torch.Tensor]", "static": "self.build()",
              "call": "**self.static, penalty=0.1", "batch": "self.build()"} | parts
    (tmp_path / "engine.py").write_text(textwrap.dedent(ENGINE.format(**values)))
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    return sorted((Path(d.path).name, d.start.line, d.code) for d in result.diagnostics if d.code == "GS201")


@pytest.mark.parametrize("parts", [
    {},
    # the attribute's annotation alone says what the dict holds
    {"static": "self.options()"},
    # a literal of tensors
    {"static": "{'tokens': torch.zeros(4), 'lens': torch.ones(4)}"},
    # a keyword beside the spread fills its own parameter; the rest still come from the dict
    {"call": "penalty=0.1, **self.static"},
    # the capture site alone says so (the eager one spreads a dict of unknown contents)
    {"batch": "dict(self.options())"},
    # a value taken out of the dict of tensors by name is a tensor too
    {"call": "**self.static, lens=self.static.pop('lens'), penalty=0.1", "batch": "dict(self.options())"},
])
def test_a_dict_of_tensors_spread_as_keywords_types_the_parameters(tmp_path, parts):
    assert branches(tmp_path, **parts) == [("engine.py", 15, "GS201")]


@pytest.mark.parametrize("parts", [
    # a dict of numbers (an options dict) says nothing of tensors, at both call sites
    {"annotation": "dict[str, float]", "static": "{'tokens': 1.0, 'lens': 2.0}", "batch": "self.static"},
    # the parameter the branch reads is named beside the spread with a host value
    {"call": "**self.static, lens=self.flag, penalty=0.1"},
    # a value taken out of a dict of numbers is a number
    {"annotation": "dict[str, int]", "static": "{'tokens': 1, 'lens': 2}",
     "call": "**self.static, lens=self.static.pop('lens'), penalty=0.1", "batch": "self.static"},
    # a spread of unknown contents, at both call sites
    {"annotation": "dict", "static": "self.options()", "batch": "dict(self.static)"},
])
def test_a_spread_of_anything_else_keeps_the_parameter_unknown(tmp_path, parts):
    assert branches(tmp_path, **parts) == []


TRAINER = """
import torch


class Trainer:
    def __init__(self):
        self.graph = torch.cuda.CUDAGraph()
        self.static_x = torch.zeros(4)
        self.static_out = None

    def train_step(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {{"loss": x.sum(), "norm": x.norm()}}

    def capture(self):
        with torch.cuda.graph(self.graph):
            self.static_out = self.train_step(self.static_x)

    def fit(self, history: list):
        self.graph.replay()
        history.append({kept})
"""


@pytest.mark.parametrize(("kept", "expected"), [
    # the dict of graph outputs itself, which the next replay overwrites (None in `__init__`
    # does not hide what `capture` binds)
    ("self.static_out", [("trainer.py", 20, "GS407")]),
    # copies of its tensors are safe
    ("{k: v.clone() for k, v in self.static_out.items()}", []),
])
def test_a_dict_of_graph_outputs_kept_across_replays(tmp_path, kept, expected):
    (tmp_path / "trainer.py").write_text(textwrap.dedent(TRAINER.format(kept=kept)))
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    assert sorted((Path(d.path).name, d.start.line, d.code) for d in result.diagnostics if d.code == "GS407") == expected
