"""Issue 24's done-when comparison on the corpus: does `check` with run-time facts report every
hazard `trace` reports on the same step?

    python bench/facts_coverage.py [--programs train_loop,beam_search] [--steps 4] [--json-out PATH]

For each corpus program with a `capture.py` factory (`make(device)` returns {"step", "args"} or a
(step, args) tuple: the step its own GPU path captures), on the CPU, each in a fresh process:
1. `graphsafe trace <step> --args <the factory's args> --steps N --static --save-facts TMP/facts.json`
   (a small driver module in TMP exposes the factory's step and arguments as module:function
   targets; the same arguments every step, as a trial capture calls it);
2. `graphsafe check corpus/<program> --region <the step's Class.method>` with `--facts` naming that
   file, and with an empty facts file (static alone: an earlier `.graphsafe/facts.json` must not count);
3. every hazard the trace reported in the program's files that check does not report at that
   file:line: a hazard counts as reported when check reports the same code on the same line or on
   a line its grouping's `also` lists (trace_report.merge_with_static's rule). The tracer reports
   a value that changed between calls (`self.pos: 4 → 5`, a tensor attribute given new storage)
   at the step's `def` line, where check never reports; such a finding is counted apart, as
   reported at its uses, only when check reports every value it names (GS301/GS302 for a number,
   GS401/GS404 for a storage, the value's last name quoted in the message).
Prints a Markdown table (program, trace hazards, reported on their line with and without facts,
def-line changes reported at their uses, missed with reasons); REASONS holds the reason found for
each miss (bench/RESULTS.md, "Facts coverage (issue 24)").

    python bench/facts_coverage.py --real [--real-steps a,b] [--device cuda] [--wheels DIR]
                                   [--facts-dir DIR] [--no-score] [--json-out PATH]

The same for the real steps of bench/real_e2e (default: the development part's steps that install
for the device; bench/real/facts_from_steps.py installs them), each in score.py's unpacked tree of
its package: `trace --static --save-facts DIR/steps/<step>.json` of the step, then `check . --region
<the step's REGION>` with those facts and with none. Trace hazards outside the package's tree (the
step's own driver) are left out, and so are those whose stack shows they ran outside the REGION
(counted apart). With `--device cuda` the step is built and traced on CUDA tensors (device facts).
The steps' facts are then merged per package (DIR/<package>.json) and bench/real/score.py runs on
those packages' development-part labels without and with `--facts-dir DIR`: the per-step-scalar and
branch positives the facts turn into reports (REAL_REASONS: the reason for each miss).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from graphsafe.runtime.trace_report import RUNTIME_ONLY, merge_with_static  # noqa: E402  (no torch)

CORPUS = REPO / "corpus"

DRIVER = '''\
import importlib.util
import sys

sys.path.insert(0, {folder!r})
# `trace` imports this file once for `run` and once more for `make`: one build serves both
_module = sys.modules.get("_gs_capture_factory")
if _module is None:
    _spec = importlib.util.spec_from_file_location("_gs_capture_factory", {factory!r})
    _module = sys.modules["_gs_capture_factory"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    _module.gs_built = _module.make("cpu")
_built = _module.gs_built
if isinstance(_built, dict):
    run, _args = _built["step"], tuple(_built.get("args", ()))
else:
    run, _args = _built[0], tuple(_built[1]) if len(_built) > 1 else ()
_step = getattr(run, "forward", run) if hasattr(run, "parameters") else run  # an nn.Module runs forward
_function = getattr(_step, "__func__", _step)
QUALNAME = getattr(_function, "__qualname__", type(run).__qualname__ + ".forward").replace("<locals>.", "")


def make():
    return _args
'''

# (program, path relative to the repo, line, code) -> why check with facts does not report it
REASONS: dict[tuple[str, str, int, str], str] = {
    ("negatives", "corpus/negatives/train.py", 41, "GS701"):
        "CPU only: AdamW is built with capturable=(device.type == 'cuda'), so the CPU trace steps a "
        "non-capturable one (its host reads); the GPU path's is capturable and check rightly says nothing",
}


def programs() -> list[str]:
    return sorted(p.parent.name for p in CORPUS.glob("*/capture.py"))


def graphsafe(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    return subprocess.run([sys.executable, "-m", "graphsafe", *args], cwd=REPO, capture_output=True, text=True,
                          env=env, timeout=timeout)


def step_qualname(driver: Path) -> str:
    """The step's `Class.method` (what `check --region` matches), read from the driver in a child."""
    code = ("import importlib.util,sys;s=importlib.util.spec_from_file_location('d',sys.argv[1]);"
            "m=importlib.util.module_from_spec(s);s.loader.exec_module(m);print(m.QUALNAME)")
    done = subprocess.run([sys.executable, "-c", code, str(driver)], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"the factory failed: {done.stderr.strip()[-600:]}")
    return done.stdout.strip().splitlines()[-1]


