"""The one path on a corpus program: `graphsafe graph` in a scratch copy, then on a GPU the split
core wired to `graphed()` and run for several steps with the per-step values changing, against an
eager twin of the same split program (CPU equivalence of split and original: tests/).

    python bench/graph_path.py --program train_loop --region Trainer.train_step [--steps 6] [--json OUT]
    python bench/graph_path.py --program moe_router --region MoEModel.forward --backward
    python bench/graph_path.py ... --compile   # and torch.compile(mode="reduce-overhead") of the original

Each result carries the graphed and eager ms of one whole call and the eager step's kernel-only floor
(graph_over_floor: the graphed step over it).

`--backward` (forward+backward, what make_graphed_callables did for the program): the factory's step
is a model (or a bound forward); its core (`forward_core`, else `forward` when `graph` did not split
it) is wired to `graphed()` with its backward (runtime/graphed_autograd.py), and each step draws new
inputs and, for a 2-D boolean argument, a new padding mask (a prefix of each row), calls the model,
takes a fixed weighted sum of its outputs as the loss and runs `loss.backward()`; the outputs, the
input and parameter gradients and the modules' buffers and numbers are compared with an eager twin.

The program's capture.py factory builds the step (`{"step": obj.method, "args": (...)}`); each step
draws new inputs like the sample's (floats: randn, integers: a shuffle of the sample's values)
and scales Python floats (an lr, a temperature) by a changing factor.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def graph_copy(program: str, region: str, scratch: Path) -> tuple[Path, str]:
    target = scratch / program
    shutil.copytree(REPO / "corpus" / program, target)
    paths = [str(REPO)] + [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    run = subprocess.run([sys.executable, "-m", "graphsafe", "graph", ".", "--region", region, "--no-cache"],
                         cwd=target, capture_output=True, text=True, env=env)
    return target, run.stdout + run.stderr


def _vary(value, i: int, generator):
    import torch

    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            return torch.randn(value.shape, generator=generator).to(value.device, value.dtype)
        flat = value.flatten()
        order = torch.randperm(flat.numel(), generator=generator).to(flat.device)
        return flat[order].view_as(value)
    if isinstance(value, float):
        return value * (1.0 - 0.12 * i)
    return value


def wiring_options(report: str) -> dict:
    """The options of the `graphed(...)` line `graphsafe graph` printed."""
    for line in report.splitlines():
        if "= graphed(" in line and ")   #" in line:
            inside = line.split("= graphed(", 1)[1].split(")   #", 1)[0]
            _, _, options = inside.partition(", ")
            return eval(f"dict({options})") if options else {}
    return {}


def run_gpu(program_dir: Path, steps: int, options: dict) -> dict:
    import torch

    from graphsafe.runtime import graphed

    sys.path.insert(0, str(program_dir))
    factory = importlib.import_module("capture").make
    built, twin = factory("cuda"), factory("cuda")
    step, twin_step = built["step"], twin["step"]
    name = step.__name__
    owner = getattr(step, "__self__", None) or sys.modules[step.__module__]
    twin_owner = getattr(twin_step, "__self__", None) or owner
    core_name = f"{name}_core"
    if not hasattr(owner, core_name):
        return {"status": "not split"}
    eager_core = getattr(owner, core_name)
    graphed_core = graphed(eager_core, **options)
    setattr(owner, core_name, graphed_core)
    # a module function's owner is the module both builds share: the twin must call the eager core
    # (and with its own objects, which the factory built alike), not the graphed one
    shared = twin_owner is owner

    def eager(*args):
        if not shared:
            return twin_step(*args)
        setattr(owner, core_name, eager_core)
        try:
            return twin_step(*args)
        finally:
            setattr(owner, core_name, graphed_core)

    generator, twin_generator = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    worst, rows = 0.0, []
    try:
        for i in range(steps):
            args = tuple(_vary(a, i, generator) for a in built["args"])
            twin_args = tuple(_vary(a, i, twin_generator) for a in twin["args"])
            before = _rng_states()
            out = step(*args)
            _set_rng_states(before)  # the twin draws the numbers the graphed call drew
            ref = eager(*twin_args)
            flat = [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
            ref_flat = [t for t in torch.utils._pytree.tree_leaves(ref) if isinstance(t, torch.Tensor)]
            diff = max((float((a.float() - b.float()).abs().max()) for a, b in zip(flat, ref_flat)), default=0.0)
            worst = max(worst, diff)
            rows.append(diff)
    except Exception as error:  # a capture failure is a result
        import traceback

        return {"status": "failed", "error": f"{type(error).__name__}: {error}"[:600],
                "where": traceback.format_exc(limit=-4)[-1500:]}
    state = {}
    for key, value in (vars(twin_owner).items() if twin_owner is not owner else ()):
        mine = getattr(owner, key, None)
        if isinstance(value, (int, float, str)) or (isinstance(value, list) and len(value) < 1000):
            state[key] = (repr(value)[:80] == repr(mine)[:80]) if not isinstance(value, list) else len(value) == len(mine)
    params = [(p, q) for p, q in zip(_params(owner), _params(twin_owner))]
    if shared:  # a module function: the state is in the objects each build passed (model, caches, ...)
        params = list(zip(_arg_state(built["args"]), _arg_state(twin["args"])))
    param_diff = max((float((p.float() - q.float()).abs().max()) for p, q in params), default=0.0)
    twin_numbers = _module_numbers(twin_owner)
    differing = {name: (value, twin_numbers.get(name)) for name, value in _module_numbers(owner).items()
                 if not _same(value, twin_numbers.get(name))}
    state["module numbers"] = not differing
    if differing:
        state["module numbers differing (graphed, eager)"] = {k: repr(v)[:60] for k, v in list(differing.items())[:6]}
    graph = getattr(owner, core_name)
    try:
        timing = {"graphed_ms": _median_ms(step, built["args"]), "eager_ms": _median_ms(eager, twin["args"])}
        timing["speedup"] = timing["eager_ms"] / timing["graphed_ms"]
        timing.update(kernel_floor(lambda: eager(*twin["args"]), timing["graphed_ms"]))
    except Exception as error:  # a step that cannot run 15 more times (a decode past its length)
        timing = {"timing": f"not timed: {type(error).__name__}: {error}"[:200]}
    return {"status": "ok", **timing, "max_output_diff": worst, "per_step": rows, "max_param_diff": param_diff,
            "python_state_equal": state, "replays": graph.stats["replays"], "eager_calls": graph.stats["eager"]}


def _vary_padded(value, generator, requires_grad: bool):
    """A new input like `value`: floats randn, a 2-D bool mask a prefix of each row (its length drawn)."""
    import torch

    if isinstance(value, torch.Tensor) and value.dtype == torch.bool and value.dim() == 2:
        lengths = torch.randint(1, value.shape[1] + 1, (value.shape[0],), generator=generator)
        return (torch.arange(value.shape[1])[None, :] < lengths[:, None]).to(value.device)
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return torch.randn(value.shape, generator=generator).to(value.device, value.dtype).requires_grad_(requires_grad)
    return value


def _model_state(model) -> dict:
    """Buffers and the Python numbers of every submodule (a counter, a statistic), by name."""
    import torch

    state = {name: b.detach().clone() for name, b in model.named_buffers()}
    for name, module in model.named_modules():
        for attr, value in vars(module).items():
            if not attr.startswith("_") and not isinstance(value, bool) and isinstance(value, (int, float,
                                                                                            torch.Tensor)):
                state[f"{name}.{attr}" if name else attr] = value  # a counter `graph` made a buffer: same name
    return state


def _factory(program_dir: Path):
    """capture.make of one program folder (its modules imported afresh: two folders share names)."""
    for name in ("capture", "model"):
        sys.modules.pop(name, None)
    sys.path.insert(0, str(program_dir))
    try:
        module = importlib.import_module("capture")
    finally:
        sys.path.remove(str(program_dir))
    local = [n for n, m in sys.modules.items() if str(program_dir) in str(getattr(m, "__file__", "") or "")]
    for name in local:  # the folder's own modules: the next folder imports its own
        sys.modules.pop(name, None)
    return module.make


def run_backward(program_dir: Path, steps: int, options: dict, device: str = "cuda", backend: str = "cuda",
                 tolerance: float = 1e-5, original_dir: Path | None = None) -> dict:
    """The forward+backward comparison (see the module docstring); the eager twin is built from
    `original_dir` (the program before `graph`) when given, else from the same folder.
    `backend="eager"` with `device="cpu"` is its CPU stand-in (graphed()'s argument handling and
    backward wiring, no graphs)."""
    import torch

    from graphsafe.runtime import graphed

    built = _factory(program_dir)(device)
    twin = _factory(original_dir or program_dir)(device)
    model, twin_model = (getattr(b["step"], "__self__", b["step"]) for b in (built, twin))
    if not isinstance(model, torch.nn.Module) or model is twin_model:
        return {"status": "the factory's step is not a model's forward (built anew by each call)"}
    if [n for n, _ in model.named_parameters()] != [n for n, _ in twin_model.named_parameters()]:
        return {"status": "the graphed and the eager model have other parameters"}
    twin_model.load_state_dict(model.state_dict(), strict=False)  # `graph` may add non-persistent buffers
    core_name = "forward_core" if hasattr(model, "forward_core") else "forward"
    setattr(model, core_name, graphed(getattr(model, core_name), backend=backend, **options))
    graph = getattr(model, core_name)
    generator, twin_generator = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    weights = torch.Generator().manual_seed(1)
    worst = {"outputs": 0.0, "input_grads": 0.0, "param_grads": 0.0, "state": 0.0}
    mismatches: list[str] = []

    def diff(a, b) -> float:
        return float((a.detach().float() - b.detach().float()).abs().max()) if a.numel() else 0.0

    def check(kind: str, name: str, a, b) -> None:
        if a is None and b is None:
            return
        if a is None or b is None:  # an expert that got no rows: no gradient eagerly, 0 densely
            present = a if a is not None else b
            if isinstance(present, torch.Tensor) and not present.any():
                return
            mismatches.append(f"{kind} {name}: one side has none")
            return
        if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
            a, b = torch.as_tensor(a), torch.as_tensor(b)
            worst[kind] = max(worst[kind], diff(a, b))
            if a.shape != b.shape or not torch.allclose(a.float().cpu(), b.float().cpu(), rtol=tolerance, atol=1e-6):
                mismatches.append(f"{kind} {name}: max diff {diff(a, b):.3g}")
        elif a != b:
            mismatches.append(f"{kind} {name}: {a!r} != {b!r}")

    try:
        for i in range(steps):
            args = tuple(_vary_padded(a, generator, getattr(a, "requires_grad", False)) for a in built["args"])
            twin_args = tuple(_vary_padded(a, twin_generator, getattr(a, "requires_grad", False))
                              for a in twin["args"])
            results = []
            before = _rng_states(device)
            for net, inputs in ((model, args), (twin_model, twin_args)):
                _set_rng_states(before, device)  # both draw the same numbers
                net.zero_grad(set_to_none=True)
                out = net(*inputs)
                leaves = [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
                if not results:
                    scales = [torch.randn(t.shape, generator=weights).to(t.device, t.dtype) for t in leaves]
                loss = sum((t * w).sum() for t, w in zip(leaves, scales))
                loss.backward()
                results.append(([t.detach().clone() for t in leaves],
                                [a.grad.clone() if isinstance(a, torch.Tensor) and a.grad is not None else None
                                 for a in inputs],
                                {n: (p.grad.clone() if p.grad is not None else None)
                                 for n, p in net.named_parameters()}, _model_state(net)))
            (o1, g1, p1, s1), (o2, g2, p2, s2) = results
            for j, (a, b) in enumerate(zip(o1, o2)):
                check("outputs", f"step {i} output {j}", a, b)
            for j, (a, b) in enumerate(zip(g1, g2)):
                check("input_grads", f"step {i} argument {j}", a, b)
            for name in p2:
                check("param_grads", f"step {i} {name}", p1.get(name), p2[name])
            for name in s2:  # the eager model's numbers and buffers, each kept by the graphed one
                if name not in s1:
                    mismatches.append(f"state step {i} {name}: not in the graphed model")
                    continue
                check("state", f"step {i} {name}", s1[name], s2[name])
    except Exception as error:  # a capture failure is a result
        import traceback

        return {"status": "failed", "error": f"{type(error).__name__}: {error}"[:600],
                "where": traceback.format_exc(limit=-4)[-1500:]}
    timing = {}
    if device == "cuda":  # one forward+backward, whole call, the same inputs each time
        from graph_path_compile import _training_step

        args = tuple(_vary_padded(a, torch.Generator().manual_seed(1), getattr(a, "requires_grad", False))
                     for a in built["args"])
        twin_args = tuple(_vary_padded(a, torch.Generator().manual_seed(1), getattr(a, "requires_grad", False))
                          for a in twin["args"])
        graphed_step, eager_step = _training_step(model, model), _training_step(twin_model, twin_model)
        timing = {"graphed_ms": _median_ms(graphed_step, args), "eager_ms": _median_ms(eager_step, twin_args)}
        timing["speedup"] = timing["eager_ms"] / timing["graphed_ms"]
        timing.update(kernel_floor(lambda: eager_step(*twin_args), timing["graphed_ms"]))
    return {"status": "ok" if not mismatches else "differs", "max_diff": worst, "mismatches": mismatches[:12],
            "graphed": core_name, "replays": graph.stats["replays"], "eager_calls": graph.stats["eager"], **timing}


def kernel_floor(eager_step, graphed_ms: float) -> dict:
    """The eager step's kernel-only time (device busy time, no launch gaps) and the graphed step over it:
    how close the graph gets to what the kernels themselves cost."""
    import torch

    from graphsafe.runtime.capture import _CudaBackend

    try:
        floor = _CudaBackend(torch.device("cuda", torch.cuda.current_device())).kernel_floor_ms(eager_step, 10)
    except Exception as error:  # the profiler is optional: report without the floor
        return {"floor_note": f"kernel-only floor not measured: {type(error).__name__}: {error}"[:300]}
    return {"floor_ms": floor, "graph_over_floor": graphed_ms / floor} if floor else {}


def _rng_states(device: str = "cuda"):
    import random

    import torch

    return random.getstate(), torch.get_rng_state(), torch.cuda.get_rng_state() if device == "cuda" else None


def _set_rng_states(states, device: str = "cuda") -> None:
    import random

    import torch

    random.setstate(states[0])
    torch.set_rng_state(states[1])
    if device == "cuda":
        torch.cuda.set_rng_state(states[2])


def _median_ms(fn, args, samples: int = 15) -> float:
    """Median wall time of one call (host work included), the GPU synchronised after each."""
    import statistics
    import time

    import torch

    times = []
    for _ in range(samples):
        torch.cuda.synchronize()
        started = time.perf_counter()
        fn(*args)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


def _params(owner):
    """Parameters and buffers of the owner's modules (a running mean is state a replay must keep)."""
    import torch

    for value in vars(owner).values():
        if isinstance(value, torch.nn.Module):
            yield from (t.detach() for t in value.state_dict().values() if isinstance(t, torch.Tensor))


