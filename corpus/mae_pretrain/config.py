from dataclasses import dataclass


@dataclass
class MAEConfig:
    img: int = 16
    patch: int = 4
    chans: int = 3
    dim: int = 32
    depth: int = 3
    batch: int = 8
    base_lr: float = 1.5e-4
    layer_decay: float = 0.75
    warmup_steps: int = 2
    mask_ratio_start: float = 0.6
    mask_ratio_end: float = 0.8
    ema_base: float = 0.999
    norm_pix: bool = True
    flip_prob: float = 0.5
    fixed_probe: bool = False
    track_memory: bool = False
    seed: int = 0
