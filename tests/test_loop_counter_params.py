"""Loop counters as per-step values of the parameters they fill (issue 18, point 1).

A caller that drives the steps from a loop passes a loop position (`for step in range(n)`, an
`enumerate` index, `t += 1` in a `while`): a number, new on each call, whatever the callee
declares. The callee's parameter is then per step, through any number of calls, and GS301's
message gives the path from the source. A value the loop does not change (a per-run setting
from the constructor, a batch, the counter after the loop) is not.
"""

from __future__ import annotations

import textwrap

from tests.helpers import diagnostics

SEARCHER = """
import torch


class Searcher(torch.nn.Module):
    def __init__(self, min_steps: int, max_steps: int, temperature: float):
        super().__init__()
        self.min_steps = min_steps
        self.max_steps = max_steps
        self.temperature = temperature

    def _mask_eos(self, log_probs: torch.Tensor, step, min_steps):
        if step < min_steps:
            log_probs[:, 0] = -1e9
        return log_probs

    def _normalise(self, scores: torch.Tensor, step):
        return scores / (step + 1)

    def _pick(self, scores: torch.Tensor, position):
        return scores[:, position]

    def search_step(self, log_probs: torch.Tensor, step):  # graphsafe: region
{step_body}

    def forward(self, x: torch.Tensor):
        log_probs = x
{driver}
        return log_probs
"""


def gs301(step_body: str, driver: str) -> list[tuple[int, str]]:
    source = SEARCHER.format(step_body=textwrap.indent(textwrap.dedent(step_body).strip("\n"), " " * 8),
                             driver=textwrap.indent(textwrap.dedent(driver).strip("\n"), " " * 8))
    return [(d.start.line, d.message) for d in diagnostics(source) if d.code == "GS301"]


def test_a_loop_counter_passed_to_a_helper_that_indexes_a_tensor_is_reported_with_its_path():
    found = gs301("return self._pick(log_probs, step)", """
    for step in range(self.max_steps):
        log_probs = self.search_step(log_probs, step)
    """)
    assert [line for line, _ in found] == [21]
    message = found[0][1]
    assert "`step` is the loop counter of `for step in range(...)` in `Searcher.forward` at example.py:29" in message
    assert "`Searcher.search_step` passes its `step` at example.py:24" in message
    assert "may vary" not in message


def test_a_counter_passed_on_through_two_calls_reaches_the_branch_and_the_arithmetic():
    found = gs301("""
    log_probs = self._mask_eos(log_probs, step, self.min_steps)
    return self._normalise(log_probs, step)
    """, """
    for step in range(self.max_steps):
        log_probs = self.search_step(log_probs, step)
    """)
    assert [line for line, _ in found] == [13, 18]
    assert all("`Searcher.search_step` passes its `step`" in message for _, message in found)


def test_arithmetic_on_a_counter_and_an_enumerate_index_are_counters_too():
    found = gs301("return self._pick(log_probs, step)", """
    for i, _ in enumerate(range(self.max_steps)):
        log_probs = self.search_step(log_probs, (i + 1) % 4)
    """)
    assert [line for line, _ in found] == [21]
    assert "`(i + 1) % 4` is computed from it: `i` is the index of `for i, _ in enumerate(...)`" in found[0][1]


def test_a_local_the_loop_advances_is_a_counter():
    found = gs301("return self._pick(log_probs, step)", """
    t = 0
    while t < self.max_steps:
        log_probs = self.search_step(log_probs, t)
        t += 1
    """)
    assert [line for line, _ in found] == [21]
    assert "`t` is advanced with `t += 1` on every pass of a loop" in found[0][1]


def test_a_per_run_setting_passed_from_the_constructor_is_silent():
    assert gs301("return self._normalise(log_probs, step) * self.temperature", """
    for _ in range(self.max_steps):
        log_probs = self.search_step(log_probs, self.min_steps)
    """) == []


def test_a_loop_over_values_that_are_not_numbers_is_silent():
    # `for batch in ...` binds no counter, a string made from one is no number, and after the
    # loop the counter holds its last value: the same on every call
    assert gs301("return self._pick(log_probs, step)", """
    for batch in x:
        log_probs = self.search_step(log_probs, batch)
    for i in range(3):
        log_probs = self.search_step(log_probs, "layer%d" % i)
    log_probs = self.search_step(log_probs, i)
    """) == []


def test_a_root_parameter_no_caller_fills_may_vary_and_is_kept_apart_from_proven_ones():
    # a declared number parameter of a region root with no visible call: reported, marked
    # "may vary", with no path (nothing shows where the value comes from)
    source = SEARCHER.replace("def search_step(self, log_probs: torch.Tensor, step)",
                              "def search_step(self, log_probs: torch.Tensor, step: int)").format(
        step_body="        return self._pick(log_probs, step)", driver="        pass")
    found = [d.message for d in diagnostics(source) if d.code == "GS301"]
    assert len(found) == 1
    assert "may vary: no call of `Searcher.search_step` shows what it is passed" in found[0]
    assert "(path:" not in found[0]


def test_a_counter_of_a_loop_inside_the_region_is_not_a_per_step_value():
    # the loop runs while capturing (its passes are unrolled into the graph): each pass's value
    # is fixed, and the region's replays repeat them all
    source = textwrap.dedent("""
    import torch


    def pick(x: torch.Tensor, position):
        return x[:, position]


    def step(x: torch.Tensor):  # graphsafe: region
        out = []
        for i in range(4):
            out.append(pick(x, i))
        return out
    """)
    assert [d for d in diagnostics(source) if d.code == "GS301"] == []
