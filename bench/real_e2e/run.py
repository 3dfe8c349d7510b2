"""Real steps of pinned PyPI packages, end to end: check → fix → capture, against eager and torch.compile.

    python bench/real_e2e/run.py --prepare DIR [--steps a,b]          # download the pinned wheels (network)
    python bench/real_e2e/run.py --device cpu [--steps a,b] [--out OUT]  # orig vs fixed eager numbers (CI part)
    python bench/real_e2e/run.py --device cuda --wheels DIR --out OUT     # the GPU benchmark, offline

Each step of bench/real_e2e/steps/ names a package, the region a user would capture and a
`build(device, seed)` (bench/real_e2e/step_api.py). For each step: unpack the pinned package into
OUT/scratch/<step>/{orig,fixed,unsafe}, run `graphsafe check` on orig and `graphsafe fix` (safe,
and with --unsafe-fixes) on the copies, then run every (step, variant) in a fresh process with
its tree first on sys.path (bench/real_e2e/worker.py). See bench/real_e2e/README.md for the columns.
Writes OUT/results.json and OUT/results.md; a failing step is a row, never a crash.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.real_e2e import packages, report, static  # noqa: E402
from bench.real_e2e.step_api import StepInfo, StepModuleError, read_step_info, step_names  # noqa: E402

DEFAULT_WHEELS = Path(os.environ.get("GS_REAL_CACHE", Path.home() / ".cache/graphsafe-real")) / "wheels"
COMPILE_RESERVE_S = 150.0  # a compile trial starts only while this much of the budget is left


# --- one worker process ------------------------------------------------------------------------


def run_worker(request: dict, timeout: float) -> dict:
    """The worker's {"result": ...}, or {"error": ...} when it failed, crashed or timed out."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *[p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]])
    environment.setdefault("PYTHONUNBUFFERED", "1")
    with tempfile.TemporaryDirectory(prefix="real-e2e-") as tmp:
        request_path, result_path, output_path = (os.path.join(tmp, n) for n in ("request.json", "result.json", "out"))
        Path(request_path).write_text(json.dumps(request))
        with open(output_path, "wb") as output:
            process = subprocess.Popen([sys.executable, "-m", "bench.real_e2e.worker", request_path, result_path],
                                       stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                       env=environment, cwd=REPO, start_new_session=True)
            try:
                returncode = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _stop(process)
                returncode = None
        tail = Path(output_path).read_bytes().decode("utf-8", "replace")[-2000:]
        try:
            payload = json.loads(Path(result_path).read_text())
        except (OSError, ValueError):
            payload = None
    if returncode is None:
        return {"error": f"timeout: stopped after {timeout:g} s", "output_tail": tail}
    if payload is None:
        return {"error": f"the worker exited {returncode} without a result", "output_tail": tail}
    if "error" in payload:
        return {"error": payload["error"], "traceback": payload.get("traceback"), "output_tail": tail}
    return payload["result"]


