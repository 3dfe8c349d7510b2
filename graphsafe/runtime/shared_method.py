"""One graph per class and state layout for a method graphed on every instance (graph_method).

Code that builds its object anew for every call (`odeint()` builds a solver per call and steps it
through the graphed method) would otherwise warm up and capture once per instance, and a graph
per instance would keep every instance alive. Instead the instances whose state has one layout
share one graph:

- the layout: the instance's attributes walked as object_arguments walks an object argument
  (lists, tuples, dicts, plain objects), with each tensor's shape, dtype and device, and every
  value without tensors as a constant: Python numbers and strings by value (baked into the graph:
  another value is another layout), modules by structure (type, Python attributes, submodules,
  and their parameters and buffers by identity: the graph reads those where they are, so a
  wrapper module built per call around the same model has one layout), anything else by identity.
  Tensors that require grad are keyed by identity too (autograd knows them by identity).
- the first call of a layout runs eagerly on the instance: a probe telling which of its tensors
  the method writes in place, which attributes it rebinds, and whether it changes the layout
  itself (a Python counter it increments: such a layout always runs eagerly, a graph would
  replay the capture's value).
- the second call builds a stand-in: a copy of the instance with tensors of its own (never the
  caller's instance, which stays collectable), and graphs the method bound to it with
  graph_method's options. Each call then copies the instance's tensors into the stand-in's,
  calls the graphed method, copies the tensors the probe saw written back into the instance's
  (in place, as eagerly), gives the instance clones of the attributes the method rebinds, and
  puts the stand-in's bindings back.
- past MAX_LAYOUTS layouts, or for an instance whose state cannot be copied (a module's method,
  `__slots__`, a bound method of itself among its attributes, tensors sharing memory that the
  method writes), the call runs eagerly on the instance (`.stats["eager"]`) or, for modules and
  other uncopyable instances, through a graph of its own kept on the instance itself.
"""

from __future__ import annotations

import contextlib
import functools
import types
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from graphsafe.runtime.attribute_state import module_machinery
from graphsafe.runtime.object_arguments import ObjectArgumentError, _constant_key, flatten_object, holds_tensor

MAX_LAYOUTS = 4  # state layouts one graphed method captures (each its own stand-in and graph)
OWN_GRAPH_ATTRIBUTE = "_graphsafe_graphed_"  # + method name: an uncopyable instance's own graph, kept on it


class LayoutError(ValueError):
    """The instance's state cannot be copied into a stand-in (the reason is in the message)."""


@dataclass
class InstanceState:
    """An instance's state now: its layout key, its tensors (in layout order), the attribute dict's
    skeleton (rebuilds a copy around other tensors)."""

    key: tuple
    tensors: list
    skeleton: Any


def instance_state(obj: Any, skip: frozenset = frozenset(), only: frozenset | None = None) -> InstanceState:
    """The layout of `obj`'s attributes (those in `only` when given, but those in `skip`);
    LayoutError when a stand-in could not stand for it."""
    if isinstance(obj, torch.nn.Module):
        raise LayoutError("a module's parameters are its own: its graph is its own")
    attributes = getattr(obj, "__dict__", None)
    if not isinstance(attributes, dict) or _has_slots(type(obj)):
        raise LayoutError(f"{type(obj).__name__} keeps state outside __dict__")
    own = {n: v for n, v in attributes.items() if not n.startswith(OWN_GRAPH_ATTRIBUTE) and n not in skip
           and (only is None or n in only)}

    def constant(value: Any) -> Any:
        if isinstance(value, types.MethodType) and value.__self__ is obj:
            raise LayoutError("an attribute is a bound method of the instance itself")
        return structural_key(value)

    try:
        tensors, skeleton = flatten_object(own, type(obj).__name__, constant)
    except ObjectArgumentError as error:
        raise LayoutError(str(error)) from None
    described = tuple(("id", id(t)) if t.requires_grad and t.is_leaf else (t.shape, t.dtype, t.device)
                      for t in tensors)
    return InstanceState((type(obj), skeleton.key, described, _aliases(tensors)), tensors, skeleton)


