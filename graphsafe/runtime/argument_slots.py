"""Slots of the caller's list and dict arguments that the step rebinds, through capture and replay.

A decoder keeps its recurrent state in a list the caller passes back every step, and rebinds its
slots: rwkv's `state[i*3+0] = x` (the caller's next step reads `state`). graphed() calls the step
on containers rebuilt from its static buffers, and a replay runs no Python: without this module
the caller's list would never change, and its next step would read stale state. So:

- warm-up calls show which slots the step rebinds (`observe`); those slots' static buffers become
  graphed()'s own (a clone), so that closing the loop never writes into the caller's tensor;
- at the end of the capture (and of each eager-backend run) the new value of such a slot is copied
  into its static buffer, staged through a clone when it shares memory with another rebound slot's
  buffer (`state[1] = state[0]`: the second slot must get the old value); the slot is bound back
  to the buffer, so the next replay reads what this one wrote;
- after each replay the caller's container gets that slot's value (`put_into`): a clone of the
  buffer, as outputs are cloned (eager code leaves each call's state in new tensors, and a caller
  that keeps an old state list, as a beam search does, must still read it); with
  `clone_outputs=False` the buffer itself, passed back next call without a copy and, like those
  outputs, valid until the next call.

Refused with the slot's name: a slot rebound to something other than a tensor of its buffer's
shape, dtype and device (a replay cannot produce it), and a container whose length the step
changes (an append: a graph replays a fixed number of writes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

Path = tuple  # keys from (args, kwargs) down to a container: (0, 2) is args[2], (1, "state") kwargs["state"]


@dataclass
class Rebound:
    path: Path  # of the container
    container: Any
    key: Any
    old: Any
    new: Any


class SlotRebindingError(ValueError):
    """A slot rebinding a replay cannot reproduce."""


def containers(args: tuple, kwargs: dict) -> list[tuple[Path, Any]]:
    """(path, container) for every list and dict among the arguments (the mutable ones)."""
    found: list[tuple[Path, Any]] = []

    def walk(value: Any, path: Path) -> None:
        if type(value) is list:
            found.append((path, value))
            for i, item in enumerate(value):
                walk(item, path + (i,))
        elif type(value) is dict:
            found.append((path, value))
            for key, item in value.items():
                walk(item, path + (key,))
        elif type(value) is tuple:
            for i, item in enumerate(value):
                walk(item, path + (i,))

    walk(args, (0,))
    walk(kwargs, (1,))
    return found


def snapshot(args: tuple, kwargs: dict) -> list[tuple[Path, Any, Any]]:
    """Before a call: each container and a shallow copy of its slots."""
    return [(path, c, list(c) if type(c) is list else dict(c)) for path, c in containers(args, kwargs)]


def observe(before: list[tuple[Path, Any, Any]], name: str) -> list[Rebound]:
    """After a call: every rebound slot (path, container, key, old value, new value); refuses a
    length change."""
    rebound = []
    for path, container, old in before:
        if len(container) != len(old) or (type(old) is dict and container.keys() != old.keys()):
            raise SlotRebindingError(f"graphed {name}: the step changes the length of its argument "
                                     f"{describe(path)} ({len(old)} -> {len(container)} entries): a replay "
                                     "repeats a fixed set of writes; preallocate it and write slots in place")
        keys = range(len(old)) if type(old) is list else old.keys()
        for key in keys:
            if container[key] is not old[key]:
                rebound.append(Rebound(path, container, key, old[key], container[key]))
    return rebound


def check_closable(rebound: list[Rebound], name: str) -> None:
    for r in rebound:
        old, new = r.old, r.new
        if not (isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor) and new.shape == old.shape
                and new.dtype == old.dtype and new.device == old.device and not new.requires_grad):
            raise SlotRebindingError(
                f"graphed {name}: the step rebinds {describe(r.path + (r.key,))} of its argument to "
                f"{_what(new)} (it held {_what(old)}): a replay runs no Python and can only write the new "
                "value into a tensor of the same shape, dtype and device")


def close(rebound: list[Rebound]) -> None:
    """The rebound slots' new values written into their old tensors (the static buffers), and the
    slots bound back to them; a new value that shares memory with one of those buffers is cloned
    first, so that no write clobbers a value another slot still has to read."""
    targets = {r.old.untyped_storage().data_ptr() for r in rebound}
    with torch.no_grad():
        staged = [r.new.clone() if r.new.untyped_storage().data_ptr() in targets else r.new for r in rebound]
        for r, new in zip(rebound, staged):
            r.old.copy_(new)
    for r in rebound:
        r.container[r.key] = r.old


def leaf_indices(rebound: list[Rebound], statics: list[Any]) -> list[int]:
    """Which static leaves the rebound slots held before the call."""
    index = {id(s): i for i, s in enumerate(statics) if isinstance(s, torch.Tensor)}
    return sorted({index[id(r.old)] for r in rebound if id(r.old) in index})


def put_into(closed: list[tuple[Path, Any, torch.Tensor, bool]], args: tuple, kwargs: dict, rows: int,
             batch_dim: int, clone: bool = True) -> None:
    """After a replay: the caller's containers get the static buffers in the rebound slots (a
    batched buffer cut to the call's `rows` when it was padded), cloned unless `clone` is False."""
    root = (args, kwargs)
    for path, key, buffer, batched in closed:
        container = root
        for step in path:
            container = container[step]
        if batched and buffer.shape[batch_dim] != rows:
            buffer = buffer.narrow(batch_dim, 0, rows)
        container[key] = buffer.clone() if clone else buffer


def describe(path: Path) -> str:
    head, *rest = path
    return ("args" if head == 0 else "kwargs") + "".join(f"[{k!r}]" for k in rest)


def _what(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor {tuple(value.shape)} {value.dtype} on {value.device}"
    return type(value).__name__
