"""Character tokenizer."""

from __future__ import annotations

ALPHABET = "\x00\x01 abcdefghijklmnopqrstuvwxyz.,!?'\n0123456789-"


class CharTokenizer:
    pad_id = 0
    eos_id = 1

    def __init__(self):
        self.stoi = {c: i for i, c in enumerate(ALPHABET)}

    def encode(self, text: str) -> list[int]:
        return [self.stoi.get(c, 2) for c in text.lower()]

    def decode(self, ids: list[int]) -> str:
        return "".join(ALPHABET[i] if 2 <= i < len(ALPHABET) else "" for i in ids)
