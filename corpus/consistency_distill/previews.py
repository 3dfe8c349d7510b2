import torch


@torch.no_grad()
def one_step_samples(model_fn, n: int, shape, sigma_max: float, gen: torch.Generator) -> torch.Tensor:
    x = torch.randn((n,) + tuple(shape), generator=gen) * sigma_max
    sigma = torch.full((n,), sigma_max)
    out = model_fn(x, sigma)
    grid = out.clamp(-1, 1).cpu()
    return grid
