"""Data-dependent shapes `graph` leaves (a boolean-mask read whose rows the user reads): the
summary says which line of the core first reaches one and which of the core's work before it a
graph can take (rewriters/smaller_region.py), or that nothing comes before it. (A data-dependent
result only the return reads is a tail the wrapper runs: tests/test_graph_data_tail.py.)"""

from __future__ import annotations

import json
import re
import textwrap

from tests.helpers import run_cli

PROGRAM = textwrap.dedent('''\
    import torch


    def selected(scores, mask):
        return scores[scores > mask]


    class Scorer:
        def __init__(self):
            self.proj = torch.nn.Linear(4, 4)

        def step(self, x, mask):
            h = torch.tanh(self.proj(x))
            scores = h.sum(-1)
            picked = selected(scores, mask)
            out = self.proj(picked[:, None].expand(-1, 4))  # tensor work on it: not a tail the wrapper runs
            return out.sum() + h.sum()
''')


def _notes(tmp_path, capsys, source):
    program = tmp_path / "prog.py"
    program.write_text(source, encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(program), "--region", "Scorer.step", "--no-cache", "--json")
    summary = json.loads(out)
    return summary, [n for n in summary["notes"] if "data-dependent shape" in n]


def test_the_work_before_the_first_line_reaching_a_data_dependent_shape_is_named(tmp_path, capsys):
    summary, notes = _notes(tmp_path, capsys, PROGRAM)
    assert any(b["code"] == "GS108" and b["line"] == 5 for b in summary["blocking"])
    assert len(notes) == 1
    assert "1 data-dependent shape(s) left" in notes[0]
    assert re.search(r"is \S*prog\.py:15 \(\S*prog\.py:5 GS108\)", notes[0]), notes[0]
    assert re.search(r"its work before that \(\S*prog\.py:13-14\) can be graphed", notes[0]), notes[0]


def test_a_data_dependent_shape_first_leaves_nothing_before_it(tmp_path, capsys):
    source = PROGRAM.replace("        h = torch.tanh(self.proj(x))\n        scores = h.sum(-1)\n"
                             "        picked = selected(scores, mask)\n"
                             "        out = self.proj(picked[:, None].expand(-1, 4))  # tensor work on it: not a tail the wrapper runs\n"
                             "        return out.sum() + h.sum()",
                             "        picked = selected(x.float(), mask)\n        return torch.tanh(self.proj(picked))")
    assert "picked" in source
    _, notes = _notes(tmp_path, capsys, source)
    assert len(notes) == 1 and "its first statement: nothing before it can be graphed" in notes[0], notes


def test_no_data_dependent_shape_no_advice(tmp_path, capsys):
    _, notes = _notes(tmp_path, capsys, PROGRAM.replace("return scores[scores > mask]", "return scores * mask"))
    assert notes == []
