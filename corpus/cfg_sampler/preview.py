"""Writing intermediate previews as PGM files."""

from __future__ import annotations

from pathlib import Path

import torch


def to_uint8(images: torch.Tensor) -> torch.Tensor:
    return ((images.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)


def save_preview(image: torch.Tensor, out_dir: str, step: int) -> str:
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)  # expect: GS504
    pixels = to_uint8(image.mean(dim=0)).flatten().tolist()  # expect: GS102
    h, w = image.shape[-2:]
    path = folder / f"preview_{step:03d}.pgm"
    with open(path, "wb") as fh:  # expect: GS504
        fh.write(f"P5 {w} {h} 255\n".encode())
        fh.write(bytes(pixels))
    return str(path)
