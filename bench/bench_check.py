#!/usr/bin/env python3
"""Benchmark `graphsafe check` against TorchFix 0.7 and Fixit 2.2 on the installed torch tree.

A script, not a test. One run measures:

1. graphsafe cold:  `graphsafe check torch --region '*' --no-cache --jobs N --format json`
   (wall time, CPU time, peak memory of the whole process tree, files and diagnostics);
2. graphsafe warm:  a run that fills a fresh `--cache-dir`, then the same command again;
3. TorchFix 0.7:    `torchfix --select ALL --jobs N torch`;
4. Fixit 2.2:       `fixit lint torch` (its default rules; its pool has os.cpu_count() workers
                    and no option to change that);
5. one file (torch/_tensor.py): in-process `libcst.parse_module` vs graphsafe's per-file entry
   point `graphsafe.analyzer.engine.check_source` with regions=("*",) (median of --repeats
   after a warm-up call), and both as fresh processes (median of --fresh-repeats).

Every tool runs on the same input: the `.py` files of --tree mirrored under
`<work-dir>/tree/<name>` with an empty `pyproject.toml` beside them. The mirror is needed
because the installed tree lives in a virtual environment that the project's .gitignore
excludes (Fixit's file walker would skip every file) and under a pyproject.toml whose
[tool.graphsafe] table would otherwise apply; the empty pyproject.toml stops every tool's
search for a project root and configuration there. All runs use that directory as cwd, so
paths print as `torch/...`.

Memory: each tool is started in its own session; a thread samples the RSS (and PSS, from
/proc/PID/smaps_rollup) of every process in that session's tree every 0.2 s and keeps the
peak of the sums ("tree RSS" counts pages shared after fork once per process, so it
over-states; "tree PSS" divides shared pages among their users). `max single RSS` is the
child's `ru_maxrss` from wait4: the largest single process among it and its waited-for
descendants, not a sum.

Set up the reference tools first: `bash bench/setup_baselines.sh` (venvs under
$GS_BASELINES, default /tmp/gs-baselines). Typical use (2 cores: 40–60 minutes, most
of it in the two baselines):

    . .venv/bin/activate
    python bench/bench_check.py --json-out /tmp/bench_check.json
    python bench/bench_check.py --skip-baselines          # graphsafe numbers only
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")
SAMPLE_S = 0.2
GB = 1024**3
MB = 1024**2


# --------------------------------------------------------------------------------------------
# process-tree memory sampling (no psutil)


def _ppid_map() -> dict[int, int]:
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        rest = data[data.rfind(b")") + 2 :].split()
        try:
            out[int(name)] = int(rest[1])
        except (IndexError, ValueError):
            continue
    return out


def _tree(root: int) -> list[int]:
    parents = _ppid_map()
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        if pid in parents or pid == root:
            found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


def _machine_busy_s() -> float:
    """CPU-seconds the whole machine has spent busy (all cores) since boot."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


@dataclass
class Run:
    name: str
    cmd: list[str]
    cwd: str
    wall_s: float = 0.0
    rc: int | None = None
    timed_out: bool = False
    timeout_s: float = 0.0
    cpu_s: float = 0.0  # user+sys of the process and its waited-for descendants
    max_single_rss: int = 0  # ru_maxrss (bytes): the largest single process
    peak_tree_rss: int = 0  # peak of the sum of RSS over the process tree (sampled)
    peak_tree_pss: int = 0  # peak of the sum of PSS over the process tree (sampled)
    peak_procs: int = 0
    peak_leader_rss: int = 0  # peak RSS of the started process itself (the pool's parent)
    stdout_path: str = ""
    stderr_tail: str = ""
    load_before: str = ""  # /proc/loadavg before the run: other work on the machine skews wall times
    other_cpu_s: float = 0.0  # CPU time the rest of the machine used during the run (from /proc/stat)

    @property
    def shell(self) -> str:
        return shlex.join(self.cmd)

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.rc is not None and self.rc >= 0


