"""A minimal console progress bar (tqdm-like) that only keeps its state in memory."""

from __future__ import annotations


class ProgressBar:
    def __init__(self, total: int, desc: str = ""):
        self.total = total
        self.desc = desc
        self.n = 0
        self.postfix: dict = {}

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix(self, **kwargs) -> None:
        self.postfix = dict(kwargs)
