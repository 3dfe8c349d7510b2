"""Trial-capture benchmark: eager vs CUDA-graph replay vs the kernel-only floor, and
torch.compile(mode="reduce-overhead") for comparison, on the steps of bench/steps.py.

    PYTHONPATH=. python3 bench/bench_capture.py [--steps mlp_train,gpt_decode] [--modes graph,compile]
        [--budget-s 300] [--json-out PATH] [--md-out PATH]

Every trial runs in a fresh process through `graphsafe capture`'s subprocess protocol
(graphsafe.runtime.capture_cli.run_trial_subprocess), graph trials first, one at a time (the GPU
is never shared between timed runs); compile trials follow while the time budget lasts.

Columns: eager and replay are per-step times from CUDA events (median of `repeats` samples of
`inner` back-to-back calls); floor is the union of device busy intervals per eager step from
torch.profiler (kernels, memcpy, memset); replay/floor near 1 means launch overhead is gone
(target <= 1.10 on launch-bound steps); capture s is the wall time of the capture; pool MiB the
reserved size of the graph's private memory pool (allocator segments of that pool).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from graphsafe.runtime.capture_cli import TrialUsageError, run_trial_subprocess  # noqa: E402
from graphsafe.runtime.capture_report import CaptureReport  # noqa: E402

STEPS = {  # name -> kind (bench/steps.py holds the factories; importing it here would import torch)
    "mlp_train": "launch-bound",
    "gpt_train": "launch-bound",
    "gpt_decode": "launch-bound",
    "diffusion_step": "launch-bound",
    "matmul_chain": "compute-bound",
}
TARGET = "bench/steps.py:{}"
COMPILE_ORDER = ["matmul_chain", "diffusion_step", "gpt_decode", "mlp_train", "gpt_train"]


def _request(step: str, mode: str, args: argparse.Namespace) -> dict:
    return {"target": TARGET.format(step), "mode": mode, "replays": args.replays, "repeats": args.repeats,
            "inner": args.inner, "timing": True, "profile": mode == "graph", "cwd": str(REPO)}


def _trial(step: str, mode: str, args: argparse.Namespace, timeout: float) -> CaptureReport:
    started = time.monotonic()
    try:
        report = run_trial_subprocess(_request(step, mode, args), timeout=timeout)
    except TrialUsageError as error:
        raise SystemExit(f"bench_capture: {step}: {error}")
    sys.stderr.write(f"[bench] {step} {mode}: {report.status} in {time.monotonic() - started:.1f} s\n")
    if report.failure is not None:
        sys.stderr.write(report.to_text())
    return report


def _fmt(value, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _agreement(report: CaptureReport | None) -> str:
    if report is None:
        return "—"
    if report.failure is not None:
        code = report.failure.code or report.failure.error_class
        return f"{report.status}: {code}"
    if report.match:
        return "bitwise" if report.bitwise else "within tol"
    return "DIFFERS: " + ", ".join(sorted({c.name for c in report.mismatches})[:3])


def table(rows: list[tuple[str, CaptureReport, CaptureReport | None]]) -> str:
    head = ("| step | kind | eager ms | replay ms | floor ms | replay/floor | speedup | compile ms | compile speedup "
            "| capture s | pool MiB | replay vs eager |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
    lines = []
    for step, graph, compiled in rows:
        t = graph.timings
        ct = compiled.timings if compiled is not None and compiled.captured else None
        compile_ms = ct.replay_ms if ct else None
        compile_cell = _fmt(compile_ms) if compiled is None or compiled.captured else compiled.status
        lines.append("| " + " | ".join([
            step, STEPS[step],
            _fmt(t.eager_ms if t else None), _fmt(t.replay_ms if t else None), _fmt(t.floor_ms if t else None),
            _fmt(t.replay_over_floor if t else None, 2), _fmt(t.speedup if t else None, 2) + ("x" if t and t.speedup else ""),
            compile_cell,
            (_fmt(t.eager_ms / compile_ms, 2) + "x") if t and t.eager_ms and compile_ms else "—",
            _fmt(t.capture_s if t else None, 3),
            _fmt(graph.memory.reserved_bytes / 2**20 if graph.memory and graph.memory.reserved_bytes is not None
                 else None, 1),
            _agreement(graph),
        ]) + " |")
    return head + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default=",".join(STEPS), help="comma-separated steps (default: all)")
    parser.add_argument("--modes", default="graph,compile", help="graph and/or compile (default both)")
    parser.add_argument("--replays", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--inner", type=int, default=10)
    parser.add_argument("--budget-s", type=float, default=330.0, help="wall-time budget; compile trials that do not "
                                                                       "fit are skipped (default 330)")
    parser.add_argument("--trial-timeout-s", type=float, default=150.0)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--md-out", type=Path)
    args = parser.parse_args(argv)
    steps = [s for s in args.steps.split(",") if s]
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        parser.error(f"unknown steps: {unknown}; choose from {list(STEPS)}")
    modes = [m for m in args.modes.split(",") if m]
    started = time.monotonic()
    deadline = started + args.budget_s
    graph_reports: dict[str, CaptureReport] = {}
    compile_reports: dict[str, CaptureReport] = {}
    if "graph" in modes:
        for step in steps:
            remaining = deadline - time.monotonic()
            graph_reports[step] = _trial(step, "graph", args, max(30.0, min(args.trial_timeout_s, remaining)))
    if "compile" in modes:
        for step in sorted(steps, key=COMPILE_ORDER.index):  # cheapest compiles first
            remaining = deadline - time.monotonic()
            if remaining < 45:
                sys.stderr.write(f"[bench] {step} compile: skipped ({remaining:.0f} s of budget left)\n")
                continue
            compile_reports[step] = _trial(step, "compile", args, min(args.trial_timeout_s, remaining - 10))

    any_report = next(iter(graph_reports.values()), None) or next(iter(compile_reports.values()), None)
    device = next((r.device for r in [*graph_reports.values(), *compile_reports.values()] if r.device), "unknown")
    version = next((r.torch_version for r in [*graph_reports.values(), *compile_reports.values()]
                    if r.torch_version), "unknown")
    command = "PYTHONPATH=. python3 bench/bench_capture.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    out = ["# trial capture: eager vs CUDA-graph replay\n",
           f"device: {device}; torch {version}; {args.replays} replays compared with eager; times: median of "
           f"{args.repeats} samples x {args.inner} calls (CUDA events); floor: torch.profiler device busy time per "
           "eager step\n",
           f"command: `{command.strip()}`\n"]
    if graph_reports:
        out.append(table([(s, graph_reports[s], compile_reports.get(s)) for s in steps if s in graph_reports]))
    notes = sorted({f"{s}: {n}" for s, r in [*graph_reports.items(), *compile_reports.items()] for n in r.notes})
    if notes:
        out.append("\nnotes:\n" + "\n".join(f"- {n}" for n in notes) + "\n")
    out.append(f"\ntotal {time.monotonic() - started:.0f} s\n")
    text = "\n".join(out)
    if args.json_out:
        args.json_out.write_text(json.dumps({"graph": {k: v.to_json() for k, v in graph_reports.items()},
                                             "compile": {k: v.to_json() for k, v in compile_reports.items()},
                                             "command": command}, indent=2))
    if args.md_out:
        args.md_out.write_text(text)
    sys.stdout.write(text)
    return 0 if any_report is not None and all(r.ok for r in graph_reports.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
