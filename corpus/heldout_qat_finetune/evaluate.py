"""Evaluation with a graphed forward pass and a top-k metric."""

from __future__ import annotations

import torch

from metrics import accuracy_report


class Evaluator:
    def __init__(self, net: torch.nn.Module, cfg):
        self.net = net
        self.cfg = cfg
        self.batches_seen = 0
        self.net.register_forward_hook(self._count_batch)  # expect: GS706

    def _count_batch(self, module, inputs, output) -> None:
        self.batches_seen += 1

    def graph_forward(self, sample: torch.Tensor) -> None:
        self.net = torch.cuda.make_graphed_callables(self.net, (sample,))

    @torch.no_grad()
    def evaluate(self, images: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
        logits = self.net(images)
        return accuracy_report(logits, labels, ks=(1, self.cfg.topk))
