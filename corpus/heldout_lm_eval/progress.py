"""A minimal progress counter for non-interactive runs."""

from __future__ import annotations

import sys


class ProgressBar:
    def __init__(self, total: int, desc: str = ""):
        self.total = total
        self.desc = desc
        self.n = 0

    def update(self, n: int = 1) -> None:
        self.n += n  # expect: GS302

    def close(self, stream=sys.stderr) -> None:
        if stream is not None and self.total:
            stream.write(f"{self.desc}: {self.n}/{self.total}\n")
