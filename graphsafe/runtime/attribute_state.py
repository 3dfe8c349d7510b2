"""State a step keeps as attribute bindings, through capture and replay.

A decoder's attention keeps `self.prev_attn = attn.detach()` between steps, and `reset()` sets
it and a cached `self.enc_h` back to `None` at each new sequence, which the first step tests
(`if self.enc_h is None: self.enc_h = self.mlp(enc)`). A CUDA graph replays the tensor work and
none of this Python, so graphed() handles such bindings itself (graphed.py):

- before the capture, the bindings go back to what they were before the warm-up calls, so the
  graph records the path the call itself takes (the warm-up had filled the `None`s);
- a tensor attribute the capture rebinds to a tensor of the same shape, dtype and device gets
  the new value copied into the old tensor at the end of the graph, and the old binding back:
  the next replay reads what this one wrote (else it reads the capture's tensor for good);
- the bindings a capture leaves (a `None` now a graph tensor) are made again after each replay;
- which of the attributes the capture found `None` are `None` now is part of the graph's key: a
  call that finds them set again (or `None` again after a reset) takes another graph;
- a list attribute the step appends tensors to (`self.act_history.append(h.mean())`, a
  dashboard's history in a submodule): what the warm-up and the capture appended is taken off
  again, and after each replay copies of the capture's tensors are appended (the graph's memory
  holds this replay's values and the next replay overwrites them), so the list grows call by call
  as in eager. A capture's append of anything else stays, once, as a first call's would.

Attributes of the step's modules and plain state objects whose value is a tensor or `None`,
private ones included (kornia keeps the last call's matrix as `self._transform_matrix`), except
nn.Module's own bookkeeping (`module_machinery`); parameters and buffers live elsewhere and are
not touched. Dict, list and tuple attributes: container_state.py.
"""

from __future__ import annotations

from typing import Any

import functools

import torch

_Binding = tuple[Any, str]  # (object, attribute name)


class AttributeState:
    def __init__(self, tracked) -> None:
        objects: list[Any] = []
        seen: set[int] = set()
        for _, module in tracked.modules():
            for sub in module.modules():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    objects.append(sub)
        for _, obj in tracked.plain_objects():
            if id(obj) not in seen and hasattr(obj, "__dict__"):
                seen.add(id(obj))
                objects.append(obj)
        self.objects = objects
        self._lengths = self.list_lengths()  # before the warm-up: what put_back() brings the lists back to

    def bindings(self) -> dict[tuple[int, str], tuple[Any, str, Any]]:
        """{(id, name): (object, name, value)} for every watched attribute now."""
        machinery = module_machinery()
        found = {}
        for obj in self.objects:
            for name, value in list(vars(obj).items()):
                if (value is None or _is_state_tensor(value)) and name not in machinery \
                        and not name.startswith("__"):
                    found[(id(obj), name)] = (obj, name, value)
        return found

    def put_back(self, saved: dict) -> None:
        """The bindings of `saved` again; watched attributes made since then are removed, and what the
        lists gained since the start is taken off."""
        now = self.bindings()
        for key, (obj, name, _) in now.items():
            if key not in saved:
                vars(obj).pop(name, None)
        for obj, name, value in saved.values():
            vars(obj)[name] = value
        self.take_appended(self._lengths, tensors_only=False)

    def close_loops(self, before: dict) -> None:
        """Inside the capture, after the step: a tensor rebound to a like tensor is written in place."""
        for key, (obj, name, value) in self.bindings().items():
            old = before.get(key, (None, None, None))[2]
            if _is_state_tensor(old) and value is not old and _alike(old, value):
                with torch.no_grad():
                    old.copy_(value)
                vars(obj)[name] = old

    def list_lengths(self) -> dict[int, tuple[list, int]]:
        """{id(list): (list, its length)} for every list attribute of the watched objects now."""
        return {id(value): (value, len(value)) for obj in self.objects for name, value in list(vars(obj).items())
                if not name.startswith("_") and type(value) is list}

    @staticmethod
    def take_appended(lengths: dict[int, tuple[list, int]], tensors_only: bool = True) -> list[tuple[list, list]]:
        """(list, items) that the watched lists gained since `lengths`, taken off them again. With
        `tensors_only` (after a capture) only gains that are all tensors: a step's history. Anything
        else (a hook handle a first call registers) stays where the capture put it: made once."""
        appended = []
        for items, length in lengths.values():
            gained = items[length:]
            if gained and (not tensors_only or all(isinstance(v, torch.Tensor) for v in gained)):
                appended.append((items, gained))
                del items[length:]
        return appended

    def appended_by_capture(self, lengths: dict[int, tuple[list, int]]) -> list[tuple[list, list]]:
        """After a capture: its tensor appends taken off (a replay makes them again, append_again);
        what the lists hold now is what later put_back() calls keep."""
        appended = self.take_appended(lengths)
        self._lengths = self.list_lengths()
        return appended

    def left_by_capture(self, before: dict) -> list[tuple[Any, str, Any]]:
        """(object, name, value) of the bindings that differ from `before`: made again after a replay."""
        return [(obj, name, value) for key, (obj, name, value) in self.bindings().items()
                if key not in before or before[key][2] is not value]

    @staticmethod
    def from_none(before: dict, left: list[tuple[Any, str, Any]]) -> list[_Binding]:
        """The attributes the capture found `None` and left set: their `None`-ness keys the graph."""
        return [(obj, name) for obj, name, value in left
                if value is not None and before.get((id(obj), name), (None, None, None))[2] is None]


@functools.lru_cache(maxsize=1)
def module_machinery() -> frozenset[str]:
    """The attributes every nn.Module has in its `__dict__` (`_parameters`, `_modules`, hooks,
    `training`, ...): torch's bookkeeping, not state a step keeps."""
    return frozenset(vars(torch.nn.Module()))


def none_flags(watched: list[_Binding]) -> tuple[bool, ...]:
    return tuple(vars(obj).get(name) is None for obj, name in watched)


def rebind(left: list[tuple[Any, str, Any]]) -> None:
    for obj, name, value in left:
        vars(obj)[name] = value


def append_again(appended: list[tuple[list, list]]) -> None:
    """After a replay: the capture's appends once more, as copies of this replay's values."""
    for items, added in appended:
        items.extend(v.clone() for v in added)


def _is_state_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter)


def _alike(old: torch.Tensor, new: Any) -> bool:
    return (isinstance(new, torch.Tensor) and new.shape == old.shape and new.dtype == old.dtype
            and new.device == old.device and not old.requires_grad and not new.requires_grad)
