import torch


def boundary_scalings(sigma: torch.Tensor, sigma_data: float, sigma_min: float):
    c_skip = sigma_data ** 2 / ((sigma - sigma_min) ** 2 + sigma_data ** 2)
    c_out = (sigma - sigma_min) * sigma_data / (sigma ** 2 + sigma_data ** 2).sqrt()
    return c_skip, c_out


def append_dims(x: torch.Tensor, ndim: int) -> torch.Tensor:
    return x.reshape(x.shape + (1,) * (ndim - x.dim()))