def _arg_state(args):
    """Tensors held by a step's arguments: tensors, modules' parameters and buffers, and the tensor
    fields of plain objects and lists (a KV cache list, a decode-state dataclass), in a fixed order."""
    import torch

    for value in args:
        if isinstance(value, torch.Tensor):
            yield value.detach()
        elif isinstance(value, torch.nn.Module):
            yield from (t.detach() for t in value.state_dict().values() if isinstance(t, torch.Tensor))
            yield from (t.detach() for t in value.buffers())
        elif isinstance(value, (list, tuple)):
            yield from _arg_state(value)
        elif hasattr(value, "__dict__"):
            yield from _arg_state([v for v in vars(value).values() if isinstance(v, (torch.Tensor, torch.nn.Module))])


def _module_numbers(owner) -> dict:
    """Python numbers and plain tensor attributes (not parameters or buffers) held by the owner's
    modules and their children: a running count, a dashboard statistic."""
    import torch

    found = {}
    for key, value in vars(owner).items():
        if isinstance(value, torch.nn.Module):
            for name, module in value.named_modules():
                for attr, number in vars(module).items():
                    if attr.startswith("_") or isinstance(number, bool):
                        continue
                    if isinstance(number, (int, float, torch.Tensor)):  # numbers and plain tensor attributes
                        found[f"{key}.{name}.{attr}"] = number
    return found


