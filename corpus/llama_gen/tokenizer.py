"""A character-level toy tokenizer."""

from __future__ import annotations

import string


class CharTokenizer:
    def __init__(self, vocab_size: int):
        chars = string.ascii_lowercase + " .,!?\n#" + string.digits
        self.chars = chars[:vocab_size]
        self.index = {c: i for i, c in enumerate(self.chars)}
        self.eos_id = self.index.get("\n", 0)

    def encode(self, text: str) -> list[int]:
        return [self.index.get(c, 0) for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.chars[i % len(self.chars)] for i in ids)
