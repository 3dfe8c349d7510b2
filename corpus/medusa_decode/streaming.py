"""Streams accepted tokens to the caller as they are produced."""

from __future__ import annotations

import torch


def append_tokens(out: torch.Tensor, new_tokens: torch.Tensor) -> torch.Tensor:
    out = torch.cat((out, new_tokens[None]), dim=1)  # expect: GS404
    return out


class TokenStreamer:
    def __init__(self, echo: bool):
        self.echo = echo
        self.pieces: list[str] = []

    def put(self, token_ids: list[int]) -> None:
        text = "".join(f"<{t}>" for t in token_ids)
        self.pieces.append(text)  # expect: GS503
        if self.echo:
            print(text, end="", flush=True)  # expect: GS501

    def text(self) -> str:
        return "".join(self.pieces)
