"""`graphsafe capture`: trial-capture a step in a fresh subprocess and print its report.

    graphsafe capture pkg.module:factory [--mode graph|graphed_callables|compile] [--format text|json]
    graphsafe capture path/to/file.py:factory --replays 10 --bitwise

The factory returns the step and its inputs: `CaptureTarget(step, args, kwargs, state)`,
`(step, args)`, `(step, args, state)` or a dict with those keys (see graphsafe.runtime.capture).

The trial ALWAYS runs in a fresh subprocess (graphsafe.runtime._capture_worker): a failed
capture can poison the process that tried it. This process never imports torch; it receives a
JSON report, or, when the worker dies or hangs, writes a clean failure report itself.

Exit codes: 0 captured and replay matches eager; 1 capture failed or replay differs; 2 the trial
could not run (usage, the step failed eagerly, the worker crashed or timed out).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from graphsafe.runtime.capture_report import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, CaptureReport
from graphsafe.runtime.classify import CaptureFailure

__all__ = ["add_capture_arguments", "run_capture", "run_trial_subprocess", "main", "TrialUsageError"]

MODES = ("graph", "graphed_callables", "compile")  # == graphsafe.runtime.capture.MODES (no torch import here)
DEFAULT_TIMEOUT_S = 600.0
OUTPUT_TAIL_CHARS = 4000
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the directory holding graphsafe/


class TrialUsageError(Exception):
    """The target or the options are wrong: a message for the user, exit code 2."""


def add_capture_arguments(parser: argparse.ArgumentParser) -> None:
    """Add `graphsafe capture`'s arguments to `parser` (a subcommand parser)."""
    parser.add_argument("target", metavar="MODULE:FACTORY",
                        help="a factory returning the step and its inputs: pkg.module:make or path/to/file.py:make")
    parser.add_argument("--mode", choices=MODES, default="graph",
                        help="graph: torch.cuda.graph around the whole step (optimizer included); graphed_callables: "
                             "make_graphed_callables (forward+backward); compile: torch.compile(mode='reduce-overhead')")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format on stdout")
    parser.add_argument("--warmup", type=int, default=None, metavar="N",
                        help="eager warm-up steps before capture (default 3; 11 with DDP)")
    parser.add_argument("--replays", type=int, default=5, metavar="N",
                        help="steps replayed and compared with eager from the same state (default 5)")
    tolerance = parser.add_mutually_exclusive_group()
    tolerance.add_argument("--bitwise", action="store_true", help="replay must equal eager bit for bit")
    tolerance.add_argument("--rtol", type=float, default=None, help="relative tolerance (default 1e-4)")
    parser.add_argument("--atol", type=float, default=None, help="absolute tolerance (default 1e-5)")
    parser.add_argument("--repeats", type=int, default=15, metavar="N", help="timing samples (median; default 15)")
    parser.add_argument("--inner", type=int, default=10, metavar="N", help="calls per timing sample (default 10)")
    parser.add_argument("--no-timing", action="store_true", help="skip step timings and the profiler floor")
    parser.add_argument("--no-profile", action="store_true", help="skip the torch.profiler kernel-only floor")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                        help=f"stop the trial process after this long (default {DEFAULT_TIMEOUT_S:g})")
    parser.add_argument("--show-output", action="store_true",
                        help="pass the trial process's own output (the step's prints, warnings) to stderr")


def _request(args: argparse.Namespace) -> dict[str, Any]:
    if ":" not in args.target:
        raise TrialUsageError(f"expected MODULE:FACTORY or path/to/file.py:FACTORY, got {args.target!r}")
    for name in ("replays", "repeats", "inner"):
        if getattr(args, name) < 1:
            raise TrialUsageError(f"--{name} must be at least 1, got {getattr(args, name)}")
    if args.warmup is not None and args.warmup < 0:
        raise TrialUsageError(f"--warmup must be >= 0, got {args.warmup}")
    if args.timeout <= 0:
        raise TrialUsageError(f"--timeout must be positive, got {args.timeout}")
    if args.bitwise and args.atol is not None:
        raise TrialUsageError("--bitwise and --atol exclude each other")
    for name in ("rtol", "atol"):
        value = getattr(args, name)
        if value is not None and value < 0:
            raise TrialUsageError(f"--{name} must be >= 0, got {value}")
    if args.bitwise:
        tolerance: Any = "bitwise"
    elif args.rtol is not None or args.atol is not None:
        tolerance = {"rtol": args.rtol if args.rtol is not None else 1e-4,
                     "atol": args.atol if args.atol is not None else 1e-5}
    else:
        tolerance = None
    return {
        "target": args.target,
        "mode": args.mode,
        "warmup": args.warmup,
        "replays": args.replays,
        "tolerance": tolerance,
        "repeats": args.repeats,
        "inner": args.inner,
        "timing": not args.no_timing,
        "profile": not (args.no_profile or args.no_timing),
        "cwd": os.getcwd(),
    }


