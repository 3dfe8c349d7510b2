"""PUCT Monte-Carlo tree search on the host, with Dirichlet noise at the root."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from config import AlphaZeroConfig
from evaluator import LeafEvaluator
from game import TicTacToe


@dataclass
class Node:
    prior: float
    to_play: int
    children: dict[int, "Node"] = field(default_factory=dict)
    visits: int = 0
    value_sum: float = 0.0

    @property
    def value(self) -> float:
        return self.value_sum / self.visits if self.visits else 0.0


def dirichlet(alpha: float, k: int, rng: random.Random) -> list[float]:
    draws = [rng.gammavariate(alpha, 1.0) for _ in range(k)]
    total = sum(draws)
    return [d / total for d in draws]


class MCTS:
    def __init__(self, evaluator: LeafEvaluator, cfg: AlphaZeroConfig, rng: random.Random):
        self.evaluator = evaluator
        self.cfg = cfg
        self.rng = rng

    def _expand(self, node: Node, game: TicTacToe) -> float:
        priors, value = self.evaluator.evaluate(game.encode()[None], game.legal_mask()[None])
        for move in game.legal_moves():
            node.children[move] = Node(priors[move], -game.player)
        return value

    def _select(self, node: Node) -> tuple[int, Node]:
        sqrt_n = math.sqrt(max(1, node.visits))

        def score(item: tuple[int, Node]) -> float:
            _, child = item
            return -child.value + self.cfg.c_puct * child.prior * sqrt_n / (1 + child.visits)

        return max(node.children.items(), key=score)

    def _add_root_noise(self, root: Node) -> None:
        moves = list(root.children)
        noise = dirichlet(self.cfg.dirichlet_alpha, len(moves), self.rng)
        frac = self.cfg.dirichlet_frac
        for move, eta in zip(moves, noise):
            child = root.children[move]
            child.prior = (1 - frac) * child.prior + frac * eta

    def run(self, game: TicTacToe, add_noise: bool) -> list[float]:
        root = Node(1.0, game.player)
        self._expand(root, game)
        if add_noise:
            self._add_root_noise(root)
        for _ in range(self.cfg.simulations):
            node, scratch, path = root, game.clone(), [root]
            while node.children:
                move, node = self._select(node)
                scratch.play(move)
                path.append(node)
            outcome = scratch.winner()
            if outcome is None:
                value = self._expand(node, scratch)
            else:
                value = 0.0 if outcome == 0 else (1.0 if outcome == node.to_play else -1.0)
            for visited in reversed(path):
                visited.visits += 1
                visited.value_sum += value if visited.to_play == node.to_play else -value
        counts = [float(root.children[m].visits) if m in root.children else 0.0 for m in range(9)]
        total = sum(counts)
        return [c / total for c in counts]


def select_move(pi: list[float], temperature: float, rng: random.Random) -> int:
    if temperature == 0.0:
        return max(range(len(pi)), key=pi.__getitem__)
    weights = [p ** (1.0 / temperature) for p in pi]
    return rng.choices(range(len(pi)), weights=weights, k=1)[0]
