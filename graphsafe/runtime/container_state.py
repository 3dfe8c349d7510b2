"""State a step keeps in dict, list and tuple attributes, through probe, capture and replay.

kornia's augmentations record the parameters of the last call as `self._params = params` (a dict
of tensors and shapes) and the matrix's inputs as a tuple; a cache dict gets its entries set in
place (`self.cache["h"] = h`). A replay runs none of this Python. Tensor attributes are handled by
attribute_state.py; this module does the same for containers:

- before the capture (and after graphed()'s probe call) each container attribute is bound again
  to the object it held before the warm-up, with that object's entries as they were: the graph
  records the path the call itself takes, and no warm-up or probe value stays visible;
- inside the capture, an entry of a container set in place to a tensor like the entry's old one
  is written into the old tensor, and the old binding kept (the next replay reads what this one
  wrote, as attribute_state.py's loops);
- after each replay, the attributes the capture rebound (or whose entries it set) are made again:
  bound to the capture's container, its entries set to the capture's values. Tensors among them
  are the graph's static tensors, rewritten by each replay; other values must be the same on
  every call: a value that differs between the last warm-up call and the capture (a call
  counter, a Python number read from the data) is refused with the attribute's name.

Watched: attributes of the step's modules and plain state objects holding a plain dict, list or
tuple, except nn.Module's own bookkeeping (`_parameters`, `_modules`, hooks, ...) and optimizers
(their state is snapshot.py's).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.utils._pytree as pytree

from graphsafe.runtime.attribute_state import module_machinery

_CONTAINERS = (dict, list, tuple)
_PLAIN = frozenset({int, float, bool, complex, str, bytes, type(None)})  # values a replay cannot change
_Key = tuple[int, str]


class ContainerStateError(ValueError):
    """A container attribute holds a per-call Python value: a replay cannot produce it."""


def _contents(value: Any) -> Any:
    return dict(value) if type(value) is dict else list(value) if type(value) is list else value


class ContainerAttributes:
    def __init__(self, objects: list[Any]) -> None:
        self.objects = [o for o in objects if not isinstance(o, torch.optim.Optimizer)]

    def bindings(self) -> dict[_Key, tuple[Any, str, Any, Any]]:
        """{(id, name): (object, name, container, a shallow copy of its entries)} now."""
        machinery = module_machinery()
        found = {}
        for obj in self.objects:
            for name, value in list(vars(obj).items()):
                if type(value) in _CONTAINERS and name not in machinery and not name.startswith("__"):
                    found[(id(obj), name)] = (obj, name, value, _contents(value))
        return found

    def put_back(self, saved: dict) -> None:
        """The containers of `saved` bound again, their entries as saved; container attributes
        made since are removed."""
        for key, (obj, name, _, _) in self.bindings().items():
            if key not in saved:
                vars(obj).pop(name, None)
        for obj, name, value, entries in saved.values():
            vars(obj)[name] = value
            _set_entries(value, entries)

    def close_loops(self, before: dict) -> None:
        """Inside the capture, after the step: an entry set in place to a tensor like its old one
        is written into the old tensor, which stays the entry."""
        for key, (obj, name, value, entries) in self.bindings().items():
            old = before.get(key)
            if old is None or old[2] is not value or type(value) is tuple:
                continue  # rebound (or new): made again after each replay, no old tensor to write
            slots = entries.items() if type(value) is dict else enumerate(entries)
            old_entries = old[3]
            for slot, new in list(slots):
                previous = old_entries.get(slot) if type(value) is dict else (
                    old_entries[slot] if slot < len(old_entries) else None)
                if _state_tensor(previous) and new is not previous and _alike(previous, new):
                    with torch.no_grad():
                        previous.copy_(new)
                    value[slot] = previous

    def left_by_capture(self, before: dict, warmed: dict, name: str) -> list[tuple[Any, str, Any, Any]]:
        """(object, name, container, entries) of the container attributes the capture rebound or whose
        entries it set; refuses one whose Python values differ from the last warm-up call's."""
        left = []
        for key, (obj, attribute, value, entries) in self.bindings().items():
            old = before.get(key)
            if old is not None and old[2] is value and _same_entries(old[3], entries):
                continue
            seen = warmed.get(key)
            changing = _changing_value(seen[3] if seen is not None else None, entries)
            if changing is not None:
                raise ContainerStateError(
                    f"graphed {name}: {type(obj).__name__}.{attribute} holds {changing} that differs from "
                    "one call to the next (the last warm-up call left another value): a replay runs no Python "
                    "and cannot produce it; keep it in a tensor, or out of the graphed step")
            left.append((obj, attribute, value, entries))
        return left


def rebind(left: list[tuple[Any, str, Any, Any]]) -> None:
    """After a replay: the containers the capture left, with the capture's entries."""
    for obj, name, value, entries in left:
        vars(obj)[name] = value
        _set_entries(value, entries)


def _set_entries(value: Any, entries: Any) -> None:
    if type(value) is dict:
        if len(value) != len(entries) or any(value.get(k, value) is not v for k, v in entries.items()):
            value.clear()
            value.update(entries)
    elif type(value) is list:
        if len(value) != len(entries) or any(a is not b for a, b in zip(value, entries)):
            value[:] = entries


def _same_entries(a: Any, b: Any) -> bool:
    if type(a) is not type(b) or len(a) != len(b):
        return False
    if type(a) is dict:
        return a.keys() == b.keys() and all(a[k] is b[k] for k in a)
    return all(x is y for x, y in zip(a, b))


def _changing_value(warmed: Any, captured: Any) -> str | None:
    """A description of the first non-tensor value that differs between the two entry sets (None:
    the same structure and Python values; tensors may differ, a replay rewrites them)."""
    if warmed is None:
        return None  # made by the capture alone (the warm-up left none): nothing to compare
    seen, seen_spec = pytree.tree_flatten(warmed)
    now, now_spec = pytree.tree_flatten(captured)
    if seen_spec != now_spec:
        return "entries whose structure"
    for path, (a, b) in zip(pytree.tree_flatten_with_path(captured)[0], zip(seen, now)):
        if not (type(a) in _PLAIN and type(b) in _PLAIN):
            continue  # tensors (a replay rewrites them) and objects whose equality is unknown: kept as captured
        try:
            same = type(a) is type(b) and bool(a == b)
        except Exception:
            same = a is b
        if not same:
            return f"{pytree.keystr(path[0])} = {b!r}"
    return None


def _state_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter)


def _alike(old: torch.Tensor, new: Any) -> bool:
    return (isinstance(new, torch.Tensor) and new.shape == old.shape and new.dtype == old.dtype
            and new.device == old.device and not old.requires_grad and not new.requires_grad)
