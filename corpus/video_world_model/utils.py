"""Image dumps for qualitative checks."""

from __future__ import annotations

import torch


def write_pgm(img: torch.Tensor, path: str) -> None:
    if img.is_cuda:
        torch.cuda.current_stream().synchronize()  # expect: GS106
    data = (img.clamp(0, 1) * 255).to(torch.uint8).cpu()  # expect: GS103
    h, w = data.shape[-2:]
    with open(path, "wb") as f:  # expect: GS504
        f.write(f"P5 {w} {h} 255\n".encode())
        f.write(bytes(data.flatten().tolist()))  # expect: GS102
