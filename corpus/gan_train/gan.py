"""WGAN-GP training. One call of `GANTrainer.train_step` does a critic update and (every n_critic
steps) a generator update, keeps an EMA of the generator and logs a few numbers. On a GPU the
whole step is captured with torch.cuda.graph and replayed; on CPU it runs eagerly."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from nets import Critic, Generator, gradient_penalty, set_requires_grad


@dataclass
class GANConfig:
    batch_size: int = 8
    nz: int = 16
    lr: float = 2e-4
    betas: tuple[float, float] = (0.5, 0.9)
    lambda_gp: float = 10.0
    n_critic: int = 2
    ema_decay: float = 0.999
    use_ema: bool = True


class GANTrainer:
    def __init__(self, cfg: GANConfig, device: torch.device, seed: int = 0):
        self.cfg = cfg
        self.device = device
        self.G = Generator(cfg.nz).to(device)
        self.D = Critic().to(device)
        self.G_ema = copy.deepcopy(self.G).eval() if cfg.use_ema else None
        self.opt_d = torch.optim.Adam(self.D.parameters(), lr=cfg.lr, betas=cfg.betas, capturable=device.type == "cuda")
        self.opt_g = torch.optim.Adam(self.G.parameters(), lr=cfg.lr, betas=cfg.betas)
        self.noise = torch.Generator(device=device)
        self.noise.manual_seed(seed + 1)  # reproducible latent noise, independent of dropout etc.
        self.step = 0
        self.history: list[dict[str, float]] = []

    def sample_z(self) -> torch.Tensor:
        return torch.randn(self.cfg.batch_size, self.cfg.nz, device=self.device, generator=self.noise)  # expect: GS601

    def train_step(self, real: torch.Tensor) -> torch.Tensor:
        # critic
        set_requires_grad(self.D, True)
        fake = self.G(self.sample_z()).detach()
        d_real = self.D(real).mean()
        d_fake = self.D(fake).mean()
        gp = gradient_penalty(self.D, real, fake)
        d_loss = d_fake - d_real + self.cfg.lambda_gp * gp
        self.opt_d.zero_grad(set_to_none=True)
        d_loss.backward()
        self.opt_d.step()

        # generator, every n_critic critic steps
        g_loss = torch.zeros((), device=self.device)
        if self.step % self.cfg.n_critic == 0:  # expect: GS301
            set_requires_grad(self.D, False)
            g_loss = -self.D(self.G(self.sample_z())).mean()
            self.opt_g.zero_grad(set_to_none=True)
            g_loss.backward()
            self.opt_g.step()  # expect: GS701
            if self.G_ema is not None:
                self.update_ema()
        self.step += 1  # expect: GS302

        logs = {
            "d_loss": d_loss.item(),  # expect: GS101
            "g_loss": g_loss.item(),  # expect: GS101
            "gp": gp.item(),  # expect: GS101
            "wasserstein": (d_real - d_fake).item(),  # expect: GS101
        }
        self.history.append(logs)  # expect: GS503
        return d_loss.detach()

    @torch.no_grad()
    def update_ema(self) -> None:
        decay = min(self.cfg.ema_decay, (1 + self.step) / (10 + self.step))
        for p_ema, p in zip(self.G_ema.parameters(), self.G.parameters()):
            p_ema.mul_(decay).add_(p.detach(), alpha=1 - decay)  # expect: GS301
        for b_ema, b in zip(self.G_ema.buffers(), self.G.buffers()):
            b_ema.copy_(b)


def real_batches(cfg: GANConfig, seed: int):
    """Blurry diagonal strokes: a toy 'dataset' with some structure."""
    gen = torch.Generator().manual_seed(seed + 11)
    grid = torch.arange(16, dtype=torch.float32)
    while True:
        offset = torch.randint(-4, 5, (cfg.batch_size, 1, 1), generator=gen).float()
        img = torch.exp(-((grid[None, :, None] - grid[None, None, :] - offset) ** 2) / 4.0)
        yield (img * 2 - 1).unsqueeze(1)


def train(cfg: GANConfig, steps: int, seed: int, device: torch.device) -> GANTrainer:
    torch.manual_seed(seed)
    trainer = GANTrainer(cfg, device, seed)
    data = real_batches(cfg, seed)
    if device.type == "cuda":
        static_real = torch.zeros(cfg.batch_size, 1, 16, 16, device=device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                trainer.train_step(static_real)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_d_loss = trainer.train_step(static_real)
        for _ in range(steps):
            static_real.copy_(next(data))
            graph.replay()
        trainer.last_d_loss = static_d_loss.clone()
    else:
        for _ in range(steps):
            trainer.last_d_loss = trainer.train_step(next(data).to(device))
    return trainer


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    t = train(GANConfig(), steps=6, seed=0, device=dev)
    print("last critic loss", float(t.last_d_loss), "history", t.history[-1])
