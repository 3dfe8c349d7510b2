"""`graphed`: what you deploy once a step is graph-safe. One CUDA graph per input-shape bucket,
static input buffers, one shared memory pool, padding or eager fallback for other shapes.

    decode = graphed(model.decode, (tokens, positions, cache), buckets=[1, 2, 4, 8, 16])
    logits = decode(tokens_b5, positions_b5, cache)   # batch 5 -> replays the batch-8 graph

    @graphed(buckets=[8], train=True, optimizer=opt)   # captured on the first call
    def train_step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

How a call works: the arguments are flattened (tuples, lists, dicts); each tensor is checked
against the captured one (dtype, device, rank, and every dimension except the batch dimension);
the batch size B picks the smallest bucket >= B; batched tensors are copied into the bucket's
static buffers with `.copy_()` (rows past B filled with `pad_value`); other tensors are copied
only when the caller passes a different tensor than the captured one (pass the same static
tensor, a KV cache say, and nothing is copied); the graph is replayed; tensors the step mutates
in place are copied back to the caller's tensors; outputs are cut back to B rows and cloned.

- A Python number among the outputs is the capture's on every replay: one that differs between the
  last warm-up call and the capture (a loss summed from `.item()` terms, a counter) is refused
  (GraphedInputError with its place); one that stays the same (a row count) is returned.
- `clone_outputs=False` returns views of the graph's static outputs: valid until the next call
  that replays the same bucket (graphs of other buckets do not touch them: each keeps its own
  outputs alive in the shared pool).
- `pad=True` (inference default): padding is correct only when rows do not interact (no batch
  norm in training mode, no reduction over the batch); the padded rows' outputs are dropped.
  A batch larger than the largest bucket is an error. `pad=False`: shapes without their own
  graph run eagerly (counted in `.stats["eager"]`). Training steps never pad.
- `train=True`: `fn` is a whole step (forward, backward, optimizer step) and may mutate
  parameters and optimizer state. An optimizer built with `capturable=False` whose parameters
  are on the GPU gets `capturable=True` here (its step counts moved to the device, as
  `load_state_dict` does for a capturable one), so code that builds it once for CPU and GPU
  needs no change (GS701). An optimizer the step builds on its first call (pyro's PyroOptim, one
  Adam per parameter) is found after the warm-up, before the capture, and gets the same; the
  object holding it keeps what the warm-up built (`optim_objs[p]`), and its state starts fresh
  at the first replay. Warm-up steps run on the
  sample batch and are then undone (`reset_after_warmup`): parameters, buffers and existing
  optimizer state get their values back, optimizer state created by the warm-up is zeroed
  (a fresh state for Adam/AdamW; for SGD momentum only without dampening).
- `train=False`: warm-up and capture run under `torch.no_grad()`; buffers and tensors the step
  mutates (a KV cache) get their values back after warm-up. When the first call comes with
  autograd on and an argument that requires grad (a loss whose result the caller's backward
  needs), the region gets a forward and a backward graph instead (graphed_autograd.py): the
  gradients reach the arguments (objects holding tensors too, e.g. a distribution), the memos of
  intermediates its modules hold, and the parameters it reads through `self`.
- RNG: the default CUDA generator is registered by `torch.cuda.graph`; pass custom CUDA
  generators in `generators=`. Every replay draws fresh numbers.
- NVTX ranges `graphsafe.capture[name b=8]` and `graphsafe.replay[name b=8]` come from the
  `nvtx` package when installed, else from `torch.cuda.nvtx` (`nvtx_ranges=False` turns them off).
- `batched=[]` (or no tensor argument with a batch dimension): one graph, every input shape
  fixed (a solver step on fixed-shape state, a metric update, a step reading only its object).
- Unbatched tensor arguments: CPU ones and device ones up to 1 MiB are copied into buffers of
  graphed()'s own before each replay. A larger device tensor (weights handed to a core) is itself
  the graph's buffer, so passing the same one every call costs nothing; passing another one copies
  its values into the first one, which then changes under the caller (clone it if you keep it).
  State the step writes in place (a KV cache) is always the caller's tensor.
- `numbers=[2, "temperature"]` (argument positions or keyword names): per-step Python numbers.
  Each becomes a 0-dim device tensor created at capture and filled with `.fill_()` before every
  replay, so the step reads this call's value instead of the capture's (GS301). The step then
  receives a tensor: it may compute with it (`x / temperature`, `group["lr"] = lr`), not use it
  as a Python number (`range(n)`, `if lr > 0:`), which fails capture with the line. Numbers not
  named stay baked: a call with another value is an error (GS301), never a silent wrong replay.
- `train=True` with optimizers whose groups are capturable or fused (Adam, AdamW, ...): a group's
  Python `lr` is read by the graph from a device tensor refreshed from `group["lr"]` before every
  replay, so an LR scheduler or the caller's `group["lr"] = x` takes effect; between calls the
  group holds its Python number as before. Other optimizers' lr is baked: a replay after it
  changed is an error (GS301).
- Another argument structure (a decoder's first step passes `None` where later steps pass a
  state tuple) gets graphs of its own, sharing the pool and `.stats`, up to MAX_STRUCTURES.
- `shapes=N` (default 1): a call whose tensors differ from the captured ones in a dimension other
  than the batch dimension (an input trimmed to its batch's longest utterance) gets graphs of its
  own, captured on that call (warm-up and capture, as the first call) and replayed by later calls of
  that shape, up to N shapes in all (the first call's included); they share the pool, `.stats` and
  the batch buckets. Each shape costs its warm-up and capture once, and memory: its static inputs
  and outputs, and the pool grows to the largest shape's intermediates, so the default captures
  one shape (another runs eagerly with pad=False, an error with pad=True) and N is a bound you
  choose. Past it a call of a new shape runs eagerly, with a RuntimeWarning the first time
  (`.stats["other_shapes"]`: shapes captured after the first; `.stats["past_shape_limit"]`: calls
  run eagerly because N shapes have graphs). Each argument structure has its own N shapes.
- State kept as attribute bindings of the step's modules and state objects (`self.prev =
  attn.detach()`, a cache reset to `None` and made on the first step): put back to its
  pre-warm-up bindings before the capture, closed in place at the graph's end, re-bound after each
  replay, and its `None`-ness part of the graph's key (runtime/attribute_state.py).
  Dict, list and tuple attributes (kornia's `self._params = params`, a cache dict set in place)
  likewise: put back before the capture and after the probe, re-made after each replay with the
  capture's entries (a per-call Python value among them is refused; runtime/container_state.py).
  The probe: with one bucket and padding, an eager call one row smaller tells which outputs carry
  the batch (to cut padded rows off); none of its bindings stays visible.
- Slots of the caller's list/dict arguments the step rebinds (`state[i] = new`, a recurrent
  decoder's state): written into graphed()'s own buffers at the graph's end, and the caller's
  container gets clones of them in its slots after each replay (with `clone_outputs=False` the
  buffers themselves: passed back next call without a copy, valid until the next call)
  (runtime/argument_slots.py).
- `torch.tensor(<Python numbers>, device="cuda")` inside the step (torch.distributions does it)
  is copied from pinned host memory while capturing (runtime/host_numbers.py).
- A CPU tensor argument the step moves to the device itself (`x.to(device=dev)`, where only the
  step knows `dev`): the `.to` is a copy, inside the graph, from a pinned host buffer graphed() fills
  before each replay; other host work on it while capturing is refused with its name
  (runtime/host_arguments.py).
- Host reads of device data inside the step that decide a branch (library code: gpytorch's
  `torch.equal(x1, x2)`, an `if t.any():`), limited to `torch.equal`/`allclose`, `bool` of tensors
  of at most 16 elements and `.item()` of bool tensors: the value every warm-up call read at that
  line (and occurrence) is baked, and the graph sets a device flag when this replay's tensors would read another value
  (runtime/host_read_guards.py). After each replay graphed() reads the flag (one small
  device-to-host read per call, which waits for the replay); when set, the replay's results are
  thrown away and the call runs eagerly (`.stats["fallbacks"]`). Guaranteed: every call returns
  what the eager step returns for that call, except random draws (a thrown-away replay advanced
  the generator). Not baked, a capture error naming the line: a value that differed between warm-up
  calls, a read no warm-up call reached, reads of larger tensors. Refused (GraphedInputError with
  the lines): guards in a step that writes state in place (an argument, a module's buffer or
  parameter, an attribute rebound), which a thrown-away replay would already have changed;
  `train=True` steps get no guards (their reads stay capture errors).
- `graph_method(Class, "core", **options)`: every instance's `core` goes through graphed(), and
  instances whose state (the attributes the method reads) has one layout share one graph: an
  object built per call (an ODE solver per `odeint()`) is probed eagerly once per layout, captured
  once, then replayed with its tensors copied into a stand-in's buffers and what the method writes
  or rebinds carried back into it; no instance is kept alive (runtime/shared_method.py).
- `backend="eager"` runs the same input handling without graphs (fn is called on the static
  buffers): for tests of bucketing and padding on machines without a GPU. Host reads are simulated
  as a graph runs them: every tensor counts as device data, and each replay runs fn with the baked
  values while the guard decides the fallback.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import time
import types
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import torch
import torch.utils._pytree as pytree

from graphsafe.runtime.capture import recover_after_failed_capture
from graphsafe.runtime.classify import CaptureFailure, classify_exception, exit_summary
from graphsafe.runtime.graphed_autograd import needs_autograd
from graphsafe.runtime.attribute_state import AttributeState, append_again, none_flags, rebind
from graphsafe.runtime import argument_slots
from graphsafe.runtime.container_state import ContainerAttributes, ContainerStateError
from graphsafe.runtime.container_state import rebind as rebind_containers
from graphsafe.runtime.host_numbers import NumbersFromPinnedMemory
from graphsafe.runtime.host_arguments import HostArgumentsOnDevice, fill
from graphsafe.runtime.host_read_guards import HostReadGuards, refuse_if_writing, state_tensors, versions

__all__ = ["graphed", "graph_method", "GraphedMethod", "GraphedCallable", "GraphedInputError", "GraphedCaptureError", "choose_bucket", "normalize_buckets", "pad_batch",
           "unpad_batch"]


class GraphedInputError(ValueError):
    """A call's inputs do not fit the captured graphs (a wrong answer would follow otherwise)."""


