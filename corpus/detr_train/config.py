from dataclasses import dataclass, field


@dataclass
class DetrConfig:
    num_classes: int = 5
    num_queries: int = 8
    hidden: int = 32
    dec_layers: int = 3
    image_size: int = 16
    batch_size: int = 4
    max_targets: int = 4
    lr: float = 1e-4
    weight_decay: float = 1e-4
    clip_max_norm: float = 0.1
    eos_coef: float = 0.1
    cost_class: float = 1.0
    cost_bbox: float = 5.0
    cost_giou: float = 2.0
    loss_weights: dict = field(default_factory=lambda: {"ce": 1.0, "bbox": 5.0, "giou": 2.0})
    aux_weight: float = 1.0
    freeze_backbone_epochs: int = 1
    lr_drop: int = 2
    hflip_prob: float = 0.5
    box_noise: float = 0.02
    dump_matches: bool = False
    seed: int = 0
