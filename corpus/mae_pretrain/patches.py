import torch


def patchify(imgs: torch.Tensor, p: int) -> torch.Tensor:
    n, c, h, w = imgs.shape
    x = imgs.reshape(n, c, h // p, p, w // p, p)
    x = x.permute(0, 2, 4, 3, 5, 1)
    return x.reshape(n, (h // p) * (w // p), p * p * c)


def normalised_targets(target: torch.Tensor, norm_pix: bool) -> torch.Tensor:
    if norm_pix:
        mean = target.mean(-1, keepdim=True)
        var = target.var(-1, keepdim=True)
        target = (target - mean) / (var + 1e-6).sqrt()
    return target


def masked_mse(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    per_patch = (pred - target).pow(2).mean(-1)
    return (per_patch * mask).sum() / mask.sum().clamp(min=1.0)


def visible_counts(mask: torch.Tensor) -> list:
    counts = (1 - mask).sum(1).unique()  # expect: GS107
    return counts.tolist()  # expect: GS102
