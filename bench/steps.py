"""Steps for bench/bench_capture.py: factories in the form `graphsafe capture` takes
(`bench/steps.py:mlp_train`). Each builds its model on the GPU and returns a CaptureTarget.

Launch-bound (many small kernels, where CUDA graphs pay off):
- mlp_train: 4-layer MLP (width 512, batch 64), forward + backward + capturable AdamW;
- gpt_train: tiny GPT (4 layers, d=256, 4 heads, seq 64, batch 8, vocab 512) training step;
- gpt_decode: the same GPT decoding one token for 8 sequences with a KV cache; the position and
  the next tokens stay on the device (greedy), so replays decode successive tokens;
- diffusion_step: a small MLP denoiser with a sinusoidal embedding of a device-tensor timestep and
  a DDIM update; the step index is a device tensor advanced in place.
Compute-bound, for contrast:
- matmul_chain: eight 4096x4096 bf16 matrix products.
"""

from __future__ import annotations

import math
import os

import torch
import torch.nn.functional as F
from torch import nn

from graphsafe.runtime.capture import CaptureTarget

DEVICE = os.environ.get("GRAPHSAFE_BENCH_DEVICE", "cuda")  # "cpu" only to check the steps run
CAPTURABLE = DEVICE == "cuda"  # capturable optimizers need CUDA


def _seed() -> None:
    torch.manual_seed(0)
    torch.cuda.manual_seed(0)


# --- MLP ------------------------------------------------------------------------------------------


def mlp_train(width: int = 512, depth: int = 4, batch: int = 64) -> CaptureTarget:
    _seed()
    layers: list[nn.Module] = []
    size = 128
    for _ in range(depth):
        layers += [nn.Linear(size, width), nn.GELU()]
        size = width
    layers.append(nn.Linear(size, 10))
    model = nn.Sequential(*layers).to(DEVICE)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=CAPTURABLE)
    x = torch.randn(batch, 128, device=DEVICE)
    y = torch.randint(0, 10, (batch,), device=DEVICE)

    def mlp_train_step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return CaptureTarget(mlp_train_step, (x, y), state=(model, opt))


