"""A minimal console progress line (no third-party dependency)."""

from __future__ import annotations

import sys


class ProgressLine:
    def __init__(self, total: int, enabled: bool = False):
        self.total = total
        self.n = 0
        self.postfix: dict = {}
        self.enabled = enabled

    def update(self, n: int = 1) -> None:
        self.n += n
        self._render()

    def set_postfix(self, **kwargs) -> None:
        self.postfix.update(kwargs)  # expect: GS503
        self._render()

    def _render(self) -> None:
        if self.enabled:
            fields = " ".join(f"{k}={v}" for k, v in self.postfix.items())
            sys.stderr.write(f"\r{self.n}/{self.total} {fields}")
