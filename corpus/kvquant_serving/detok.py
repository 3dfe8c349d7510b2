"""Streaming detokenisation: emits text pieces as tokens arrive."""

from __future__ import annotations


class StreamDetokenizer:
    def __init__(self, vocab_size: int):
        self.pieces = [chr(ord("a") + i % 26) if i else "" for i in range(vocab_size)]
        self.streams: dict[int, list[str]] = {}

    def push(self, rid: int, token: int) -> str:
        text = self.pieces[token]
        self.streams.setdefault(rid, []).append(text)  # expect: GS503
        return text

    def text(self, rid: int) -> str:
        return "".join(self.streams.get(rid, []))
