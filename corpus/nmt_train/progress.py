from __future__ import annotations


class ProgressMeter:
    """Minimal stand-in for a tqdm bar: counts updates and keeps the last postfix."""

    def __init__(self, total: int):
        self.total = total
        self.n = 0
        self.postfix: dict[str, str] = {}

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix(self, **kwargs) -> None:
        self.postfix = {k: str(v) for k, v in kwargs.items()}
