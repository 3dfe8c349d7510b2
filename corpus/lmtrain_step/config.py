from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class GPTConfig:
    block_size: int = 16
    vocab_size: int = 64
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    dropout: float = 0.0
    bias: bool = True
    activation_checkpointing: bool = True
    deterministic_dropout: bool = False
    seed: int = 1337


@dataclass
class TrainConfig:
    batch_size: int = 4
    gradient_accumulation_steps: int = 2
    learning_rate: float = 6e-4
    min_lr: float = 6e-5
    warmup_iters: int = 2
    lr_decay_iters: int = 20
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float = 1.0
    dtype: str = "bfloat16"
    log_interval: int = 1
    ckpt_interval: int = 2
    graph_blocks: bool = True
    graph_optimizer: bool = True
    model: GPTConfig = field(default_factory=GPTConfig)
