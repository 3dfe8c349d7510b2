"""VQGAN hyper-parameters (a CPU-sized first stage)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ModelConfig:
    in_channels: int = 3
    ch: int = 16
    z_channels: int = 8
    num_codes: int = 32
    beta: float = 0.25
    usage_decay: float = 0.9
    dead_threshold: float = 0.8
    grad_checkpointing: bool = False


@dataclass
class VQGANConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    resolution: int = 16
    batch_size: int = 4
    dataset_size: int = 16
    lr: float = 2e-4
    warmup_steps: int = 4
    betas: tuple[float, float] = (0.5, 0.9)
    disc_start: int = 1
    disc_factor: float = 1.0
    disc_weight: float = 0.8
    perceptual_weight: float = 1.0
    clip_grad: float = 1.0
    flip_prob: float = 0.5
    min_perplexity: float = 2.0
    codebook_dump_path: str = ""
    graph_warmup_iters: int = 11
    seed: int = 0
