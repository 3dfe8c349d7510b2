"""A minimal text progress bar (the cluster image has no tqdm)."""

from __future__ import annotations

import sys


class ProgressBar:
    def __init__(self, total: int, desc: str = "", enabled: bool = True):
        self.total = total
        self.desc = desc
        self.enabled = enabled
        self.n = 0

    def update(self, n: int = 1) -> None:
        self.n += n  # expect: GS302

    def render(self) -> None:
        if self.enabled:
            sys.stderr.write(f"\r{self.desc} {self.n}/{self.total}")

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
