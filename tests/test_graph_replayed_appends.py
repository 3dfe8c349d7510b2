"""A callee's history (`self.history.append(<tensor work>)` in a submodule the core calls): `graph`
no longer lists its GS503, because graphed() appends a copy of each replay's value after the
replay (runtime/attribute_state.py, tests/runtime/test_attribute_state.py); an appended name or
number, which a replay may not recompute, still blocks."""

from __future__ import annotations

import json
import textwrap

from tests.helpers import run_cli

PROGRAM = textwrap.dedent('''\
    import torch


    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)
            self.history = []

        def forward(self, x):
            h = self.fc(x)
            self.history.append(h.detach().abs().mean())
            return h


    class Trainer:
        def __init__(self):
            self.block = Block()

        def step(self, x):
            return self.block(x).sum()
''')


def _graph(tmp_path, capsys, source):
    program = tmp_path / "prog.py"
    program.write_text(source, encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(program), "--region", "Trainer.step", "--no-cache", "--json")
    return json.loads(out)


def test_a_submodule_s_tensor_history_is_settled_by_graphed_with_a_note(tmp_path, capsys):
    summary = _graph(tmp_path, capsys, PROGRAM)
    assert summary["blocking"] == []
    assert any("prog.py:12: `self.history.append(...)`: graphed() appends a copy" in n for n in summary["notes"])


def test_an_appended_name_or_number_still_blocks_with_its_line(tmp_path, capsys):
    for appended in ("x", "len(self.history)", "3"):
        source = PROGRAM.replace("h.detach().abs().mean()", appended)
        summary = _graph(tmp_path, capsys, source)
        assert any(b["code"] == "GS503" and b["line"] == 12 for b in summary["blocking"]), (appended, summary["blocking"])
