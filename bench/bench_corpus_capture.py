"""The corpus end to end on a GPU: analyze -> fix -> trial capture, against torch.compile.

    PYTHONPATH=. python3 bench/bench_corpus_capture.py [--programs train_loop,negatives]
        [--budget-s 400] [--json-out PATH] [--md-out PATH]

For each corpus program with a `capture.py` factory (it builds the program's objects the way its
own GPU path does and returns the step that path captures):
1. `graphsafe check` on a copy of the program: the hazards found;
2. `graphsafe fix --unsafe-fixes` on that copy, then `check` again: what the fixes left;
3. trial capture (`graphsafe capture`'s fresh-subprocess protocol) of the ORIGINAL program's step:
   it should fail with the rule code of a labelled line (or replay differently), of the FIXED
   copy's step (it captures only if `fix` removed every hazard on the captured path), and of the
   FINISHED copy: the fixed copy plus the hand edits of the program's `finish.diff`
   (tests/finish.py), which must capture and replay equal to eager, with its speedup, graph-pool
   memory and capture time;
4. torch.compile(mode="reduce-overhead") on the original, fixed and finished steps, for comparison.
Everything runs one trial at a time; graph trials first, compile trials while the budget lasts.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from graphsafe.runtime.capture_cli import TrialUsageError, run_trial_subprocess  # noqa: E402
from graphsafe.runtime.capture_report import CaptureReport  # noqa: E402
from tests.finish import FINISH, finished_copy  # noqa: E402

# program -> capture mode of its own GPU path
PROGRAMS = {
    "negatives": "graph",
    "train_loop": "graph",
    "decode_loop": "graph",
    "diffusion_sampler": "graph",
    "beam_search": "graph",
    "speech_eval": "graph",
    "rl_policy": "graph",
    "moe_router": "graphed_callables",
}


def graphsafe(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    return subprocess.run([sys.executable, "-m", "graphsafe", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=600)


def diagnostics(folder: Path) -> list[dict]:
    done = graphsafe("check", folder.name, "--format", "json", "--no-cache", cwd=folder.parent)
    try:
        return json.loads(done.stdout or "[]")
    except json.JSONDecodeError:
        raise SystemExit(f"bench_corpus_capture: check on {folder} printed no JSON:\n{done.stderr[-2000:]}")


def fix(folder: Path) -> str:
    """Apply every fix, unsafe ones included; the last line of fix's summary."""
    done = graphsafe("fix", folder.name, "--unsafe-fixes", "--no-cache", cwd=folder.parent)
    lines = (done.stdout + done.stderr).strip().splitlines()
    return lines[-1] if lines else ""


USAGE_ERRORS: dict[tuple[str, str], str] = {}  # (variant/program, mode) -> why the trial could not run


def trial(folder: Path, mode: str, args: argparse.Namespace, timeout: float) -> CaptureReport | None:
    request = {"target": f"{folder / 'capture.py'}:make", "mode": mode, "replays": args.replays,
               "repeats": args.repeats, "inner": args.inner, "timing": True, "profile": False,
               "cwd": str(folder)}
    started = time.monotonic()
    try:
        report = run_trial_subprocess(request, timeout=timeout)
    except TrialUsageError as error:  # e.g. the fixed program's factory no longer matches: record, go on
        USAGE_ERRORS[f"{folder.parent.name}/{folder.name}", mode] = str(error)
        sys.stderr.write(f"[bench] {folder.parent.name}/{folder.name} {mode}: could not run: {error}\n")
        return None
    sys.stderr.write(f"[bench] {folder.parent.name}/{folder.name} {mode}: {report.status} "
                     f"in {time.monotonic() - started:.1f} s\n")
    return report


def outcome(report: CaptureReport | None, labelled: set[tuple[str, int, str]] | None = None) -> str:
    if report is None:
        return "not run"
    if report.failure is not None:
        f = report.failure
        where = f"{Path(f.file).name}:{f.line}" if f.file else "?"
        cell = f"{report.status}: {f.code or f.error_class} at {where}"
        if labelled is not None and f.code and f.file:
            cell += " (labelled)" if (Path(f.file).name, f.line, f.code) in labelled else " (not labelled)"
        return cell
    if report.match:
        return "ok, " + ("bitwise" if report.bitwise else "within tol")
    return "replay DIFFERS: " + ", ".join(sorted({str(c.code or c.name) for c in report.mismatches})[:3])


