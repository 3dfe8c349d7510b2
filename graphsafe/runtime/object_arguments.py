"""Object arguments that hold tensors (a distribution built from the model's outputs, a lazy
covariance holding its factors), flattened so a region graphed with its backward can take them.

`flatten_object(value)` walks the object's attributes and the lists, tuples and dicts they hold (in
their order; a dict's entries in sorted key order, so a memo filled in another order has one
layout), and returns its tensors (each once: a tensor held twice is one input) and
a `Skeleton`: everything else, plus a layout key that two calls share only if their objects have the
same types, attribute names, containers, constants and tensor positions. `Skeleton.rebuild(tensors)`
makes a shallow copy of every object and container on the way to a tensor, with the given tensors
in place (the graph's static leaves), so the region reads the graph's inputs and the caller's object
is never written. Modules are referenced, not walked (their parameters reach the graph through the
region's autograd graph); lists and dicts are copied even when empty (a memo the region fills
stays on the copy); other values that hold no tensor are shared with the caller's object (a write
to one during the capture would reach it: not checked).

Writes the region makes to the copy are checked after a probe call (`Skeleton.writes`): adding an
attribute or a dict entry is a memo being filled (torch's `lazy_property`, a `cached` decorator's
dict); it is computed from the copy's tensors inside the graph and is not carried to the caller's
object (its next read computes it again). Rebinding or deleting an attribute or entry, or changing a
list, is state the region keeps on its argument: refused, as are objects with `__slots__` and dicts
keyed on objects (a cache keyed on ids would never match the copy's).
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterator

import torch

_CONSTANT_TYPES = (int, float, bool, str, bytes, complex, type(None), torch.dtype, torch.device, torch.Size)
_KEY_TYPES = (int, float, bool, str, bytes, type(None))
# exact types first: a layout is walked on every call of a shared graph_method, and isinstance
# against a tuple of classes (torch's with metaclasses among them) costs a microsecond a value
_EXACT_CONSTANTS = frozenset(_CONSTANT_TYPES)
_NOT_WALKED = (torch.nn.Module, type, *_CONSTANT_TYPES)


class ObjectArgumentError(ValueError):
    """The object cannot be copied around the graph's inputs safely (the reason is in the message)."""


def tensors_in(value: Any, _depth: int = 0) -> Iterator[torch.Tensor]:
    """The tensors reachable through an object's attributes and containers (modules not walked)."""
    if isinstance(value, torch.Tensor):
        yield value
        return
    if _depth > _MAX_DEPTH or type(value) in _EXACT_CONSTANTS or isinstance(value, _NOT_WALKED):
        return
    if isinstance(value, dict):
        children = value.values()
    elif isinstance(value, (list, tuple)):
        children = value
    else:
        attributes = getattr(value, "__dict__", None)
        children = list(attributes.values()) if isinstance(attributes, dict) else []
        children += [getattr(value, slot, None) for slot in _slots(type(value))]  # seen, to be refused
    for child in children:
        yield from tensors_in(child, _depth + 1)


def holds_tensor(value: Any) -> bool:
    return next(tensors_in(value), None) is not None


_MAX_DEPTH = 12  # deeper than any distribution / linear-operator nesting seen; deeper is refused


@dataclass
class Skeleton:
    """An object with its tensors taken out: rebuilds copies around other tensors."""

    node: Any
    key: tuple
    count: int
    name: str
    _copies: list = field(default_factory=list)  # (copy, what was put in) of the last rebuild

    def rebuild(self, tensors: list[torch.Tensor]) -> Any:
        self._copies = []
        return _rebuild(self.node, tensors, self._copies)

    def writes(self) -> None:
        """Raise if the region changed what the last rebuild put into a copy (beyond adding memos)."""
        copies, self._copies = self._copies, []  # the copies hold the region's tensors: not kept
        for copy, given in copies:
            if isinstance(copy, list):  # any change to a list is state
                if len(copy) != len(given) or any(a is not b for a, b in zip(copy, given)):
                    raise ObjectArgumentError(f"the region changes a list held by its argument {self.name}")
                continue
            current = copy if isinstance(copy, dict) else vars(copy)
            for key, value in given.items():
                if key not in current or current[key] is not value:
                    where = f"entry {key!r} of a dict in" if isinstance(copy, dict) else f"attribute {key!r} of"
                    raise ObjectArgumentError(f"the region rebinds or deletes {where} its argument {self.name}: state "
                                              "kept on the argument would not reach the caller's object")