class GraphedCaptureError(RuntimeError):
    """The step could not be captured: torch's error classified into a rule code and the user's
    line (`failure`), with torch's own error chained as the cause."""

    def __init__(self, name: str, failure: CaptureFailure, process_usable: bool = True) -> None:
        self.failure = failure
        self.process_usable = process_usable
        after = "" if process_usable else "; CUDA did not recover in this process: restart it"
        super().__init__(f"graphed {name}: capture failed at {exit_summary(failure)} "
                         f"(torch: {failure.root_message or failure.message}){after}")


# --- pure bucket logic ----------------------------------------------------------------------------


def normalize_buckets(buckets: Iterable[int] | int | None, sample: int | None = None) -> tuple[int, ...]:
    """Sorted unique positive bucket sizes; None means one bucket of the sample's size."""
    if buckets is None:
        if sample is None:
            raise ValueError("buckets=None needs sample_args (one bucket of their batch size)")
        return (int(sample),)
    if isinstance(buckets, int):
        buckets = (buckets,)
    out = []
    for b in buckets:
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise ValueError(f"bucket sizes must be positive integers, got {b!r}")
        out.append(b)
    if not out:
        raise ValueError("buckets must not be empty")
    return tuple(sorted(set(out)))


def choose_bucket(size: int, buckets: Sequence[int], pad: bool) -> int | None:
    """The bucket that serves a batch of `size`: the exact one, else with padding the smallest
    larger one. None: no graph serves it (eager fallback when not padding). A batch beyond the
    largest bucket with padding on raises GraphedInputError."""
    if size < 0:
        raise GraphedInputError(f"batch size must be >= 0, got {size}")
    if not pad:
        return size if size in buckets else None
    for bucket in buckets:  # sorted ascending
        if bucket >= size:
            return bucket
    raise GraphedInputError(f"batch size {size} is larger than the largest bucket ({buckets[-1]}): add a bucket "
                            f"of at least {size}, or use pad=False to run such batches eagerly")


def pad_batch(x: torch.Tensor, size: int, dim: int = 0, value: float = 0) -> torch.Tensor:
    """`x` grown to `size` along `dim`, new rows filled with `value` (a new tensor)."""
    rows = x.shape[dim]
    if rows > size:
        raise ValueError(f"cannot pad {rows} rows down to {size}")
    shape = list(x.shape)
    shape[dim] = size
    out = x.new_full(shape, value)
    out.narrow(dim, 0, rows).copy_(x)
    return out


def unpad_batch(x: torch.Tensor, size: int, dim: int = 0) -> torch.Tensor:
    """The first `size` rows of `x` along `dim` (a view)."""
    return x.narrow(dim, 0, size)


# --- NVTX ---------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _nvtx_module():
    try:
        import nvtx  # the `nvtx` package (NVIDIA's Python bindings): optional

        return nvtx
    except Exception:
        return None


def nvtx_range(name: str):
    """An NVTX range: the `nvtx` package when installed, else torch.cuda.nvtx."""
    module = _nvtx_module()
    if module is not None:
        return module.annotate(name, domain="graphsafe")
    return torch.cuda.nvtx.range(name)


# --- the callable -------------------------------------------------------------------------------


@dataclass
class _Leaf:
    """What one flattened argument must look like."""

    name: str
    is_tensor: bool
    batched: bool = False
    dtype: torch.dtype | None = None
    device: torch.device | None = None
    shape: tuple[int, ...] = ()
    value: Any = None  # non-tensor leaves: the captured value
    number: bool = False  # a per-step Python number carried into the graph by a 0-dim device tensor


@dataclass
class _Entry:
    bucket: int
    graph: Any
    statics: list[Any]  # per leaf: a static tensor (bucket-sized if batched) or the captured value
    output: Any
    output_batched: list[bool] = field(default_factory=list)
    inout: list[int] = field(default_factory=list)  # leaves the step mutates in place
    flat_output: Any = None  # (leaves, spec) of `output`, computed on the first call
    output_inputs: dict = field(default_factory=dict)  # output leaf -> the argument leaf it is (eager returns that one)
    kept: list = field(default_factory=list)  # pinned host numbers the graph copies from at each replay
    rebind: list = field(default_factory=list)  # attribute bindings the capture left: made again after a replay
    appended: list = field(default_factory=list)  # (list attribute, what the capture appended): again after a replay
    moved: list = field(default_factory=list)  # (CPU argument, pinned buffer the graph copies from): filled before each replay
    moved_read: Any = None  # an event after the last replay: its copies from `moved`'s buffers are done
    guards: Any = None  # HostReadGuards: host reads baked at capture, checked on the device (host_read_guards.py)
    containers: list = field(default_factory=list)  # container attributes the capture left: made again after a replay
    slots: list = field(default_factory=list)  # (path, key, static buffer): the caller's rebound argument slots


@dataclass
class _GroupLr:
    """One optimizer param group's lr as the graph reads it."""

    group: dict
    tensor: torch.Tensor | None  # refreshed before each replay; None: baked (the optimizer reads a number)
    captured: Any  # the value at capture


class _EagerGraph:
    """backend="eager": replays by calling fn on the static buffers and copying its outputs into
    the static outputs."""

    def __init__(self, run: Callable[[], Any]) -> None:
        self.run = run
        self.output = None

    def replay(self) -> None:
        fresh = pytree.tree_leaves(self.run())
        for static, new in zip(pytree.tree_leaves(self.output), fresh):
            if isinstance(static, torch.Tensor):
                with torch.no_grad():
                    static.copy_(new)


OWN_READ_ONLY_BYTES = 1 << 20  # unbatched read-only device arguments up to this size get buffers of graphed()'s own
MAX_STRUCTURES = 4  # argument structures one graphed callable captures (each its own graphs)


