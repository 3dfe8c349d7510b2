"""A table read and a choice by a carried per-step number (rewriters/number_gather.py) and host
work in a callee (rewriters/host_callees.py), under `graphsafe graph`: differential tests,
original vs rewritten, over several steps with the per-step number changing, on CPU, with the
number passed as a Python int (eager) and as a 0-dim int64 tensor (what graphed(numbers=) passes)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from graphsafe.model import CallSite, Diagnostic, Position
from graphsafe.rewriters.host_callees import host_callee_lines
from graphsafe.rewriters.number_gather import gather_by_number

torch = pytest.importorskip("torch")

SCHEDULER = textwrap.dedent('''\
    import torch


    class Scheduler:
        def __init__(self, n, device=None):
            self.alphas = torch.cumprod(1.0 - torch.linspace(0.01, 0.2, n, device=device), dim=0)
            self.rows = torch.arange(3 * n, dtype=torch.float64).reshape(n, 3).to(device)
            self.final = torch.tensor(1.0, device=device)
            self.n = n

        def step(self, x, t: int):
            prev_t = t - 3
            a = self.alphas[t]
            b = self.alphas[prev_t] if prev_t >= 0 else self.final
            return x * a.sqrt() + (1 - b), self.rows[t - 1]
''')


def _uses(source: str, lines: set[int], names: set[str]) -> set[tuple[int, int]]:
    """(line, column) of each name `names` on `lines`, as the analyzer reports a per-step number's uses."""
    return {(n.lineno, n.col_offset) for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Name) and n.id in names and n.lineno in lines}


# the uses the analyzer reports for the per-step `t` (and `prev_t`, derived from it)
USES = _uses(SCHEDULER, {13, 14, 15}, {"t", "prev_t"})


def _load(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "<test>", "exec"), namespace)
    return namespace


def test_gather_and_where_compute_what_the_index_and_the_branch_did_for_numbers_and_device_scalars():
    result = gather_by_number(SCHEDULER, USES)
    assert result.refused == [] and result.lines == [13, 14, 15]
    assert "self.alphas.index_select(0, torch.as_tensor(t, device=self.alphas.device).reshape(1) % " \
           "self.alphas.shape[0]).squeeze(0)" in result.source
    assert "torch.where(torch.as_tensor(prev_t >= 0, device=self.alphas.device), " in result.source
    before, after = _load(SCHEDULER)["Scheduler"](10), _load(result.source)["Scheduler"](10)
    x = torch.randn(4, 2, generator=torch.Generator().manual_seed(0))
    for t in (9, 6, 3, 2, 1, 0):  # prev_t goes negative: the `else` arm, and t - 1 = -1 wraps like Python
        want, want_row = before.step(x, t)
        for number in (t, torch.tensor(t)):  # eager, and graphed's 0-dim int64 device scalar
            got, got_row = after.step(x, number)
            assert got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)
            assert got_row.dtype == want_row.dtype and got_row.shape == want_row.shape
            assert torch.equal(got_row, want_row)


def test_gather_refuses_a_list_a_slice_a_write_and_number_arms_with_their_lines():
    source = textwrap.dedent('''\
        import torch


        class Table:
            def __init__(self):
                self.names = [1.0, 2.0, 3.0]
                self.buf = torch.zeros(8)

            def step(self, t):
                a = self.names[t]
                w = self.buf[:t]
                self.buf[t] = 1.0
                c = 1.0 if t > 0 else 0.0
                return a, w, c
    ''')
    result = gather_by_number(source, _uses(source, {10, 11, 12, 13}, {"t"}))
    assert result.source is None and result.lines == []
    assert [r.split(":")[0] for r in result.refused] == ["line 10", "line 11", "line 12", "line 13"]
    assert "not known to be a tensor" in result.refused[0]
    assert "bounds a slice" in result.refused[1]
    assert "a write at a per-step index" in result.refused[2]
    assert "not both tensors" in result.refused[3]


def test_gather_leaves_indexes_by_other_names_alone():
    result = gather_by_number(SCHEDULER, _uses(SCHEDULER, {13}, {"t"}))  # only `self.alphas[t]` is a carried use
    assert result.lines == [13]
    assert "self.alphas[prev_t] if prev_t >= 0 else self.final" in result.source
    assert "self.rows[t - 1]" in result.source


