from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class GNNConfig:
    in_dim: int = 8
    hidden: int = 32
    num_classes: int = 3
    num_layers: int = 3
    dropout: float = 0.1
    max_edge_drop: float = 0.2
    lr: float = 3e-3
    warmup_iters: int = 4
    weight_decay: float = 0.0
    spike_threshold: float = 50.0
    class_weights: tuple[float, ...] = (1.0, 1.5, 2.0)
    grad_checkpoint: bool = True
    graphs_per_batch: int = 4
    nodes_per_graph: int = 10
    fanout: int = 3
    norm_momentum: float = 0.99
    metrics: list[str] = field(default_factory=lambda: ["loss", "acc"])