def flatten_object(value: Any, name: str, constant_key: Any = None) -> tuple[list[torch.Tensor], Skeleton]:
    """The object's tensors (each once) and the skeleton that rebuilds it around others.
    `constant_key`: how values without tensors enter the layout key (default `_constant_key`)."""
    tensors: list[torch.Tensor] = []
    index: dict[int, int] = {}
    node, key = _walk(value, tensors, index, name, 0, set(), constant_key or _constant_key)
    return tensors, Skeleton(node, key, len(tensors), name)


def _named(name: Any) -> str:
    """A value's name for a message: built from (parent, format, key) only when one is raised (a
    layout is walked on every call of a shared graph_method; its names are rarely read)."""
    if isinstance(name, str):
        return name
    parent, form, key = name
    return form.format(_named(parent), key)


def _walk(value: Any, tensors: list, index: dict, name: Any, depth: int, path: set,
          constant_key: Any = None) -> tuple[Any, Any]:
    """(node, layout key) of one value; appends the tensors it holds. `path`: the ids of the
    containers being walked above it (a cycle), added and removed as the walk goes."""
    if isinstance(value, torch.Tensor):
        slot = index.get(id(value))
        if slot is None:
            slot = index[id(value)] = len(tensors)
            tensors.append(value)
        return ("tensor", slot), ("T", slot)
    if type(value) in _EXACT_CONSTANTS or not holds_tensor(value) and not _fresh_container(value):
        return ("same", value), ("C", (constant_key or _constant_key)(value))
    if depth > _MAX_DEPTH or id(value) in path:
        raise ObjectArgumentError(f"its argument {_named(name)} nests objects too deeply (or in a cycle) to copy")
    path.add(id(value))
    try:
        return _walk_container(value, tensors, index, name, depth, path, constant_key)
    finally:
        path.discard(id(value))


def _walk_container(value: Any, tensors: list, index: dict, name: Any, depth: int, path: set,
                    constant_key: Any) -> tuple[Any, Any]:
    kind = type(value)
    if isinstance(value, dict):
        keys = list(value)
        if not all(isinstance(k, _KEY_TYPES) or _plain_tuple(k) for k in keys):
            raise ObjectArgumentError(f"its argument {_named(name)} holds tensors in a dict keyed on objects (a cache "
                                      "keyed on ids would not match a copy)")
        if kind not in (dict, OrderedDict, defaultdict):
            raise ObjectArgumentError(f"its argument {_named(name)} holds tensors in a {kind.__name__} (a dict type "
                                      "with state of its own, which a copy might not keep)")
        # walked in sorted key order: a memo filled in another order on another call has the same
        # layout (the copy keeps the first call's insertion order)
        parts = {k: _walk(value[k], tensors, index, (name, "{}[{!r}]", k), depth + 1, path, constant_key)
                 for k in sorted(keys, key=repr)}
        factory = value.default_factory if kind is defaultdict else None
        return (("dict", kind, factory, keys, [parts[k][0] for k in keys]),
                ("D", kind, tuple((k, part[1]) for k, part in parts.items())))
    if isinstance(value, (list, tuple)):
        if kind not in (list, tuple) and not hasattr(kind, "_fields"):
            raise ObjectArgumentError(f"its argument {_named(name)} holds tensors in a {kind.__name__} (a sequence "
                                      "type a copy might not rebuild)")
        parts = [_walk(v, tensors, index, (name, "{}[{}]", i), depth + 1, path, constant_key)
                 for i, v in enumerate(value)]
        return ("seq", kind, [p[0] for p in parts]), ("S", kind, tuple(p[1] for p in parts))
    slots = _slots(kind)
    if slots:
        raise ObjectArgumentError(f"its argument {_named(name)} holds a {kind.__name__} with __slots__ ({slots[0]}): "
                                  "it cannot be copied around the graph's inputs")
    attributes = vars(value)
    names = list(attributes)
    parts = [_walk(attributes[n], tensors, index, (name, "{}.{}", n), depth + 1, path, constant_key) for n in names]
    return ("object", kind, names, [p[0] for p in parts]), ("O", kind, tuple(names), tuple(p[1] for p in parts))


