import logging

import torch

logger = logging.getLogger(__name__)


def expectile_loss(diff: torch.Tensor, expectile: float) -> torch.Tensor:
    weight = torch.where(diff > 0, expectile, 1.0 - expectile)
    return (weight * diff.pow(2)).mean()


def clipped_exp_weights(adv: torch.Tensor, beta: float, clip: float) -> torch.Tensor:
    return torch.exp(adv * beta).clamp(max=clip)


def polyak(target: torch.nn.Module, source: torch.nn.Module, tau: float) -> None:
    with torch.no_grad():
        for tp, sp in zip(target.parameters(), source.parameters()):
            tp.lerp_(sp, tau)


def fraction_positive(adv: torch.Tensor) -> float:
    return float(adv.gt(0).float().mean())  # expect: GS105


def report_outliers(adv: torch.Tensor, bound: float) -> torch.Tensor:
    outliers = adv[adv.abs() > bound]  # expect: GS108
    logger.debug("outliers %d", outliers.numel())  # expect: GS501
    return outliers
