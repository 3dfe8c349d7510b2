"""One (step, variant) of the real end-to-end benchmark, in a fresh process.

    python -m bench.real_e2e.worker REQUEST.json RESULT.json     (cwd: the repository root)

REQUEST: {"mode", "step", "paths" (the variant's source tree first, then the step's installed
EXTRA), "device", "seed", "steps", "trace_out", "reference", "tolerance", "repeats", "inner",
"compile"}. Modes:

- eager (CPU or GPU): build twice with one seed, run `steps` eager steps on each with inputs(i)
  changing, say whether both runs agree bitwise, save the first run's outputs and state per step
  (`trace_out`) and compare them with another variant's trace (`reference`).
- gpu_orig: the eager trace, the eager step time, and torch.compile(mode="reduce-overhead") of
  the step: compile seconds, step time, and its results against an eager twin step by step.
- gpu_fixed: the eager trace (compared with orig's), graphsafe's trial capture of the step
  (captured or the classified failure, replay vs eager, replay time, kernel-only floor, graph
  pool), then a replay with the inputs changing every step (copied into the captured input
  buffers) against an eager twin.

RESULT is written atomically: {"result": {...}} or {"error": message, "traceback": text}. A
failed capture can poison the process; each process runs one (step, variant) and exits.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
import time
import traceback
from typing import Any, Callable

WARMUP = 3  # eager steps on a side stream before capture, as trial_capture does


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python -m bench.real_e2e.worker REQUEST.json RESULT.json\n")
        return 2
    request_path, result_path = argv
    with open(request_path, encoding="utf-8") as handle:
        request = json.load(handle)
    for path in reversed(request["paths"]):  # the variant's source tree first: its copy is the one imported
        sys.path.insert(0, path)
    try:
        payload = {"result": MODES[request["mode"]](request)}
    except Exception as error:  # the step's failure is a row of the table, not a crash of the harness
        payload = {"error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc(limit=-6)}
    tmp = f"{result_path}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, default=_json_default)
    os.replace(tmp, result_path)
    return 0


def _json_default(value: Any) -> Any:
    return value if not isinstance(value, float) or math.isfinite(value) else str(value)


# --- loading a step ------------------------------------------------------------------------------


def load_step(request: dict):
    module = importlib.import_module(f"bench.real_e2e.steps.{request['step']}")
    return module


def check_imported_from(module, source_root: str) -> None:
    """The package under test must come from the variant's tree, not from an installed copy."""
    top = module.REGION.split("/")[0]
    imported = sys.modules.get(top)
    where = getattr(imported, "__file__", None) or ""
    if imported is not None and not os.path.realpath(where).startswith(os.path.realpath(source_root) + os.sep):
        raise RuntimeError(f"{top} was imported from {where}, not from the scratch copy {source_root}")


# --- traces: outputs and state per eager step ----------------------------------------------------


def flat(value: Any, root: str) -> dict[str, Any]:
    """Tensors (on the CPU) and Python numbers of a value, by pytree path."""
    import torch

    from graphsafe.runtime.snapshot import leaves_with_names

    out = {}
    for name, leaf in leaves_with_names(value, root):
        if isinstance(leaf, torch.Tensor):
            out[name] = leaf.detach().cpu().clone()
        elif isinstance(leaf, (bool, int, float)):
            out[name] = torch.tensor(float(leaf), dtype=torch.float64)
    return out


def eager_trace(module, device: str, seed: int, steps: int) -> list[dict]:
    import torch

    built = module.build(device, seed)
    trace = []
    for i in range(steps):
        output = built.step(*built.inputs(i))
        record = flat(output, "output")
        record.update(flat(built.state(), "state"))
        trace.append(record)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return trace


