"""Per-layer recurrent state for step-wise decoding."""

from __future__ import annotations

import torch


class InferenceCache:
    def __init__(self, n_layers: int, batch: int, d_inner: int, d_conv: int, d_state: int, device: torch.device):
        self.conv_states = [torch.zeros(batch, d_inner, d_conv, device=device) for _ in range(n_layers)]
        self.ssm_states = [torch.zeros(batch, d_inner, d_state, device=device) for _ in range(n_layers)]
        self.seqlen_offset = 0

    def push_conv(self, layer_idx: int, x_t: torch.Tensor) -> torch.Tensor:
        state = self.conv_states[layer_idx]
        state.copy_(torch.roll(state, shifts=-1, dims=-1))
        state[:, :, -1] = x_t
        return state

    def write_ssm(self, layer_idx: int, new_state: torch.Tensor) -> None:
        self.ssm_states[layer_idx] = new_state  # expect: GS503

    def advance(self, n: int = 1) -> None:
        self.seqlen_offset += n  # expect: GS302

    def reset(self) -> None:
        for conv, ssm in zip(self.conv_states, self.ssm_states):
            conv.zero_()
            ssm.zero_()
        self.seqlen_offset = 0
