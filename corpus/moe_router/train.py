"""Train the MoE regressor. On a GPU the model's forward and backward are graphed with
torch.cuda.make_graphed_callables; the loss and the AdamW step run eagerly around them."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from model import MoEModel


def synthetic_batch(gen: torch.Generator, batch: int, frames: int, in_dim: int):
    x = torch.randn(batch, frames, in_dim, generator=gen)
    lengths = torch.randint(frames // 2, frames + 1, (batch,), generator=gen)
    mask = torch.arange(frames)[None, :] < lengths[:, None]
    x = x * mask[..., None]
    y = torch.sin(x[..., 0] * 2.0) + 0.5 * x[..., 1] * x[..., 2]
    return x, mask, y


def train(steps: int, seed: int, device: torch.device, batch: int = 4, frames: int = 6, in_dim: int = 12):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 7)
    model = MoEModel(in_dim=in_dim).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    forward = model
    if device.type == "cuda":
        sample = torch.randn(batch, frames, in_dim, device=device, requires_grad=True)
        sample_mask = torch.ones(batch, frames, dtype=torch.bool, device=device)
        forward = torch.cuda.make_graphed_callables(model, (sample, sample_mask))
    losses = []
    for _ in range(steps):
        x, mask, y = synthetic_batch(gen, batch, frames, in_dim)
        x, mask, y = x.to(device), mask.to(device), y.to(device)
        pred, aux = forward(x, mask)
        loss = F.mse_loss(pred[mask], y[mask]) + 0.01 * aux  # outside the graphed callable: fine
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, losses = train(10, 0, dev)
    print(losses)
