"""Per-step numbers as dataflow (issue 18, point 1): torch-op arguments as sinks, loops over
computed number lists as sources.

Sinks: a per-step number given to a torch op as a value baked into its kernel (the fill of
`torch.full`, `arange`'s start, `narrow`'s start, `clamp`'s `min=`, `addcmul`'s `value=`) is
reported at that argument with the path from its source, also after host math
(`math.sqrt(1 - t)`). The same ops given a literal or a per-run setting stay silent.

Sources: the elements of a loop over a list of numbers the caller computes (a time grid
`[i / n for i in range(n)]`, `np.linspace(...)`, `torch.linspace(...).tolist()`, through
`zip`/`enumerate`/`reversed` and slices) are per-step numbers, like a `range` counter. A loop
over batches or tensors binds none.
"""

from __future__ import annotations

import textwrap

import pytest

from graphsafe.analyzer.grouping import each_use
from tests.helpers import diagnostics

SAMPLER = """
import math
import numpy as np
import torch
import torch.nn.functional as F


class Sampler(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.eta = cfg.eta
        self.alphas = [1.0 - 0.1 * i for i in range(10)]
        self.blocks = [torch.nn.Linear(4, 4) for _ in range(2)]

    def step(self, x: torch.Tensor, t, t_next):  # graphsafe: region
{body}

    def sample(self, x: torch.Tensor, n: int, batches):
{driver}
        return x
"""
BODY_LINE = 17  # the first line of the step's body in SAMPLER

RANGE_DRIVER = """
for t in range(n):
    x = self.step(x, t, t + 1)
"""


def gs301(body: str, driver: str = RANGE_DRIVER) -> list[tuple[int, str]]:
    """(line, message) of each GS301 use in SAMPLER with this step body and driver loop."""
    source = SAMPLER.format(body=textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8),
                            driver=textwrap.indent(textwrap.dedent(driver).strip("\n"), " " * 8))
    return [(d.start.line, d.message) for d in each_use(diagnostics(source)) if d.code == "GS301"]


VALUE_SINKS = (
    "torch.full((x.shape[0],), {v}, device=x.device)",
    "torch.full((2,), fill_value={v})",
    "torch.full_like(x, {v})",
    "x.new_full((3,), {v})",
    "x.index_fill(0, x.argmax(0), {v})",
    "torch.arange({v}, 10, device=x.device)",
    "x.narrow(0, {v}, 2)",
    "x.clip(max={v})",
    "x.clamp_(min={v})",
    "x.addcmul(x, x, value={v})",
    "x.masked_fill_(x > 0, {v})",
)


@pytest.mark.parametrize("sink", VALUE_SINKS)
def test_a_loop_counter_given_to_a_torch_op_as_a_value_is_reported_at_the_op_with_its_path(sink):
    found = gs301(f"y = {sink.format(v='t')}\nreturn y")
    assert [line for line, _ in found] == [BODY_LINE]
    assert "`t` is the loop counter of `for t in range(...)` in `Sampler.sample`" in found[0][1]


def test_a_number_computed_from_a_counter_by_host_math_is_reported_where_it_fills_a_tensor():
    found = gs301("""
    s = math.sqrt(1 - t)
    tag = f"{t}"
    return torch.full_like(x, s)
    """)
    assert [line for line, _ in found] == [BODY_LINE + 2]
    assert "parameter `t`" in found[0][1] and "for t in range(...)" in found[0][1]


def test_a_pick_from_a_host_table_by_a_counter_is_reported_where_it_fills_a_tensor():
    found = gs301("""
    a = self.alphas[t]
    y = x * 2
    return torch.full_like(y, a)
    """)
    # the pick itself (as before) and, now, the fill it reaches
    assert [line for line, _ in found] == [BODY_LINE, BODY_LINE + 2]


@pytest.mark.parametrize("value", ["0.5", "self.eta", "self.alphas[0]"])
def test_the_same_ops_given_a_literal_or_a_per_run_setting_stay_silent(value):
    body = "\n".join(f"y{i} = {sink.format(v=value)}" for i, sink in enumerate(VALUE_SINKS))
    assert gs301(body + "\nreturn x") == []


