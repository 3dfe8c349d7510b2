"""A graphed region inside autograd: a loss or a forward whose result a backward outside needs.

`graphed(fn)` with `train=False` captures under no_grad. When its first call comes with autograd on
and a tensor argument that requires grad (the loss of a training step the caller finishes with
`loss.backward()`), the region gets two graphs instead, as `torch.cuda.make_graphed_callables`
builds them: the forward, and its backward replayed by an autograd Function when the caller's
backward reaches it. Gradients flow to the arguments and to every leaf the outputs depend on (a
module's parameters used through `self`, found from the autograd graph of an eager probe).

Objects are inputs too: an argument that holds tensors (a distribution with a lazy covariance;
object_arguments.py) and an attribute of the region's modules that holds tensors with autograd
history (a memo the model's forward filled; held_intermediates.py) are flattened to their tensors,
which become static leaves of the forward graph, and the region runs on copies rebuilt around those
leaves; the backward returns their gradients into the caller's tensors. A call whose objects have
another layout (types, attributes, constants) gets graphs of its own, up to MAX_STRUCTURES.

Host reads of device data in the forward (gpytorch's `torch.equal` in a lazily evaluated kernel)
are baked with a device-checked guard (host_read_guards.py): a replay whose guard fires is thrown
away, before its backward can run, and the call runs eagerly with the caller's arguments.

What it refuses, with the reason (a wrong gradient is worse than an eager step): outputs whose
autograd history reaches other tensors built before the call (an intermediate read through a
closure, whose backward would replay stale saved tensors), outputs whose autograd history reaches
no input and no parameter (a history always ends in leaves: one not followed would drop gradients
an eager call gives), objects that cannot be copied safely
(object_arguments.py), outputs that are not tensors, and autocast with its weight cache on. Calls
whose non-tensor arguments differ from the first call's are an error (GS301, as in `graphed`);
calls with other tensor shapes, dtypes or requires-grad run eagerly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree

from graphsafe.runtime.held_intermediates import bind, held_intermediates, label
from graphsafe.runtime.host_read_guards import HostReadGuards
from graphsafe.runtime.object_arguments import ObjectArgumentError, Skeleton, flatten_object, object_positions, tensors_in
from graphsafe.runtime.parameter_aliases import ParameterAliases


class AutogradRegionError(ValueError):
    """The region cannot be graphed with its backward (the reason is in the message)."""


class ObjectLayoutChanged(Exception):
    """A call's object arguments or held intermediates have another layout than the captured ones
    (a memo filled on the first step only): graphs of their own are needed (`layout` keys them)."""

    def __init__(self, layout: tuple) -> None:
        super().__init__("another object layout")
        self.layout = layout


@dataclass(frozen=True)
class _Layout:
    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device
    requires_grad: bool

    @staticmethod
    def of(tensor: torch.Tensor) -> "_Layout":
        return _Layout(tuple(tensor.shape), tensor.dtype, tensor.device, tensor.requires_grad)


def needs_autograd(args: tuple, kwargs: dict) -> bool:
    """Autograd is on and some tensor argument requires grad, or is held by an object argument (a
    distribution built from the model's outputs): a backward outside will need this call's graph."""
    return torch.is_grad_enabled() and any(
        tensor.requires_grad for leaf in pytree.tree_leaves((args, kwargs)) for tensor in tensors_in(leaf))


def _static_copy(tensor: torch.Tensor) -> torch.Tensor:
    """A leaf buffer the graphs read: the caller's first tensors are not overwritten by later calls."""
    static = tensor.detach().clone()
    return static.requires_grad_(tensor.requires_grad)


def _sequence_marker() -> int:
    """An autograd sequence number taken now: nodes created later have larger ones."""
    probe = torch.zeros((), requires_grad=True) * 1
    return probe.grad_fn._sequence_nr()


def outside_leaves(outputs: list[torch.Tensor], inputs: list[torch.Tensor], since: int, name: str) -> list[torch.Tensor]:
    """Leaves requiring grad that the outputs depend on and that are not inputs (parameters used
    through closures or `self`). Raises when the history reaches a node older than `since`, and when
    it reaches no leaf at all (see below)."""
    own = {id(t) for t in inputs}
    found: dict[int, torch.Tensor] = {}
    stack = [o.grad_fn for o in outputs if o.grad_fn is not None]
    # the visited nodes' Python wrappers are kept alive: torch up to 2.11 makes one per access and
    # frees it with its last reference, so a freed node's id() is soon another node's, which the
    # walk took for visited (on the GPU image it stopped after the loss's Add/Sub: no parameter found)
    seen: dict[int, Any] = {}
    leaves = 0
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):  # AccumulateGrad: a leaf
            leaves += 1
            if id(variable) not in own:
                found.setdefault(id(variable), variable)
            continue
        if node._sequence_nr() < since:
            raise AutogradRegionError(
                f"graphed {name}: its outputs' autograd history reaches a tensor computed before the call "
                f"({type(node).__name__}): its backward would replay stale saved values; pass that tensor as "
                "an argument, or graph the whole training step with train=True")
        stack.extend(next_node for next_node, _ in node.next_functions)
    if seen and not leaves:  # a history ends in leaves that require grad: this one was not followed
        kinds = ", ".join(sorted({type(node).__name__ for node in seen.values()}))
        raise AutogradRegionError(
            f"graphed {name}: its outputs' autograd history ({kinds}) reaches no input and no parameter: "
            "its backward graph would give no gradients where an eager call gives them; call the region "
            "eagerly")
    return list(found.values())