def check(program: str, region: str, facts: Path) -> list[dict]:
    done = graphsafe("check", f"corpus/{program}", "--region", region, "--facts", str(facts), "--no-cache",
                     "--output-format", "json", "--exit-zero")
    try:
        return json.loads(done.stdout or "[]")
    except json.JSONDecodeError:
        raise RuntimeError(f"check printed no JSON: {done.stderr.strip()[-600:]}") from None


def measure(program: str, steps: int, work: Path) -> dict:
    folder = CORPUS / program
    driver = work / f"_gs_coverage_{program}.py"
    driver.write_text(DRIVER.format(folder=str(folder), factory=str(folder / "capture.py")))
    region = step_qualname(driver)
    facts, empty = work / "facts.json", work / "empty.json"
    empty.write_text(json.dumps({"version": 1, "root": os.path.relpath(REPO, work), "files": {}}))
    traced = graphsafe("trace", f"{driver}:run", "--args", f"{driver}:make", "--steps", str(steps), "--static",
                       "--save-facts", str(facts), "--format", "json")
    try:
        output = json.loads(traced.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"trace exit {traced.returncode}: {traced.stderr.strip()[-600:]}") from None
    inside = str(folder.resolve()) + os.sep
    findings = [f for f in output["findings"] if os.path.realpath(f["filename"]).startswith(inside)]
    if not facts.is_file():
        raise RuntimeError(f"trace wrote no facts: {traced.stderr.strip()[-600:]}")
    with_facts, alone = check(program, region, facts), check(program, region, empty)
    trace_static_by = {(e["code"], e["filename"], e["row"]): e.get("static_by")
                       for status in ("both", RUNTIME_ONLY) for e in output.get("merged", {}).get(status, [])}
    same_line, at_uses, missed = compare(findings, with_facts)
    same_line_alone, at_uses_alone, _ = compare(findings, alone)
    return {
        "program": program, "region": region, "trace_exit": traced.returncode,
        "trace_error": traced.stderr.strip().splitlines()[-1] if traced.returncode == 2 and traced.stderr.strip() else None,
        "hazards": sorted(_key(f) for f in findings),
        "with_facts": same_line, "without_facts": same_line_alone,
        "at_uses": at_uses, "at_uses_without_facts": len(at_uses_alone),
        "missed": [{**m, "trace --static": trace_static_by.get((m["code"], str(REPO / m["path"]), m["row"])),
                    "reason": REASONS.get((program, m["path"], m["row"], m["code"]), "?")} for m in missed],
    }


def _key(item: dict, base: Path = REPO) -> tuple[str, int, str]:
    row = item["row"] if "row" in item else item["location"]["row"]
    return os.path.relpath(os.path.realpath(item["filename"]), os.path.realpath(base)), row, item["code"]