def compare_traces(reference: list[dict], trace: list[dict]) -> dict:
    """Step by step: the same names, the same values (compared in float64)? Max abs difference."""
    import torch

    exact, max_abs, differing = True, 0.0, []
    if len(reference) != len(trace):
        return {"exact": False, "max_abs": None, "differing": [f"{len(reference)} steps vs {len(trace)}"]}
    for i, (a, b) in enumerate(zip(reference, trace)):
        for name in sorted(a.keys() | b.keys()):
            if name not in a or name not in b:
                exact = False
                differing.append(f"step {i}: {name} only in the {'reference' if name in a else 'variant'}")
                continue
            x, y = a[name].to(torch.float64) if not a[name].is_complex() else a[name], b[name]
            y = y.to(x.dtype)
            if x.shape != y.shape:
                exact = False
                differing.append(f"step {i}: {name} shape {tuple(x.shape)} vs {tuple(y.shape)}")
                continue
            same = (x == y) | (torch.isnan(x) & torch.isnan(y))
            if bool(same.all()):
                continue
            exact = False
            finite = torch.isfinite(x) & torch.isfinite(y)
            diff = float((x - y).abs()[finite].max()) if bool(finite.any()) else math.inf
            if bool((~same & ~finite).any()):
                diff = math.inf
            max_abs = max(max_abs, diff)
            differing.append(f"step {i}: {name} (max abs {diff:.3g})")
    return {"exact": exact, "max_abs": max_abs, "differing": differing[:8]}


def run_eager(request: dict) -> dict:
    import torch

    module = load_step(request)
    device, seed, steps = request["device"], request["seed"], request["steps"]
    if device == "cpu":
        torch.use_deterministic_algorithms(True)
    first = eager_trace(module, device, seed, steps)
    check_imported_from(module, request["paths"][0])
    second = eager_trace(module, device, seed, steps)
    result = {"steps": steps, "determinism": compare_traces(first, second)}
    if request.get("trace_out"):
        torch.save(first, request["trace_out"])
    if request.get("reference"):
        result["vs_orig"] = compare_traces(torch.load(request["reference"]), first)
    return result


# --- RNG: an eager twin draws the numbers the replay drew -----------------------------------------


def rng_state(device) -> tuple:
    """torch's CPU and CUDA states (compared between the twins), then Python's `random` and numpy's
    global state (only restored: sb3's replay buffer samples its batch with `np.random`)."""
    import random

    import torch

    numpy = sys.modules.get("numpy")
    return (torch.get_rng_state(), torch.cuda.get_rng_state(device), random.getstate(),
            numpy.random.get_state() if numpy is not None else None)


def set_rng_state(state: tuple, device) -> None:
    import random

    import torch

    torch.set_rng_state(state[0])
    torch.cuda.set_rng_state(state[1], device)
    random.setstate(state[2])
    numpy = sys.modules.get("numpy")
    if numpy is not None and state[3] is not None:
        numpy.random.set_state(state[3])


def twin_step(run_a: Callable[[], Any], run_b: Callable[[], Any], device) -> tuple[Any, Any, tuple, tuple]:
    """Run a (graph, compiled) and b (eager) from the same RNG state; the states after each. The
    RNG is left where b left it, so the next step of both starts from eager's state."""
    before = rng_state(device)
    out_a = run_a()
    after_a = rng_state(device)
    set_rng_state(before, device)
    out_b = run_b()
    after_b = rng_state(device)
    return out_a, out_b, after_a, after_b


def step_comparisons(step: int, out_a: Any, out_b: Any, built_a, built_b, rng_a: tuple, rng_b: tuple,
                     tolerance) -> list[str]:
    """What differs after one step between a (replay or compiled) and its eager twin b."""
    from graphsafe.runtime.snapshot import compare_values, leaves_with_names

    def reading(out, built, rng) -> dict:
        values = {name: ("output", leaf) for name, leaf in leaves_with_names(out, "output")}
        values.update({f"state.{k}": ("state", v) for k, v in built.state().items()})
        values.update({"rng.cpu": ("rng", rng[0]), "rng.cuda": ("rng", rng[1])})
        return values

    bad = [c for c in compare_values(reading(out_a, built_a, rng_a), reading(out_b, built_b, rng_b), tolerance)
           if not c.ok]
    return [f"step {step}: {c.name}" + (f" (max abs {c.max_abs:.3g})" if c.max_abs is not None else "")
            + (f": {c.note}" if c.note else "") for c in bad]


