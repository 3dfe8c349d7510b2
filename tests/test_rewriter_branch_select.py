"""Branches on device data as selections of both outcomes (rewriters/branch_select.py): small
synthetic programs, original vs rewritten on CPU over several calls with the values changing."""

from __future__ import annotations

import textwrap

import pytest

from graphsafe.rewriters.branch_select import select_branches

torch = pytest.importorskip("torch")


def _load(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "<test>", "exec"), namespace)
    return namespace


def _at(source: str, line: int, text: str) -> tuple[int, int]:
    return line, source.splitlines()[line - 1].index(text)


STEP = textwrap.dedent('''\
    import torch


    def step(dt, err, lo, hi):
        if not torch.isfinite(dt):
            dt = lo
        accept = err <= 1
        if dt > hi:
            accept = False
        if dt <= lo:
            accept = True
        if accept:
            nxt = dt * 2
            kept = err
        else:
            nxt = dt / 2
            kept = err * 0
        return nxt, kept, accept
''')


def test_assigning_branches_on_tensors_become_selections_that_compute_the_same_over_many_calls():
    branches = {_at(STEP, 5, "not"), _at(STEP, 8, "dt"), _at(STEP, 10, "dt"), _at(STEP, 12, "accept")}
    result = select_branches(STEP, branches)
    assert result.lines == [5, 8, 10, 12] and result.refused == []
    assert "if " not in result.source
    before, after = _load(STEP)["step"], _load(result.source)["step"]
    lo, hi = torch.tensor(0.01, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64)
    for dt, err in [(0.5, 0.3), (float("inf"), 2.0), (3.0, 0.1), (0.001, 5.0), (0.2, 1.5)]:
        args = (torch.tensor(dt, dtype=torch.float64), torch.tensor(err, dtype=torch.float64), lo, hi)
        for a, b in zip(before(*args), after(*args)):
            assert torch.equal(torch.as_tensor(a), b)


EARLY = textwrap.dedent('''\
    import torch


    def size(last, ratio, safety, up, down):
        if ratio == 0:
            return last * up
        if ratio < 1:
            down = torch.ones((), dtype=last.dtype)
        ratio = ratio.type_as(last)
        factor = torch.min(up, torch.max(safety / ratio ** 0.2, down))
        return last * factor
''')


def test_an_early_return_on_a_tensor_becomes_a_selection_of_both_returns():
    result = select_branches(EARLY, {_at(EARLY, 5, "ratio"), _at(EARLY, 7, "ratio")})
    assert result.lines == [5, 7]
    before, after = _load(EARLY)["size"], _load(result.source)["size"]
    consts = [torch.tensor(v, dtype=torch.float64) for v in (0.9, 10.0, 0.2)]
    for ratio in (0.0, 0.5, 1.0, 3.0):
        args = (torch.tensor(0.1, dtype=torch.float64), torch.tensor(ratio, dtype=torch.float32), *consts)
        assert torch.equal(before(*args), after(*args))


REFUSED = textwrap.dedent('''\
    import torch


    def f(x, table, i, log):
        if x.sum() > 0:
            y = table[i]
        if x.mean() > 0:
            log.append(x)
        if x.max() > 0 and i:
            x = x * 2
        return x
''')


def test_branches_that_guard_an_index_do_more_than_assign_or_test_with_and_are_refused_with_the_line():
    branches = {_at(REFUSED, 5, "x.sum"), _at(REFUSED, 7, "x.mean"), _at(REFUSED, 9, "x.max")}
    result = select_branches(REFUSED, branches)
    assert result.source is None
    assert [(line, why.split(":")[1].strip()[:10]) for line, why in result.refused] == [
        (5, "`table[i]`"), (7, "an arm doe"), (9, "`and`/`or`")]


SINGULAR = textwrap.dedent('''\
    import torch


    def f(x, n, d):
        if x.sum() > 0:
            y = torch.sqrt(x)
        else:
            y = x
        if d != 0:
            z = x / d
        else:
            z = x
        if n.sum() > 0:
            w = n // 2
        else:
            w = n % d
        return y, z, w
''')


def test_where_a_backward_runs_singular_arms_and_division_are_refused_and_integer_division_always():
    branches = {_at(SINGULAR, 5, "x.sum"), _at(SINGULAR, 9, "d"), _at(SINGULAR, 13, "n.sum")}
    forward = select_branches(SINGULAR, branches)
    assert forward.lines == [5, 9]  # `n % d` may raise on the CPU for an integer zero
    assert [line for line, _ in forward.refused] == [13]
    training = select_branches(SINGULAR, branches, differentiable=True)
    assert training.lines == [] and [line for line, _ in training.refused] == [5, 9, 13]
    assert "infinite gradient" in training.refused[0][1] and "may be zero" in training.refused[1][1]


GRAPHED_STEP = textwrap.dedent('''\
    import torch


    class Stepper:
        def __init__(self):
            self.lo = 0.01

        def step(self, y, dt):
            scale = self.scale(y, dt)
            return y + scale * y, scale

        def scale(self, y, dt):
            err = (y * dt).abs().max()
            if err > 1:
                scale = dt * 0.5
            else:
                scale = dt * 2
            return scale
''')


def test_graph_writes_a_callees_branch_on_a_tensor_as_a_selection_and_the_program_steps_the_same(tmp_path, capsys):
    import json

    from tests.helpers import run_cli

    program = tmp_path / "stepper.py"
    program.write_text(GRAPHED_STEP, encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(program), "--region", "Stepper.step", "--no-cache", "--json")
    summary = json.loads(out)
    assert summary["blocking"] == [], summary
    written = program.read_text(encoding="utf-8")
    assert "torch.where(" in written and "if err > 1" not in written
    before, after = _load(GRAPHED_STEP)["Stepper"](), _load(written)["Stepper"]()
    y = torch.tensor([0.5, -2.0])
    for dt in (0.1, 3.0, 0.7, 5.0):
        dt = torch.tensor(dt)
        for a, b in zip(before.step(y, dt), after.step(y, dt)):
            assert torch.equal(a, b)
