"""Self-play games producing (state, pi, z) examples, and an arena against a random player."""

from __future__ import annotations

import random

import torch

from config import AlphaZeroConfig
from evaluator import LeafEvaluator
from game import TicTacToe
from mcts import MCTS, select_move


def move_temperature(move_no: int, cfg: AlphaZeroConfig) -> float:
    return 1.0 if move_no < cfg.temp_moves else 0.0


def prior_temperature(move_no: int, cfg: AlphaZeroConfig) -> float:
    return 1.0 + cfg.prior_temp_boost if move_no < cfg.temp_moves else 1.0


def play_game(mcts: MCTS, evaluator: LeafEvaluator, cfg: AlphaZeroConfig, rng: random.Random):
    game = TicTacToe()
    history = []
    while game.winner() is None:
        evaluator.prior_temperature = prior_temperature(game.moves, cfg)
        pi = mcts.run(game, add_noise=True)
        move = select_move(pi, move_temperature(game.moves, cfg), rng)
        history.append((game.encode(), torch.tensor(pi), game.player, game.legal_mask()))
        game.play(move)
    winner = game.winner()
    return [
        (state, pi, torch.tensor(0.0 if winner == 0 else (1.0 if player == winner else -1.0)), legal)
        for state, pi, player, legal in history
    ]


def arena_vs_random(mcts: MCTS, evaluator: LeafEvaluator, cfg: AlphaZeroConfig, rng: random.Random) -> float:
    score = 0.0
    for g in range(cfg.arena_games):
        game = TicTacToe()
        agent_player = 1 if g % 2 == 0 else -1
        evaluator.prior_temperature = 1.0
        while game.winner() is None:
            if game.player == agent_player:
                move = select_move(mcts.run(game, add_noise=False), 0.0, rng)
            else:
                move = rng.choice(game.legal_moves())
            game.play(move)
        outcome = game.winner()
        score += 0.5 if outcome == 0 else float(outcome == agent_player)
    return score / cfg.arena_games