def compare(findings: list[dict], diagnostics: list[dict], base: Path = REPO) -> tuple[int, list[dict], list[dict]]:
    """(trace hazards check reports on their line or a line its `also` lists; def-line changes it
    reports at each value's uses; the rest), for one check run; paths relative to `base` (where
    check ran)."""
    details = {_key(f, base): f["details"] for f in findings}
    unreported = sorted(_key(e, base) for e in merge_with_static(findings, diagnostics, root=str(base))[RUNTIME_ONLY])
    at_uses, missed = [], []
    for path, row, code in unreported:
        entry = {"path": path, "row": row, "code": code, "details": details.get((path, row, code), [])}
        uses = reported_at_uses(path, row, code, entry["details"], diagnostics, base)
        if uses:
            at_uses.append({**entry, "uses": uses})
        else:
            missed.append(entry)
    return len(findings) - len(unreported), at_uses, missed


# A value's change between calls is reported by check where the value is read or written
CHANGE_CODES = {"number": ("GS301", "GS302"), "storage": ("GS401", "GS404")}


def reported_at_uses(path: str, row: int, code: str, details: list[str], checked: list[dict],
                     base: Path = REPO) -> list[str]:
    """For a trace finding at the step's `def` line (a value that changed between calls: `self.pos:
    4 → 5`, or a tensor attribute given new storage), the check diagnostics that report each named
    value where it is read or written (`attribute `pos` of KVCache`, `self.pos` is a counter);
    [] unless every value is reported so."""
    lines = (base / path).read_text(encoding="utf-8").splitlines()
    if code not in ("GS301", "GS401") or not 0 < row <= len(lines) or \
            not lines[row - 1].lstrip().startswith(("def ", "async def ")):
        return []
    found = []
    for detail in details:
        name, arrow, _ = detail.partition(" → ")
        last = re.search(r"(\w+)'?\]?$", name.rpartition(": ")[0] if arrow else name)
        if detail.startswith("+") or last is None:  # "+2 more": values the trace did not name
            return []
        family = CHANGE_CODES["number" if arrow else "storage"]
        mention = re.compile(rf"`(?:[\w\[\]'.]*\.)?{re.escape(last.group(1))}`")
        uses = [f"{os.path.relpath(os.path.join(base, d['filename']), base)}:{d['location']['row']} {d['code']}"
                for d in checked
                if d["code"] in family and mention.search(d["message"])]
        if not uses:
            return []
        found.append(f"`{last.group(1)}`: {', '.join(uses)}")
    return found


def table(rows: list[dict], first: str = "program", real: bool = False) -> str:
    """The markdown table of rows from measure() (corpus programs) or measure_real() (`real`:
    real steps, with the hazards outside the region and the region without its file)."""
    hazards = "trace hazards (outside the region)" if real else "trace hazards"
    lines = [f"| {first} | region | {hazards} | same line, with facts | same line, without facts | "
             "def-line changes reported at their uses (with / without facts) | missed with facts (reason) |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['program']} | — | not measured: {row['error']} | | | | |")
            continue
        missed = "; ".join(f"{m['path']}:{m['row']} {m['code']} ({m['reason']})" for m in row["missed"]) or "—"
        if real:
            note = f"; trace stopped: {row['trace_error']}" if row["trace_error"] else ""
            region, count = row["region"].partition("::")[2], f"{len(row['hazards'])} ({len(row['outside_region'])}{note})"
        else:
            note = f" (trace stopped: {row['trace_error']})" if row["trace_error"] else ""
            region, count = row["region"], f"{len(row['hazards'])}{note}"
        lines.append(f"| {row['program']} | `{region}` | {count} | {row['with_facts']} | {row['without_facts']} | "
                     f"{len(row['at_uses'])} / {row['at_uses_without_facts']} | {missed} |")
    measured = [r for r in rows if "error" not in r]
    total = lambda field: sum(r[field] if isinstance(r[field], int) else len(r[field]) for r in measured)  # noqa: E731
    count = f"{total('hazards')} ({total('outside_region')})" if real else f"{total('hazards')}"
    lines.append(f"| **all** | | {count} | {total('with_facts')} | {total('without_facts')} | "
                 f"{total('at_uses')} / {total('at_uses_without_facts')} | {total('missed')} |")
    return "\n".join(lines) + "\n"


# --- the real steps (bench/real_e2e) ---------------------------------------------------------------

