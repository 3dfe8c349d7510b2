"""Rolling observation history fed to the policy (the last n_obs_steps frames)."""

from __future__ import annotations

from collections import deque

import torch


class ObsHistory:
    def __init__(self, n_obs_steps: int):
        self.n_obs_steps = n_obs_steps
        self.frames: deque[torch.Tensor] = deque(maxlen=n_obs_steps)

    def reset(self, obs: torch.Tensor) -> None:
        self.frames.clear()
        for _ in range(self.n_obs_steps):
            self.frames.append(obs)

    def push(self, obs: torch.Tensor) -> torch.Tensor:
        self.frames.append(obs)
        return torch.stack(list(self.frames), dim=0)