class GraphedCallable:
    """See the module docstring; built by `graphed(...)`."""

    def __init__(self, fn: Callable, sample_args: Any = None, *, sample_kwargs: dict | None = None,
                 buckets: Iterable[int] | int | None = None, pad: bool | None = None, batch_dim: int = 0,
                 batched: Iterable[int | str] | None = None, numbers: Iterable[int | str] = (),
                 train: bool = False, optimizer: Any = None,
                 pool: Any = None, warmup: int = 3, clone_outputs: bool = True, pad_value: float | None = 0,
                 generators: Iterable[torch.Generator] = (), nvtx_ranges: bool = True,
                 reset_after_warmup: bool = True, backend: str = "cuda", name: str | None = None,
                 shapes: int = 1) -> None:
        # the options again, for the graph of another argument structure (_by_structure)
        options = {k: v for k, v in locals().items() if k not in ("self", "fn", "sample_args", "sample_kwargs")}
        if not callable(fn):
            raise TypeError(f"graphed: fn must be callable, got {type(fn).__name__}")
        if backend not in ("cuda", "eager"):
            raise ValueError(f"graphed: backend must be 'cuda' or 'eager', got {backend!r}")
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 1:
            raise ValueError(f"graphed: warmup must be an integer >= 1 (capture needs a warmed-up step), got {warmup!r}")
        if isinstance(shapes, bool) or not isinstance(shapes, int) or shapes < 1:
            raise ValueError(f"graphed: shapes must be an integer >= 1 (how many input shapes get graphs), got {shapes!r}")
        if not isinstance(batch_dim, int) or batch_dim < 0:
            raise ValueError(f"graphed: batch_dim must be a non-negative integer, got {batch_dim!r}")
        if pad is None:
            pad = not train
        if train and pad:
            raise ValueError("graphed: train=True cannot pad: padded rows would change the loss and the gradients "
                             "(use pad=False; other batch sizes then run eagerly)")
        if backend == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("graphed: CUDA is not available (backend='eager' runs the input handling without graphs)")
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", None) or getattr(fn, "__name__", type(fn).__name__)
        self.pad = bool(pad)
        self.batch_dim = batch_dim
        self.train = train
        self.warmup = warmup
        self.clone_outputs = clone_outputs
        self.pad_value = pad_value
        self.generators = tuple(generators)
        self.backend = backend
        self.nvtx_ranges = nvtx_ranges and backend == "cuda"
        self.reset_after_warmup = reset_after_warmup
        self._batched_spec = None if batched is None else tuple(batched)
        self._number_prefixes = _argument_prefixes(numbers, "numbers")
        self._group_lrs: list[_GroupLr] = []
        self._bucket_request = buckets
        self.buckets: tuple[int, ...] = ()
        self.pool = pool
        self.optimizers = self._check_optimizers(optimizer)
        self._built_by_warm_up: list[torch.optim.Optimizer] = []  # optimizers the step built on its first call
        self._warm_up_snapshot = None  # the state before the warm-up, while capturing (_capture_all)
        self._warmed_output = None  # the last warm-up call's output, until the capture's is compared with it
        self.graphs: dict[int, _Entry] = {}
        self.capture_seconds: dict[int, float] = {}
        self.stats = {"replays": 0, "eager": 0, "padded": 0}
        self.shapes = shapes
        if shapes > 1:
            self.stats.update(other_shapes=0, past_shape_limit=0)
        self._leaves: list[_Leaf] = []
        self._spec = None
        self._flat_key: tuple | None = None  # (positional count, keyword names) of a flat captured call
        self._autograd = None  # AutogradGraphs when the first call needed a backward (graphed_autograd)
        self._autograd_layouts: dict[tuple, Any] = {}  # its graphs per object-argument layout
        self._options = options
        self._structures: dict[Any, GraphedCallable] = {}  # another argument structure → its own graphs
        self._shapes: dict[tuple, GraphedCallable] = {}  # another non-batch shape → its own graphs (shapes=N)
        self._attributes: AttributeState | None = None  # state kept as attribute bindings (attribute_state.py)
        self._attributes_before: dict = {}
        self._containers: ContainerAttributes | None = None  # dict/list/tuple attributes (container_state.py)
        self._containers_before: dict = {}
        self._from_none: list = []  # attributes the capture found None and set: their None-ness keys the graphs
        self._captured_flags: tuple = ()
        functools.update_wrapper(self, fn, updated=())
        if sample_args is not None or sample_kwargs is not None:
            self._capture_all(_as_tuple(sample_args), dict(sample_kwargs or {}))

    # configuration checks -------------------------------------------------------------------------
    def _check_optimizers(self, optimizer: Any) -> list[torch.optim.Optimizer]:
        from graphsafe.runtime.snapshot import resolve_state

        found = []
        if optimizer is not None:
            items = optimizer if isinstance(optimizer, (list, tuple)) else [optimizer]
            found = [o for o in items if isinstance(o, torch.optim.Optimizer)]
            if len(found) != len(items):
                raise TypeError("graphed: optimizer must be a torch.optim.Optimizer or a list of them")
        elif self.train:
            found = [o for _, o in resolve_state(None, self.fn, (), {}).optimizers()]
        for opt in found:
            for group in opt.param_groups:
                if "capturable" in group and not group["capturable"]:  # fused ones check it too
                    self._make_capturable(opt, group)
        return found

    def _adopt_optimizers_built_by_warm_up(self, statics: list[Any], leaves: list[Any]) -> None:
        """Optimizers the step builds on its first call (pyro's PyroOptim makes a torch Adam per
        parameter as it first sees it) did not exist when graphed() looked for them: found again
        after the warm-up, before the capture, among the step's state, and made capturable by the
        same rules (GS701); their lr gets a device tensor like the others'. All their state was
        made by the warm-up: zeroed after the capture (`_capture_all`), as for state the warm-up
        adds to a known optimizer, so the first replay steps a fresh optimizer as the eager first
        call did."""
        if not self.train:
            return
        from graphsafe.runtime.snapshot import resolve_state

        args, kwargs = pytree.tree_unflatten(statics, self._spec)
        known = {id(o) for o in self.optimizers}
        new = []
        for _, opt in resolve_state(None, self.fn, args, kwargs).optimizers():
            if id(opt) not in known:
                known.add(id(opt))
                new.append(opt)
        for opt in new:
            for group in opt.param_groups:
                if "capturable" in group and not group["capturable"]:
                    try:
                        self._make_capturable(opt, group)
                    except ValueError as error:
                        raise ValueError(f"{error}; it was built by the step's first call") from None
        self.optimizers.extend(new)
        self._built_by_warm_up.extend(new)
        # their owner (pyro's PyroOptim: `optim_objs[p]`, `grad_clip[p]`) is taken as the first call
        # left it: putting it back would make the capture build optimizers again, not capturable
        ids = {id(o) for o in new}
        owners = [obj for _, obj in resolve_state(None, self.fn, args, kwargs).plain_objects() if _holds(obj, ids)]
        if owners and self._warm_up_snapshot is not None:
            for owner in owners:
                self._warm_up_snapshot.keep_as_now(owner)
        if owners and self._containers is not None:
            owned = {id(o) for o in owners}
            self._containers_before.update({key: binding for key, binding in self._containers.bindings().items()
                                            if id(binding[0]) in owned})
        self._group_lrs += self._device_lrs(leaves, new)

    def _make_capturable(self, opt: torch.optim.Optimizer, group: dict) -> None:
        """Turn `capturable` on for a group whose parameters are on the GPU (GS701), as
        `load_state_dict` does for a capturable optimizer: its step counts move to the device."""
        params = group["params"]
        on_gpu = self.backend == "cuda" and params and all(p.is_cuda for p in params)
        if not on_gpu:
            if self.backend == "eager":
                return  # no graph: the group steps as built
            raise ValueError(f"graphed: {type(opt).__name__} was built with capturable=False and its parameters are "
                             "not all on the GPU: it cannot be stepped inside a CUDA graph (GS701 "
                             "optimizer-not-capturable)")
        group["capturable"] = True
        for p in params:
            state = opt.state.get(p, {})
            step = state.get("step")
            if isinstance(step, torch.Tensor) and step.device != p.device:
                state["step"] = step.to(device=p.device, dtype=torch.float32)

    # capture ------------------------------------------------------------------------------------
    def _describe(self, args: tuple, kwargs: dict) -> tuple[list[Any], Any]:
        leaves, spec = pytree.tree_flatten((args, kwargs))
        return leaves, spec

    def _leaf_names(self, args: tuple, kwargs: dict) -> list[str]:
        flat, _ = pytree.tree_flatten_with_path((args, kwargs))
        names = []
        for path, _leaf in flat:
            key = pytree.keystr(path)  # "[0][1]" or "[1]['x']"
            if key.startswith("[0]"):
                names.append("args" + key[3:])
            else:
                names.append("kwargs" + key[3:])
        return names

    def _template(self, args: tuple, kwargs: dict) -> int:
        """Record what each leaf must look like; returns the sample's batch size."""
        leaves, spec = self._describe(args, kwargs)
        names = self._leaf_names(args, kwargs)
        batched_roots = self._batched_roots(args, kwargs, leaves, names)
        sample_batch = None
        templates = []
        for leaf, name in zip(leaves, names):
            if isinstance(leaf, torch.Tensor):
                if self.backend == "cuda" and leaf.device.type not in ("cuda", "cpu"):
                    raise GraphedInputError(f"graphed: {name} is on {leaf.device}: CUDA graphs read device memory; "
                                            "move it to the GPU")
                # a CPU tensor: capturable only where the step moves it to the device (runtime/host_arguments.py)
                is_batched = batched_roots(name, leaf)
                if is_batched:
                    size = leaf.shape[self.batch_dim]
                    if sample_batch is None:
                        sample_batch = size
                    elif size != sample_batch:
                        raise GraphedInputError(f"graphed: batched inputs disagree on the batch size: {name} has "
                                                f"{size}, an earlier one {sample_batch}")
                templates.append(_Leaf(name, True, is_batched, leaf.dtype, leaf.device, tuple(leaf.shape)))
            elif self._is_number_leaf(name):
                if not _is_number(leaf):
                    raise GraphedInputError(f"graphed: {name} is named in numbers= but is {_short(leaf)}, not an int "
                                            "or a float")
                templates.append(_Leaf(name, False, value=leaf, number=True))
            else:
                templates.append(_Leaf(name, False, value=leaf))
        if sample_batch is None:
            if self._batched_spec not in (None, ()):
                raise GraphedInputError(f"graphed: none of batched={list(self._batched_spec)} is a tensor with a "
                                        f"batch dimension {self.batch_dim}")
            sample_batch = 0  # no batch dimension (batched=[] or none found): one graph, every shape fixed
        self._leaves, self._spec = templates, spec
        shallow = _shallow(args, kwargs)
        self._flat_key = shallow[0] if shallow is not None and len(shallow[1]) == len(leaves) else None
        return sample_batch

    def _is_number_leaf(self, name: str) -> bool:
        return any(name == p or name.startswith(p + "[") for p in self._number_prefixes)

    def _batched_roots(self, args, kwargs, leaves, names) -> Callable[[str, torch.Tensor], bool]:
        if self._batched_spec is not None:
            prefixes = _argument_prefixes(self._batched_spec, "batched")

            def named(name: str, leaf: torch.Tensor) -> bool:
                if any(name == p or name.startswith(p + "[") for p in prefixes):
                    if leaf.dim() <= self.batch_dim:
                        raise GraphedInputError(f"graphed: {name} has no dimension {self.batch_dim} to batch over")
                    return True
                return False

            return named
        first = next((l for l in leaves if isinstance(l, torch.Tensor) and l.dim() > self.batch_dim), None)
        size = None if first is None else first.shape[self.batch_dim]
        return lambda name, leaf: size is not None and leaf.dim() > self.batch_dim and leaf.shape[self.batch_dim] == size

    def _capture_all(self, args: tuple, kwargs: dict) -> None:
        if not self.train and needs_autograd(args, kwargs):
            self._capture_autograd(args, kwargs)
            return
        sample_batch = self._template(args, kwargs)
        self.buckets = normalize_buckets(self._bucket_request, sample_batch)
        if self.backend == "cuda" and self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        leaves, _ = self._describe(args, kwargs)
        tracked = self._tracked(args, kwargs)
        from graphsafe.runtime.snapshot import Snapshot

        if self.backend == "cuda":
            self._attributes = AttributeState(tracked)
            self._attributes_before = self._attributes.bindings()
            self._containers = ContainerAttributes(self._attributes.objects)
            self._containers_before = self._containers.bindings()

        saved = Snapshot(tracked, rng=True, parameters=self.train) if self.reset_after_warmup else None
        self._warm_up_snapshot = saved
        self._group_lrs = self._device_lrs(leaves)
        watched = state_tensors(tracked, leaves)
        before = versions(watched)
        try:
            for bucket in sorted(self.buckets, reverse=True):  # largest first: smaller ones reuse its memory
                entry = self.graphs[bucket] = self._capture(bucket, leaves)
                try:  # a replay thrown away must have changed nothing the eager call reads
                    refuse_if_writing(self.name, entry.guards.baked, watched, before,
                                      self.train or bool(entry.inout) or bool(entry.rebind)
                                      or bool(entry.containers))
                except ValueError as error:
                    del self.graphs[bucket]
                    raise GraphedInputError(str(error)) from None
            self._find_batched_outputs(leaves)
        finally:
            for lr in self._group_lrs:  # between calls the group holds its number again
                if lr.tensor is not None and lr.group.get("lr") is lr.tensor:
                    lr.group["lr"] = lr.captured
            if saved is not None:
                if self.backend == "cuda":
                    torch.cuda.synchronize()
                saved.restore_values()
                _fresh_state(self._built_by_warm_up)
            self._warm_up_snapshot = None
            if self._attributes is not None and saved is not None:  # the call's own bindings: its replay
                self._put_back_bindings()  # makes the capture's again

    def _capture_autograd(self, args: tuple, kwargs: dict) -> None:
        """train=False called with autograd on and inputs that require grad (a loss whose result a
        backward outside needs): a forward graph and a backward graph (graphed_autograd)."""
        from graphsafe.runtime.graphed_autograd import AutogradGraphs, AutogradRegionError
        from graphsafe.runtime.snapshot import Snapshot

        if self.backend == "cuda" and self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        watched = state_tensors(self._tracked((), {}))
        before = versions(watched)
        # the region's own state only: the probe and warm-up ran on copies of the arguments, and writing
        # back into them would bump versions the caller's autograd graph saved (the backward would fail)
        saved = Snapshot(self._tracked((), {}), rng=True, parameters=False) if self.reset_after_warmup else None
        try:
            graphs = AutogradGraphs(self.fn, args, kwargs, name=self.name, pool=self.pool,
                                    warmup=self.warmup, backend=self.backend)
            try:  # a replay thrown away must have changed nothing the eager call reads
                refuse_if_writing(self.name, graphs.guards.baked, watched, before)
            except ValueError as error:
                raise AutogradRegionError(str(error)) from None
            if self._autograd is not None:
                graphs.stats = self._autograd.stats  # one count over the layouts
            self._autograd = self._autograd_layouts[graphs.layout] = graphs
        except AutogradRegionError as error:
            raise GraphedInputError(str(error)) from None
        finally:
            if saved is not None:
                if self.backend == "cuda":
                    torch.cuda.synchronize()
                saved.restore_values()

    def _autograd_mismatch(self, what: str, got: Any, captured: Any) -> GraphedInputError:
        return GraphedInputError(f"graphed {self.name}: {what} is {_short(got)} but the graphs were captured with "
                                 f"{_short(captured)}: a Python value is baked into the graph (GS301); pass it as "
                                 "a device tensor")

    def _call_autograd(self, args: tuple, kwargs: dict) -> Any:
        from graphsafe.runtime.graphed_autograd import ObjectLayoutChanged

        try:
            out = self._autograd(args, kwargs, self._autograd_mismatch)
        except ObjectLayoutChanged as changed:  # graphs of their own, as for another argument structure
            known = self._autograd_layouts.get(changed.layout)
            if known is None and len(self._autograd_layouts) >= MAX_STRUCTURES:
                raise GraphedInputError(f"graphed {self.name}: its object arguments or the intermediates it reads "
                                        f"from its modules changed layout again ({MAX_STRUCTURES} captured); pass "
                                        "objects of the same form") from None
            if known is None:
                self._capture_autograd(args, kwargs)
            else:
                self._autograd = known
            out = self._autograd(args, kwargs, self._autograd_mismatch)
        self.stats["replays"], self.stats["eager"] = self._autograd.stats["replays"], self._autograd.stats["eager"]
        if self._autograd.stats["fallbacks"] or self._autograd.guards.baked:
            self.stats["fallbacks"] = self._autograd.stats["fallbacks"]
        if not self.clone_outputs:
            return out
        return pytree.tree_map(lambda o: o.clone() if isinstance(o, torch.Tensor) else o, out)

    def _refuse_autograd_through(self, leaves: list[Any]) -> None:
        """A graph captured without autograd, called with autograd on and inputs that require grad,
        would return outputs with no history: the caller's backward would fail or miss this step."""
        if self.train or not torch.is_grad_enabled():
            return
        if any(isinstance(leaf, torch.Tensor) and leaf.requires_grad for leaf in leaves):
            raise GraphedInputError(
                f"graphed {self.name}: called with autograd on and inputs that require grad, but its graphs "
                "were captured without autograd (its first call had none): call it under torch.no_grad(), "
                "or make its first call the one a backward follows")

    def _device_lrs(self, leaves: list[Any], optimizers: list | None = None) -> list[_GroupLr]:
        """Give each capturable/fused group's Python lr a device tensor for the graph to read."""
        found = []
        for opt in (self.optimizers if optimizers is None else optimizers) if self.train else ():
            for group in opt.param_groups:
                value = group.get("lr")
                if not _is_number(value):
                    continue  # already a tensor: the optimizer reads (and a scheduler fills) it in place
                if group.get("capturable") or group.get("fused"):
                    device = next((p.device for p in group["params"]), _first_device(leaves))
                    tensor = torch.tensor(float(value), dtype=torch.float32, device=device)
                    group["lr"] = tensor
                    found.append(_GroupLr(group, tensor, value))
                else:
                    found.append(_GroupLr(group, None, value))
        return found

    def _refresh_lrs(self) -> None:
        for lr in self._group_lrs:
            value = lr.group.get("lr")
            if lr.tensor is None:
                if isinstance(value, torch.Tensor) or not _same_value(value, lr.captured):
                    raise GraphedInputError(
                        f"graphed {self.name}: the optimizer's lr is {_short(value)} but the graphs were captured "
                        f"with {_short(lr.captured)}, and this optimizer reads it as a Python number (GS301): "
                        "build it with capturable=True (Adam, AdamW, ...) so graphed can refresh it per replay")
            elif value is not lr.tensor:
                with torch.no_grad():
                    if isinstance(value, torch.Tensor):
                        lr.tensor.copy_(value)
                    else:
                        lr.tensor.fill_(value)

    def _tracked(self, args: tuple, kwargs: dict):
        from graphsafe.runtime.snapshot import Tracked, resolve_state

        tracked = resolve_state(None, self.fn, args, kwargs)
        return Tracked(tracked.objects + [(f"optimizer{i}", o) for i, o in enumerate(self.optimizers)])

    def _static_for(self, bucket: int, leaf: Any, template: _Leaf, device: torch.device | None = None) -> Any:
        if template.number:
            dtype = torch.int64 if isinstance(leaf, int) else torch.float32
            return torch.tensor(leaf, dtype=dtype, device=device)
        if not template.is_tensor:
            return leaf
        if not template.batched:
            return leaf  # the caller's tensor is the static buffer (pass it again to skip the copy)
        shape = list(leaf.shape)
        shape[self.batch_dim] = bucket
        static = torch.empty(shape, dtype=leaf.dtype, device=leaf.device)
        rows = min(bucket, leaf.shape[self.batch_dim])
        with torch.no_grad():
            static.narrow(self.batch_dim, 0, rows).copy_(leaf.narrow(self.batch_dim, 0, rows))
            if rows < bucket:
                # warm-up and capture on real rows: repeat the first one rather than zeros
                static.narrow(self.batch_dim, rows, bucket - rows).copy_(
                    leaf.narrow(self.batch_dim, 0, 1).expand_as(static.narrow(self.batch_dim, rows, bucket - rows)))
        static.requires_grad_(leaf.requires_grad)
        return static

    def _call_on(self, statics: list[Any]) -> Any:
        args, kwargs = pytree.tree_unflatten(statics, self._spec)
        return self.fn(*args, **kwargs)

    def _call_observing(self, statics: list[Any]) -> tuple[Any, list]:
        """The step on the static buffers, and the slots of its list/dict arguments it rebound."""
        args, kwargs = pytree.tree_unflatten(statics, self._spec)
        before = argument_slots.snapshot(args, kwargs)
        output = self.fn(*args, **kwargs)
        return output, argument_slots.observe(before, self.name)

    def _call_closing(self, guards: HostReadGuards, statics: list[Any]) -> Any:
        """backend="eager"'s replay: the step (host reads baked), its rebound argument slots written into
        the buffers."""
        with self._grad_mode(), guards.call():
            output, rebound = self._call_observing(statics)
        argument_slots.close(rebound)
        return output

    def _warm_up(self, statics: list[Any], leaves: list[Any], guards: HostReadGuards) -> set[int]:
        """The warm-up calls; the static leaves whose slots the step rebinds become graphed()'s own
        buffers (a clone where the caller's tensor was the buffer): their indices."""
        rebound: list = []
        try:
            with self._grad_mode():
                for _ in range(self.warmup):
                    with guards.call():  # host reads recorded (host_read_guards.py)
                        self._warmed_output, rebound = self._call_observing(statics)
            argument_slots.check_closable(rebound, self.name)
        except argument_slots.SlotRebindingError as error:
            raise GraphedInputError(str(error)) from None
        indices = argument_slots.leaf_indices(rebound, statics)
        for index in indices:
            if statics[index] is leaves[index]:  # closing the loop must not write into the caller's tensor
                statics[index] = statics[index].detach().clone()
        return set(indices)

    def _own_read_only(self, statics: list[Any], leaves: list[Any], versions: list, slots: set[int]) -> None:
        """An unbatched tensor argument was taken as the graph's buffer (`_static_for`), so a later
        call's values would be copied into the tensor the caller passed first (which it may still
        hold: an ODE solver's `y0`, a time grid). Read-only ones up to OWN_READ_ONLY_BYTES, and every
        CPU one, become graphed()'s own copies: copying them in costs little. Larger device tensors
        stay the caller's, so that passing the same one every call (weights handed to a core, a
        static input filled in place) costs no copy; a later call with another tensor still copies
        into the first one (documented in the module docstring). State the step writes in place (a
        KV cache) and tensors that require grad (parameters: autograd and the optimizer know them by
        identity) stay the caller's too. One tensor passed as two arguments gets two buffers."""
        seen: set[int] = set()
        for index, (static, template) in enumerate(zip(statics, self._leaves)):
            if not (isinstance(static, torch.Tensor) and template.is_tensor) or template.batched or index in slots:
                continue
            shared = id(static) in seen  # `t0` and `t1` one tensor at capture: later calls pass two
            seen.add(id(static))
            if static is not leaves[index] or static.requires_grad:
                continue
            small = not static.is_cuda or static.numel() * static.element_size() <= OWN_READ_ONLY_BYTES
            if shared or (small and static._version == versions[index]):
                statics[index] = static.detach().clone()
                versions[index] = statics[index]._version

    def _put_back_bindings(self) -> None:
        """Attribute and container bindings as they were before the warm-up (no warm-up, probe or
        capture value stays visible)."""
        if self._attributes is not None:
            self._attributes.put_back(self._attributes_before)
        if self._containers is not None:
            self._containers.put_back(self._containers_before)

    def _grad_mode(self):
        return contextlib.nullcontext() if self.train else torch.no_grad()

    def _capture(self, bucket: int, leaves: list[Any]) -> _Entry:
        device = statics_device(leaves) if self.backend == "cuda" else _first_device(leaves)
        statics = [self._static_for(bucket, leaf, t, device) for leaf, t in zip(leaves, self._leaves)]
        versions = [s._version if isinstance(s, torch.Tensor) else None for s in statics]
        label = f"{self.name} b={bucket}"
        host = {id(s): t.name for s, t in zip(statics, self._leaves) if isinstance(s, torch.Tensor) and not s.is_cuda}
        started = time.perf_counter()
        # a training step writes its parameters in place: a replay cannot be thrown away, so no guards
        guards = HostReadGuards(simulated=self.backend == "eager", active=not self.train)
        rebound: list = []
        if self.backend == "eager":
            slot_leaves = self._warm_up(statics, leaves, guards)
            self._own_read_only(statics, leaves, versions, slot_leaves)
            self._adopt_optimizers_built_by_warm_up(statics, leaves)
            graph = _EagerGraph(lambda: self._call_closing(guards, statics))
            with self._grad_mode():
                guards.capture_begins()  # a simulated replay runs fn with the baked reads
                with guards.call():
                    output, rebound = self._call_observing(statics)
            argument_slots.close(rebound)
            graph.output = output
        else:
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                slot_leaves = self._warm_up(statics, leaves, guards)
                self._own_read_only(statics, leaves, versions, slot_leaves)
            torch.cuda.current_stream().wait_stream(stream)
            self._adopt_optimizers_built_by_warm_up(statics, leaves)
            host = {id(s): t.name for s, t in zip(statics, self._leaves) if isinstance(s, torch.Tensor) and not s.is_cuda}
            warmed = self._containers.bindings() if self._containers is not None else {}
            if self._attributes is not None and self.reset_after_warmup:  # the call's own path, not the
                self._put_back_bindings()  # one the warm-up left
            graph = torch.cuda.CUDAGraph()
            for generator in self.generators:
                if not hasattr(graph, "register_generator_state"):
                    raise RuntimeError("graphed: this torch cannot register custom generators with a CUDA graph "
                                       "(CUDAGraph.register_generator_state needs torch >= 2.4)")
                graph.register_generator_state(generator)
            capture_stream = torch.cuda.Stream()
            lengths = self._attributes.list_lengths() if self._attributes is not None else {}
            try:
                with self._range(f"graphsafe.capture[{label}]"), self._grad_mode(), torch.cuda.stream(capture_stream):
                    with torch.cuda.graph(graph, pool=self.pool, stream=capture_stream), \
                            NumbersFromPinnedMemory() as numbers, HostArgumentsOnDevice(host) as on_device, \
                            guards.call():
                        output, rebound = self._call_observing(statics)
                        argument_slots.close(rebound)  # closed in the graph: the next replay reads it
                        if self._attributes is not None:
                            self._attributes.close_loops(self._attributes_before)
                            self._containers.close_loops(self._containers_before)
            except Exception as error:  # torch's text names a CUDA error; the user wants the rule and the line
                failure = classify_exception(error, phase="capture")
                del graph  # a failed capture leaves the RNG in capture mode: no random numbers until recovered
                usable = recover_after_failed_capture(statics_device(statics), self.generators, error)
                raise GraphedCaptureError(self.name, failure, usable) from error
            torch.cuda.synchronize()
        self.capture_seconds[bucket] = time.perf_counter() - started
        self._refuse_changing_numbers(output)
        if set(argument_slots.leaf_indices(rebound, statics)) != slot_leaves:
            raise GraphedInputError(f"graphed {self.name}: the capture rebound other slots of its list/dict "
                                    "arguments than the warm-up calls did: the step's path is not fixed")
        # the rebound slots' buffers are graphed()'s own: the caller gets them in its slots instead of a copy
        inout = [i for i, (s, v) in enumerate(zip(statics, versions))
                 if isinstance(s, torch.Tensor) and s._version != v and i not in slot_leaves]
        kept = numbers.kept if self.backend != "eager" else []
        moved = on_device.moved if self.backend != "eager" else []
        rebind, containers, appended = [], [], []
        if self._attributes is not None:
            appended = self._attributes.appended_by_capture(lengths)  # the replay that follows appends them
            rebind = self._attributes.left_by_capture(self._attributes_before)
            try:
                containers = self._containers.left_by_capture(self._containers_before, warmed, self.name)
            except ContainerStateError as error:
                raise GraphedInputError(str(error)) from None
            self._from_none = AttributeState.from_none(self._attributes_before, rebind)
            self._captured_flags = (True,) * len(self._from_none)  # the graph is for a call that finds them None
        if guards.baked:
            self.stats.setdefault("fallbacks", 0)
        position = {id(s): i for i, s in enumerate(statics)}
        slots = [(r.path, r.key, r.old, self._leaves[position[id(r.old)]].batched) for r in rebound]
        return _Entry(bucket, graph, statics, output, inout=inout, kept=kept, rebind=rebind,
                      moved=moved, containers=containers, slots=slots, guards=guards, appended=appended)

    def _refuse_changing_numbers(self, output: Any) -> None:
        """A Python number among the outputs that differs between the last warm-up call and the
        capture (a loss summed from `.item()` terms, a call counter) is per call, and a replay runs no
        Python: every call would get the capture's value. Refused with the output's place."""
        warmed, _ = pytree.tree_flatten_with_path(self._warmed_output)
        captured, _ = pytree.tree_flatten_with_path(output)
        self._warmed_output = None
        if len(warmed) != len(captured):
            return  # another structure: compared leaf by leaf it would say nothing
        for (path, before), (_, now) in zip(warmed, captured):
            if type(before) in (int, float, complex) and type(now) is type(before) and before != now \
                    and not (before != before and now != now):  # nan at both: the same value
                raise GraphedInputError(
                    f"graphed {self.name}: output{pytree.keystr(path)} is a Python number that changes from call "
                    f"to call ({before!r} at the last warm-up call, {now!r} at the capture): a replay runs no "
                    "Python and would return the capture's value every time; return it as a tensor (a sum of "
                    "`.item()` terms kept on the device) or compute it outside the graphed step")

    def _find_batched_outputs(self, leaves: list[Any]) -> None:
        """Which output leaves carry the batch: the ones whose batch dimension follows the bucket.
        With one bucket, an eager probe one row smaller tells (inference with padding only)."""
        sizes: dict[int, list[int | None]] = {}
        for bucket, entry in self.graphs.items():
            sizes[bucket] = [o.shape[self.batch_dim] if isinstance(o, torch.Tensor) and o.dim() > self.batch_dim
                             else None for o in pytree.tree_leaves(entry.output)]
        if len(self.graphs) == 1:
            bucket = next(iter(self.graphs))
            if self.pad and bucket > 1:
                entry = self.graphs[bucket]
                probe = [s.narrow(self.batch_dim, 0, bucket - 1) if t.batched else s
                         for s, t in zip(entry.statics, self._leaves)]
                try:
                    with self._grad_mode():
                        out = self._call_on(probe)
                except Exception:  # state sized for the batch (a KV cache) takes no smaller one: judge by size
                    out = None
                finally:  # the probe is graphed()'s own call: none of its bindings stays visible
                    self._put_back_bindings()
                if out is not None:
                    sizes[bucket - 1] = [o.shape[self.batch_dim] if isinstance(o, torch.Tensor)
                                         and o.dim() > self.batch_dim else None for o in pytree.tree_leaves(out)]
            if len(sizes) == 1:
                for entry in self.graphs.values():
                    entry.output_batched = [s == bucket for s in sizes[bucket]]
                return
        for bucket, entry in self.graphs.items():
            flags = []
            for index, size in enumerate(sizes[bucket]):
                flags.append(size is not None and all(
                    len(other) > index and other[index] == b for b, other in sizes.items()))
            entry.output_batched = flags

    def _range(self, name: str):
        return nvtx_range(name) if self.nvtx_ranges else contextlib.nullcontext()

    # calls --------------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self.graphs and self._autograd is None:
            self._capture_all(args, kwargs)
        if self._autograd is not None:
            return self._call_autograd(args, kwargs)
        leaves, spec = self._flatten_call(args, kwargs)
        self._refuse_autograd_through(leaves)
        flags = none_flags(self._from_none) if self._from_none else ()
        if (spec is not None and spec != self._spec) or flags != self._captured_flags:
            return self._by_structure((self._spec if spec is None else spec, flags), leaves, args, kwargs)
        size, same_shape = self._check(leaves)
        if not same_shape and self.shapes > 1:
            return self._by_shape(leaves, args, kwargs)
        bucket = choose_bucket(size, self.buckets, self.pad) if same_shape else None
        if bucket is None:
            self.stats["eager"] += 1
            with self._grad_mode():
                return self.fn(*args, **kwargs)
        entry = self.graphs[bucket]
        self._refresh_lrs()
        self._copy_in(entry, leaves, size)
        fill(entry.moved, entry.moved_read)
        with self._range(f"graphsafe.replay[{self.name} b={bucket}]"):
            entry.graph.replay()
        if entry.moved and self.backend == "cuda":
            entry.moved_read = entry.moved_read or torch.cuda.Event()
            entry.moved_read.record()
        if entry.guards.fired():  # a baked host read would have read another value: this call runs eagerly
            self.stats["fallbacks"] += 1
            with self._grad_mode():
                return self.fn(*args, **kwargs)
        rebind(entry.rebind)
        append_again(entry.appended)
        if entry.containers:
            rebind_containers(entry.containers)
        if entry.slots:
            argument_slots.put_into(entry.slots, args, kwargs, size, self.batch_dim, clone=self.clone_outputs)
        self.stats["replays"] += 1
        if size != bucket:
            self.stats["padded"] += 1
        self._copy_back(entry, leaves, size)
        return self._outputs(entry, size, leaves)

    def _by_structure(self, spec, leaves: list[Any], args: tuple, kwargs: dict) -> Any:
        """A call whose arguments have another structure (a decoder's first step passes `None` where
        later steps pass a state tuple), or whose state attributes the capture found `None` are set
        (or `None` again): graphs of their own, sharing the memory pool and the counts, up to
        MAX_STRUCTURES; past that an error (a structure that keeps changing is no graph)."""
        other = self._structures.get(spec)
        if other is None:
            if len(self._structures) + 1 >= MAX_STRUCTURES:
                raise GraphedInputError(
                    f"graphed {self.name}: the arguments' structure differs from the {len(self._structures) + 1} "
                    f"captured ones ({len(leaves)} leaves vs {len(self._leaves)}); pass the same arguments in the "
                    "same form")
            other = self._structures[spec] = self._sibling(f"structure {len(self._structures) + 2}")
        return other(*args, **kwargs)

    def _by_shape(self, leaves: list[Any], args: tuple, kwargs: dict) -> Any:
        """shapes=N: a call whose tensors have another non-batch shape replays that shape's graphs,
        captured on its first call, up to N shapes with the captured one; past that it runs eagerly
        (a RuntimeWarning the first time)."""
        key = self._shape_key(leaves)
        other = self._shapes.get(key)
        if other is None:
            if len(self._shapes) + 1 >= self.shapes:
                if not self.stats["past_shape_limit"]:
                    warnings.warn(f"graphed {self.name}: {self.shapes} input shapes have graphs (shapes="
                                  f"{self.shapes}); calls of another shape run eagerly "
                                  "(.stats['past_shape_limit'] counts them)", RuntimeWarning, stacklevel=3)
                self.stats["past_shape_limit"] += 1
                self.stats["eager"] += 1
                with self._grad_mode():
                    return self.fn(*args, **kwargs)
            # shapes=1: its calls come here with its own shape only
            other = self._shapes[key] = self._sibling(f"shape {len(self._shapes) + 2}", shapes=1)
            self.stats["other_shapes"] += 1
        return other(*args, **kwargs)

    def _shape_key(self, leaves: list[Any]) -> tuple:
        """The call's tensor shapes without the batch dimension of batched inputs (buckets serve that)."""
        d = self.batch_dim
        return tuple(tuple(leaf.shape[:d] + leaf.shape[d + 1:]) if t.batched else tuple(leaf.shape)
                     for leaf, t in zip(leaves, self._leaves) if t.is_tensor)

    def _sibling(self, label: str, **options: Any) -> GraphedCallable:
        """A graphed callable for another argument structure or shape: graphs of its own, captured on
        its first call, in this one's memory pool and counted in this one's `.stats`."""
        if self.pool is None and self.backend == "cuda":
            self.pool = torch.cuda.graph_pool_handle()
        other = GraphedCallable(self.fn, **dict(self._options, pool=self.pool, name=f"{self.name}[{label}]", **options))
        other.stats = self.stats
        return other

    def _flatten_call(self, args: tuple, kwargs: dict) -> tuple[list[Any], Any]:
        """The call's leaves; its structure too (None: the captured call's structure, checked
        cheaply for arguments that are tensors, numbers, or lists/tuples/dicts of them)."""
        if self._flat_key is not None:
            shallow = _shallow(args, kwargs)
            if shallow is not None and shallow[0] == self._flat_key:
                return shallow[1], None
        return pytree.tree_flatten((args, kwargs))

    def _agreed_batch(self, t: _Leaf, rows: int, size: int | None) -> int:
        """The call's batch size so far, with this batched input's `rows`: they must agree."""
        if size is not None and rows != size:
            raise GraphedInputError(f"graphed {self.name}: batched inputs disagree on the batch size "
                                    f"({t.name} has {rows} rows, an earlier one {size}); if {t.name} has "
                                    "no batch dimension, name the batched arguments: batched=[0, ...]")
        return rows

    def _check(self, leaves: list[Any]) -> tuple[int, bool]:
        """The call's batch size, and whether every other dimension matches (False: another shape's
        graphs with shapes=N, else eager with pad=False; an error with pad=True and shapes=1)."""
        size = None
        same = True
        d = self.batch_dim
        for leaf, t in zip(leaves, self._leaves):
            if t.is_tensor and isinstance(leaf, torch.Tensor) and leaf.shape == t.shape and leaf.dtype is t.dtype \
                    and leaf.device == t.device:  # the common call: exactly the captured sample's layout
                if t.batched:
                    size = self._agreed_batch(t, t.shape[d], size)
                continue
            if t.number:
                if not _is_number(leaf) or isinstance(leaf, int) != isinstance(t.value, int):
                    raise GraphedInputError(f"graphed {self.name}: {t.name} is {_short(leaf)} but was captured as "
                                            f"{type(t.value).__name__} (numbers= keeps its type)")
                continue
            if not t.is_tensor:
                if isinstance(leaf, torch.Tensor) or not _same_value(leaf, t.value):
                    raise GraphedInputError(f"graphed {self.name}: {t.name} is {_short(leaf)} but the graphs were "
                                            f"captured with {_short(t.value)}: a Python value is baked into the "
                                            "graph (GS301); pass it as a device tensor")
                continue
            if not isinstance(leaf, torch.Tensor):
                raise GraphedInputError(f"graphed {self.name}: {t.name} must be a tensor, got {type(leaf).__name__}")
            if leaf.dtype != t.dtype:
                raise GraphedInputError(f"graphed {self.name}: {t.name} has dtype {leaf.dtype}, captured {t.dtype}")
            if leaf.device != t.device:
                raise GraphedInputError(f"graphed {self.name}: {t.name} is on {leaf.device}, captured on {t.device}")
            if leaf.dim() != len(t.shape):
                raise GraphedInputError(f"graphed {self.name}: {t.name} has {leaf.dim()} dimensions "
                                        f"{tuple(leaf.shape)}, captured {len(t.shape)} {t.shape}")
            if t.batched:
                size = self._agreed_batch(t, leaf.shape[d], size)
                other = leaf.shape[:d] + leaf.shape[d + 1:]
                expected = t.shape[:d] + t.shape[d + 1:]
            else:
                other, expected = tuple(leaf.shape), t.shape
            if tuple(other) != tuple(expected):
                if self.pad and self.shapes == 1:
                    raise GraphedInputError(f"graphed {self.name}: {t.name} has shape {tuple(leaf.shape)}, captured "
                                            f"{t.shape} (only dimension {d} of batched inputs may vary; GS403)")
                same = False
        return (size if size is not None else 0), same

    def _copy_in(self, entry: _Entry, leaves: list[Any], size: int) -> None:
        d = self.batch_dim
        with torch.no_grad():
            for leaf, static, t in zip(leaves, entry.statics, self._leaves):
                if t.number:
                    static.fill_(leaf)
                    continue
                if not t.is_tensor or leaf is static:
                    continue
                if t.batched:
                    if size == entry.bucket:
                        static.copy_(leaf)
                        continue
                    static.narrow(d, 0, size).copy_(leaf)
                    if size < entry.bucket and self.pad_value is not None:
                        static.narrow(d, size, entry.bucket - size).fill_(self.pad_value)
                elif not _same_storage(leaf, static):
                    static.copy_(leaf)

    def _copy_back(self, entry: _Entry, leaves: list[Any], size: int) -> None:
        if not entry.inout:
            return
        with torch.no_grad():
            for index in entry.inout:
                leaf, static, t = leaves[index], entry.statics[index], self._leaves[index]
                if leaf is static or _same_storage(leaf, static):
                    continue
                leaf.copy_(static.narrow(self.batch_dim, 0, size) if t.batched else static)

    def _outputs(self, entry: _Entry, size: int, leaves: list[Any]) -> Any:
        """The call's outputs: the static outputs cut to the batch and cloned (once per tensor, so
        outputs that were one tensor stay one); an output that is one of the step's arguments (an
        ODE solver's state passed through) is the caller's argument, as eagerly: a clone would come
        apart from it when the caller writes into its tensors afterwards."""
        if entry.flat_output is None:  # the static outputs never change identity: flatten them once
            entry.flat_output = pytree.tree_flatten(entry.output)
            entry.output_inputs = passed_through(entry.flat_output[0], entry.statics, self._leaves, entry.slots)
        flat, spec = entry.flat_output
        out = []
        made: dict[int, torch.Tensor] = {}
        for index, (value, batched) in enumerate(zip(flat, entry.output_batched or [False] * len(flat))):
            if index in entry.output_inputs:
                value = leaves[entry.output_inputs[index]]
            elif isinstance(value, torch.Tensor):
                key = id(value)
                if key not in made:
                    if batched and size != entry.bucket:
                        value = value.narrow(self.batch_dim, 0, size)
                    made[key] = value.detach().clone() if self.clone_outputs else value
                value = made[key]
            out.append(value)
        return pytree.tree_unflatten(out, spec)

    def __repr__(self) -> str:
        shapes = f" shapes={len(self._shapes) + 1}/{self.shapes}" if self.shapes > 1 else ""
        return (f"<graphed {self.name} buckets={list(self.buckets) or 'on first call'} pad={self.pad}{shapes} "
                f"train={self.train} backend={self.backend}>")