# (step, path relative to the package root, line, code) -> why check with facts does not report it
CPU_TO = ("CPU only: the step is built for the CPU, so `.to(device=...)` names the CPU and the tracer, which "
          "takes every tensor for a device tensor there, sees a copy to the host; on the GPU it moves a tensor to the "
          "device it is already on (no copy)")
REAL_REASONS: dict[tuple[str, str, int, str], str] = {
    ("ignite_train", "ignite/engine/__init__.py", 66, "GS101"):
        "`.item()` in the default `output_transform` lambda, called through a parameter: a lambda is no unit of "
        "the call graph, and the run's call facts are keyed by def (a lambda has none)",
    ("ignite_train", "ignite/utils.py", 44, "GS103"): CPU_TO,
    ("rwkv_decode", "rwkv/model.py", 1520, "GS103"): CPU_TO,
    ("rwkv_decode", "rwkv/model.py", 1666, "GS103"): CPU_TO,
    ("pyro_svi", "pyro/distributions/distribution.py", 26, "GS402"):
        "inside torch.distributions (torch's own code, not analysed): `torch.tensor(..., device=...)` in the "
        "constructor pyro's metaclass calls through `super().__call__`",
    ("pyro_svi", "pyro/util.py", 135, "GS105"):
        "a second host read on the line check reports as GS201 (`if torch_isnan(value):`): an "
        "`aten._local_scalar_dense` with no torch-function call around it, which the tracer cannot name",
    ("pyro_svi", "pyro/util.py", 203, "GS105"):
        "a second host read on the line check reports as GS201 (`if (not allow_posinf) and (...)`): an "
        "`aten._local_scalar_dense` with no torch-function call around it, which the tracer cannot name",
}
SCORED_KINDS = ("scalar", "branch")  # the yardstick's per-step-scalar and tensor-branch labels


def _real_modules():
    """bench/real/facts_from_steps.py and bench/real/score.py (imported on demand: they put
    bench/real_e2e on sys.path)."""
    sys.path.insert(0, str(REPO / "bench" / "real"))
    import facts_from_steps
    import score

    return facts_from_steps, score


def in_region(finding: dict, region: str, root: Path) -> bool | None:
    """Was the finding hit inside the step's REGION (`path.py::Qual.name`)? True when a frame of its
    stack is that function; False when its whole stack is known and none is; None when the stack
    was cut (the tracer keeps MAX_STACK user frames)."""
    path, _, qualname = region.partition("::")
    frames = [*finding.get("stack", ()), {"filename": finding["filename"], "function": finding.get("function")}]
    suffix = os.sep + os.path.normpath(path)
    for frame in frames:
        if frame.get("function") == qualname and os.path.realpath(frame["filename"]).endswith(suffix):
            return True
    outermost = os.path.realpath(frames[0]["filename"])
    return False if not outermost.startswith(os.path.realpath(root) + os.sep) else None


def check_real(root: Path, region: str, facts: Path, env: dict) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "graphsafe", "check", ".", "--region", region, "--facts", str(facts),
                           "--no-cache", "--output-format", "json", "--exit-zero"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=900)
    try:
        return json.loads(done.stdout or "[]")
    except json.JSONDecodeError:
        raise RuntimeError(f"check printed no JSON: {done.stderr.strip()[-600:]}") from None