def copy_inputs(static: tuple, new: tuple) -> list[str]:
    """Copy a step's inputs into the captured input buffers; notes on what cannot be copied."""
    import torch
    import torch.utils._pytree as pytree

    notes = []
    static_leaves, new_leaves = pytree.tree_leaves(static), pytree.tree_leaves(new)
    if len(static_leaves) != len(new_leaves):
        return [f"inputs(i) has {len(new_leaves)} leaves, the captured inputs {len(static_leaves)}"]
    for k, (s, n) in enumerate(zip(static_leaves, new_leaves)):
        if isinstance(s, torch.Tensor) and isinstance(n, torch.Tensor):
            if s.shape != n.shape or s.dtype != n.dtype:
                notes.append(f"input {k} changes shape or dtype ({tuple(s.shape)} {s.dtype} -> {tuple(n.shape)} "
                             f"{n.dtype}): the graph cannot take it")
            else:
                s.copy_(n)
        elif s != n:
            notes.append(f"input {k} is a Python {type(n).__name__} that changes per step ({s!r} -> {n!r}): "
                         "the graph keeps the captured value")
    return notes


# --- GPU: eager time and torch.compile on orig -----------------------------------------------------


def _backend(device: str):
    import torch

    from graphsafe.runtime.capture import _CudaBackend

    return _CudaBackend(torch.device(device if ":" in device else f"{device}:{torch.cuda.current_device()}"))


def run_gpu_orig(request: dict) -> dict:
    import statistics

    import torch

    module = load_step(request)
    device, seed, steps = request["device"], request["seed"], request["steps"]
    trace = eager_trace(module, device, seed, steps)
    check_imported_from(module, request["paths"][0])
    torch.save(trace, request["trace_out"])
    backend = _backend(device)
    built = module.build(device, seed)
    args = built.inputs(0)
    samples = backend.time_ms(lambda: built.step(*args), request["repeats"], request["inner"])
    result = {"device": backend.name, "torch": torch.__version__, "eager_ms": statistics.median(samples)}
    if request.get("compile"):
        result["compile"] = compile_trial(module, request, backend)
    return result


def compile_trial(module, request: dict, backend) -> dict:
    import statistics

    import torch

    from graphsafe.runtime.capture_report import Tolerance
    from graphsafe.runtime.classify import classify_exception
    from graphsafe.runtime.snapshot import clone_tree

    device, seed, steps = request["device"], request["seed"], request["steps"]
    tolerance = Tolerance.parse(request.get("tolerance"))
    a, b = module.build(device, seed), module.build(device, seed)
    compiled = torch.compile(a.step, mode="reduce-overhead")
    mark = getattr(torch.compiler, "cudagraph_mark_step_begin", lambda: None)

    def call(args):
        mark()
        return clone_tree(compiled(*args))

    result: dict[str, Any] = {"status": "ok", "mismatches": []}
    phase = "compile"
    try:
        started = time.perf_counter()
        for i in range(steps):
            inputs = a.inputs(i)
            twin_inputs = b.inputs(i)
            out_a, out_b, rng_a, rng_b = twin_step(lambda: call(inputs), lambda: clone_tree(b.step(*twin_inputs)),
                                                   backend.device)
            backend.sync()
            if i == 2:  # warm-up run, recording run, first replay: what compiling costs
                result["compile_s"] = time.perf_counter() - started
            result["mismatches"] += step_comparisons(i, out_a, out_b, a, b, rng_a, rng_b, tolerance)
        result["match"] = not result["mismatches"]
        result["mismatches"] = result["mismatches"][:8]
        phase = "timing"
        args = a.inputs(0)
        samples = backend.time_ms(lambda: (mark(), compiled(*args)), request["repeats"], request["inner"])
        result["compiled_ms"] = statistics.median(samples)
        from torch._dynamo.utils import counters

        if counters.get("inductor", {}).get("cudagraph_skips", 0):
            result["note"] = "torch.compile skipped CUDA graphs for part of the step"
    except Exception as error:
        result.update(status="failed", failure=classify_exception(error, phase).to_json())
    return result


# --- GPU: graphsafe's trial capture of the fixed step, then replays with changing inputs -----------