def _stop(process: subprocess.Popen) -> None:
    """Stop the worker and its children (torch.compile starts compile workers): its own process group."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            process.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue


# --- one step ------------------------------------------------------------------------------------


def set_up(info: StepInfo, args: argparse.Namespace, step_dir: Path) -> tuple[dict[str, Path], list[str]]:
    """Unpack the pinned package into orig/fixed/unsafe and install its EXTRA; (variant roots, extra sys.path)."""
    pip_options = () if args.device == "cpu" else packages.GPU_PIP_OPTIONS
    pins = packages.pins_of(info, for_cpu=args.device == "cpu")
    archives = [packages.fetch(pin, args.wheels, pip_options) for pin in pins]
    unpacked = step_dir / "unpacked"
    packages.unpack(pins[0], archives[0], unpacked)
    roots = static.make_variants(unpacked, step_dir)
    site = step_dir / "site"
    packages.install(archives[1:], site)
    paths = [str(site)]
    if args.device == "cpu":
        paths.append(str(cpu_site(args)))
    return roots, paths


def cpu_site(args: argparse.Namespace) -> Path:
    """CPU_DEPS installed once for this interpreter, beside the wheel cache."""
    site = args.wheels.parent / f"cpu-site-py{sys.version_info.major}{sys.version_info.minor}"
    archives = [packages.fetch(packages.Pin(*dep), args.wheels) for dep in packages.CPU_DEPS]
    packages.install(archives, site)
    return site


def request_for(mode: str, info: StepInfo, root: Path, paths: list[str], args: argparse.Namespace, **extra) -> dict:
    return {"mode": mode, "step": info.name, "paths": [str(root), *paths], "device": args.device, "seed": args.seed,
            "steps": args.n_steps, "repeats": args.repeats, "inner": args.inner,
            "tolerance": {"rtol": args.rtol, "atol": args.atol}, **extra}


def run_cpu(info: StepInfo, roots: dict[str, Path], paths: list[str], result: dict, args, step_dir: Path) -> dict:
    reference = step_dir / "orig.pt"
    out = {"orig": run_worker(request_for("eager", info, roots["orig"], paths, args, trace_out=str(reference)),
                              args.trial_timeout_s)}
    for variant in ("fixed", "unsafe", "graph"):
        if variant == "graph" and "error" in result.get("graph", {"error": ""}):
            out[variant] = {"error": "graphsafe graph did not run"}
            continue
        changed = (result["graph"].get("changed_files") if variant == "graph"
                   else result["static"].get("changed_files", {}).get(variant))
        if "error" in out["orig"]:
            out[variant] = {"error": "the original did not run"}
        elif not changed:
            out[variant] = {"vs_orig": {"identical_source": True, "exact": True, "max_abs": 0.0}}
        elif reference.is_file():
            out[variant] = run_worker(request_for("eager", info, roots[variant], paths, args,
                                                  reference=str(reference)), args.trial_timeout_s)
        else:
            out[variant] = {"error": "no orig trace to compare with"}
    return out


def run_gpu(info: StepInfo, roots: dict[str, Path], paths: list[str], result: dict, args, step_dir: Path,
            deadline: float) -> None:
    reference = step_dir / "orig.pt"
    compile_now = args.compile and deadline - time.monotonic() > COMPILE_RESERVE_S
    orig = run_worker(request_for("gpu_orig", info, roots["orig"], paths, args, trace_out=str(reference),
                                  compile=compile_now), args.compile_timeout_s if compile_now else args.trial_timeout_s)
    if args.compile and not compile_now:
        orig.setdefault("compile", {"status": "skipped (budget)"})
    result["gpu_orig"] = orig
    for variant in args.variants:
        result["gpu_" + variant] = run_worker(
            request_for("gpu_fixed", info, roots[variant], paths, args, reference=str(reference)),
            args.trial_timeout_s)
    graph = result.get("graph", {})
    if "error" not in graph and graph:
        result["gpu_graph"] = run_worker(
            request_for("gpu_graph", info, roots["graph"], paths, args, reference=str(reference),
                        graph={"path": graph["path"], "core": graph["core"], "options": graph["options"],
                               "wire": graph.get("wire")}),
            args.trial_timeout_s)


def run_step(info: StepInfo, args: argparse.Namespace, deadline: float) -> dict:
    started = time.monotonic()
    result: dict = {"step": info.name, "package": info.package, "kind": info.kind, "region": info.region}
    step_dir = args.out / "scratch" / info.name
    try:
        result["version"] = packages.package_pin(info.package).version
        roots, paths = set_up(info, args, step_dir)
    except packages.PackageError as error:
        result["error"] = str(error)
        return result
    result["static"] = static.check_and_fix(info.region, roots).to_json()
    facts = None
    if args.facts:  # `graphsafe trace --save-facts` on the step first, as a user would before `graph`
        facts_out = step_dir / "facts.json"
        result["facts"] = run_worker(request_for("facts", info, roots["graph"], paths, args,
                                                 facts_out=str(facts_out)), args.trial_timeout_s)
        facts = facts_out if facts_out.is_file() else None
    result["graph"] = static.graph_variant(info.region, roots, facts=facts)
    if args.device == "cpu":
        result["cpu"] = run_cpu(info, roots, paths, result, args, step_dir)
    else:
        run_gpu(info, roots, paths, result, args, step_dir, deadline)
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


# --- the command ---------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prepare", type=Path, metavar="DIR", help="download every step's pinned wheels into DIR "
                        "(for the GPU machine's Python 3.12) and exit")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--steps", help="comma-separated step names (default: every module in bench/real_e2e/steps)")
    parser.add_argument("--wheels", type=Path, default=DEFAULT_WHEELS,
                        help=f"pinned archives (from --prepare; default {DEFAULT_WHEELS})")
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "graphsafe-real-e2e",
                        help="scratch trees, traces, results.json and results.md")
    parser.add_argument("--n-steps", type=int, default=6, help="steps compared, the inputs changing each (default 6)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--facts", action="store_true", help="trace the step first and give `graph` the run-time "
                        "facts (graphsafe trace --save-facts), as a user does before `graph`")
    parser.add_argument("--variants", default="fixed", help="GPU: variants to capture: fixed and/or unsafe")
    parser.add_argument("--no-compile", dest="compile", action="store_false", help="GPU: skip torch.compile")
    parser.add_argument("--repeats", type=int, default=15, help="GPU timing samples (median)")
    parser.add_argument("--inner", type=int, default=10, help="GPU calls per timing sample")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("--trial-timeout-s", type=float, default=240.0)
    parser.add_argument("--compile-timeout-s", type=float, default=420.0)
    parser.add_argument("--merge", type=Path, nargs="+", metavar="DIR",
                        help="no run: one table from the results.json of earlier runs (a full GPU run takes "
                             "several device calls); a step's row comes from the last DIR that has it")
    parser.add_argument("--budget-s", type=float, default=1500.0,
                        help="GPU wall-time budget: compile trials start only while 150 s of it are left")
    args = parser.parse_args(argv)
    args.variants = [v for v in args.variants.split(",") if v]
    if set(args.variants) - {"fixed", "unsafe"}:
        parser.error("--variants takes fixed and/or unsafe")
    if args.n_steps < 2:
        parser.error("--n-steps must be at least 2")
    args.wheels = args.wheels.resolve()
    args.out = args.out.resolve()
    return args


def chosen_steps(spec: str | None) -> list[StepInfo]:
    names = step_names()
    wanted = [n for n in spec.split(",") if n] if spec else names
    unknown = [n for n in wanted if n not in names]
    if unknown:
        raise SystemExit(f"run.py: unknown steps {unknown}; choose from {names}")
    try:
        return [read_step_info(n) for n in wanted]
    except StepModuleError as error:
        raise SystemExit(f"run.py: {error}") from None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.merge:
        return merge(args)
    infos = chosen_steps(args.steps)
    if args.prepare:
        problems = packages.prepare(infos, args.prepare.resolve())
        for line in problems:
            print(f"[prepare] FAILED {line}", file=sys.stderr)
        print(f"[prepare] {len(infos)} steps, archives in {args.prepare}" + (f"; {len(problems)} failed" if problems
                                                                              else ""))
        return 1 if problems else 0
    args.out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.budget_s
    rows = []
    for info in infos:
        row = run_step(info, args, deadline)
        sys.stderr.write(f"[real_e2e] {info.name}: {row.get('seconds', '?')} s\n")
        rows.append(row)
    command = "python bench/real_e2e/run.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None
                                                                                   else sys.argv[1:]))
    text = render(rows, args, command)
    (args.out / "results.json").write_text(json.dumps({"command": command, "device": args.device, "rows": rows},
                                                      indent=1))
    (args.out / "results.md").write_text(text)
    sys.stdout.write(text)
    return 0


def merged_rows(results: list[dict]) -> tuple[list[dict], list[str]]:
    """Rows of several runs, one per step in the order steps first appear, the last run's row
    winning; and the runs' commands."""
    rows: dict[str, dict] = {}
    for result in results:
        for row in result.get("rows", []):
            rows[row["step"]] = row
    return list(rows.values()), [r.get("command", "?") for r in results]