def measure_real(name: str, steps: int, work: Path, facts_dir: Path, wheels: Path, device: str) -> dict:
    """One real step: trace it (`--static --save-facts`), then check its REGION in the same tree with
    and without the facts, and compare."""
    facts_from_steps, _ = _real_modules()
    import packages  # bench/real_e2e/packages.py, on sys.path through facts_from_steps
    from step_api import read_step_info

    info = read_step_info(name)
    try:
        root, env = facts_from_steps.prepare_step(name, wheels, work, 0, device)
    except packages.PackageError as error:
        raise RuntimeError(f"not installed: {error}") from None
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env["PYTHONPATH"]])  # this checkout's graphsafe first
    facts = facts_dir / "steps" / f"{name}.json"
    facts.parent.mkdir(parents=True, exist_ok=True)
    facts.unlink(missing_ok=True)  # this step's facts alone (the package's are merged later)
    traced = subprocess.run(facts_from_steps.trace_command(facts, steps, static=True), cwd=root, env=env,
                            capture_output=True, text=True, timeout=900)
    try:
        output = json.loads(traced.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"trace exit {traced.returncode}: {traced.stderr.strip()[-600:]}") from None
    if not facts.is_file():
        raise RuntimeError(f"trace wrote no facts: {traced.stderr.strip()[-600:]}")
    inside = os.path.realpath(root) + os.sep
    in_tree = [f for f in output["findings"] if os.path.realpath(f["filename"]).startswith(inside)]
    placed = [(f, in_region(f, info.region, root)) for f in in_tree]
    findings = [f for f, where in placed if where is not False]
    empty = work / "empty.json"
    empty.write_text(json.dumps({"version": 1, "root": os.path.relpath(root, work), "files": {}}))
    with_facts, alone = check_real(root, info.region, facts, env), check_real(root, info.region, empty, env)
    trace_static_by = {_key({"filename": e["filename"], "row": e["row"], "code": e["code"]}, root): e.get("static_by")
                       for status in ("both", RUNTIME_ONLY) for e in output.get("merged", {}).get(status, [])}
    same_line, at_uses, missed = compare(findings, with_facts, root)
    same_line_alone, at_uses_alone, _ = compare(findings, alone, root)
    return {
        "program": name, "package": info.package, "region": info.region, "device": device,
        "trace_exit": traced.returncode,
        "trace_error": traced.stderr.strip().splitlines()[-1] if traced.returncode == 2 and traced.stderr.strip() else None,
        "hazards": sorted(_key(f, root) for f in findings),
        "outside_region": sorted(_key(f, root) for f, where in placed if where is False),
        "cut_stacks": sum(where is None for _, where in placed),
        "with_facts": same_line, "without_facts": same_line_alone,
        "at_uses": at_uses, "at_uses_without_facts": len(at_uses_alone),
        "missed": [{**m, "trace --static": trace_static_by.get((m["path"], m["row"], m["code"])),
                    "reason": REAL_REASONS.get((name, m["path"], m["row"], m["code"]), "?")} for m in missed],
    }