def speedup(report: CaptureReport | None) -> str:
    t = report.timings if report is not None and report.captured else None
    return f"{t.speedup:.2f}x ({t.eager_ms:.3f} -> {t.replay_ms:.3f} ms)" if t and t.speedup else "—"


def capture_time(report: CaptureReport | None) -> str:
    t = report.timings if report is not None and report.captured else None
    return f"{t.capture_s:.2f} s" if t and t.capture_s is not None else "—"


def pool(report: CaptureReport | None) -> str:
    m = report.memory if report is not None and report.captured else None
    if m is None or m.reserved_bytes is None:
        return "—"
    return f"{m.reserved_bytes / 2**20:.1f} MiB reserved, {(m.active_bytes or 0) / 2**20:.1f} MiB in use"


def finish_size(patch: Path) -> int | None:
    if not patch.exists():
        return None
    return sum(1 for line in patch.read_text(encoding="utf-8").splitlines()
               if line[:1] in "+-" and not line.startswith(("+++", "---")))


def compiled(report: CaptureReport | None) -> str:
    """torch.compile's speedup, and how its results compare with eager (inductor draws random
    numbers differently and fuses float math: a difference is reported, not hidden)."""
    if report is None or not report.captured:
        return outcome(report)
    agreement = "equal" if report.match else "differs: " + ", ".join(
        sorted({str(c.code or c.name) for c in report.mismatches})[:3])
    return f"{speedup(report)}; {agreement}"


