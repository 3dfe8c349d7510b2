"""Tic-tac-toe with a tensor encoding for the network."""

from __future__ import annotations

import torch

LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


class TicTacToe:
    size = 3

    def __init__(self) -> None:
        self.cells = [0] * 9
        self.player = 1
        self.moves = 0

    def clone(self) -> "TicTacToe":
        other = TicTacToe()
        other.cells, other.player, other.moves = list(self.cells), self.player, self.moves
        return other

    def legal_moves(self) -> list[int]:
        return [i for i, c in enumerate(self.cells) if c == 0]

    def play(self, move: int) -> None:
        if self.cells[move] != 0:
            raise ValueError(f"illegal move {move}")
        self.cells[move] = self.player
        self.player = -self.player
        self.moves += 1

    def winner(self) -> int | None:
        for a, b, c in LINES:
            if self.cells[a] != 0 and self.cells[a] == self.cells[b] == self.cells[c]:
                return self.cells[a]
        return 0 if self.moves == 9 else None

    def encode(self) -> torch.Tensor:
        board = torch.tensor(self.cells, dtype=torch.float32).view(3, 3)
        return torch.stack([(board == self.player).float(), (board == -self.player).float()])

    def legal_mask(self) -> torch.Tensor:
        return torch.tensor([c == 0 for c in self.cells], dtype=torch.bool)
