"""CPU tensor arguments of a graphed step, moved onto the device by the step itself.

Some host data stays on the CPU by a library's design and the step copies it over: rwkv keeps
its embedding table on the CPU, and the step does `x = emb[token]` then `x = x.to(device=dev)`
in its layer loop, where `dev` comes from a per-layer strategy. `graph` moves the CPU lookup to
the wrapper (the core takes `x`), but the wrapper cannot name the device: only the core knows
it. What graphed() can observe while capturing is that the argument's use is a `.to` onto a
CUDA device. This mode turns each such `.to` (or `.cuda()`) of a CPU static argument into a copy
from a pinned host buffer of its own, recorded by the graph where the step made it; before each
replay graphed() writes the CPU argument into that pinned buffer, so the replay copies this call's
values. The `.to` is still the copy the step asked for: same values, same dtype and device.

Why the copy is in the graph rather than a device buffer filled before the replay: a buffer
allocated during capture takes a block of the graph's pool that kernels earlier in the graph
used for their temporaries (the pool hands out blocks freed earlier in the capture), and a replay
runs those earlier kernels again after the fill, over the values (kornia's `to_apply`: H200).

A tensor op on CPU arguments alone (kornia's `batch_prob > 0.5` before its `.to(device)`) is
recorded and run again before each replay, ahead of the copies (runtime/host_recipes.py).
Refused while capturing, with the argument and the operation: any other use of a CPU argument
than metadata (`.shape`, `.dtype`, ...), a `.to` onto a CUDA device and such a recorded op. Host work on it would run
once, at capture, and never again at replay (silently wrong), so it is an error, not a graph. A CPU
argument the step never reads (a CPU entry of a dict of weights passed whole) is left alone.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

from graphsafe.runtime.host_recipes import recordable, recipe, results

# reads of a tensor's metadata: host facts that are fixed for a graph (graphed() keys on them)
_METADATA = frozenset("""shape size dim ndim ndimension numel dtype device is_cuda is_cpu layout requires_grad
    is_contiguous stride element_size nelement __len__ is_floating_point is_complex names is_inference
    _version is_pinned""".split())


class CpuArgumentOnHost(RuntimeError):
    """A CPU tensor argument used by host work while capturing (it would run only at capture)."""


class HostArgumentsOnDevice(TorchFunctionMode):
    """While capturing: `.to(<cuda>)` / `.cuda()` of one of `arguments` (CPU tensors, by
    identity) returns a device buffer filled before each replay (`moved`: (argument, buffer));
    another non-metadata use of one raises CpuArgumentOnHost."""

    def __init__(self, arguments: dict[int, str], capturing: Callable[[], bool] | None = None) -> None:
        super().__init__()
        self.arguments = arguments  # id(tensor) → its name in the call ("args[0]")
        self.moved: list[tuple[torch.Tensor, torch.Tensor]] = []
        self._capturing = capturing or torch.cuda.is_current_stream_capturing

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        receiver = args[0] if args else None
        flat = [b for a in (*args, *kwargs.values()) for b in (a if isinstance(a, (list, tuple)) else (a,))]
        named = [a for a in flat if isinstance(a, torch.Tensor) and id(a) in self.arguments]
        if not named or not self._capturing():
            return func(*args, **kwargs)
        name = _name_of(func)
        if name in _METADATA or (name == "__get__" and _property_name(func) in _METADATA):
            return func(*args, **kwargs)
        if receiver is not None and id(receiver) in self.arguments and name in ("to", "cuda"):
            target = _target(name, args[1:], kwargs, receiver)
            if target is not None and target[0].type != "cpu":
                return self._buffer(receiver, *target)
        if recordable(name, args, kwargs):  # host work on this call's arguments: run again before each replay
            value = func(*args, **kwargs)
            made = results(value)
            if made is not None:
                for index, tensor in enumerate(made):
                    self.arguments[id(tensor)] = f"{name}(...) of {self.arguments[id(named[0])]}"
                    self.moved.append((recipe(func, args, kwargs, index), tensor))  # keeps `tensor` alive
                return value
        argument = self.arguments[id(named[0])]
        raise CpuArgumentOnHost(
            f"graphed: {argument} is a CPU tensor and the step uses it on the host ({name}) while capturing: "
            "host work runs once, at capture, and never at replay. graphed() moves a CPU argument only where "
            "the step's use of it is a `.to(<cuda device>)`; move that work into the device code, or pass the "
            "argument on the device")

    def _buffer(self, argument: torch.Tensor, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        if device.type == "cuda":  # the graph copies from pinned memory that graphed() fills before each replay
            staging = torch.empty_like(argument, dtype=dtype, pin_memory=True)
            staging.copy_(argument)
            self.moved.append((argument, staging))
            return staging.to(device, non_blocking=True)
        # another device (the meta device of the CPU tests): a buffer filled before each replay
        buffer = torch.empty_like(argument, dtype=dtype, device=device)
        self.moved.append((argument, buffer))
        return buffer


def fill(moved: list[tuple[torch.Tensor, torch.Tensor]], last_replay: Any = None) -> None:
    """Before a replay: the CPU arguments' values into the pinned buffers the graph copies from
    (or the buffers it reads, off CUDA). `last_replay` is an event recorded after the previous
    replay: its copies from the pinned buffers must be done before they are written again."""
    if last_replay is not None:
        last_replay.synchronize()
    with torch.no_grad():
        for source, buffer in moved:  # a recipe (host work on the arguments) before the copies that read it
            buffer.copy_(source() if callable(source) else source)


def _name_of(func: Any) -> str:
    return getattr(func, "__name__", "") or ""


def _property_name(func: Any) -> str:
    owner = getattr(func, "__self__", None)  # Tensor.shape.__get__: the descriptor is its __self__
    return getattr(owner, "__name__", "") or ""


def _target(name: str, rest: tuple, kwargs: dict, receiver: torch.Tensor) -> tuple[torch.device, torch.dtype] | None:
    """(device, dtype) of `receiver.to(*rest, **kwargs)` or `receiver.cuda(...)`; None if unreadable
    (a `.to(other_tensor)` included: its device is read from that tensor)."""
    if name == "cuda":
        device = rest[0] if rest else kwargs.get("device")
        if isinstance(device, int) or device is None:
            device = torch.device("cuda", torch.cuda.current_device() if device is None else device)
        return torch.device(device), receiver.dtype
    plain = {k: v for k, v in kwargs.items() if k in ("device", "dtype")}
    try:
        device, dtype, *_ = torch._C._nn._parse_to(*rest, **plain)
    except (TypeError, RuntimeError):
        return None
    if device is None:
        return None
    return torch.device(device), dtype or receiver.dtype
