"""Model and fine-tuning settings for LoRA on a tiny causal transformer."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ModelConfig:
    vocab_size: int = 48
    d_model: int = 32
    n_head: int = 4
    n_layer: int = 2
    max_len: int = 24


@dataclass
class LoRAConfig:
    r: int = 4
    alpha: float = 8.0
    dropout: float = 0.1
    target_modules: tuple[str, ...] = ("q_proj", "v_proj")


@dataclass
class FinetuneConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    lora: LoRAConfig = field(default_factory=LoRAConfig)
    micro_batch: int = 2
    accum_steps: int = 2
    lr: float = 3e-3
    head_lr: float = 1e-3
    weight_decay: float = 0.0
    page_states: bool = True
    deterministic_dropout: bool = True
    gradient_checkpointing: bool = True
    sample_every: int = 2
    sample_len: int = 5
    log_every: int = 0
    dump_dir: str | None = None
    seed: int = 0