def structural_key(value: Any, depth: int = 0) -> Any:
    """A constant's key: a module by its structure (type, training flag, hooks, Python attributes,
    submodules; parameters, buffers and tensor attributes by identity), else `_constant_key`."""
    if not isinstance(value, torch.nn.Module) or depth > 8:
        return _constant_key(value)
    machinery, hook_names = _machinery()
    own, hooks = [], []
    for n, v in vars(value).items():  # one pass: a layout is keyed on every call of a shared graph_method
        if n not in machinery:
            own.append((n, ("id", id(v)) if isinstance(v, torch.Tensor) else _constant_key(v)))
        elif n in hook_names and isinstance(v, dict) and v:
            hooks.append((n, tuple(map(id, v.values()))))
    return ("M", type(value), value.training, tuple(sorted(hooks)), tuple(own),
            tuple((n, id(p)) for n, p in value._parameters.items()),
            tuple((n, id(b)) for n, b in value._buffers.items()),
            tuple((n, structural_key(m, depth + 1)) for n, m in value._modules.items()))


_READS: dict[int, set] = {}  # id(instance) -> the attribute names read while its probe runs
_RECORDING_CLASSES: dict[type, type] = {}


def _recording_class(cls: type) -> type:
    """A subclass of cls that notes the attributes read on its instances (while they are in _READS)."""
    sub = _RECORDING_CLASSES.get(cls)
    if sub is None:
        original = cls.__getattribute__

        def __getattribute__(self, name, _original=original):
            log = _READS.get(id(self))
            if log is not None:
                log.add(name)
            return _original(self, name)

        sub = _RECORDING_CLASSES[cls] = type(cls.__name__, (cls,), {
            "__getattribute__": __getattribute__, "__qualname__": cls.__qualname__, "__module__": cls.__module__})
    return sub


@contextlib.contextmanager
def attribute_reads(obj: Any):
    """The names of the attributes read on obj inside the block (None: its class cannot say), by
    giving obj a recording subclass for the block's time."""
    cls = type(obj)
    try:
        obj.__class__ = _recording_class(cls)
    except (TypeError, AttributeError):  # a class that takes no subclass or __class__ assignment
        yield None
        return
    names: set[str] = set()
    _READS[id(obj)] = names
    try:
        yield names
    finally:
        _READS.pop(id(obj), None)
        obj.__class__ = cls


def obj_before(obj: Any, attributes: dict) -> Any:
    """A shell of obj's class holding the given attributes (the instance as it was before a call)."""
    shell = object.__new__(type(obj))
    vars(shell).update(attributes)
    return shell


@functools.lru_cache(maxsize=1)
def _machinery() -> tuple[frozenset[str], frozenset[str]]:
    """nn.Module's bookkeeping attributes, and those of them holding hooks (built once: it makes a Module)."""
    machinery = module_machinery()
    return machinery, frozenset(n for n in machinery if "hook" in n)


def _has_slots(kind: type) -> bool:
    return any(s not in ("__dict__", "__weakref__") for klass in kind.__mro__
               for s in ((klass.__dict__.get("__slots__", ()),) if isinstance(klass.__dict__.get("__slots__", ()), str)
                         else klass.__dict__.get("__slots__", ())))


def _aliases(tensors: list) -> tuple:
    """Groups of tensor positions sharing memory (views of one tensor: `t[0]` taken twice)."""
    groups: dict[tuple, list[int]] = {}
    for index, tensor in enumerate(tensors):
        pointer = tensor.untyped_storage().data_ptr()
        if pointer:  # empty tensors own no memory
            groups.setdefault((tensor.device, pointer), []).append(index)
    return tuple(tuple(g) for g in groups.values() if len(g) > 1)