def merge_package_facts(facts_dir: Path, rows: list[dict]) -> list[str]:
    """DIR/<package>.json from its steps' facts files (DIR/steps/<step>.json), a later step's entry
    for a function over an earlier one's, as the tracer merges; the packages written."""
    merged: dict[str, dict] = {}
    for row in rows:
        path = facts_dir / "steps" / f"{row['program']}.json"
        if "error" in row or not path.is_file():
            continue
        data = json.loads(path.read_text())
        root = os.path.normpath(os.path.join(path.parent, data["root"]))
        package = merged.setdefault(row["package"], {"version": data["version"], "root": root, "files": {}})
        for rel, entry in data["files"].items():
            package["files"].setdefault(rel, {"functions": {}})["functions"].update(entry["functions"])
    for name, data in merged.items():
        data["root"] = os.path.relpath(data["root"], facts_dir)
        (facts_dir / f"{name}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return sorted(merged)


def scored_misses(package_names: list[str], facts_dir: Path | None, cache: Path) -> list[str]:
    """The development part's missed per-step-scalar and branch positives of these packages, as
    bench/real/score.py lists them (`--facts-dir`: checked with the run-time facts)."""
    _, score = _real_modules()
    split = json.loads((REPO / "bench" / "real" / "split.json").read_text())
    names = [n for n in package_names if n in split["dev"]]  # the test part is the lead's, once (issue 18)
    if not names:
        return []
    with tempfile.TemporaryDirectory(prefix="gs-facts-score-") as folder:
        out = Path(folder) / "score.json"
        command = [sys.executable, str(REPO / "bench" / "real" / "score.py"), "--part", "dev", "--packages",
                   ",".join(names), "--cache", str(cache), "--json", str(out)]
        if facts_dir is not None:
            command += ["--facts-dir", str(facts_dir)]
        # score.py runs `python -m graphsafe` in each package's tree: this checkout's graphsafe, not
        # an installed one
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0 or not out.is_file():
            raise RuntimeError(f"score.py exited {done.returncode}: {done.stderr.strip()[-600:]}")
        misses = json.loads(out.read_text())["misses"]
    # "<package> <path>:<line> <kind>: <text>  # <reason>"
    return [m for m in misses if m.split(": ", 1)[0].rpartition(" ")[2] in SCORED_KINDS]


def real_table(rows: list[dict]) -> str:
    return table(rows, first="step", real=True)


def run_real(args: argparse.Namespace) -> int:
    facts_from_steps, _ = _real_modules()
    names = args.real_steps.split(",") if args.real_steps else facts_from_steps.dev_steps(args.device)
    facts_dir = (args.facts_dir or Path(tempfile.mkdtemp(prefix="gs-real-facts-"))).resolve()
    rows = []
    with tempfile.TemporaryDirectory(prefix="gs-facts-coverage-") as work:
        for name in names:
            try:
                rows.append(measure_real(name, args.steps, Path(work), facts_dir, args.wheels, args.device))
            except (RuntimeError, subprocess.TimeoutExpired) as error:
                rows.append({"program": name, "error": str(error).replace("\n", " ")[:300]})
            print(f"{name}: done", file=sys.stderr, flush=True)
    report = {"rows": rows, "facts_dir": str(facts_dir)}
    sys.stdout.write(real_table(rows))
    written = merge_package_facts(facts_dir, rows)
    if written and not args.no_score:
        before = scored_misses(written, None, args.wheels.parent)
        after = scored_misses(written, facts_dir, args.wheels.parent)
        report["score"] = {"packages": written, "missed_without_facts": before, "missed_with_facts": after}
        turned = [m for m in before if m not in after]
        sys.stdout.write(f"\nyardstick (dev part, {', '.join(written)}): per-step-scalar and branch positives "
                         f"missed without facts {len(before)}, with facts {len(after)}; turned into reports:\n")
        sys.stdout.write("".join(f"  {m}\n" for m in turned) or "  none\n")
        new = [m for m in after if m not in before]
        if new:
            sys.stdout.write("missed only with facts:\n" + "".join(f"  {m}\n" for m in new))
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", help="comma-separated corpus programs (default: every one with capture.py)")
    parser.add_argument("--steps", type=int, default=4, help="traced calls per step (default 4)")
    parser.add_argument("--json-out", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--real", action="store_true", help="the real steps of bench/real_e2e instead of the corpus")
    parser.add_argument("--real-steps", help="with --real: comma-separated steps (default: the development part's "
                                             "steps that install for --device)")
    parser.add_argument("--device", default="cpu", help="with --real: build and trace the steps on this device")
    parser.add_argument("--wheels", type=Path, default=Path(os.environ.get(
        "GS_REAL_CACHE", Path.home() / ".cache/graphsafe-real")) / "wheels",
        help="with --real: the pinned archives (bench/real_e2e/run.py --prepare DIR for a GPU image)")
    parser.add_argument("--facts-dir", type=Path, help="with --real: keep the facts here (steps/<step>.json and "
                                                       "<package>.json, for score.py --facts-dir)")
    parser.add_argument("--no-score", action="store_true", help="with --real: skip the yardstick's before/after")
    args = parser.parse_args(argv)
    if args.real:
        return run_real(args)
    names = args.programs.split(",") if args.programs else programs()
    rows = []
    for name in names:
        with tempfile.TemporaryDirectory(prefix="gs-facts-coverage-") as work:
            try:
                rows.append(measure(name, args.steps, Path(work)))
            except (RuntimeError, subprocess.TimeoutExpired) as error:
                rows.append({"program": name, "error": str(error).replace("\n", " ")[:300]})
        print(f"{name}: done", file=sys.stderr, flush=True)
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=1) + "\n")
    sys.stdout.write(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
