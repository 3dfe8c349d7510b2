"""A character tokenizer over a tiny alphabet."""

from __future__ import annotations


class CharTokenizer:
    def __init__(self, alphabet: str = "abcdefgh!"):
        self.pad_id = 0
        self.bos_id = 1
        self.eos_id = 2
        self.alphabet = alphabet
        self.offset = 3

    @property
    def vocab_size(self) -> int:
        return self.offset + len(self.alphabet)

    def decode(self, ids: list[int]) -> str:
        chars = []
        for i in ids:
            if i == self.eos_id:
                break
            if i >= self.offset:
                chars.append(self.alphabet[i - self.offset])
        return "".join(chars)
