"""Configuration for AlphaZero self-play and training on tic-tac-toe."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class AlphaZeroConfig:
    seed: int = 0
    board: int = 3
    channels: int = 8
    blocks: int = 2
    simulations: int = 6
    c_puct: float = 1.5
    dirichlet_alpha: float = 0.3
    dirichlet_frac: float = 0.25
    temp_moves: int = 3
    prior_temp_boost: float = 0.5
    eval_batch: int = 1
    batch_size: int = 8
    lr: float = 0.02
    lr_milestones: tuple[int, ...] = (3, 6)
    lr_gamma: float = 0.1
    momentum: float = 0.9
    l2: float = 1e-4
    games_per_iter: int = 2
    arena_games: int = 2
    replay_capacity: int = 2000
    elo_k: float = 16.0
    grad_ckpt: bool = False
    noise_in_graph: bool = False
    compile_net: bool = False
    profile: bool = False
    debug_eval: bool = False