def merge(args: argparse.Namespace) -> int:
    results = []
    for directory in args.merge:
        path = directory / "results.json"
        try:
            results.append(json.loads(path.read_text()))
        except (OSError, ValueError) as error:
            raise SystemExit(f"run.py --merge: cannot read {path}: {error}") from None
    devices = {r.get("device") for r in results}
    if len(devices) != 1:
        raise SystemExit(f"run.py --merge: runs on different devices {sorted(map(str, devices))}")
    args.device = devices.pop()
    rows, commands = merged_rows(results)
    command = " ; ".join(commands)
    text = render(rows, args, command)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps({"command": command, "device": args.device, "rows": rows},
                                                      indent=1))
    (args.out / "results.md").write_text(text)
    sys.stdout.write(text)
    return 0


def render(rows: list[dict], args: argparse.Namespace, command: str) -> str:
    if args.device == "cpu":
        return (f"# real steps end to end: CPU (orig vs fixed eager, {args.n_steps} steps)\n\n"
                f"command: `{command}`\n\n{report.cpu_table(rows)}\n{report.cpu_summary(rows)}\n")
    first = next((r.get("gpu_orig") or {} for r in rows if (r.get("gpu_orig") or {}).get("device")), {})
    return (f"# real steps end to end: GPU\n\ndevice: {first.get('device', 'unknown')}; torch "
            f"{first.get('torch', 'unknown')}; {args.n_steps} steps compared with the inputs changing every step; "
            f"times: median of {args.repeats} samples x {args.inner} calls (CUDA events)\n\n"
            f"command: `{command}`\n\n{report.gpu_table(rows)}\n{report.gpu_summary(rows)}\n\n"
            f"## the one path: graphsafe graph → graphed()\n\n{report.graph_path_table(rows)}\n"
            f"{report.graph_path_summary(rows)}\n")


if __name__ == "__main__":
    sys.exit(main())