def measure(name: str, cmd: list[str], cwd: Path, timeout: float, log_dir: Path, *, sample_memory: bool = True) -> Run:
    """Run `cmd` to completion (or until `timeout`), timing it and sampling its tree's memory."""
    log_dir.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    out_path, err_path = log_dir / f"{slug}.out", log_dir / f"{slug}.err"
    run = Run(name, list(cmd), str(cwd), timeout_s=timeout, stdout_path=str(out_path))
    stop = threading.Event()
    run.load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    busy_before = _machine_busy_s()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)

        def sampler() -> None:
            while not stop.is_set():
                if time.perf_counter() - started > timeout:
                    run.timed_out = True
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    return
                if sample_memory:
                    pids = _tree(proc.pid)
                    run.peak_procs = max(run.peak_procs, len(pids))
                    rss = {p: _rss(p) for p in pids}
                    run.peak_tree_rss = max(run.peak_tree_rss, sum(rss.values()))
                    run.peak_leader_rss = max(run.peak_leader_rss, rss.get(proc.pid, 0))
                    run.peak_tree_pss = max(run.peak_tree_pss, sum(_pss(p) for p in pids))
                stop.wait(SAMPLE_S)

        thread = threading.Thread(target=sampler, daemon=True)
        thread.start()
        _, status, usage = os.wait4(proc.pid, 0)
        run.wall_s = time.perf_counter() - started
        stop.set()
        thread.join()
        proc.returncode = run.rc = os.waitstatus_to_exitcode(status)
        try:  # stray workers of a killed or crashed leader: same session, ours
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    run.cpu_s = usage.ru_utime + usage.ru_stime
    run.other_cpu_s = max(0.0, _machine_busy_s() - busy_before - run.cpu_s)
    run.max_single_rss = usage.ru_maxrss * 1024
    run.peak_tree_rss = max(run.peak_tree_rss, run.max_single_rss)
    err_text = err_path.read_text(errors="replace")
    run.stderr_tail = err_text[-3000:]
    return run


# --------------------------------------------------------------------------------------------
# inputs and environment


def torch_dir(python: str) -> Path:
    code = "import importlib.util,os;print(os.path.dirname(importlib.util.find_spec('torch').origin))"
    return Path(subprocess.check_output([python, "-c", code], text=True).strip())


def mirror_tree(src: Path, work: Path) -> tuple[Path, Path, int, int]:
    """Copy the .py files of `src` to work/tree/<name>; returns (cwd, tree, files, lines)."""
    root = work / "tree"
    if root.exists():
        shutil.rmtree(root)
    dest = root / src.name
    files = lines = 0
    for directory, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        rel = Path(directory).relative_to(src)
        made = False
        for f in sorted(filenames):
            path = Path(directory) / f
            if not f.endswith(".py") or path.is_symlink() or not path.is_file():
                continue
            if not made:
                (dest / rel).mkdir(parents=True, exist_ok=True)
                made = True
            data = path.read_bytes()
            (dest / rel / f).write_bytes(data)  # also warms the page cache for every tool
            files += 1
            lines += data.count(b"\n")
    (root / "pyproject.toml").write_text(
        "# Project-root marker for bench/bench_check.py: no [tool.graphsafe], no [tool.fixit].\n"
    )
    return root, dest, files, lines


def dist_version(python: str, *names: str) -> dict[str, str]:
    code = (
        "import json,sys\nfrom importlib.metadata import version\nout={}\n"
        "for n in sys.argv[1:]:\n try: out[n]=version(n)\n except Exception: pass\nprint(json.dumps(out))"
    )
    try:
        return json.loads(subprocess.check_output([python, "-c", code, *names], text=True))
    except (OSError, subprocess.CalledProcessError, ValueError):
        return {}


def source_fingerprint(python: str) -> dict:
    """A hash of graphsafe's own sources, and the git commit they are at (to catch edits mid-run)."""
    code = "import importlib.util,os;print(os.path.dirname(importlib.util.find_spec('graphsafe').origin))"
    try:
        pkg = Path(subprocess.check_output([python, "-c", code], text=True).strip())
    except (OSError, subprocess.CalledProcessError):
        return {}
    import hashlib

    h = hashlib.blake2b(digest_size=8)
    for path in sorted(pkg.rglob("*.py")):
        h.update(str(path.relative_to(pkg)).encode() + b"\0" + path.read_bytes())
    out = {"package": str(pkg), "sources": h.hexdigest()}
    try:
        out["commit"] = subprocess.check_output(["git", "-C", str(pkg), "rev-parse", "--short", "HEAD"], text=True, stderr=subprocess.DEVNULL).strip()
        dirty = subprocess.check_output(["git", "-C", str(pkg), "status", "--porcelain", "--", "."], text=True, stderr=subprocess.DEVNULL)
        out["uncommitted_files"] = len(dirty.splitlines())
    except (OSError, subprocess.CalledProcessError):
        pass
    return out


