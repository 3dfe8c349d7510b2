"""Writes image grids as binary PGM files (no image library needed)."""

from __future__ import annotations

import os

import torch


def make_grid(images: torch.Tensor, rows: int, pad: int = 1) -> torch.Tensor:
    n, c, h, w = images.shape
    cols = (n + rows - 1) // rows
    grid = images.new_zeros(c, rows * (h + pad) + pad, cols * (w + pad) + pad)
    for i in range(n):
        r, col = divmod(i, cols)
        top, left = pad + r * (h + pad), pad + col * (w + pad)
        grid[:, top : top + h, left : left + w] = images[i]
    return grid


def save_image_grid(images: torch.Tensor, path: str, rows: int) -> None:
    grid = make_grid(torch.sigmoid(images.detach()), rows)
    pixels = (grid[0].clamp(0, 1) * 255).round().to(torch.uint8).cpu()  # expect: GS103
    os.makedirs(os.path.dirname(path), exist_ok=True)  # expect: GS504
    with open(path, "wb") as fh:  # expect: GS504
        fh.write(f"P5 {pixels.shape[1]} {pixels.shape[0]} 255\n".encode())
        fh.write(bytes(pixels.flatten().tolist()))  # expect: GS102
