"""Tensors made from Python numbers on the device, while a CUDA graph is captured.

`torch.tensor(0.0, device="cuda")` copies the number from pageable host memory, which capture
refuses ("Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor
is pinned"). Library code does it where a user cannot reach: torch.distributions' `broadcast_all`
turns the `0` of `HalfNormal(scale)` into `torch.tensor(0, device=scale.device)` on every
construction. A captured kernel bakes a Python number in either way (`x * 0.5` does), so this
mode builds such a tensor on the host, pins it and copies it from there: capture records a copy
from the pinned buffer, which `kept` holds for as long as the graph lives. Only data made of
Python numbers (nested lists/tuples of bool/int/float/complex) is treated so: anything else
(numpy arrays, host tensors: per-step data) still fails capture with its rule and line.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode

_NUMBER = (bool, int, float, complex)


def _numbers_only(data: Any, depth: int = 0) -> bool:
    if isinstance(data, _NUMBER):
        return True
    if isinstance(data, (list, tuple)) and depth < 8:
        return all(_numbers_only(item, depth + 1) for item in data)
    return False


class NumbersFromPinnedMemory(TorchFunctionMode):
    """`torch.tensor` / `torch.as_tensor` / `Tensor.new_tensor` of Python numbers onto a CUDA
    device, while the current stream captures: made on the host, pinned, copied from there."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: list[torch.Tensor] = []  # pinned sources the graph's copies read at every replay
        self.made = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in (torch.tensor, torch.as_tensor) and args and _numbers_only(args[0]):
            device = kwargs.get("device")
            if self._capturing_onto(device):
                return self._from_pinned(args[0], kwargs.get("dtype"), device, kwargs.get("requires_grad", False))
        elif func is torch.Tensor.new_tensor and len(args) >= 2 and _numbers_only(args[1]):
            like = args[0]
            device = kwargs.get("device", like.device)
            if self._capturing_onto(device):
                return self._from_pinned(args[1], kwargs.get("dtype", like.dtype), device,
                                         kwargs.get("requires_grad", False))
        return func(*args, **kwargs)

    @staticmethod
    def _capturing_onto(device) -> bool:
        return (device is not None and torch.device(device).type == "cuda"
                and torch.cuda.is_current_stream_capturing())

    def _from_pinned(self, data, dtype, device, requires_grad: bool) -> torch.Tensor:
        # the mode is off inside its own handler: these calls are torch's own
        host = torch.tensor(data, dtype=dtype, device="cpu").pin_memory()
        self.kept.append(host)
        self.made += 1
        out = host.to(device, non_blocking=True)
        return out.requires_grad_(requires_grad) if requires_grad else out