def _holds(obj: Any, ids: set[int]) -> bool:
    """Whether an attribute of `obj`, or an entry of a dict/list attribute, is one of `ids`."""
    for value in vars(obj).values():
        values = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else (value,)
        if any(id(v) in ids for v in values):
            return True
    return False


def _fresh_state(optimizers: list[torch.optim.Optimizer]) -> None:
    """Every state tensor of optimizers the warm-up built zeroed in place (the graph reads them):
    a fresh state for Adam/AdamW, as Snapshot.restore_values does for state a warm-up creates."""
    with torch.no_grad():
        for opt in optimizers:
            for state in opt.state.values():
                for value in state.values():
                    if isinstance(value, torch.Tensor):
                        value.zero_()


def passed_through(outputs: list[Any], statics: list[Any], templates: list[_Leaf], slots: list) -> dict[int, int]:
    """Output leaves that are the static buffer of a tensor argument itself: their argument's index.
    Per-step numbers (graphed()'s own 0-dim tensors) and rebound argument slots (argument_slots.py
    hands those back) are not the caller's tensors."""
    own = {id(old) for _, _, old, _ in slots}
    position = {id(s): i for i, (s, t) in enumerate(zip(statics, templates))
                if isinstance(s, torch.Tensor) and t.is_tensor and id(s) not in own}
    return {k: position[id(o)] for k, o in enumerate(outputs) if isinstance(o, torch.Tensor) and id(o) in position}