def graphsafe_command(explicit: str | None) -> list[str]:
    if explicit:
        return shlex.split(explicit)
    script = Path(sys.executable).parent / "graphsafe"
    if script.exists():
        return [str(script)]
    found = shutil.which("graphsafe")
    return [found] if found else [sys.executable, "-m", "graphsafe"]


def fixit_rules(python: str, cwd: Path, sample: str) -> list[str]:
    code = (
        "import sys\nfrom pathlib import Path\nfrom fixit.config import generate_config, collect_rules\n"
        "print('\\n'.join(sorted(type(r).__name__ for r in collect_rules(generate_config(Path(sys.argv[1]))))))"
    )
    try:
        return subprocess.check_output([python, "-c", code, sample], cwd=cwd, text=True, stderr=subprocess.DEVNULL).split()
    except (OSError, subprocess.CalledProcessError):
        return []


# --------------------------------------------------------------------------------------------
# result parsing


def graphsafe_findings(run: Run) -> dict:
    try:
        data = json.loads(Path(run.stdout_path).read_text())
    except (OSError, ValueError) as error:
        return {"error": f"cannot read JSON output: {error}"}
    by_code: dict[str, int] = {}
    for d in data:
        by_code[d["code"]] = by_code.get(d["code"], 0) + 1
    gs000 = [f"{d['filename']}:{d['location']['row']}: {d['message']}" for d in data if d["code"] == "GS000"]
    return {
        "diagnostics": len(data),
        "files_with_diagnostics": len({d["filename"] for d in data}),
        "by_code": dict(sorted(by_code.items())),
        "gs000": gs000[:50],
    }


def torchfix_findings(run: Run) -> dict:
    text = Path(run.stdout_path).read_text(errors="replace")
    hits = re.findall(r"^(\S+?):\d+:\d+: (TOR\d+)", text, re.M)
    by_code: dict[str, int] = {}
    for _, code in hits:
        by_code[code] = by_code.get(code, 0) + 1
    m = re.search(r"Finished checking (\d+) files", run.stderr_tail)
    return {
        "files_checked": int(m.group(1)) if m else None,
        "violations": len(hits),
        "files_with_violations": len({p for p, _ in hits}),
        "by_code": dict(sorted(by_code.items())),
    }


def fixit_findings(run: Run) -> dict:
    text = Path(run.stdout_path).read_text(errors="replace")
    hits = re.findall(r"^(\S+?)@\d+:\d+ (\w+):", text, re.M)
    errors = re.findall(r"^(\S+?): EXCEPTION:", text, re.M)
    m = re.search(r"(\d+) files? (?:checked|clean)", run.stderr_tail)
    m2 = re.search(r"(\d+) files? with errors", run.stderr_tail)
    return {
        "files_checked": int(m.group(1)) if m else None,
        "files_with_errors": int(m2.group(1)) if m2 else None,
        "violations": len(hits),
        "exceptions": len(errors),
    }


# --------------------------------------------------------------------------------------------
# single-file latency

IN_PROCESS = r"""
import gc, json, statistics, sys, time
path, repeats = sys.argv[1], int(sys.argv[2])
source = open(path, encoding="utf-8").read()
import libcst
from graphsafe.config import Settings
from graphsafe.analyzer.engine import check_source
settings = Settings(regions=("*",))

def parse():
    libcst.parse_module(source)

def analyse():
    return check_source(source, path, settings)

parse()  # warm: imports, caches, allocator
first = analyse()
lib, gs = [], []
for _ in range(repeats):  # interleaved, so drift hits both alike
    t = time.perf_counter(); parse(); lib.append(time.perf_counter() - t)
    t = time.perf_counter(); analyse(); gs.append(time.perf_counter() - t)
print(json.dumps({
    "libcst_parse_s": lib, "check_source_s": gs,
    "diagnostics": len(first.diagnostics), "regions": len(first.regions),
    "lines": source.count("\n"),
}))
"""