def clone_state(value: Any) -> Any:
    """A value the stand-in holds, for the instance: its tensors cloned (the graph's memory is
    the next replay's), its containers rebuilt, anything else shared."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    if type(value) in (list, tuple):
        return type(value)(clone_state(v) for v in value)
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return type(value)(*(clone_state(v) for v in value))
    if type(value) is dict:
        return {k: clone_state(v) for k, v in value.items()}
    return value


@dataclass
class _Probe:
    """What the eager first call of a layout did to its instance."""

    written: set[int]  # tensor positions written in place
    rebound: set[str]  # attributes rebound, added or deleted
    eager: str | None  # why the layout always runs eagerly (None: it is graphed)


@dataclass
class _Layout:
    probe: _Probe
    standin: Any = None
    graphed: Any = None  # the GraphedCallable of the method bound to the stand-in
    buffers: list = field(default_factory=list)  # the stand-in's tensors, in layout order
    resident: Any = None  # (weak reference to the instance whose values the buffers hold, its tensors' versions)


class SharedGraphs:
    """The graphs of one method of one class, shared by its instances per state layout."""

    def __init__(self, function: Callable, options: dict, make: Callable[..., Any]) -> None:
        self.function, self.options, self._make = function, options, make
        self.layouts: dict[tuple, _Layout] = {}
        self.stats = {"replays": 0, "eager": 0, "probes": 0, "layouts": 0, "own_graphs": 0}
        self._warned = False
        self._own = weakref.WeakSet()  # graphs kept on uncopyable instances: listed while they live
        self.reads: frozenset | None = None  # the instance attributes the method reads (None: all of them)
        self.probed = False

    def graphs(self) -> list:
        shared = [layout.graphed for layout in self.layouts.values() if layout.graphed is not None]
        return shared + list(self._own)

    def call(self, obj: Any, args: tuple, kwargs: dict) -> Any:
        try:
            state = instance_state(obj, only=self.reads) if self.probed else None
        except LayoutError:
            return self._own_graph(obj)(*args, **kwargs)
        layout = self.layouts.get(state.key) if state is not None else None
        if layout is None:
            if len(self.layouts) >= MAX_LAYOUTS:
                return self._eager(obj, args, kwargs, f"{len(self.layouts)} state layouts have graphs "
                                                      f"(MAX_LAYOUTS); instances of another one run eagerly")
            try:
                instance_state(obj)  # copyable at all (else a graph of its own)
            except LayoutError:
                return self._own_graph(obj)(*args, **kwargs)
            return self._probe(obj, args, kwargs)
        if layout.probe.eager is not None:
            self.stats["eager"] += 1
            return self.function(obj, *args, **kwargs)
        if layout.graphed is None:
            self._stand_in(layout, state)
        return self._replay(layout, obj, state, args, kwargs)

    # the probe ----------------------------------------------------------------------------------
    def _probe(self, obj: Any, args: tuple, kwargs: dict) -> Any:
        """The call, eagerly on the instance, watched: the attributes it reads (the layout is theirs),
        the tensors it writes in place, the attributes it rebinds."""
        before = dict(vars(obj))
        versions = {id(t): t._version for t in instance_state(obj).tensors}
        with attribute_reads(obj) as reads:
            out = self.function(obj, *args, **kwargs)
        after = vars(obj)
        self.stats["probes"] += 1
        names = set(before) | set(after)
        rebound = {n for n in names if n not in before or n not in after or before[n] is not after[n]}
        if reads is None:  # its class cannot record reads: every attribute is the layout's
            self.reads = None
        elif not self.probed or self.reads is not None and not (reads & names) <= self.reads:
            if self.probed:  # the layouts so far left out an attribute this call read: never replay them
                self.layouts.clear()
            self.reads = (self.reads or frozenset()) | frozenset(reads & names)
        self.probed = True
        shell = obj_before(obj, before)
        state = instance_state(shell, only=self.reads)
        written = {i for i, t in enumerate(state.tensors) if t._version != versions.get(id(t), t._version)}
        eager = None
        try:  # rebound attributes are the graph's to make (a cache set on the first call): the rest must stay
            skip = frozenset(rebound)
            changed = instance_state(obj, skip, self.reads).key != instance_state(shell, skip, self.reads).key
        except LayoutError as error:
            changed, eager = False, str(error)
        python = sorted(n for n in rebound if not holds_tensor(after.get(n)))
        if python:
            eager = f"the method rebinds {', '.join(python)} to a value without tensors (a replay would not)"
        elif changed:
            eager = "the method changes the instance's layout (a Python value, a shape, an attribute's kind)"
        elif any(i in written for group in state.key[3] for i in group):
            eager = "the method writes a tensor that shares memory with another of the instance's"
        self.layouts[state.key] = _Layout(_Probe(written, rebound, eager))
        return out

    # the stand-in -------------------------------------------------------------------------------
    def _stand_in(self, layout: _Layout, state: InstanceState) -> None:
        """A copy of the instance with tensors of its own (those requiring grad shared), and the method
        bound to it graphed."""
        buffers = [t if t.requires_grad and t.is_leaf else t.detach().clone() for t in state.tensors]
        attributes = state.skeleton.rebuild(buffers)
        state.skeleton._copies = []  # the rebuild's bookkeeping would keep the copies alive
        standin = object.__new__(state.key[0])
        vars(standin).update(attributes)
        layout.standin, layout.buffers = standin, buffers
        bound = self.function.__get__(standin, state.key[0])
        layout.graphed = self._make(bound, **self.options)
        self.stats["layouts"] += 1

    def _replay(self, layout: _Layout, obj: Any, state: InstanceState, args: tuple, kwargs: dict) -> Any:
        standin = layout.standin
        if not self._resident(layout, obj, state):  # the buffers hold another instance's values (or stale ones)
            with torch.no_grad():
                for source, buffer in zip(state.tensors, layout.buffers):
                    if source is not buffer:
                        buffer.copy_(source)
        layout.resident = None
        bindings = dict(vars(standin))
        try:
            out = layout.graphed(*args, **kwargs)
            with torch.no_grad():
                for index in layout.probe.written:
                    target = state.tensors[index]
                    if target is not layout.buffers[index]:
                        target.copy_(layout.buffers[index])
            now = vars(standin)
            rebound = layout.probe.rebound | {n for n in set(bindings) | set(now)
                                              if n not in bindings or n not in now or bindings[n] is not now[n]}
            for name in rebound:
                if name in now:
                    vars(obj)[name] = clone_state(now[name])
                elif name in bindings:  # deleted by the method (one it never held stays as it is)
                    vars(obj).pop(name, None)
        finally:  # the stand-in as the graph was captured on: the next instance's values go into its tensors
            vars(standin).clear()
            vars(standin).update(bindings)
        self._remember_resident(layout, obj, state)
        self.stats["replays"] += 1
        return out

    def _resident(self, layout: _Layout, obj: Any, state: InstanceState) -> bool:
        """Whether the buffers hold obj's values already: it was the last instance replayed, and the
        tensors it holds now are the same ones, unwritten since (their version counters)."""
        if layout.resident is None or layout.resident[0]() is not obj or len(layout.resident[1]) != len(state.tensors):
            return False
        return all(t is held and t._version == version for t, (held, version) in zip(state.tensors, layout.resident[1]))

    def _remember_resident(self, layout: _Layout, obj: Any, state: InstanceState) -> None:
        """The tensors themselves are held (not their ids, which a later tensor may reuse)."""
        try:
            ref = weakref.ref(obj)
        except TypeError:
            return
        layout.resident = (ref, [(t, t._version) for t in state.tensors])

    # instances that cannot share ----------------------------------------------------------------
    def _own_graph(self, obj: Any) -> Any:
        """A graph of the instance's own, kept on the instance (collected with it)."""
        name = OWN_GRAPH_ATTRIBUTE + self.function.__name__
        holder = getattr(obj, "__dict__", None)
        if not isinstance(holder, dict):
            self.stats["eager"] += 1
            return self.function.__get__(obj, type(obj))
        own = holder.get(name)
        if own is None:
            own = holder[name] = self._make(self.function.__get__(obj, type(obj)), **self.options)
            self._own.add(own)
            self.stats["own_graphs"] += 1
        return own

    def _eager(self, obj: Any, args: tuple, kwargs: dict, why: str) -> Any:
        if not self._warned:
            self._warned = True
            warnings.warn(f"graph_method {self.function.__qualname__}: {why}", RuntimeWarning, stacklevel=4)
        self.stats["eager"] += 1
        return self.function(obj, *args, **kwargs)
