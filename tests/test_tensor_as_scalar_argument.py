"""A tensor given where torch takes a Python number (GS105): `alpha=` of `add`/`sub`, `value=`
of `addcmul`/`addcdiv`, the fill of `full`/`new_full` are read on the host (`.item()`)."""

from __future__ import annotations

import textwrap

from tests.helpers import diagnostics

CONTROLLER = textwrap.dedent("""\
    import torch


    class Controller(torch.nn.Module):
        def __init__(self, atol: float, rtol: float, scale: float):
            super().__init__()
            self.register_buffer("atol", torch.tensor(atol))
            self.register_buffer("rtol", torch.tensor(rtol))
            self.scale = scale

        def bounds(self, y0: torch.Tensor, stride: torch.Tensor):  # graphsafe: region
            error = torch.add(self.atol, torch.abs(y0), alpha=self.rtol)
            steady = torch.add(self.atol, torch.abs(y0), alpha=self.scale)
            grid = y0.new_full((4, 1), stride)
            return error, steady, grid
""")


def _gs105_lines() -> list[int]:
    return sorted(d.start.line for d in diagnostics(CONTROLLER) if d.code == "GS105")


def test_a_buffer_given_as_alpha_is_read_on_the_host():
    assert 12 in _gs105_lines()


def test_a_number_given_as_alpha_is_not_reported():
    assert 13 not in _gs105_lines()


def test_a_tensor_fill_of_new_full_is_read_on_the_host():
    assert 14 in _gs105_lines()


def test_the_report_is_at_the_tensor_given_in_a_call_over_several_lines():
    source = textwrap.dedent("""\
        import torch


        def bounds(atol: torch.Tensor, rtol: torch.Tensor, y0: torch.Tensor):  # graphsafe: region
            return torch.add(
                atol, torch.abs(y0),
                alpha=rtol,
            )
    """)
    assert [d.start.line for d in diagnostics(source) if d.code == "GS105"] == [7]