REGION = textwrap.dedent('''\
    class Sampler:
        def progress(self, i, x):
            log.info("step %d", i)
            print(f"{x.norm():.3f}")

        def check(self, x):
            log.info("checking")
            self.kind = "binary" if x.dim() == 1 else "multi"

        def step(self, x, t):
            x = self.model(x, t)
            self.progress(t, x)
            y = self.report(x)
            self.bookkeep(x)
            self.check(x)
            return x
''')


def _from_callee(code: str, line: int, callee: str, path) -> Diagnostic:
    at = Position(3, 8)
    return Diagnostic(code, "...", str(path), at, at, chain=("Sampler.step", callee),
                      call_sites=(CallSite(str(path), line),))


def test_a_bare_call_that_only_logs_is_host_work_and_others_are_not(tmp_path):
    region = tmp_path / "region.py"
    region.write_text(REGION)
    diagnostics = [_from_callee("GS501", 12, "Sampler.progress", region),
                   _from_callee("GS104", 12, "Sampler.progress", region),
                   _from_callee("GS501", 13, "Sampler.report", region),  # its result is used: stays
                   _from_callee("GS501", 14, "Sampler.bookkeep", region),
                   _from_callee("GS503", 14, "Sampler.bookkeep", region),  # a state change: stays
                   _from_callee("GS501", 15, "Sampler.check", region),  # sets self.kind, which the core may read
                   _from_callee("GS501", 11, "Model.forward", region)]  # not a bare call
    assert host_callee_lines(diagnostics, "Sampler.step", "Sampler.step", region, REGION) == {12: {"GS501", "GS104"}}
    # the chain must start at the region itself: a call reached from elsewhere is not its host work
    assert host_callee_lines(diagnostics, "Other.step", "Sampler.step", region, REGION) == {}


PROGRAM = {
    "noise_schedule.py": SCHEDULER,
    "loop.py": textwrap.dedent('''\
        import logging

        import torch

        from noise_schedule import Scheduler

        log = logging.getLogger("loop")


        class Loop:
            def __init__(self):
                self.scheduler = Scheduler(10)

            def report(self, t, x):
                log.info("t=%d |x|=%.3f", t, x.norm())
                print(f"{t}:{x.sum():.4f}")

            def run_step(self, x, t: int):
                y, row = self.scheduler.step(x, t)
                self.report(t, y)
                return y + row.sum()
    '''),
}


def _program(schedule: str, loop: str) -> dict:
    """loop.py's namespace, importing `noise_schedule` from the text `schedule`."""
    import sys
    import types

    module = types.ModuleType("noise_schedule")
    exec(compile(schedule, "noise_schedule.py", "exec"), module.__dict__)
    sys.modules["noise_schedule"] = module
    try:
        return _load(loop)
    finally:
        del sys.modules["noise_schedule"]


def test_graph_moves_a_logging_callee_out_and_reads_the_table_on_the_device(tmp_path, capsys):
    """The whole path on a small program: `graph` leaves nothing blocking, and the split program
    computes the original's numbers step after step (t passed as a number and as a device scalar)."""
    from graphsafe.config import Settings
    from graphsafe.graph_command import plan

    for name, text in PROGRAM.items():
        (tmp_path / name).write_text(text)
    result = plan([tmp_path], Settings(root=tmp_path), "Loop.run_step", use_cache=False)
    assert [f"{d.path}:{d.start.line} {d.code}" for d in result.blocking] == []
    assert result.callee_refusals == []
    assert result.split.numbers == [1] and result.split.epilogue_lines == [20]  # self.report(t, y)
    before = _program(PROGRAM["noise_schedule.py"], PROGRAM["loop.py"])["Loop"]()
    after = _program(*(result.changed[str(tmp_path / name)][1].decode() for name in PROGRAM))["Loop"]()
    x = torch.randn(4, 2, generator=torch.Generator().manual_seed(1))
    wanted, got = [], []
    for t in (9, 5, 2, 0):
        wanted.append(before.run_step(x, t))
        printed_before = capsys.readouterr().out
        got.append(after.run_step(x, t))
        assert capsys.readouterr().out == printed_before  # the report runs in the wrapper, once per call
        core = after.run_step_core(x, torch.tensor(t))  # what graphed replays: t a device scalar
        assert capsys.readouterr().out == ""  # the core no longer reports
        torch.testing.assert_close(core[0] if isinstance(core, tuple) else core, wanted[-1], rtol=0, atol=0)
    torch.testing.assert_close(got, wanted, rtol=0, atol=0)