def single_file(python: str, gs_cmd: list[str], cwd: Path, rel: str, repeats: int, fresh: int, timeout: float, logs: Path) -> dict:
    out: dict = {"file": rel}
    proc = subprocess.run([python, "-c", IN_PROCESS, rel, str(repeats)], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        out["in_process_error"] = proc.stderr[-3000:]
    else:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        out.update(
            lines=data["lines"],
            diagnostics_in_process=data["diagnostics"],
            regions_in_process=data["regions"],
            libcst_parse_median_s=statistics.median(data["libcst_parse_s"]),
            check_source_median_s=statistics.median(data["check_source_s"]),
            libcst_parse_s=data["libcst_parse_s"],
            check_source_s=data["check_source_s"],
            repeats=repeats,
        )
    commands = {
        "graphsafe_cli": [*gs_cmd, "check", rel, "--region", "*", "--no-cache", "--format", "json"],
        "libcst_cli": [python, "-c", "import sys, libcst; libcst.parse_module(open(sys.argv[1]).read())", rel],
        "python_startup": [python, "-c", "pass"],
    }
    for key, cmd in commands.items():
        measure(f"warmup-{key}", cmd, cwd, timeout, logs, sample_memory=False)
        runs = [measure(f"fresh-{key}", cmd, cwd, timeout, logs, sample_memory=False) for _ in range(fresh)]
        out[f"{key}_cmd"] = shlex.join(cmd)
        out[f"{key}_median_s"] = statistics.median(r.wall_s for r in runs)
        out[f"{key}_s"] = [r.wall_s for r in runs]
        out[f"{key}_rc"] = sorted({r.rc for r in runs})
        if key == "graphsafe_cli" and runs[-1].rc not in (0, 1):
            out["graphsafe_cli_error"] = runs[-1].stderr_tail
    out["fresh_repeats"] = fresh
    return out


# --------------------------------------------------------------------------------------------
# report


def secs(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


def mem(x: int | None) -> str:
    return "—" if not x else (f"{x / GB:.2f} GB" if x >= GB else f"{x / MB:.0f} MB")


def run_time(run: Run | None) -> str:
    if run is None:
        return "not run"
    if run.timed_out:
        return f"> {run.timeout_s:.0f} s (timeout)"
    if not run.ok:
        return f"failed (rc {run.rc})"
    return secs(run.wall_s)


def verdict(ok: bool | None) -> str:
    return "—" if ok is None else ("yes" if ok else "NO")


def build_table(r: dict) -> list[list[str]]:
    runs = r["runs"]
    cold, warm = runs.get("graphsafe_cold"), runs.get("graphsafe_warm")
    tf, fx = runs.get("torchfix"), runs.get("fixit")
    rows = []
    cold_ok = cold is not None and cold.ok and cold.rc in (0, 1)  # graphsafe: 2 is a usage/internal error
    for label, ref in (("TorchFix", tf), ("Fixit", fx)):
        if ref is None:
            rows.append([f"whole tree, cold, vs {label}", run_time(cold), "skipped", "—", "≥ 5× faster", "—"])
            continue
        if cold_ok and ref.timed_out:
            ratio, ok = f"> {ref.timeout_s / cold.wall_s:.1f}× faster", (True if ref.timeout_s / cold.wall_s >= 5 else None)
        elif cold_ok and ref.ok:
            ratio, ok = f"{ref.wall_s / cold.wall_s:.1f}× faster", ref.wall_s / cold.wall_s >= 5
        else:
            ratio, ok = "—", None
        rows.append([f"whole tree, cold, vs {label}", run_time(cold), f"{label}: {run_time(ref)}", ratio, "≥ 5× faster", verdict(ok)])
    for label, ref in (("TorchFix", tf), ("Fixit", fx)):
        if ref is not None and cold_ok and ref.ok:
            q = ref.cpu_s / cold.cpu_s
            rows.append([f"whole tree, cold, CPU time (user+sys, all processes) vs {label}", f"{cold.cpu_s:.0f} CPU-s",
                         f"{label}: {ref.cpu_s:.0f} CPU-s", f"{q:.1f}× less", "(context: wall-clock target above)", "—"])
    if cold_ok and warm is not None and warm.ok and warm.rc in (0, 1):
        frac = warm.wall_s / cold.wall_s
        rows.append(["whole tree, warm cache", run_time(warm), f"cold: {run_time(cold)}", f"{frac * 100:.1f}% of cold", "≤ 5% of cold", verdict(frac <= 0.05)])
    else:
        rows.append(["whole tree, warm cache", run_time(warm), f"cold: {run_time(cold)}", "—", "≤ 5% of cold", "—"])
    sf = r.get("single_file") or {}
    if "check_source_median_s" in sf:
        q = sf["check_source_median_s"] / sf["libcst_parse_median_s"]
        rows.append([
            f"one file in-process ({sf['file']}, median of {sf['repeats']})",
            f"check_source: {secs(sf['check_source_median_s'])}",
            f"libcst.parse_module: {secs(sf['libcst_parse_median_s'])}",
            f"{q:.2f}×", "≤ 1.5×", verdict(q <= 1.5),
        ])
    elif sf:
        rows.append([f"one file in-process ({sf.get('file')})", "failed", "", "—", "≤ 1.5×", "—"])
    if "graphsafe_cli_median_s" in sf:
        q = sf["graphsafe_cli_median_s"] / sf["libcst_cli_median_s"]
        rows.append([
            f"one file, fresh process (median of {sf['fresh_repeats']})",
            f"graphsafe check: {secs(sf['graphsafe_cli_median_s'])}",
            f"python -c libcst.parse_module: {secs(sf['libcst_cli_median_s'])}",
            f"{q:.2f}×", "≤ 1.5×", verdict(q <= 1.5),
        ])
    if cold is not None:
        refs = ", ".join(f"{n}: {mem(x.peak_tree_rss)}" for n, x in (("TorchFix", tf), ("Fixit", fx)) if x is not None)
        peak = cold.peak_tree_rss
        rows.append([
            f"peak memory, cold run (sum of RSS over the process tree)",
            mem(peak), refs or "—",
            "—", "< 1.5 GB", verdict(peak < 1.5 * GB if cold_ok else None),
        ])
        rows.append([
            "peak memory, cold run (sum of PSS over the process tree)",
            mem(cold.peak_tree_pss),
            ", ".join(f"{n}: {mem(x.peak_tree_pss)}" for n, x in (("TorchFix", tf), ("Fixit", fx)) if x is not None) or "—",
            "—", "< 1.5 GB", verdict(cold.peak_tree_pss < 1.5 * GB if cold_ok and cold.peak_tree_pss else None),
        ])
    return rows


def markdown(r: dict) -> str:
    lines = []
    m = r["machine"]
    lines.append(f"# graphsafe check benchmark — {r['date']}\n")
    fp = m.get("graphsafe_source") or {}
    lines.append(
        f"Machine: {m['nproc']} cores (os.cpu_count), {m['mem_total']}, {m['cpu_model']}; {m['platform']}; "
        f"python {m['python']}; graphsafe {m['graphsafe']} with libcst {m['libcst']}; "
        f"TorchFix {m.get('torchfix', '—')} with libcst {m.get('torchfix_libcst', '—')}; "
        f"Fixit {m.get('fixit', '—')} with libcst {m.get('fixit_libcst', '—')}. "
        f"graphsafe sources: commit {fp.get('commit', '?')}, {fp.get('uncommitted_files', '?')} uncommitted file(s) "
        f"in the package, source hash {fp.get('sources', '?')}.\n"
    )
    t = r["tree"]
    lines.append(
        f"Input: the .py files of `{t['source']}` (torch {t.get('torch_version', '?')}), {t['files']} files, "
        f"{t['lines']:,} lines, mirrored to `{t['mirror']}`; every command runs with cwd `{t['cwd']}`. "
        f"Jobs: {r['jobs']}.\n"
    )
    lines.append("| metric | graphsafe | reference | ratio | target | met |")
    lines.append("|---|---|---|---|---|---|")
    for row in build_table(r):
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines.append("Runs (wall; CPU = user+sys of the process and its workers; other CPU = CPU-s the rest of the machine used meanwhile (other users' work skews wall times when it is large); 1/5/15-min load before; peak tree RSS / PSS; largest single process; peak RSS of the started process itself):\n")
    lines.append("| run | wall | CPU | other CPU | load before | tree RSS | tree PSS | max single RSS | parent RSS | procs | rc | output |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key, run in r["runs"].items():
        found = r["findings"].get(key, {})
        summary = ", ".join(f"{k}={v}" for k, v in found.items() if k not in ("by_code", "gs000")) if found else ""
        lines.append(
            f"| {key} | {run_time(run)} | {run.cpu_s:.1f} s | {run.other_cpu_s:.1f} s | {run.load_before} | {mem(run.peak_tree_rss)} | {mem(run.peak_tree_pss)} | "
            f"{mem(run.max_single_rss)} | {mem(run.peak_leader_rss)} | {run.peak_procs} | {run.rc} | {summary} |"
        )
    for key, found in r["findings"].items():
        if found.get("by_code"):
            lines.append(f"\n{key} by code: " + ", ".join(f"{c} {n}" for c, n in found["by_code"].items()))
        if found.get("gs000"):
            lines.append(f"\n{key}: files graphsafe could not analyse (GS000):\n")
            lines.extend(f"- {x}" for x in found["gs000"])
    sf = r.get("single_file") or {}
    if sf:
        lines.append("\nSingle file: " + json.dumps({k: v for k, v in sf.items() if not k.endswith("_s") or k.endswith("median_s")}, default=str))
    if r.get("slowest"):
        lines.append("\nSlowest files for check_source (in-process, one job):\n")
        lines.append("| file | lines | seconds |")
        lines.append("|---|---|---|")
        for item in r["slowest"]:
            lines.append(f"| {item['file']} | {item['lines']} | {item['seconds']:.2f}{' ' + item['error'] if item.get('error') else ''} |")
    if r.get("notes"):
        lines.append("\nNotes:\n")
        lines.extend(f"- {n}" for n in r["notes"])
    lines.append("\nCommands (cwd as above):\n")
    lines.append("```")
    for key, run in r["runs"].items():
        lines.append(f"# {key}")
        lines.append(run.shell)
    for key in ("graphsafe_cli_cmd", "libcst_cli_cmd", "python_startup_cmd"):
        if key in sf:
            lines.append(f"# one file, fresh process: {key[:-4]}")
            lines.append(sf[key])
    lines.append("```")
    lines.append(f"\nReproduce: `{r['argv']}`")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# slowest files (optional)

SLOWEST = r"""
import json, sys, time
from pathlib import Path
from graphsafe.config import Settings
from graphsafe.analyzer.engine import check_source
settings = Settings(regions=("*",))
out = []
for line in sys.stdin:
    path = line.rstrip("\n")
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    t = time.perf_counter()
    err = None
    try:
        check_source(text, path, settings)
    except Exception as e:
        err = f"{type(e).__name__}: {e}"[:300]
    out.append({"file": path, "lines": text.count("\n"), "seconds": time.perf_counter() - t, "error": err})
print(json.dumps(out))
"""


def slowest_files(python: str, cwd: Path, tree: Path, count: int, timeout: float) -> list[dict]:
    files = sorted(str(p.relative_to(cwd)) for p in tree.rglob("*.py"))
    proc = subprocess.run([python, "-c", SLOWEST], input="\n".join(files) + "\n", cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        return [{"file": "<all>", "lines": 0, "seconds": 0.0, "error": proc.stderr[-500:]}]
    data = json.loads(proc.stdout)
    crashed = [d for d in data if d["error"]]
    return crashed + sorted((d for d in data if not d["error"]), key=lambda d: -d["seconds"])[:count]


# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, help="source tree to check (default: the installed torch package)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes for graphsafe and TorchFix (default: os.cpu_count())")
    ap.add_argument("--timeout", type=float, default=3600, help="limit for each tool run, seconds (default 3600)")
    ap.add_argument("--skip-baselines", action="store_true", help="graphsafe numbers only (no TorchFix, no Fixit)")
    ap.add_argument("--json-out", type=Path, help="also write the results as JSON here")
    ap.add_argument("--md-out", type=Path, help="also write the markdown report here")
    ap.add_argument("--baselines", type=Path, default=Path(os.environ.get("GS_BASELINES", "/tmp/gs-baselines")),
                    help="where bench/setup_baselines.sh put the venvs (default $GS_BASELINES or /tmp/gs-baselines)")
    ap.add_argument("--work-dir", type=Path, default=Path(os.environ.get("GS_BENCH_DIR", "/tmp/gs-bench")),
                    help="scratch directory: mirrored tree, cache, logs (default $GS_BENCH_DIR or /tmp/gs-bench)")
    ap.add_argument("--graphsafe", help="command that runs graphsafe (default: the venv's `graphsafe` script)")
    ap.add_argument("--file", default="torch/_tensor.py", help="single-file latency input, relative to the tree's parent")
    ap.add_argument("--repeats", type=int, default=30, help="in-process single-file repeats (default 30, at least 20)")
    ap.add_argument("--fresh-repeats", type=int, default=5, help="fresh-process single-file repeats (default 5)")
    ap.add_argument("--slowest", type=int, default=0, metavar="N",
                    help="also time check_source on every file in one process and list the N slowest (and any crash)")
    args = ap.parse_args(argv)

    python = sys.executable
    gs_cmd = graphsafe_command(args.graphsafe)
    src = (args.tree or torch_dir(python)).resolve()
    work = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    logs = work / "logs"
    if logs.exists():
        shutil.rmtree(logs)
    print(f"[bench] mirroring {src} → {work / 'tree'}", file=sys.stderr, flush=True)
    cwd, tree, files, lines = mirror_tree(src, work)
    rel_tree = str(tree.relative_to(cwd))
    jobs = args.jobs

    versions = dist_version(python, "graphsafe", "libcst", "torch")
    fingerprint = source_fingerprint(python)
    tf_py = args.baselines / "torchfix-venv" / "bin" / "python"
    fx_py = args.baselines / "fixit-venv" / "bin" / "python"
    meminfo = Path("/proc/meminfo").read_text().split("\n")[0].split()
    cpu_model = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("model name")), platform.processor())
    machine = {
        "nproc": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)),
        "mem_total": f"{int(meminfo[1]) / 1024**2:.0f} GiB RAM",
        "cpu_model": cpu_model,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "graphsafe": versions.get("graphsafe", "?"),
        "libcst": versions.get("libcst", "?"),
        "graphsafe_source": fingerprint,
    }
    notes = [
        "Peak memory is sampled every 0.2 s; tree RSS counts pages shared between a pool's forked workers once per "
        "process (over-states), tree PSS splits them among their users. The table's target row uses tree RSS.",
    ]
    result: dict = {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "argv": shlex.join([Path(python).name, *sys.argv]),
        "machine": machine,
        "jobs": jobs,
        "tree": {"source": str(src), "torch_version": versions.get("torch"), "mirror": str(tree), "cwd": str(cwd), "files": files, "lines": lines},
        "runs": {},
        "findings": {},
        "notes": notes,
    }
    runs: dict[str, Run] = result["runs"]

    def step(key: str, cmd: list[str], parse=None) -> Run:
        print(f"[bench] {key}: {shlex.join(cmd)}", file=sys.stderr, flush=True)
        run = measure(key, cmd, cwd, args.timeout, logs)
        runs[key] = run
        if parse is not None and run.ok:
            result["findings"][key] = parse(run)
        print(f"[bench] {key}: {run_time(run)}, rc {run.rc}, tree RSS {mem(run.peak_tree_rss)}", file=sys.stderr, flush=True)
        if not run.ok or (key.startswith("graphsafe") and run.rc not in (0, 1)):
            print(f"[bench] {key} stderr:\n{run.stderr_tail}", file=sys.stderr, flush=True)
        return run

    # 1. graphsafe cold.
    base = [*gs_cmd, "check", rel_tree, "--region", "*", "--jobs", str(jobs), "--format", "json"]
    step("graphsafe_cold", [*base, "--no-cache"], graphsafe_findings)

    # 2. graphsafe warm: fill a fresh cache, then the same command again.
    cache = work / "gs-cache"
    if cache.exists():
        shutil.rmtree(cache)
    step("graphsafe_cache_fill", [*base, "--cache-dir", str(cache)], graphsafe_findings)
    step("graphsafe_warm", [*base, "--cache-dir", str(cache)], graphsafe_findings)
    a, b = result["findings"].get("graphsafe_cold"), result["findings"].get("graphsafe_warm")
    if a and b and a.get("diagnostics") != b.get("diagnostics"):
        notes.append(f"graphsafe warm run reported {b.get('diagnostics')} diagnostics, cold run {a.get('diagnostics')}: the cache changes results.")

    def check_sources(stage: str) -> None:
        after = source_fingerprint(python)
        if after.get("sources") != fingerprint.get("sources"):
            notes.append(
                f"WARNING: graphsafe's sources changed while it was being measured (by the end of {stage}: "
                f"{fingerprint.get('sources')} → {after.get('sources')}): the graphsafe numbers mix versions, and a changed "
                "cache schema or rule set makes the warm run miss the cache. Re-run on a quiet tree."
            )
            print(f"[bench] {notes[-1]}", file=sys.stderr, flush=True)
            fingerprint["sources"] = after.get("sources")

    check_sources("the whole-tree runs")

    # 5. single file.
    single = Path(args.file)
    if (cwd / single).is_file():
        print(f"[bench] single file: {single}", file=sys.stderr, flush=True)
        result["single_file"] = single_file(python, gs_cmd, cwd, str(single), max(args.repeats, 1), max(args.fresh_repeats, 1), args.timeout, logs)
        if "in_process_error" in result["single_file"]:
            print(f"[bench] in-process single-file run failed:\n{result['single_file']['in_process_error']}", file=sys.stderr)
    else:
        notes.append(f"single-file latency skipped: {single} is not in the tree")

    if args.slowest:
        print("[bench] timing every file with check_source (one process)", file=sys.stderr, flush=True)
        result["slowest"] = slowest_files(python, cwd, tree, args.slowest, args.timeout * 4)

    check_sources("the single-file runs")

    # 3. and 4. the references.
    if not args.skip_baselines:
        tf_bin, fx_bin = tf_py.parent / "torchfix", fx_py.parent / "fixit"
        if tf_bin.exists():
            v = dist_version(str(tf_py), "TorchFix", "libcst")
            machine["torchfix"], machine["torchfix_libcst"] = v.get("TorchFix", "?"), v.get("libcst", "?")
            step("torchfix", [str(tf_bin), "--select", "ALL", "--jobs", str(jobs), rel_tree], torchfix_findings)
            checked = (result["findings"].get("torchfix") or {}).get("files_checked")
            notes.append(
                f"TorchFix runs LibCST's parallel_exec_transform_with_prettyprint with --jobs {jobs} worker processes and "
                f"--select ALL (every TOR rule). It first skips files whose text does not contain 'torch': it checked "
                f"{checked if checked is not None else '?'} of the {files} files, graphsafe and Fixit all of them."
            )
        else:
            notes.append(f"TorchFix not found at {tf_bin}: run bench/setup_baselines.sh")
        if fx_bin.exists():
            v = dist_version(str(fx_py), "fixit", "libcst")
            machine["fixit"], machine["fixit_libcst"] = v.get("fixit", "?"), v.get("libcst", "?")
            rules = fixit_rules(str(fx_py), cwd, str(single) if (cwd / single).is_file() else rel_tree)
            result["fixit_rules"] = rules
            step("fixit", [str(fx_bin), "lint", rel_tree], fixit_findings)
            seen = (result["findings"].get("fixit") or {}).get("files_checked")
            if seen != files:
                notes.append(f"WARNING: Fixit reports {seen} files checked, the tree has {files}.")
            notes.append(
                f"Fixit has no jobs option: its trailrunner pool is a spawn ProcessPoolExecutor with os.cpu_count() = "
                f"{os.cpu_count()} workers{'' if os.cpu_count() == jobs else f' (graphsafe and TorchFix used {jobs})'}. "
                f"Rules: its defaults (no config file; `fixit.rules`, {len(rules)} rules: {', '.join(rules)})."
            )
        else:
            notes.append(f"Fixit not found at {fx_bin}: run bench/setup_baselines.sh")
    else:
        notes.append("baselines skipped (--skip-baselines)")

    text = markdown(result)
    print(text)
    if args.md_out:
        args.md_out.write_text(text)
    if args.json_out:
        payload = dict(result)
        payload["runs"] = {k: {**asdict(v), "command": v.shell} for k, v in runs.items()}
        payload["table"] = [dict(zip(("metric", "graphsafe", "reference", "ratio", "target", "met"), row)) for row in build_table(result)]
        payload["markdown"] = text
        args.json_out.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    cold = runs.get("graphsafe_cold")
    return 0 if cold is not None and cold.ok and cold.rc in (0, 1) else 1


if __name__ == "__main__":
    raise SystemExit(main())