def test_a_module_function_named_like_a_tensor_method_is_host_math():
    # `math.pow`, `np.clip`: Python numbers computed on the host, used only on the host
    found = gs301("""
    a = math.pow(1 - t, 0.5)
    b = np.clip(t, 0.0, 1.0)
    tag = f"{a} {b}"
    return x
    """)
    assert found == []


def test_a_size_beside_the_value_is_not_a_sink():
    # the counter as `torch.full`'s size is a shape (re-capture), not a value baked in
    assert gs301("y = torch.full((t,), 0.0)\nreturn y") == []


NUMBER_LIST_DRIVERS = {
    "comprehension, zip of slices": """
        times = [i / n for i in range(n)]
        for t, t_next in zip(times[:-1], times[1:]):
            x = self.step(x, t, t_next)
    """,
    "numpy linspace through list()": """
        times = list(np.linspace(1.0, 0.0, n))
        for t, t_next in zip(times[:-1], times[1:]):
            x = self.step(x, t, t_next)
    """,
    "torch linspace tolist, reversed": """
        times = torch.linspace(0.0, 1.0, n).tolist()
        for t in reversed(times):
            x = self.step(x, t, 0.0)
    """,
    "enumerate of a slice": """
        sigmas = [0.5 ** k for k in range(n)]
        for k, t in enumerate(sigmas[1:]):
            x = self.step(x, t, 0.0)
    """,
    "a table the class keeps": """
        for t in self.alphas:
            x = self.step(x, t, 0.0)
    """,
    "a literal list, sorted": """
        for t in sorted([0.9, 0.5, 0.1]):
            x = self.step(x, t, 0.0)
    """,
}


@pytest.mark.parametrize("driver", NUMBER_LIST_DRIVERS.values(), ids=NUMBER_LIST_DRIVERS.keys())
def test_the_elements_of_a_loop_over_a_computed_number_list_are_per_step_values(driver):
    found = gs301("return self.lin(x) * t", driver)
    assert [line for line, _ in found] == [BODY_LINE]
    assert "`t` is each number of `for " in found[0][1] and "in `Sampler.sample`" in found[0][1]


@pytest.mark.parametrize("driver", [
    # batches, tensors and modules are no numbers, however the loop is shaped
    """
    for t, batch in zip(batches, batches):
        x = self.step(x, t, 0.0)
    """,
    """
    chunks = [x[i] for i in range(n)]
    for t in chunks:
        x = self.step(x, t, 0.0)
    """,
    """
    for t in torch.linspace(0.0, 1.0, n):
        x = self.step(x, t, 0.0)
    """,
    # a list attribute of modules
    """
    for t in self.blocks:
        x = self.step(x, t, 0.0)
    """,
    # the list's length per run, its elements fixed
    """
    times = [self.eta for _ in range(n)]
    for t in times:
        x = self.step(x, t, 0.0)
    """,
])
def test_a_loop_over_batches_or_tensors_binds_no_per_step_number(driver):
    assert gs301("return self.lin(x) * t", driver) == []


KEYED = """
import torch


def point_mass(v: torch.Tensor, log_density=0.0):
    return torch.full(v.shape, log_density)


class Guide(torch.nn.Module):
    def forward(self, x: torch.Tensor, factors, weights):  # graphsafe: region
        return point_mass(x)

    def sample(self, x: torch.Tensor, factors, weights, n: int):
        for {target} in {iterable}:
            out = point_mass(x, weights[{key}])
            x = self.forward(x, factors, weights)
        return x
"""


def test_an_element_picked_by_a_key_of_a_loop_over_a_dict_is_no_per_step_number():
    # `log_densities[name]` in `for name, site in factors.items()`: a value kept per key (a
    # tensor as often as a number), not a number computed from the loop variable
    keyed = KEYED.format(target="name, site", iterable="factors.items()", key="name")
    assert [d.start.line for d in diagnostics(keyed) if d.code == "GS301"] == []
    # picked by a counter it is one
    counted = KEYED.format(target="i", iterable="range(n)", key="i")
    assert [d.start.line for d in diagnostics(counted) if d.code == "GS301"] == [6]


def test_a_name_rebound_to_something_else_is_no_longer_a_number_list():
    driver = """
    times = [i / n for i in range(n)]
    times = batches
    for t in times:
        x = self.step(x, t, 0.0)
    """
    assert gs301("return self.lin(x) * t", driver) == []
