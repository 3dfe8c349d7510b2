"""Incremental detokenisation and stop-string handling on the host."""

from __future__ import annotations

from typing import Callable, Optional

import torch

from tokenizer import CharTokenizer


class TokenStreamer:
    def __init__(self, tokenizer: CharTokenizer, stop_strings: list[str], on_text: Optional[Callable[[str], None]] = None):
        self.tokenizer = tokenizer
        self.stop_strings = stop_strings
        self.on_text = on_text
        self.texts: list[str] = []
        self.stopped = False

    def start(self, batch: int) -> None:
        self.texts = [""] * batch
        self.stopped = False

    def put(self, token_ids: torch.Tensor) -> None:
        for row, tok in enumerate(token_ids.tolist()):
            piece = self.tokenizer.decode([tok])
            self.texts[row] += piece  # expect: GS503
            if self.on_text is not None:
                self.on_text(piece)
        if all(any(s in t for s in self.stop_strings) for t in self.texts):
            self.stopped = True
