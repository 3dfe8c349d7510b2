"""GS701 for an optimizer class of the project (`class Lamb(torch.optim.Optimizer)`): its step
calls torch's capture health check, which raises during capture unless every param group is
capturable; reported at that call where the file defaults `capturable` to False."""

from __future__ import annotations

from tests.helpers import lines_of

LAMB = '''\
import torch


class Lamb(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, capturable: bool = {default}):
        super().__init__(params, dict(lr=lr, capturable=capturable))

    @torch.no_grad()
    def step(self):  # graphsafe: region
        self._cuda_graph_capture_health_check()
        for group in self.param_groups:
            for p in group["params"]:
                p.add_(p.grad, alpha=-1e-3)
'''


def test_a_project_optimizer_defaulting_to_not_capturable_is_reported_at_its_health_check():
    assert lines_of(LAMB.format(default="False"), "GS701") == [10]


def test_one_defaulting_to_capturable_is_not():
    assert lines_of(LAMB.format(default="True"), "GS701") == []


def test_a_group_default_set_in_setstate_counts_too():
    source = LAMB.format(default="None").replace(
        "    @torch.no_grad()", "    def __setstate__(self, state):\n        super().__setstate__(state)\n"
        "        for group in self.param_groups:\n            group.setdefault('capturable', False)\n\n    @torch.no_grad()")
    assert lines_of(source, "GS701") == [15]
