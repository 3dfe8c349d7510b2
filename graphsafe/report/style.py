"""ANSI colours for the text formats, as ruff's `--color auto|always|never` decides them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TextIO


def use_color(choice: str, stream: TextIO) -> bool:
    """`always`/`never` as said; `auto` colours a terminal unless NO_COLOR is set (FORCE_COLOR
    colours any stream), the conventions ruff follows."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):
        return False


@dataclass(frozen=True)
class Style:
    color: bool = False

    def _wrap(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text

    def bold(self, text: str) -> str:
        return self._wrap(text, "1")

    def code(self, text: str) -> str:  # a rule code: red and bold, as ruff prints it
        return self._wrap(text, "1;31")

    def fixable(self, text: str) -> str:
        return self._wrap(text, "36")

    def gutter(self, text: str) -> str:
        return self._wrap(text, "1;34")

    def carets(self, text: str) -> str:
        return self._wrap(text, "1;31")

    def passed(self, text: str) -> str:
        return self._wrap(text, "1;32")


PLAIN = Style()
