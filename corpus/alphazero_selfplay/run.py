"""Entry point for the corpus runner: a few self-play / train iterations of AlphaZero, on CPU."""

from __future__ import annotations

import os
import random
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import AlphaZeroConfig  # noqa: E402
from evaluator import LeafEvaluator  # noqa: E402
from mcts import MCTS  # noqa: E402
from metrics import EloTracker  # noqa: E402
from net import PolicyValueNet  # noqa: E402
from replay import ReplayBuffer  # noqa: E402
from selfplay import arena_vs_random, play_game  # noqa: E402
from trainer import AlphaZeroTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _run(steps, seed)
    finally:
        torch.set_num_threads(threads)


def _run(steps: int, seed: int) -> dict[str, float]:
    random.seed(seed)
    torch.manual_seed(seed)
    cfg = AlphaZeroConfig(seed=seed)
    device = torch.device("cpu")
    net = PolicyValueNet(cfg).to(device)
    evaluator = LeafEvaluator(net, cfg, device)
    rng = random.Random(seed)
    mcts = MCTS(evaluator, cfg, rng)
    replay = ReplayBuffer(cfg.replay_capacity)
    trainer = AlphaZeroTrainer(net, cfg, device)
    elo = EloTracker(cfg.elo_k)
    losses: list[float] = []
    for it in range(steps):
        net.eval()
        for _ in range(cfg.games_per_iter):
            replay.extend(play_game(mcts, evaluator, cfg, rng))
        net.train()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*pin_memory.*")
            losses += trainer.fit(replay, seed + it)
        net.eval()
        elo.update(arena_vs_random(mcts, evaluator, cfg, rng), it)
    logged = trainer.metrics_logger.flush()
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "train_steps": float(trainer.step_count),
        "lr": float(trainer.lr),
        "replay_size": float(len(replay)),
        "evals": float(evaluator.evals),
        "elo": float(elo.rating),
        "last_value_loss": float(logged[-1]["train/value"]),
        "param_sum": float(sum(p.detach().sum() for p in net.parameters())),
    }


if __name__ == "__main__":
    print(run())