class AutogradGraphs:
    """The region's forward and backward graphs for one argument layout (the first call's)."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, *, name: str, pool: Any, warmup: int,
                 backend: str) -> None:
        if torch.is_autocast_enabled() and torch.is_autocast_cache_enabled():
            raise AutogradRegionError(f"graphed {name}: autocast's weight cache is on; enter autocast with "
                                      "cache_enabled=False around a graphed region with a backward")
        self.fn, self.name, self.backend = fn, name, backend
        self.guards = HostReadGuards(simulated=backend == "eager")  # host reads baked, checked on the device
        leaves, self._spec = pytree.tree_flatten((args, kwargs))
        self._positions = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
        tensors = [leaves[i] for i in self._positions]
        self._objects: dict[int, Skeleton] = {}  # object arguments holding tensors, by leaf position
        for i in object_positions(leaves):
            held, self._objects[i] = _flatten(leaves[i], f"{type(leaves[i]).__name__} (leaf {i})", name)
            tensors.extend(held)
        self._held, self._held_skeletons = [], []  # memos on the region's modules: inputs too
        for module, attribute in held_intermediates(fn):
            try:
                held, skeleton = flatten_object(vars(module)[attribute], label(module, attribute))
            except ObjectArgumentError:  # not copyable: if the region reads it, outside_leaves refuses
                continue
            self._held.append((module, attribute))
            self._held_skeletons.append(skeleton)
            tensors.extend(held)
        self._constants = [None if i in self._objects or isinstance(leaf, torch.Tensor) else leaf
                           for i, leaf in enumerate(leaves)]
        self._layouts = [_Layout.of(t) for t in tensors]
        statics = [_static_copy(t) for t in tensors]
        since = _sequence_marker()
        probe = pytree.tree_leaves(self._call(statics))
        for skeleton in (*self._objects.values(), *self._held_skeletons):
            try:
                skeleton.writes()
            except ObjectArgumentError as error:
                raise AutogradRegionError(f"graphed {name}: {error}") from None
        if not all(isinstance(o, torch.Tensor) for o in probe):
            raise AutogradRegionError(f"graphed {name}: a region with a backward must return tensors only "
                                      f"(got {', '.join(sorted({type(o).__name__ for o in probe}))})")
        self._extras = tuple(outside_leaves(probe, statics, since, name))
        del probe
        if backend == "eager":  # the same argument handling without graphs (tests on CPU)
            if self.guards.sites:  # host reads: warm-up and capture as make_graphed_callables runs them
                for _ in range(warmup):
                    self._call(statics)
                self.guards.capture_begins()
                self._call(statics)
            self._graphed = lambda *tensors: self._call(tensors[:len(statics)])
        else:
            # the modules hold fresh aliases of their parameters meanwhile (parameter_aliases.py): the
            # caller's graph may keep a parameter's AccumulateGrad made on the default stream alive
            aliases = ParameterAliases(fn, self._extras)

            def region(*tensors: torch.Tensor) -> Any:
                with aliases.bound():
                    return self._call(tensors[:len(statics)])

            self._graphed = torch.cuda.make_graphed_callables(
                region, tuple(statics) + aliases.surface, num_warmup_iters=warmup, allow_unused_input=True, pool=pool)
        self.stats = {"replays": 0, "eager": 0, "fallbacks": 0}
        self._object_keys = {i: skeleton.key for i, skeleton in self._objects.items()}
        self._held_keys = [skeleton.key for skeleton in self._held_skeletons]
        self.layout = (tuple(self._object_keys.items()), tuple(self._held_keys))

    def _call(self, tensors) -> Any:
        """The region on the given tensors: arguments in place, objects rebuilt around theirs (a
        fresh copy each call: memos the warm-up filled must not reach the capture)."""
        leaves = list(self._constants)
        for position, tensor in zip(self._positions, tensors):
            leaves[position] = tensor
        start = len(self._positions)
        for position, skeleton in self._objects.items():
            leaves[position] = skeleton.rebuild(list(tensors[start:start + skeleton.count]))
            start += skeleton.count
        copies = []
        for skeleton in self._held_skeletons:
            copies.append(skeleton.rebuild(list(tensors[start:start + skeleton.count])))
            start += skeleton.count
        args, kwargs = pytree.tree_unflatten(leaves, self._spec)
        before = bind(self._held, copies)
        try:
            with self.guards.call():
                return self.fn(*args, **kwargs)
        finally:
            rebound = [label(m, a) for (m, a), copy in zip(self._held, copies) if vars(m).get(a) is not copy]
            bind(self._held, before)
            if rebound:
                raise AutogradRegionError(f"graphed {self.name}: the region rebinds {', '.join(rebound)}, which "
                                          "holds tensors computed before the call: state a graph would not keep")

    def __call__(self, args: tuple, kwargs: dict, mismatch: Callable[[str, Any, Any], Exception]) -> Any:
        leaves, spec = pytree.tree_flatten((args, kwargs))
        if spec != self._spec:
            raise mismatch("the arguments' structure", len(leaves), len(self._constants))
        tensors, held, object_keys, held_keys = [], [], {}, []
        for index, (leaf, constant) in enumerate(zip(leaves, self._constants)):
            if isinstance(leaf, torch.Tensor):
                tensors.append(leaf)
            elif index in self._object_keys:
                object_keys[index] = self._object_tensors(f"argument leaf {index}", leaf, held, mismatch)
            elif not _same(leaf, constant):
                raise mismatch(f"argument leaf {index}", leaf, constant)
        for module, attribute in self._held:
            held_keys.append(self._object_tensors(label(module, attribute), vars(module).get(attribute), held, mismatch))
        layout = (tuple(object_keys.items()), tuple(held_keys))
        if layout != self.layout:
            raise ObjectLayoutChanged(layout)
        tensors.extend(held)
        if len(tensors) != len(self._layouts):
            raise mismatch("the tensor arguments", len(tensors), len(self._layouts))
        same_layout = all(_Layout.of(t) == layout for t, layout in zip(tensors, self._layouts))
        if not same_layout or not torch.is_grad_enabled():
            self.stats["eager"] += 1
            return self.fn(*args, **kwargs)
        out = self._graphed(*tensors, *self._extras)
        if self.guards.fired():  # a baked host read would have read another value: the outputs are thrown away
            self.stats["fallbacks"] += 1
            return self.fn(*args, **kwargs)
        self.stats["replays"] += 1
        return out

    def _object_tensors(self, where: str, value: Any, into: list, mismatch: Callable[[str, Any, Any], Exception]) -> tuple:
        """Add the tensors of an object argument or a held intermediate to `into`; its layout key."""
        try:
            held, skeleton = flatten_object(value, type(value).__name__)
        except ObjectArgumentError as error:
            raise mismatch(where, f"an object that cannot be copied ({error})", "a copyable one")
        into.extend(held)
        return skeleton.key


def _flatten(value: Any, label: str, name: str) -> tuple[list[torch.Tensor], Skeleton]:
    try:
        return flatten_object(value, label)
    except ObjectArgumentError as error:
        raise AutogradRegionError(f"graphed {name}: {error}") from None


def _same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return a is b
