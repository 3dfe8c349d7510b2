"""Call graph: a custom `torch.autograd.Function` called through `.apply` runs its `forward` in the
step and its `backward` in the step's backward pass (a gather layer all-gathering features, a
straight-through estimator), beside look-alikes that must stay silent."""

from __future__ import annotations

from tests.helpers import lines_of

GATHER = """\
import torch
import torch.distributed as dist


class GatherLayer({base}):
    @staticmethod
    def forward(ctx, x):
        out = [torch.empty_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(out, x)
        return tuple(out)

    @staticmethod
    def backward(ctx, *grads):
        g = torch.stack(grads)
        dist.all_reduce(g)
        return g[dist.get_rank()]


def loss(x: torch.Tensor):  # graphsafe: region
    return torch.cat(GatherLayer.{call}(x), 0).sum()
"""


def test_apply_of_an_autograd_function_runs_its_forward_and_backward():
    assert lines_of(GATHER.format(base="torch.autograd.Function", call="apply"), "GS901") == [9, 15]


def test_apply_of_another_class_runs_nothing():
    assert lines_of(GATHER.format(base="object", call="apply"), "GS901") == []
