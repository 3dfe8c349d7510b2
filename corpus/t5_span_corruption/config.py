from dataclasses import dataclass


@dataclass
class T5Config:
    seed: int = 0
    vocab_size: int = 128
    n_sentinels: int = 16
    d_model: int = 32
    n_heads: int = 4
    d_ff: int = 64
    rows: int = 4
    seq_len: int = 32
    docs_per_batch: int = 6
    pad_id: int = 0
    eos_id: int = 1
    noise_density: float = 0.15
    mean_span: float = 3.0
    base_lr: float = 1e-2
    warmup_steps: int = 4
    max_rel_step: float = 1e-2
    z_loss: float = 1e-4
    log_every: int = 100
    total_steps: int = 10
