"""GS401's `.copy_()` fix is offered only where it keeps the program working (found on held-out
programs: a float attribute got `.copy_`, and an RNN's per-step outputs became the last one)."""

from __future__ import annotations

import textwrap

from graphsafe.analyzer.engine import check_source
from graphsafe.config import Settings
from graphsafe.fixer import fix_text


def gs401(source: str) -> list[tuple[int, bool]]:
    """(line, fix offered) of every GS401."""
    text = "import torch\n" + textwrap.dedent(source)
    return [(d.start.line, d.fix is not None) for d in check_source(text, "case.py", Settings()).diagnostics if d.code == "GS401"]


STATE = """
class Norm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.zeros(4))

    def forward(self, x):  # graphsafe: region
        self.running = 0.9 * self.running + 0.1 * x.mean(0)
        return x - self.running
"""

RNN = """
class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = torch.nn.GRUCell(4, 4)
        self.register_buffer("hidden", torch.zeros(2, 4))

    def forward(self, x):  # graphsafe: region
        outs = []
        for i in range(x.shape[1]):
            self.hidden = self.cell(x[:, i], self.hidden)
            outs.append(self.hidden)
        return torch.stack(outs, 1)
"""

FLOAT_ATTRIBUTE = """
class Trainer:
    def __init__(self, lr: float):
        self.lr = lr
        self.static_x = torch.zeros(8, 4, device="cuda")
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = self.static_x * self.lr

    def lr_at(self, it):
        return 0.1 / (it + 1)

    def fit(self, batches):
        for it, batch in enumerate(batches):
            self.lr = self.lr_at(it)
            self.static_x = batch
            self.graph.replay()
"""


def test_running_state_in_the_region_gets_an_unsafe_copy():
    assert gs401(STATE) == [(9, True)]
    fixed = fix_text("import torch\n" + textwrap.dedent(STATE), "case.py", Settings(), [], unsafe=True).fixed
    assert "self.running.copy_(0.9 * self.running + 0.1 * x.mean(0))" in fixed


def test_state_whose_old_value_is_kept_gets_no_copy():
    """`.copy_` would make every appended output alias the last one."""
    assert gs401(RNN) == [(12, False)]


def test_an_attribute_bound_to_a_number_gets_no_copy():
    reports = dict(gs401(FLOAT_ATTRIBUTE))
    assert reports.get(17) is True, reports  # `self.static_x = batch`: a tensor from __init__ on
    assert 16 not in reports, reports  # `self.lr` is bound to a float (`lr: float`): a number, not a graph input


SHIFT_QUEUE = """
class ShiftQueue:
    def __init__(self):
        self.buf = torch.zeros(2, 4, 3)

    def push_pop(self, x):  # graphsafe: region
        oldest = self.buf{view}
        self.buf = torch.roll(self.buf, shifts=-1, dims=2)
        self.buf[:, :, -1] = x
        return oldest
"""


def test_state_a_view_of_which_is_kept_gets_no_copy():
    """`oldest = self.buf[:, :, 0]` shares the old tensor's memory: after `self.buf.copy_(...)`
    it would hold the shifted values (found on a streaming WaveNet's shift-register queue)."""
    for view in ("[:, :, 0]", ".view(-1)", "[:, :, 0].squeeze(-1)", ".T"):
        assert gs401(SHIFT_QUEUE.format(view=view)) == [(9, False)], view


def test_state_of_which_a_copy_is_kept_still_gets_copy():
    assert gs401(SHIFT_QUEUE.format(view="[:, :, 0].clone()")) == [(9, True)]


GROWN_BY_HELPER = """
def append_row(trace, value):
    return torch.cat([trace, value.reshape(1)])


class Tracker(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.trace = torch.zeros(0)

    def forward(self, x):  # graphsafe: region
        self.trace = {value}
        return x
"""


def test_state_passed_to_a_helper_outside_torch_gets_no_copy():
    """`.copy_()` of the helper's longer result into the empty tensor would broadcast to nothing."""
    assert gs401(GROWN_BY_HELPER.format(value="append_row(self.trace, x.sum())")) == [(13, False)]


def test_state_passed_to_a_torch_function_still_gets_copy():
    assert gs401(GROWN_BY_HELPER.format(value="torch.roll(self.trace, 1)")) == [(13, True)]


def test_state_converted_to_another_dtype_or_device_gets_no_copy():
    # `.copy_()` would cast the converted values back into the float64 table (found on torchdiffeq)
    for conversion in ("self.mid.to(device=y.device, dtype=y.dtype)", "self.mid.float()", "self.mid.cuda()"):
        source = f"""
        class Solver:
            def __init__(self):
                self.mid = torch.tensor([0.5, 0.25], dtype=torch.float64)

            def step(self, y):  # graphsafe: region
                self.mid = {conversion}
                return y * self.mid
        """
        assert gs401(source) == [(8, False)], conversion