def run_trial_subprocess(request: dict[str, Any], timeout: float = DEFAULT_TIMEOUT_S,
                         python: str | None = None, env: dict[str, str] | None = None,
                         show_output: bool = False, worker_module: str = "graphsafe.runtime._capture_worker",
                         ) -> CaptureReport:
    """Run one trial in a fresh Python process and return its report. A worker that dies, hangs
    or answers nonsense gives a report with status crashed/timeout, never an exception; a bad
    target raises TrialUsageError."""
    request = dict(request)
    request.setdefault("cwd", os.getcwd())
    environment = dict(os.environ if env is None else env)
    paths = [p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]
    if _PACKAGE_ROOT not in paths:
        environment["PYTHONPATH"] = os.pathsep.join([_PACKAGE_ROOT, *paths])
    environment.setdefault("PYTHONUNBUFFERED", "1")
    with tempfile.TemporaryDirectory(prefix="graphsafe-capture-") as tmp:
        request_path = os.path.join(tmp, "request.json")
        result_path = os.path.join(tmp, "result.json")
        output_path = os.path.join(tmp, "output.txt")
        with open(request_path, "w", encoding="utf-8") as handle:
            json.dump(request, handle)
        command = [python or sys.executable, "-m", worker_module, request_path, result_path]
        started = time.monotonic()
        with open(output_path, "wb") as output:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                       env=environment, cwd=request["cwd"], start_new_session=True)
            try:
                returncode = process.wait(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                _stop(process)
                returncode, timed_out = process.returncode, True
        elapsed = time.monotonic() - started
        output_text = Path(output_path).read_bytes().decode("utf-8", "replace")
        if show_output and output_text:
            sys.stderr.write(output_text if output_text.endswith("\n") else output_text + "\n")
        result = _read_result(result_path)
    return _report_from(request, result, returncode, timed_out, timeout, elapsed, output_text)


def _stop(process: subprocess.Popen) -> None:
    """Stop the worker we started (its own process group: it may have children)."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _read_result(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _report_from(request: dict[str, Any], result: dict[str, Any] | None, returncode: int | None, timed_out: bool,
                 timeout: float, elapsed: float, output: str) -> CaptureReport:
    tail = output[-OUTPUT_TAIL_CHARS:] if output else None
    if result is not None and not timed_out:
        if "report" in result:
            try:
                return CaptureReport.from_json(result["report"])
            except (KeyError, TypeError, ValueError) as error:
                return _worker_failure(request, "crashed", "unreadable report",
                                       f"the trial process sent a report this version cannot read ({error})", tail)
        error = result.get("error") or {}
        if error.get("kind") == "usage":
            raise TrialUsageError(error.get("message", "bad target"))
        detail = error.get("message", "unknown error")
        return _worker_failure(request, "crashed", "internal error",
                               f"graphsafe's trial process failed: {detail}; set GRAPHSAFE_DEBUG=1 for its traceback",
                               error.get("traceback") if os.environ.get("GRAPHSAFE_DEBUG") else tail)
    if timed_out:
        return _worker_failure(request, "timeout", "timeout",
                               f"the trial did not finish in {timeout:g} s and was stopped (a hang in the step, in "
                               "capture, or a long torch.compile); raise --timeout if it is just slow", tail)
    how = _exit_description(returncode)
    return _worker_failure(request, "crashed", "trial process crashed",
                           f"the trial process {how} after {elapsed:.1f} s without a report: a crash in CUDA, the "
                           "driver or an extension (an illegal memory access in a replay, say); its last output is "
                           "below", tail)


def _exit_description(returncode: int | None) -> str:
    if returncode is None:
        return "ended"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with status {returncode}"


def _worker_failure(request: dict[str, Any], status: str, error_class: str, cause: str,
                    tail: str | None) -> CaptureReport:
    failure = CaptureFailure(code=None, name=None, error_class=error_class, cause=cause,
                             message=f"graphsafe capture: {error_class}", phase="worker")
    return CaptureReport(target=request["target"], mode=request.get("mode", "graph"), status=status, failure=failure,
                         warmup=request.get("warmup") or 0, replays=request.get("replays") or 0,
                         output_tail=tail.strip() if tail else None)


def exit_code(report: CaptureReport) -> int:
    if report.status == "ok":
        return EXIT_OK
    if report.status in ("mismatch", "failed"):
        return EXIT_FINDINGS
    return EXIT_ERROR


def run_capture(args: argparse.Namespace) -> int:
    """Run `graphsafe capture` with parsed arguments; returns the exit code."""
    try:
        request = _request(args)
        report = run_trial_subprocess(request, timeout=args.timeout, show_output=args.show_output)
    except TrialUsageError as error:
        sys.stderr.write(f"graphsafe capture: error: {error}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("graphsafe capture: interrupted\n")
        return EXIT_ERROR
    except Exception as error:  # never a traceback to the user, unless asked for
        if os.environ.get("GRAPHSAFE_DEBUG"):
            import traceback

            traceback.print_exc()
        sys.stderr.write(f"graphsafe capture: internal error: {type(error).__name__}: {error}\n"
                         "Please report it; set GRAPHSAFE_DEBUG=1 for the traceback.\n")
        return EXIT_ERROR
    if args.format == "json":
        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
    else:
        sys.stdout.write(report.to_text())
    return exit_code(report)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="graphsafe capture",
                                     description="Trial-capture a step in a fresh process: capture, replay, compare "
                                                 "with eager, time.")
    add_capture_arguments(parser)
    return run_capture(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
