"""Fresh leaves for the parameters a graphed region with a backward reads through its modules.

A parameter's AccumulateGrad node records the stream it was made on. When the caller's own code used
the parameter earlier in the step (eagerly, on the default stream) and keeps that autograd graph
alive (an object argument built from the model's outputs), the backward captured for the region
meets that node: torch up to 2.11 then makes the legacy default stream wait on the capturing
stream, and the capture fails ("operation would make the legacy stream depend on a capturing
blocking stream", cudaErrorStreamCaptureImplicit; pytorch#180090 fixes it in later releases).

During warm-up and capture the region's modules hold an alias of each such parameter instead: an
`nn.Parameter` on the same storage (same values, no copy), whose AccumulateGrad is made on the
capture's side stream. The graphs' gradients for the aliases are returned as the gradients of the
caller's parameters (the autograd Function takes the real ones: same data pointer, nothing copied),
and the eager backward outside accumulates them as before.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch


class ParameterAliases:
    """`surface`: the leaves to capture with (an alias where the parameter sits in one of the
    region's modules, else the leaf itself); `bound()`: the modules hold the aliases meanwhile."""

    def __init__(self, fn: Callable, leaves: tuple[torch.Tensor, ...]) -> None:
        slots = _parameter_slots(fn)
        self._swaps: list[tuple[torch.nn.Module, str, torch.nn.Parameter]] = []
        surface = []
        for leaf in leaves:
            places = slots.get(id(leaf), [])
            if type(leaf) is not torch.nn.Parameter or not places:
                surface.append(leaf)
                continue
            alias = torch.nn.Parameter(leaf.detach(), requires_grad=leaf.requires_grad)
            self._swaps.extend((module, name, alias) for module, name in places)
            surface.append(alias)
        self.surface = tuple(surface)

    @contextmanager
    def bound(self) -> Iterator[None]:
        before = [(module, name, module._parameters[name]) for module, name, _ in self._swaps]
        try:
            for module, name, alias in self._swaps:
                module._parameters[name] = alias
            yield
        finally:
            for module, name, original in before:
                module._parameters[name] = original


def _parameter_slots(fn: Callable) -> dict[int, list[tuple[torch.nn.Module, str]]]:
    """id(parameter) -> every (module, name) of `fn`'s bound module tree that holds it (shared ones too)."""
    owner: Any = getattr(fn, "__self__", None)
    if not isinstance(owner, torch.nn.Module):
        return {}
    slots: dict[int, list[tuple[torch.nn.Module, str]]] = {}
    for module in owner.modules():
        for name, parameter in module._parameters.items():
            if parameter is not None:
                slots.setdefault(id(parameter), []).append((module, name))
    return slots
