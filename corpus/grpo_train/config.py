"""GRPO hyper-parameters for a toy character-level policy."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PolicyConfig:
    vocab_size: int = 12
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 2
    max_len: int = 32


@dataclass
class GRPOConfig:
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    num_generations: int = 4
    max_new_tokens: int = 6
    batch_prompts: int = 2
    max_prompt_len: int = 5
    lr: float = 1e-3
    clip_eps: float = 0.2
    max_grad_norm: float = 1.0
    init_kl_coef: float = 0.05
    kl_target: float = 0.02
    kl_horizon: int = 100
    kl_window: int = 8
    temperature: float = 1.0
    min_temperature: float = 0.6
    temperature_decay: float = 0.98
    scale_rewards: bool = True
    target_len: int = 4
    len_weight: float = 0.5
    ref_sync_every: int = 2
    ref_sync_mix: float = 0.6
    log_samples: int = 2
    fp16: bool = False
    total_steps: int = 100
    seed: int = 0
