from dataclasses import dataclass


@dataclass
class CDConfig:
    channels: int = 3
    image_size: int = 8
    hidden: int = 32
    batch_size: int = 4
    lr: float = 2e-4
    sigma_min: float = 0.002
    sigma_max: float = 80.0
    sigma_data: float = 0.5
    rho: float = 7.0
    s0: int = 10
    s1: int = 40
    total_steps: int = 20
    mu0: float = 0.9
    lpips_weight: float = 1.0
    lpips_from_scales: int = 12
    lpips_threshold: float = 0.5
    profile_sync: bool = False
    dump_schedule: bool = False
    out_dir: str = ""
    seed: int = 0