def _same(a, b) -> bool:
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                and bool(torch.allclose(a.float(), b.float(), rtol=1e-4, atol=1e-6)))
    return a == b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", required=True)
    parser.add_argument("--region", required=True)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--compile", action="store_true", help="also torch.compile(mode='reduce-overhead') "
                        "the original program, compared with its eager build and timed alike")
    parser.add_argument("--compile-only", action="store_true", help="only the torch.compile column (no `graph`)")
    parser.add_argument("--backward", action="store_true", help="forward+backward: graphed() with its backward, "
                        "gradients compared (a model's forward, as make_graphed_callables graphed it)")
    parser.add_argument("--fallback-random", action="store_true", help="torch.compile draws its random numbers "
                        "as eager does (torch._inductor.config.fallback_random), so a sampler's compile column "
                        "can be compared with eager")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        program_dir, report = graph_copy(args.program, args.region, Path(scratch))
        result = {"program": args.program, "region": args.region, "graph_report": report}
        try:
            import torch

            result["device"] = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
            result["torch"] = torch.__version__
            if args.fallback_random:
                import torch._inductor.config

                torch._inductor.config.fallback_random = True
                result["fallback_random"] = True
            if torch.cuda.is_available() and args.compile_only:
                from graph_path_compile import compile_column

                result["compile"] = compile_column(REPO / "corpus" / args.program, args.steps, args.backward)
            elif torch.cuda.is_available():
                result["options"] = wiring_options(report)
                if args.backward:  # the twin: the program as it was, eager
                    result.update(run_backward(program_dir, args.steps, result["options"],
                                               original_dir=REPO / "corpus" / args.program))
                else:
                    result.update(run_gpu(program_dir, args.steps, result["options"]))
                if args.compile:
                    from graph_path_compile import compile_column, forget_modules

                    forget_modules(program_dir)
                    result["compile"] = compile_column(REPO / "corpus" / args.program, args.steps, args.backward)
        except ImportError:
            result["device"] = "no torch"
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
