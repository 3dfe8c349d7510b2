"""DINO cross-entropy between sharpened, centred teacher outputs and student outputs."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from schedules import teacher_temp_table


class DINOLoss(nn.Module):
    def __init__(self, out_dim: int, ncrops: int, warmup_teacher_temp: float, teacher_temp: float,
                 warmup_teacher_temp_epochs: int, nepochs: int, student_temp: float = 0.1,
                 center_momentum: float = 0.9):
        super().__init__()
        self.student_temp = student_temp
        self.center_momentum = center_momentum
        self.ncrops = ncrops
        self.register_buffer("center", torch.zeros(1, out_dim))
        self.temp_table = teacher_temp_table(warmup_teacher_temp, teacher_temp, warmup_teacher_temp_epochs, nepochs)

    def teacher_temp(self, epoch: int) -> float:
        return self.temp_table[min(epoch, len(self.temp_table) - 1)]

    def forward(self, student_output: torch.Tensor, teacher_output: torch.Tensor, epoch: int) -> torch.Tensor:
        student_out = (student_output / self.student_temp).chunk(self.ncrops)
        teacher_output = teacher_output if teacher_output.isfinite().all() else teacher_output.nan_to_num(0.0)  # expect: GS201
        temp = self.teacher_temp(epoch)
        teacher_out = F.softmax((teacher_output - self.center) / temp, dim=-1)  # expect: GS301
        teacher_out = teacher_out.detach().chunk(2)

        total_loss = 0.0
        n_loss_terms = 0
        for iq, q in enumerate(teacher_out):
            for v in range(len(student_out)):
                if v == iq:
                    continue
                loss = torch.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)
                total_loss = total_loss + loss.mean()
                n_loss_terms += 1
        total_loss = total_loss / n_loss_terms
        self.update_center(teacher_output)
        return total_loss

    @torch.no_grad()
    def update_center(self, teacher_output: torch.Tensor) -> None:
        if self.training and torch.isnan(teacher_output).any():  # expect: GS201
            return
        batch_center = torch.sum(teacher_output, dim=0, keepdim=True) / len(teacher_output)
        self.center = self.center * self.center_momentum + batch_center * (1 - self.center_momentum)  # expect: GS401
