"""Configuration of a top-k sparse autoencoder trained on language-model activations."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LMConfig:
    vocab: int = 64
    d_model: int = 16
    seq_len: int = 8
    n_seqs: int = 32


@dataclass
class SAEConfig:
    d_in: int = 16
    expansion: int = 4
    k: int = 4
    k_aux: int = 8
    batch_size: int = 32
    lr: float = 1e-3
    lr_decay_start: int = 100
    total_steps: int = 200
    l1_coef: float = 1e-3
    l1_warmup_steps: int = 10
    aux_coef: float = 1.0 / 32
    norm_scale: float = 1.0
    max_grad_norm: float = 1.0
    dead_after: int = 2
    resample_every: int = 2
    resample_scale: float = 0.2
    sample_log_prob: float = 0.0
    deterministic: bool = False
    verbose: bool = False
    profile: bool = False
    checkpoint_every_step: bool = False
    out_dir: str = "runs/sae"
    use_amp: bool = False
    seed: int = 0
    lm: LMConfig = field(default_factory=LMConfig)

    @property
    def d_sae(self) -> int:
        return self.d_in * self.expansion