# --- GPT ------------------------------------------------------------------------------------------


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)

    def _split(self, t: torch.Tensor) -> torch.Tensor:
        b, s, d = t.shape
        return t.view(b, s, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        a = F.scaled_dot_product_attention(self._split(q), self._split(k), self._split(v), is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))

    def decode(self, x: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, pos: torch.Tensor,
               visible: torch.Tensor) -> torch.Tensor:
        """One token per sequence: x (B, 1, d); caches (B, H, T, hd); pos a device scalar."""
        b, _, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = self._split(q), self._split(k), self._split(v)
        k_cache.index_copy_(2, pos.view(1), k)
        v_cache.index_copy_(2, pos.view(1), v)
        scores = (q @ k_cache.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(~visible, float("-inf"))
        a = torch.softmax(scores, dim=-1) @ v_cache
        x = x + self.proj(a.transpose(1, 2).reshape(b, 1, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab: int = 512, dim: int = 256, layers: int = 4, heads: int = 4, max_len: int = 128) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.max_len = max_len

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def gpt_train(batch: int = 8, seq: int = 64) -> CaptureTarget:
    _seed()
    model = TinyGPT().to(DEVICE)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, capturable=CAPTURABLE)
    idx = torch.randint(0, 512, (batch, seq), device=DEVICE)
    targets = torch.roll(idx, -1, dims=1)

    def gpt_train_step(idx, targets):
        opt.zero_grad(set_to_none=True)
        logits = model(idx)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
        loss.backward()
        opt.step()
        return loss

    return CaptureTarget(gpt_train_step, (idx, targets), state=(model, opt))


def gpt_decode(batch: int = 8) -> CaptureTarget:
    _seed()
    model = TinyGPT().to(DEVICE).eval()
    heads, dim, length = 4, 256, model.max_len
    shape = (batch, heads, length, dim // heads)
    caches = [(torch.zeros(shape, device=DEVICE), torch.zeros(shape, device=DEVICE)) for _ in model.blocks]
    tokens = torch.randint(0, 512, (batch, 1), device=DEVICE)
    pos = torch.zeros((), dtype=torch.long, device=DEVICE)
    steps = torch.arange(length, device=DEVICE)

    @torch.no_grad()
    def gpt_decode_step(tokens, pos):
        x = model.wte(tokens) + model.wpe(pos.view(1))
        visible = (steps <= pos).view(1, 1, 1, length)
        for block, (k_cache, v_cache) in zip(model.blocks, caches):
            x = block.decode(x, k_cache, v_cache, pos, visible)
        logits = model.head(model.ln(x))[:, -1]
        tokens.copy_(logits.argmax(-1, keepdim=True))  # greedy: the next token stays on the device
        pos.copy_((pos + 1) % length)  # wraps so long timing runs stay in range
        return logits

    return CaptureTarget(gpt_decode_step, (tokens, pos), state={"model": model, "caches": caches})


# --- diffusion ------------------------------------------------------------------------------------


class Denoiser(nn.Module):
    """A UNet-ish MLP: down, middle, up with a skip, conditioned on a sinusoidal time embedding."""

    def __init__(self, dim: int = 256, hidden: int = 512, emb: int = 128) -> None:
        super().__init__()
        self.emb = emb
        self.time = nn.Sequential(nn.Linear(emb, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.down = nn.Linear(dim, hidden)
        self.mid = nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.up = nn.Linear(2 * hidden, dim)

    def embed(self, t: torch.Tensor) -> torch.Tensor:
        half = self.emb // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
        angles = t.float()[..., None] * freqs
        return torch.cat([angles.sin(), angles.cos()], dim=-1)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.down(x) + self.time(self.embed(t)))
        return self.up(torch.cat([h, self.mid(h)], dim=-1))


def diffusion_step(batch: int = 16, dim: int = 256, sample_steps: int = 50) -> CaptureTarget:
    _seed()
    model = Denoiser(dim).to(DEVICE).eval()
    betas = torch.linspace(1e-4, 2e-2, 1000, device=DEVICE)
    alphas_cumprod = torch.cumprod(1 - betas, dim=0)
    timesteps = torch.linspace(999, 0, sample_steps + 1, device=DEVICE).long()
    x = torch.randn(batch, dim, device=DEVICE)
    index = torch.zeros((), dtype=torch.long, device=DEVICE)  # which DDIM step: a device tensor

    @torch.no_grad()
    def ddim_step(x, index):
        # index_select with a device index: no host read (x[tensor] of a 0-d tensor may read it)
        t = timesteps.index_select(0, index.view(1))
        t_prev = timesteps.index_select(0, (index + 1).view(1))
        a_t, a_prev = alphas_cumprod.index_select(0, t), alphas_cumprod.index_select(0, t_prev)
        eps = model(x, t.expand(x.shape[0]))
        x0 = (x - (1 - a_t).sqrt() * eps) / a_t.sqrt()
        x.copy_(a_prev.sqrt() * x0 + (1 - a_prev).sqrt() * eps)
        index.copy_((index + 1) % sample_steps)
        return x0

    return CaptureTarget(ddim_step, (x, index), state={"model": model})


# --- compute-bound --------------------------------------------------------------------------------


def matmul_chain(size: int = 4096, count: int = 8) -> CaptureTarget:
    _seed()
    weights = [torch.randn(size, size, device=DEVICE, dtype=torch.bfloat16) / math.sqrt(size) for _ in range(count)]
    x = torch.randn(size, size, device=DEVICE, dtype=torch.bfloat16)

    @torch.no_grad()
    def matmul_chain_step(x):
        h = x
        for w in weights:
            h = h @ w
        return h

    return CaptureTarget(matmul_chain_step, (x,), state={"weights": weights})


STEPS = {
    "mlp_train": (mlp_train, "launch-bound"),
    "gpt_train": (gpt_train, "launch-bound"),
    "gpt_decode": (gpt_decode, "launch-bound"),
    "diffusion_step": (diffusion_step, "launch-bound"),
    "matmul_chain": (matmul_chain, "compute-bound"),
}
