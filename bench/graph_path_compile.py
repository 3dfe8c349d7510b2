"""The torch.compile column of bench/graph_path.py: the corpus program as its author wrote it (no
`graph`), compiled with mode="reduce-overhead" (the user's other way to get CUDA graphs), run for
the same steps with the same changing inputs against an eager build of the same original, and timed
the way graph_path times the graphed step (one whole call, host work included, synchronised).

Outputs are cloned as soon as the compiled step returns: cudagraph trees reuse their output memory
on the next call, and a user who keeps a step's outputs has to do the same.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable

import graph_path

RTOL, ATOL = 1e-5, 1e-6  # what graph_path's forward+backward mode calls equal


def forget_modules(program_dir: Path) -> None:
    """Drop the modules imported from `program_dir` (and the corpus' shared names), so that the next
    program folder imports its own `model`, `moe`, ... rather than this one's."""
    for name in ("capture", "model"):
        sys.modules.pop(name, None)
    for name, module in list(sys.modules.items()):
        if str(program_dir) in str(getattr(module, "__file__", "") or ""):
            sys.modules.pop(name, None)
    while str(program_dir) in sys.path:
        sys.path.remove(str(program_dir))


def _factory(program_dir: Path):
    """capture.make of the folder, its modules left imported: dynamo reads a compiled function's
    module by name (forget_modules drops them afterwards)."""
    import importlib

    forget_modules(program_dir)
    sys.path.insert(0, str(program_dir))
    return importlib.import_module("capture").make


def compile_column(original_dir: Path, steps: int, backward: bool, device: str = "cuda",
                   compile_options: dict | None = None, time_it: bool = True) -> dict:
    """{"status": "ok"|"differs"|"failed", "max_diff", "mismatches", "compile_s", "compile_ms", "eager_ms"}.
    `compile_options` default to mode="reduce-overhead"; the CPU tests pass backend="eager"."""
    import torch

    from graphsafe.runtime.snapshot import clone_tree

    options = compile_options if compile_options is not None else {"mode": "reduce-overhead"}
    make = _factory(original_dir)
    built, twin = make(device), make(device)
    if backward:
        model, twin_model = (getattr(b["step"], "__self__", b["step"]) for b in (built, twin))
        if not isinstance(model, torch.nn.Module):
            return {"status": "the factory's step is not a model's forward"}
        twin_model.load_state_dict(model.state_dict())
        compiled = torch.compile(model, **options)
        run, run_twin = _training_step(compiled, model), _training_step(twin_model, twin_model)
        states = (lambda: _grads(model), lambda: _grads(twin_model))
    else:
        compiled = torch.compile(built["step"], **options)
        run, run_twin = compiled, twin["step"]
        states = (lambda: list(_state(built)), lambda: list(_state(twin)))
    mark = getattr(torch.compiler, "cudagraph_mark_step_begin", lambda: None)

    def call(*args):
        mark()
        return clone_tree(run(*args))

    generator, twin_generator = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    result: dict[str, Any] = {"status": "ok", "max_diff": 0.0, "mismatches": []}
    phase = "compile"
    try:
        started = time.perf_counter()
        for i in range(steps):
            args = _inputs(built["args"], i, generator, backward)
            twin_args = _inputs(twin["args"], i, twin_generator, backward)
            before = graph_path._rng_states(device)
            out = call(*args)
            graph_path._set_rng_states(before, device)  # the eager build draws the numbers compile drew
            ref = clone_tree(run_twin(*twin_args))
            if i == 2:  # warm-up run, recording run, first replay: what compiling costs
                _sync(device)
                result["compile_s"] = time.perf_counter() - started
            print(f"[compile] step {i} done at {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
            _compare(f"step {i} output", _leaves(out), _leaves(ref), result)
            _compare(f"step {i} state", states[0](), states[1](), result)
        if result["mismatches"]:
            result["status"] = "differs"
        result["mismatches"] = result["mismatches"][:8]
        phase = "timing"
        if time_it:  # a new input set per timed call, drawn beforehand, as in the comparison above
            inputs = _input_sets(built["args"], backward)
            twin_inputs = _input_sets(twin["args"], backward)
            result["compile_ms"] = graph_path._median_ms(lambda: (mark(), run(*next(inputs))), ())
            result["eager_ms"] = graph_path._median_ms(lambda: run_twin(*next(twin_inputs)), ())
            result["speedup"] = result["eager_ms"] / result["compile_ms"]
    except Exception as error:  # a failing compile is a result, like a failing capture
        result.update(status="failed", phase=phase, error=f"{type(error).__name__}: {error}"[:600])
    return result


def _training_step(forward: Callable, model) -> Callable:
    """One forward+backward as graph_path's forward+backward mode runs it: a fixed weighted sum of
    the outputs as the loss (the weights drawn once per model from their own generator)."""
    import torch

    weights: list = []

    def step(*args):
        model.zero_grad(set_to_none=True)
        out = forward(*args)
        leaves = [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        if not weights:
            generator = torch.Generator().manual_seed(1)
            weights.extend(torch.randn(t.shape, generator=generator).to(t.device, t.dtype) for t in leaves)
        sum((t * w).sum() for t, w in zip(leaves, weights)).backward()
        return out

    return step


def _inputs(sample: tuple, i: int, generator, backward: bool) -> tuple:
    if backward:
        return tuple(graph_path._vary_padded(a, generator, getattr(a, "requires_grad", False)) for a in sample)
    return tuple(graph_path._vary(a, i, generator) for a in sample)


def _input_sets(sample: tuple, backward: bool, count: int = 16):
    """An iterator over `count` input sets (graph_path times 15 calls), drawn before the timing."""
    import torch

    generator = torch.Generator().manual_seed(1)
    return iter([_inputs(sample, i % 6, generator, backward) for i in range(count)])  # numbers scaled as in 6 steps


def _leaves(value) -> list:
    import torch

    return [t for t in torch.utils._pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]


def _state(built: dict):
    """The tensors a step keeps: the owner's modules' state, or, for a module function, what its
    arguments hold (graph_path's comparison)."""
    owner = getattr(built["step"], "__self__", None)
    if owner is not None:
        yield from graph_path._params(owner)
    yield from graph_path._arg_state(built["args"])


def _grads(model) -> list:
    return [p.grad.detach().clone() if p.grad is not None else None for p in model.parameters()]


def _compare(name: str, ours: list, theirs: list, result: dict) -> None:
    import torch

    if len(ours) != len(theirs):
        result["mismatches"].append(f"{name}: {len(ours)} tensors vs {len(theirs)}")
        return
    for j, (a, b) in enumerate(zip(ours, theirs)):
        if a is None or b is None:
            if (a is None) != (b is None):
                result["mismatches"].append(f"{name} {j}: one side has none")
            continue
        if a.shape != b.shape:
            result["mismatches"].append(f"{name} {j}: shape {tuple(a.shape)} vs {tuple(b.shape)}")
            continue
        if not a.numel():
            continue
        diff = float((a.detach().float() - b.detach().float()).abs().max())
        result["max_diff"] = max(result["max_diff"], diff)
        if not torch.allclose(a.detach().float().cpu(), b.detach().float().cpu(), rtol=RTOL, atol=ATOL):
            result["mismatches"].append(f"{name} {j}: max diff {diff:.3g}")


def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()
