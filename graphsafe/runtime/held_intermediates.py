"""Intermediates a region reads from its modules' attributes: tensors with autograd history that the
caller's code computed before the call and left on a module (a memo dict the model's forward
filled: a variational distribution, its Cholesky factor).

A graph with a backward cannot read them as they are: its backward would replay the first call's
saved values, and the caller's backward would not reach the history behind them. Each such
attribute is treated as one more object argument (object_arguments.py): its tensors are inputs of
the forward graph, the region runs with the attribute bound to a rebuilt copy around the graph's
static leaves (the original is bound again after the call), and the gradients for those inputs flow
into the caller's tensors. Parameters, buffers and submodules are not walked (the region's autograd
graph finds parameters as leaves)."""

from __future__ import annotations

from typing import Any, Callable

import torch

from graphsafe.runtime.object_arguments import tensors_in

_REGISTERED = frozenset({"_parameters", "_buffers", "_modules"})


def held_intermediates(fn: Callable) -> list[tuple[torch.nn.Module, str]]:
    """(module, attribute) pairs of the region's modules (`fn`'s bound module and its submodules)
    whose attribute holds a tensor with autograd history, in module order."""
    owner = getattr(fn, "__self__", None)
    if not isinstance(owner, torch.nn.Module):
        return []
    found = []
    for module in owner.modules():
        for name, value in vars(module).items():
            if name in _REGISTERED or callable(value):  # a graphed method put on the instance, a hook
                continue
            if any(t.grad_fn is not None for t in tensors_in(value)):
                found.append((module, name))
    return found


def label(module: torch.nn.Module, name: str) -> str:
    return f"{type(module).__name__}.{name}"


def bind(pairs: list[tuple[torch.nn.Module, str]], values: list[Any]) -> list[Any]:
    """Bind each attribute to its value; the values bound before, to put back."""
    before = [vars(module)[name] for module, name in pairs]
    for (module, name), value in zip(pairs, values):
        vars(module)[name] = value
    return before
