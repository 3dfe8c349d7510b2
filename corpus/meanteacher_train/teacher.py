"""Mean teacher: an exponential moving average of the student (YOLOv5's ModelEMA schedule) that
produces confidence-weighted pseudo-labels for unlabeled images."""

from __future__ import annotations

import copy
import math

import torch
import torch.nn as nn


class EMATeacher:
    def __init__(self, student: nn.Module, decay: float = 0.999, tau: float = 50.0):
        self.model = copy.deepcopy(student).eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.decay = decay
        self.tau = tau
        self.updates = 0

    @torch.no_grad()
    def update(self, student: nn.Module) -> None:
        self.updates += 1  # expect: GS302
        d = self.decay * (1 - math.exp(-self.updates / self.tau))
        student_state = student.state_dict()
        for name, t in self.model.state_dict().items():
            if t.dtype.is_floating_point:
                t.mul_(d).add_(student_state[name].detach(), alpha=1 - d)  # expect: GS301
            else:
                t.copy_(student_state[name])


@torch.no_grad()
def pseudo_labels(teacher: nn.Module, images: torch.Tensor, threshold: float):
    logits, boxes = teacher(images)
    conf, cls = logits.softmax(dim=-1).max(dim=-1)
    weight = (conf > threshold).float()
    return cls, boxes, weight
