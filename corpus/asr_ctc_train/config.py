from dataclasses import dataclass


@dataclass
class ASRConfig:
    n_feats: int = 20
    max_frames: int = 40
    max_label: int = 10
    vocab: int = 12
    blank: int = 0
    dim: int = 32
    batch: int = 4
    lr: float = 1e-3
    warmup_steps: int = 4
    freq_mask: int = 4
    time_mask: int = 6
    max_grad_norm: float = 5.0
    deterministic_aug: bool = False
    stage_host: bool = False
    seed: int = 0
