"""A minimal console progress bar."""

from __future__ import annotations

import sys


class ProgressBar:
    def __init__(self, total: int = 0, enabled: bool = True):
        self.total = total
        self.count = 0
        self.enabled = enabled

    def update(self, n: int = 1) -> None:
        self.count += n  # expect: GS302

    def render(self) -> None:
        if self.enabled:
            sys.stderr.write(f"\r{self.count}/{self.total}")
