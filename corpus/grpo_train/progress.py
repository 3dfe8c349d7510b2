"""A minimal progress bar (tqdm-like interface, no terminal output when disabled)."""

from __future__ import annotations

import sys


class ProgressBar:
    def __init__(self, total: int, desc: str = "", disable: bool = True):
        self.total = total
        self.desc = desc
        self.disable = disable
        self.n = 0

    def update(self, n: int = 1) -> None:
        self.n += n  # expect: GS302
        if not self.disable:
            sys.stderr.write(f"\r{self.desc} {self.n}/{self.total}")

    def close(self) -> None:
        if not self.disable:
            sys.stderr.write("\n")