def statics_device(statics: list[Any]) -> torch.device:
    """The CUDA device of the captured step's static inputs (the current one if none is a tensor)."""
    for leaf in statics:
        if isinstance(leaf, torch.Tensor) and leaf.is_cuda:
            return leaf.device
    return torch.device("cuda", torch.cuda.current_device())


_FLAT_LEAF_TYPES = frozenset({int, float, bool, str, type(None), torch.dtype, torch.device})


def _is_leaf(value: Any) -> bool:
    return type(value) in _FLAT_LEAF_TYPES or isinstance(value, torch.Tensor)


def _shallow(args: tuple, kwargs: dict) -> tuple[tuple, list[Any]] | None:
    """(structure key, leaves in pytree's order) for arguments that are leaves or plain
    lists/tuples/dicts of leaves; None for anything deeper (pytree then walks it)."""
    key: list[Any] = [len(args), tuple(kwargs)]
    leaves: list[Any] = []
    for value in (*args, *kwargs.values()):
        kind = type(value)
        if kind in _FLAT_LEAF_TYPES or isinstance(value, torch.Tensor):
            key.append(None)
            leaves.append(value)
        elif kind is dict:
            items = value.values()
            if not all(_is_leaf(v) for v in items):
                return None
            key.append(tuple(value))
            leaves.extend(items)
        elif kind is list or kind is tuple:
            if not all(_is_leaf(v) for v in value):
                return None
            key.append((kind, len(value)))
            leaves.extend(value)
        else:
            return None
    return tuple(key), leaves