def _fresh_container(value: Any) -> bool:
    """A list or plain-keyed dict without tensors is still copied: the region may fill it (an empty
    memo dict), and a shared one would carry the graph's tensors into the caller's object."""
    if type(value) is list:
        return True
    return type(value) in (dict, OrderedDict, defaultdict) and all(isinstance(k, _KEY_TYPES) or _plain_tuple(k) for k in value)


def _slots(kind: type) -> list[str]:
    names = [getattr(klass, "__slots__", ()) for klass in kind.__mro__]
    return [s for group in names for s in ((group,) if isinstance(group, str) else group)
            if s not in ("__dict__", "__weakref__")]


def _plain_tuple(key: Any) -> bool:
    return type(key) is tuple and all(isinstance(k, _KEY_TYPES) or _plain_tuple(k) for k in key)


def _constant_key(value: Any, depth: int = 0) -> Any:
    """A value that holds no tensor, as a key: equal for equal plain values and containers, and for
    objects of one type whose attributes are equal that way; modules, functions and anything deeper
    by identity (the graph bakes in what the region read from them)."""
    if type(value) in _EXACT_CONSTANTS or isinstance(value, _CONSTANT_TYPES):
        return (type(value), value)
    if depth < _MAX_DEPTH and type(value) in (list, tuple):
        return (type(value), tuple(_constant_key(v, depth + 1) for v in value))
    if depth < _MAX_DEPTH and isinstance(value, dict) and all(isinstance(k, _KEY_TYPES) or _plain_tuple(k) for k in value):
        return (type(value), tuple((k, _constant_key(v, depth + 1)) for k, v in value.items()))
    attributes = getattr(value, "__dict__", None)
    if (depth < _MAX_DEPTH and isinstance(attributes, dict) and not isinstance(value, (torch.nn.Module, type))
            and not callable(value)):
        return (type(value), tuple((k, _constant_key(v, depth + 1)) for k, v in attributes.items()))
    return ("id", id(value))


def _rebuild(node: Any, tensors: list, copies: list) -> Any:
    tag = node[0]
    if tag == "tensor":
        return tensors[node[1]]
    if tag == "same":
        return node[1]
    if tag == "seq":
        items = [_rebuild(child, tensors, copies) for child in node[2]]
        if node[1] is list:
            copies.append((items, list(items)))
            return items
        return node[1](items) if node[1] is tuple else node[1](*items)  # a namedtuple takes fields
    if tag == "dict":
        built = defaultdict(node[2]) if node[1] is defaultdict else node[1]()
        for key, child in zip(node[3], node[4]):
            built[key] = _rebuild(child, tensors, copies)
        copies.append((built, dict(built)))
        return built
    kind, names, children = node[1], node[2], node[3]
    copy = object.__new__(kind)
    vars(copy).update(zip(names, (_rebuild(child, tensors, copies) for child in children)))
    copies.append((copy, dict(vars(copy))))
    return copy


def object_positions(leaves: list[Any]) -> list[int]:
    """Positions of the leaves that are objects holding tensors (not tensors themselves)."""
    return [i for i, leaf in enumerate(leaves) if not isinstance(leaf, torch.Tensor) and holds_tensor(leaf)]