def run_gpu_fixed(request: dict) -> dict:
    import torch

    from graphsafe.runtime.capture import trial_capture

    module = load_step(request)
    device, seed, steps = request["device"], request["seed"], request["steps"]
    trace = eager_trace(module, device, seed, steps)
    check_imported_from(module, request["paths"][0])
    result: dict[str, Any] = {"torch": torch.__version__}
    if request.get("reference") and os.path.isfile(request["reference"]):
        result["vs_orig"] = compare_traces(torch.load(request["reference"]), trace)
    built = module.build(device, seed)
    report = trial_capture(built.step, built.inputs(0), replays=steps, tolerance=request.get("tolerance"),
                           repeats=request["repeats"], inner=request["inner"], timing=True, profile=True)
    result["trial"] = report.to_json()
    if report.captured:
        result["changing_inputs"] = replay_with_changing_inputs(module, request)
    return result


def replay_with_changing_inputs(module, request: dict) -> dict:
    """Capture step(*inputs(0)) on a fresh build; for each later step copy inputs(i) into the
    captured input buffers, replay, and compare outputs, state and RNG with an eager twin (a second
    build with the same seed) that runs step(*inputs(i))."""
    import torch

    from graphsafe.runtime.capture_report import Tolerance
    from graphsafe.runtime.classify import classify_exception
    from graphsafe.runtime.snapshot import clone_tree

    device, seed, steps = request["device"], request["seed"], request["steps"]
    tolerance = Tolerance.parse(request.get("tolerance"))
    backend = _backend(device)
    a, b = module.build(device, seed), module.build(device, seed)
    static = clone_tree(a.inputs(0))
    result: dict[str, Any] = {"steps": steps, "mismatches": [], "notes": []}
    phase = "warmup"
    try:
        def warm_a():
            with backend.side_stream():
                for _ in range(WARMUP):
                    a.step(*static)
            backend.sync()

        def warm_b():
            for _ in range(WARMUP):
                b.step(*b.inputs(0))
            backend.sync()

        twin_step(warm_a, warm_b, backend.device)
        phase = "capture"
        graph = torch.cuda.CUDAGraph()
        before = rng_state(backend.device)
        with torch.cuda.graph(graph):
            static_out = a.step(*static)
        set_rng_state(before, backend.device)
        phase = "replay"
        for i in range(1, steps + 1):
            result["notes"] += copy_inputs(static, a.inputs(i))
            twin_inputs = b.inputs(i)
            _, out_b, rng_a, rng_b = twin_step(graph.replay, lambda: b.step(*twin_inputs), backend.device)
            backend.sync()
            result["mismatches"] += step_comparisons(i, clone_tree(static_out), out_b, a, b, rng_a, rng_b,
                                                     tolerance)
        result["match"] = not result["mismatches"]
    except Exception as error:
        result.update(match=False, failure=classify_exception(error, phase).to_json())
    result["mismatches"] = result["mismatches"][:8]
    result["notes"] = sorted(set(result["notes"]))
    return result


# --- GPU: the one path — `graphsafe graph`'s core wired to graphed(), the step run as the user runs it ---


def wire_core(request: dict):
    """Install graphed() on the core `graphsafe graph` named (every instance of its class, or the
    module's function), with the options it printed; returns what was installed."""
    from graphsafe.runtime.graphed import graph_method

    graph = request["graph"]
    wire = graph.get("wire") or {}
    if wire.get("module"):
        owner = importlib.import_module(wire["module"])
        for part in wire["owner"].split(".") if wire["owner"] else ():
            owner = getattr(owner, part)
        return graph_method(owner, wire["name"], **graph["options"])
    module_name = graph["path"][:-3].replace("/", ".")
    if module_name.endswith(".__init__"):
        module_name = module_name[: -len(".__init__")]
    module = importlib.import_module(module_name)
    owner_name, _, core = graph["core"].rpartition(".")
    owner = module
    for part in owner_name.split(".") if owner_name else ():
        owner = getattr(owner, part)
    return graph_method(owner, core, **graph["options"])


