from __future__ import annotations

import logging

import torch
import torch.nn.functional as F

log = logging.getLogger("hifigan.losses")


def discriminator_loss(outs) -> torch.Tensor:
    total = 0.0
    for real, fake, _, _ in outs:
        total = total + torch.mean((1 - real) ** 2) + torch.mean(fake ** 2)
    return total


def generator_adv_loss(outs, per_disc: list) -> torch.Tensor:
    total = 0.0
    for _, fake, _, _ in outs:
        term = torch.mean((1 - fake) ** 2)
        per_disc.append(term.item())  # expect: GS101, GS503
        total = total + term
    return total


def feature_matching(outs, weight: float) -> torch.Tensor:
    loss = 0.0
    for _, _, real_feats, fake_feats in outs:
        for rf, ff in zip(real_feats, fake_feats):
            loss = loss + torch.mean(torch.abs(rf.detach() - ff))
    return loss * weight  # expect: GS301


def mel_l1(mel_fn, real: torch.Tensor, fake: torch.Tensor) -> torch.Tensor:
    diff = F.l1_loss(mel_fn(fake.squeeze(1)), mel_fn(real.squeeze(1)))
    if torch.isnan(diff):  # expect: GS201
        log.warning("mel loss is nan")  # expect: GS501
    return diff
