"""GS9xx: collectives and side streams inside a captured region."""

from __future__ import annotations

import textwrap

from tests.helpers import diagnostics, lines_of


def found(source: str) -> list[tuple[str, int]]:
    return [(d.code, d.start.line) for d in diagnostics(textwrap.dedent(source)) if d.code.startswith("GS9")]


def test_collectives_through_an_import_alias_and_horovod_are_reported_in_the_region():
    source = """
    import torch
    import torch.distributed as dist
    import horovod.torch as hvd


    def gather(x: torch.Tensor):
        parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, x)
        return torch.cat(parts) + hvd.allgather(x)


    def step(x: torch.Tensor):  # graphsafe: region
        dist.all_reduce(x)
        return gather(x)


    def setup():
        dist.barrier()
    """
    assert found(source) == [("GS901", 9), ("GS901", 10), ("GS901", 14)]


def test_a_host_waiting_collective_says_so():
    source = """
    import torch


    def step(x: torch.Tensor):  # graphsafe: region
        torch.distributed.barrier()
        return x
    """
    [d] = [d for d in diagnostics(textwrap.dedent(source)) if d.code == "GS901"]
    assert "waits on the host" in d.message


def test_a_side_stream_joined_after_its_block_is_not_reported_even_from_a_nested_block():
    source = """
    import torch


    def step(x: torch.Tensor, side):  # graphsafe: region
        current = torch.cuda.current_stream()
        side.wait_stream(current)
        with torch.cuda.stream(side):
            y = x * 2
        with torch.no_grad():
            current.wait_stream(side)
        return y
    """
    assert found(source) == []


def test_a_side_stream_waited_on_only_inside_its_own_block_is_unjoined():
    source = """
    import torch


    def step(x: torch.Tensor, side):  # graphsafe: region
        with torch.cuda.stream(side):
            y = x * 2
            torch.cuda.current_stream().wait_stream(side)
        return y
    """
    assert found(source) == [("GS902", 6)]


def test_side_streams_outside_regions_are_not_reported():
    source = """
    import torch


    def prefetch(x: torch.Tensor, side):
        with torch.cuda.stream(side):
            return x.to("cuda", non_blocking=True)
    """
    assert found(source) == []


HELD_COLLECTIVE = """\
import torch
import torch.distributed as distributed


def noop(*args, **kwargs):
    pass


class Codebook(torch.nn.Module):
    def __init__(self, use_ddp: bool = False):
        super().__init__()
        self.all_reduce_fn = {held}

    def forward(self, counts: torch.Tensor):  # graphsafe: region
        self.all_reduce_fn(counts)
        return counts
"""


def test_an_attribute_holding_a_collective_calls_it_in_the_region():
    source = HELD_COLLECTIVE.format(held="distributed.all_reduce if use_ddp else noop")
    assert lines_of(source, "GS901") == [15]


def test_an_attribute_holding_a_project_function_only_is_no_collective():
    assert lines_of(HELD_COLLECTIVE.format(held="noop"), "GS901") == []