def run_gpu_graph(request: dict) -> dict:
    """The graph variant's step, built twice: one with its core graphed (the wiring `graphsafe
    graph` printed), one eager twin; `steps` calls with inputs(i) changing, compared call by call
    (outputs, state, RNG), then timed. The eager trace of the variant is compared with orig's too."""
    import statistics

    import torch

    from graphsafe.runtime.capture_report import Tolerance
    from graphsafe.runtime.classify import classify_exception
    from graphsafe.runtime.graphed import GraphedMethod
    from graphsafe.runtime.snapshot import clone_tree

    module = load_step(request)
    device, seed, steps = request["device"], request["seed"], request["steps"]
    trace = eager_trace(module, device, seed, steps)
    check_imported_from(module, request["paths"][0])
    result: dict[str, Any] = {"torch": torch.__version__, "mismatches": []}
    if request.get("reference") and os.path.isfile(request["reference"]):
        result["vs_orig"] = compare_traces(torch.load(request["reference"]), trace)
    tolerance = Tolerance.parse(request.get("tolerance"))
    backend = _backend(device)
    phase = "wiring"
    try:
        closure = (request["graph"].get("wire") or {}).get("closure")
        installed = None if closure else wire_core(request)
        a = module.build(device, seed)
        b = module.build(device, seed)
        if closure:  # the core hangs on each closure the factory built: graph a's, leave the twin's
            installed = wire_closures(a, request)
        if isinstance(installed, GraphedMethod):
            for instance in _instances_of(b, installed):
                installed.eager(instance)
        phase = "capture"
        for i in range(steps):
            inputs, twin_inputs = a.inputs(i), b.inputs(i)
            run_b = ((lambda: clone_tree(_eager_step(installed, b, twin_inputs)))
                     if isinstance(installed, (GraphedMethod, list)) else None)
            if run_b is None:  # a module function: one graphed object serves both; the twin runs the eager trace
                out_a = clone_tree(a.step(*inputs))
                result["mismatches"] += [f"step {i}: {d}" for d in
                                         compare_traces([trace[i]], [dict(flat(out_a, "output"),
                                                                          **flat(a.state(), "state"))])["differing"]]
                continue
            out_a, out_b, rng_a, rng_b = twin_step(lambda: clone_tree(a.step(*inputs)), run_b, backend.device)
            backend.sync()
            phase = "replay"
            result["mismatches"] += step_comparisons(i, out_a, out_b, a, b, rng_a, rng_b, tolerance)
        result["match"] = not result["mismatches"]
        graphs = [g for g in _graphed_objects(installed)]
        result["replays"] = sum(g.stats["replays"] for g in graphs)
        result["eager_calls"] = sum(g.stats["eager"] for g in graphs)
        if isinstance(installed, GraphedMethod) and installed.shared is not None:  # shared=True: a layout's
            result["eager_calls"] += installed.stats["eager"] + installed.stats["probes"]  # eager probe, past layouts
        result["captures"] = sum(len(g.capture_seconds) for g in graphs)
        result["guard_fallbacks"] = sum(g.stats.get("fallbacks", 0) for g in graphs)  # baked host reads that differed
        phase = "timing"
        args = a.inputs(0)
        result["graph_ms"] = statistics.median(backend.time_ms(lambda: a.step(*args), request["repeats"],
                                                                request["inner"]))
        twin_args = b.inputs(0)
        result["eager_ms"] = statistics.median(backend.time_ms(lambda: _eager_step(installed, b, twin_args), request["repeats"],
                                                                request["inner"]))
        try:  # the kernel-only floor of the eager twin's step: how close the graphed step gets to it
            result["floor_ms"] = backend.kernel_floor_ms(lambda: b.step(*twin_args), request["inner"])
        except Exception as error:  # the profiler is optional: report without the floor
            result["floor_note"] = f"kernel-only floor not measured: {type(error).__name__}: {error}"[:300]
    except Exception as error:  # graphed() classified its own capture failure: keep its rule and line
        failure = getattr(error, "failure", None) or classify_exception(error, phase)
        result.update(match=False, failure=failure.to_json(), error=f"{type(error).__name__}: {error}"[:400],
                      traceback=traceback.format_exc()[-6000:])  # the failing line in torch's frames too
    result["mismatches"] = result["mismatches"][:8]
    return result


