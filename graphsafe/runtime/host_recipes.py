"""Host work on a CPU argument while capturing, recorded and run again before each replay.

kornia draws its augmentation parameters on the CPU (the wrapper makes them now, rewriters/
host_inputs.py), and the step computes on one of them before moving the result to the device:
`to_apply = torch.atleast_1d(params["batch_prob"] > 0.5)`, later `.to(device)`. Capture runs that
comparison once; a replay would reuse its result. A tensor op whose tensor inputs are all on the
CPU, one of them a CPU argument (or a result recorded so), is a pure function of this call's
arguments: it is run at capture as written, and its recipe (the op and its inputs) kept, so that
before each replay graphed() runs it again into the same result tensor, after the arguments were
copied in and before the results are copied onto the device (runtime/host_arguments.py's `fill`).

Not recorded (capture is refused with the argument's name, as for any other host use): an op
that draws random numbers (it would draw again, from the host generator, in another order than
eager), writes in place or into `out=` (the caller's argument would change twice), or returns no
tensor (`bool()`, `.item()`, `.tolist()`: a host value the step branches on, baked at capture).
"""

from __future__ import annotations

from typing import Any, Callable

import torch

_RANDOM = ("rand", "bernoulli", "multinomial", "normal", "poisson", "exponential", "cauchy", "geometric",
           "uniform", "dropout", "shuffle", "perm")


def recordable(name: str, args: tuple, kwargs: dict) -> bool:
    """Whether `name(*args, **kwargs)` may be recorded: no randomness, no in-place write, and
    every tensor among its inputs on the CPU."""
    if any(word in name.lower() for word in _RANDOM) or "generator" in kwargs or "out" in kwargs:
        return False
    if name.endswith("_") and not name.endswith("__") or name in ("__setitem__", "__delitem__", "__iadd__",
                                                                    "__isub__", "__imul__", "__itruediv__"):
        return False
    flat = [b for a in (*args, *kwargs.values()) for b in (a if isinstance(a, (list, tuple)) else (a,))]
    return all(t.device.type == "cpu" for t in flat if isinstance(t, torch.Tensor))


def results(value: Any) -> list[torch.Tensor] | None:
    """The tensors an op returned (one, or a tuple of them); None when it returned anything else."""
    items = value if isinstance(value, tuple) else (value,)
    return list(items) if items and all(isinstance(v, torch.Tensor) for v in items) else None


def recipe(func: Callable, args: tuple, kwargs: dict, index: int) -> Callable[[], torch.Tensor]:
    """The op again on its inputs as they are then: result number `index`."""
    def again() -> torch.Tensor:
        with torch.no_grad():
            out = func(*args, **kwargs)
        return out[index] if isinstance(out, tuple) else out
    return again
