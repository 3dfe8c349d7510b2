from dataclasses import dataclass


@dataclass
class RMConfig:
    vocab: int = 64
    dim: int = 32
    seq_len: int = 12
    batch_size: int = 8
    lr: float = 1e-3
    warmup: int = 4
    center_coef: float = 0.01
    center_decay: float = 0.9
    margin_scale: float = 0.5
    hard_margin: float = 0.1
    reward_limit: float = 20.0
    eval_every: int = 2
    grad_clip: float = 1.0
    use_amp: bool = False
    seed: int = 0
