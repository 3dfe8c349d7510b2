from dataclasses import dataclass


@dataclass
class IQLConfig:
    obs_dim: int = 6
    act_dim: int = 2
    hidden: int = 32
    batch: int = 16
    expectile: float = 0.7
    beta: float = 3.0
    beta_decay: float = 0.99
    adv_clip: float = 100.0
    tau: float = 0.005
    discount: float = 0.99
    reward_scale: float = 0.5
    target_every: int = 2
    lr: float = 3e-4
    dump_stats: bool = False