def _eager_step(installed, built, inputs):
    """The twin's step: a graphed method runs eagerly for every instance (those its step builds per
    call, an ODE solver per odeint(), included), not only for the ones eager() marked."""
    from graphsafe.runtime.graphed import GraphedMethod

    if isinstance(installed, GraphedMethod):
        with installed.eagerly():
            return built.step(*inputs)
    return built.step(*inputs)


def wire_closures(built, request: dict) -> list:
    """`fn.core = graphed(fn.core, **options)` on every closure of the build that `graphsafe graph`
    split (a factory's nested function: `supervised_training_step.update`), as its wiring says."""
    from graphsafe.runtime.graphed import graphed

    graph = request["graph"]
    wire = graph["wire"]
    factory, _, inner = wire["closure"].rpartition(".")
    qualname = f"{factory}.<locals>.{inner}"
    closures = [f for f in _reachable(built, lambda o: getattr(o, "__qualname__", None) == qualname
                                      and callable(o) and hasattr(o, wire["name"]))]
    if not closures:
        raise RuntimeError(f"no {qualname} with a {wire['name']} reachable from the build: nothing to graph")
    installed = []
    for function in closures:
        graphed_core = graphed(getattr(function, wire["name"]), **graph["options"])
        setattr(function, wire["name"], graphed_core)
        installed.append(graphed_core)
    return installed


def _instances_of(built, installed) -> list:
    """Objects reachable from a build (its step's closure and state) that the graphed method's class
    owns: the eager twin's copies are left ungraphed."""
    owner = installed.function.__qualname__.rpartition(".")[0]
    return _reachable(built, lambda obj: type(obj).__qualname__ == owner
                      or any(k.__qualname__ == owner for k in type(obj).__mro__))


def _reachable(built, wanted) -> list:
    """Objects reachable from a build (its step's closure, state and inputs) for which wanted(obj)."""
    found = []
    seen, stack = set(), [built.step, built.state, built.inputs]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or len(seen) > 20000:
            continue
        seen.add(id(obj))
        if wanted(obj):
            found.append(obj)
        if hasattr(obj, "__dict__") and not isinstance(obj, type):
            stack.extend(v for v in vars(obj).values() if not isinstance(v, (int, float, str, bytes)))
        elif isinstance(obj, (list, tuple, set)):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        if callable(obj) and getattr(obj, "__closure__", None):
            stack.extend(c.cell_contents for c in obj.__closure__ if _has(c))
    return found


def _has(cell) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _graphed_objects(installed) -> list:
    from graphsafe.runtime.graphed import GraphedMethod

    if isinstance(installed, GraphedMethod):
        return installed.graphs()
    return list(installed) if isinstance(installed, list) else [installed]


def run_facts(request: dict) -> dict:
    """`graphsafe trace --save-facts` on the step, as a user runs it before `graph`: `steps` calls
    with the inputs changing, traced (on a CPU the tracer simulates the device's syncs and host
    copies), the facts written for the variant's tree (request["facts_out"])."""
    from pathlib import Path

    from graphsafe.runtime.facts_writer import FactsRecorder, save
    from graphsafe.runtime.trace_cli import observing_calls
    from graphsafe.runtime.tracer import StepTracer

    module = load_step(request)
    built = module.build(request["device"], request["seed"])
    check_imported_from(module, request["paths"][0])
    stepper = StepTracer(built.step)
    facts = FactsRecorder(stepper.tracer.is_library_file)
    for i in range(request["steps"]):
        with observing_calls(facts):
            stepper.step(tuple(built.inputs(i)), {})
    findings = stepper.report().findings
    problem = save(facts, findings, Path(request["facts_out"]), Path(request["paths"][0]))
    return {"saved": problem is None, "problem": problem, "findings": len(findings)}


MODES = {"facts": run_facts, "eager": run_eager, "gpu_orig": run_gpu_orig, "gpu_fixed": run_gpu_fixed, "gpu_graph": run_gpu_graph}

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
