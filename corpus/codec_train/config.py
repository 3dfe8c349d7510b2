from dataclasses import dataclass, field


@dataclass
class CodecConfig:
    seed: int = 0
    frame: int = 64
    hop: int = 16
    latent_dim: int = 16
    n_quantizers: int = 4
    codebook_size: int = 32
    batch_size: int = 4
    lr: float = 3e-4
    disc_lr: float = 2e-4
    commit_weight: float = 0.25
    fm_weight: float = 2.0
    stft_scales: tuple = (32, 64)
    balancer_ema: float = 0.99
    balancer_weights: dict = field(default_factory=lambda: {"rec": 1.0, "adv": 3.0, "fm": 3.0})
    quantizer_dropout: float = 0.5
    sample_rate: int = 16000
    dump_stats: bool = False
    use_feature_matching: bool = True