def _first_device(leaves: list[Any]) -> torch.device:
    return next((leaf.device for leaf in leaves if isinstance(leaf, torch.Tensor)), torch.device("cpu"))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _argument_prefixes(items: Iterable[int | str], option: str) -> list[str]:
    """Argument positions / keyword names → the leaf-name prefixes they cover."""
    prefixes = []
    for item in items:
        if isinstance(item, int) and not isinstance(item, bool):
            prefixes.append(f"args[{item}]")
        elif isinstance(item, str):
            prefixes.append(f"kwargs['{item}']")
        else:
            raise TypeError(f"graphed: {option} takes argument positions or keyword names, got {item!r}")
    return prefixes


def _as_tuple(args: Any) -> tuple:
    if args is None:
        return ()
    if isinstance(args, tuple):
        return args
    if isinstance(args, list):
        return tuple(args)
    return (args,)


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()


def _same_value(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return a is b


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 30 else text[:27] + "..."


def graphed(fn: Callable | None = None, sample_args: Any = None, **options: Any) -> Any:
    """A CUDA-graphed version of `fn` (see the module docstring for every option):

        graphed(fn, sample_args, *, sample_kwargs=None, buckets=None, pad=None (True unless train),
                batch_dim=0, batched=None, numbers=(), train=False, optimizer=None, pool=None, warmup=3,
                clone_outputs=True, pad_value=0, generators=(), nvtx_ranges=True,
                reset_after_warmup=True, backend="cuda", name=None, shapes=1)

    With `sample_args` every bucket is captured now; without, on the first call (its arguments
    are the samples). Used bare as `@graphed(buckets=[...])` it decorates.
    """
    if fn is None:
        return lambda function: GraphedCallable(function, sample_args, **options)
    return GraphedCallable(fn, sample_args, **options)


class GraphedMethod:
    """`graph_method(Class, "step_core", **options)` puts this on the class: every instance, built
    now or later, calls the method through graphed() (the wiring for code that builds its objects
    where you cannot reach them). Each instance gets a graph of its own, made on its first call.
    With `shared=True` (what `graph` prints for a region that builds its object per call, an ODE
    solver per `odeint()`), instances whose state has one layout share one graph instead: their
    tensors are copied into a stand-in's before each replay and what the method writes is copied
    back (runtime/shared_method.py), so a per-call object captures once, and no instance is kept
    alive; it costs a layout check per call (tens of microseconds), which an instance called again
    and again does not need. `eager(obj)` leaves one instance ungraphed (an eager twin to compare
    with), `with eagerly():` all of them; `graphs()` lists the graphed callables, `stats` counts calls."""

    def __init__(self, function: Callable, options: dict) -> None:
        from graphsafe.runtime.shared_method import SharedGraphs

        options = dict(options)
        self.function, self.share = function, bool(options.pop("shared", False))
        self.options = options
        self.shared = SharedGraphs(function, options, GraphedCallable) if self.share else None
        self._own: dict[int, tuple[Any, GraphedCallable]] = {}  # not shared: id(obj) -> (obj, its graphed method)
        self._eager: dict[int, Any] = {}  # id(obj) -> a weak reference to it (or obj, when it takes none)
        self._eagerly = 0  # inside eagerly(): every call eager
        functools.update_wrapper(self, function, updated=())

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        held = self._eager.get(id(obj))
        if self._eagerly or held is not None and (held is obj or (isinstance(held, weakref.ref) and held() is obj)):
            return self.function.__get__(obj, owner)
        if self.shared is not None:
            return _SharedCall(self.shared, obj)
        own = self._own.get(id(obj))
        if own is None or own[0] is not obj:
            own = (obj, GraphedCallable(self.function.__get__(obj, owner), **self.options))
            self._own[id(obj)] = own
        return own[1]

    @contextlib.contextmanager
    def eagerly(self):
        """Inside the block every instance runs the method eagerly (an eager twin whose objects are
        built per call, where eager(obj) cannot reach them)."""
        self._eagerly += 1
        try:
            yield
        finally:
            self._eagerly -= 1

    def eager(self, obj: Any) -> None:
        key = id(obj)
        try:
            self._eager[key] = weakref.ref(obj, lambda _, k=key: self._eager.pop(k, None))
        except TypeError:  # no weak references (__slots__ without __weakref__): held
            self._eager[key] = obj

    def graphs(self) -> list[GraphedCallable]:
        if self.shared is not None:
            return self.shared.graphs()
        return [graphed_method for _, graphed_method in self._own.values()]

    @property
    def stats(self) -> dict:
        if self.shared is not None:
            return self.shared.stats
        totals: dict = {}
        for graph in self.graphs():
            for key, value in graph.stats.items():
                if isinstance(value, int):
                    totals[key] = totals.get(key, 0) + value
        return totals


class _SharedCall:
    """The graphed method bound to one instance (made per attribute access, not kept)."""

    __slots__ = ("shared", "obj")

    def __init__(self, shared: Any, obj: Any) -> None:
        self.shared, self.obj = shared, obj

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.shared.call(self.obj, args, kwargs)


def graph_method(owner: Any, name: str, **options: Any) -> Any:
    """Graph `owner.name` for every call: a class's method (per instance, see GraphedMethod) or a
    module's function; returns what was installed."""
    current = (owner.__dict__.get(name) or getattr(owner, name, None)) if isinstance(owner, type) \
        else getattr(owner, name, None)  # a class's inherited method: this class gets its own graphed one
    if current is None:
        raise AttributeError(f"graph_method: {getattr(owner, '__name__', owner)} has no {name}")
    if isinstance(owner, type):
        installed: Any = GraphedMethod(current, options)
    else:
        installed = GraphedCallable(current, **options)
    setattr(owner, name, installed)
    return installed


class _CallableModule(types.ModuleType):
    """`graphsafe.runtime` exports the function `graphed` from this module of the same name; once
    the module is imported, the package attribute `graphed` is the module itself (the import
    system binds submodules on their package). Calling the module calls the function, so
    `from graphsafe.runtime import graphed` works either way."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return graphed(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