def labels(folder: Path) -> set[tuple[str, int, str]]:
    from tests.golden import LABEL

    found = set()
    for path in folder.glob("*.py"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            m = LABEL.search(line)
            if m:
                found |= {(path.name, number, code.strip()) for code in m.group(1).split(",")}
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--replays", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--inner", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=400.0)
    parser.add_argument("--trial-timeout-s", type=float, default=120.0)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--no-graph", action="store_true", help="torch.compile trials only")
    parser.add_argument("--variants", default="original,fixed,finished",
                        help="which copies to trial-capture: original, fixed, finished (default all)")
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--md-out", type=Path)
    args = parser.parse_args(argv)
    programs = [p for p in args.programs.split(",") if p]
    unknown = [p for p in programs if p not in PROGRAMS]
    if unknown:
        parser.error(f"unknown programs: {unknown}; choose from {list(PROGRAMS)}")
    started = time.monotonic()
    deadline = started + args.budget_s
    work = Path(tempfile.mkdtemp(prefix="gs-corpus-"))
    rows: dict[str, dict] = {}
    folders = {}
    for name in programs:
        original = work / "original" / name
        fixed = work / "fixed" / name
        for copy in (original, fixed):
            shutil.copytree(REPO / "corpus" / name, copy, ignore=shutil.ignore_patterns("__pycache__", "*.txt"))
        before = diagnostics(fixed)
        fix_summary = fix(fixed)
        after = diagnostics(fixed)
        folders[name, "original"], folders[name, "fixed"] = original, fixed
        finished_left: list[dict] | None = None
        if (REPO / "corpus" / name / FINISH).exists():
            finished = finished_copy(REPO / "corpus" / name, work / "finished")
            folders[name, "finished"] = finished
            finished_left = diagnostics(finished)
        diff = subprocess.run(["diff", "-u", "-r", str(original), str(fixed)], capture_output=True, text=True).stdout
        rows[name] = {"mode": PROGRAMS[name], "before": len(before), "after": len(after),
                      "left": sorted({d["code"] for d in after}), "fix": fix_summary,
                      "changed_lines": sum(1 for line in diff.splitlines() if line[:1] in "+-"
                                           and not line.startswith(("+++", "---"))),
                      "finished_left": None if finished_left is None else len(finished_left),
                      "finish_lines": finish_size(REPO / "corpus" / name / FINISH),
                      "labels": labels(original), "fixed_labels": labels(fixed)}
    reports: dict[tuple[str, str, str], CaptureReport] = {}
    variants = [v for v in ("original", "fixed", "finished") if v in args.variants.split(",")]
    for variant in variants if not args.no_graph else ():
        for name in programs:
            if (name, variant) not in folders:
                continue
            remaining = deadline - time.monotonic()
            reports[name, variant, "graph"] = trial(folders[name, variant], PROGRAMS[name], args,
                                                    max(30.0, min(args.trial_timeout_s, remaining)))
    if not args.no_compile:
        for name in programs:
            for variant in variants:
                if (name, variant) not in folders:
                    continue
                remaining = deadline - time.monotonic()
                if remaining < 40:
                    sys.stderr.write(f"[bench] {variant}/{name} compile: skipped ({remaining:.0f} s left)\n")
                    continue
                reports[name, variant, "compile"] = trial(folders[name, variant], "compile", args,
                                                          min(args.trial_timeout_s, remaining - 5))
    device = next((r.device for r in reports.values() if r and r.device), "unknown")
    version = next((r.torch_version for r in reports.values() if r and r.torch_version), "unknown")
    command = "PYTHONPATH=. python3 bench/bench_corpus_capture.py " + " ".join(shlex.quote(a) for a in
                                                                               (argv or sys.argv[1:]))
    out = ["# corpus end to end: analyze -> fix -> trial capture\n",
           f"device: {device}; torch {version}; {args.replays} replays compared with eager; times: median of "
           f"{args.repeats} samples x {args.inner} calls (CUDA events)\n", f"command: `{command.strip()}`\n",
           "| program | mode | hazards | after fix --unsafe-fixes | left (codes) | original: capture | fixed: capture "
           "| fixed: speedup | compile original | compile fixed |",
           "|---|---|---:|---:|---|---|---|---|---|---|"]
    for name in programs:
        row = rows[name]
        out.append("| " + " | ".join([
            name, row["mode"], str(row["before"]), str(row["after"]), ", ".join(row["left"]) or "—",
            outcome(reports.get((name, "original", "graph")), row["labels"]),
            outcome(reports.get((name, "fixed", "graph")), row["fixed_labels"]),
            speedup(reports.get((name, "fixed", "graph"))),
            compiled(reports.get((name, "original", "compile"))),
            compiled(reports.get((name, "fixed", "compile"))),
        ]) + " |")
    if "finished" in variants:
        out += ["\nFinished programs (`fix --unsafe-fixes` + the hand edits of `finish.diff`):\n",
                "| program | finish.diff (+/- lines) | diagnostics left | capture | speedup | capture time "
                "| graph pool | compile finished |", "|---|---:|---:|---|---|---:|---|---|"]
        for name in programs:
            row = rows[name]
            if row["finished_left"] is None:
                out.append(f"| {name} | no finish.diff | | | | | | |")
                continue
            report = reports.get((name, "finished", "graph"))
            out.append("| " + " | ".join([
                name, str(row["finish_lines"]), str(row["finished_left"]), outcome(report), speedup(report),
                capture_time(report), pool(report), compiled(reports.get((name, "finished", "compile")))]) + " |")
    out.append(f"\ntotal {time.monotonic() - started:.0f} s\n")
    text = "\n".join(out) + "\n"
    failures = "\n".join(f"## {n} {v} {m}\n{r.to_text()}" for (n, v, m), r in reports.items() if r and not r.ok)
    failures += "".join(f"\n## {where} {mode}: could not run: {why}\n" for (where, mode), why in USAGE_ERRORS.items())
    if args.json_out:
        args.json_out.write_text(json.dumps({"rows": {n: {k: v for k, v in r.items() if not k.endswith("labels")}
                                                      for n, r in rows.items()},
                                             "reports": {"/".join(k): r.to_json() for k, r in reports.items() if r},
                                             "could_not_run": {"/".join(k): v for k, v in USAGE_ERRORS.items()},
                                             "command": command}, indent=2))
    if args.md_out:
        args.md_out.write_text(text + "\n# failures\n\n" + failures)
    sys.stdout.write(text)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
