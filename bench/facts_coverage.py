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
    ("speech_eval", "corpus/speech_eval/evaluate.py", 38, "GS201"):
        "same line, another code: check reports GS105 (`bool()` of a tensor); the tracer calls every "
        "Tensor.__bool__ GS201, `if t` and `bool(t)` alike (one cause)",
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


def _key(item: dict) -> tuple[str, int, str]:
    row = item["row"] if "row" in item else item["location"]["row"]
    return os.path.relpath(os.path.realpath(item["filename"]), REPO), row, item["code"]


def compare(findings: list[dict], diagnostics: list[dict]) -> tuple[int, list[dict], list[dict]]:
    """(trace hazards check reports on their line or a line its `also` lists; def-line changes it
    reports at each value's uses; the rest), for one check run."""
    details = {_key(f): f["details"] for f in findings}
    unreported = sorted(_key(e) for e in merge_with_static(findings, diagnostics, root=str(REPO))[RUNTIME_ONLY])
    at_uses, missed = [], []
    for path, row, code in unreported:
        entry = {"path": path, "row": row, "code": code, "details": details.get((path, row, code), [])}
        uses = reported_at_uses(path, row, code, entry["details"], diagnostics)
        if uses:
            at_uses.append({**entry, "uses": uses})
        else:
            missed.append(entry)
    return len(findings) - len(unreported), at_uses, missed


# A value's change between calls is reported by check where the value is read or written
CHANGE_CODES = {"number": ("GS301", "GS302"), "storage": ("GS401", "GS404")}


def reported_at_uses(path: str, row: int, code: str, details: list[str], checked: list[dict]) -> list[str]:
    """For a trace finding at the step's `def` line (a value that changed between calls: `self.pos:
    4 → 5`, or a tensor attribute given new storage), the check diagnostics that report each named
    value where it is read or written (`attribute `pos` of KVCache`, `self.pos` is a counter);
    [] unless every value is reported so."""
    lines = (REPO / path).read_text(encoding="utf-8").splitlines()
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
        uses = [f"{os.path.relpath(d['filename'], REPO)}:{d['location']['row']} {d['code']}" for d in checked
                if d["code"] in family and mention.search(d["message"])]
        if not uses:
            return []
        found.append(f"`{last.group(1)}`: {', '.join(uses)}")
    return found


def table(rows: list[dict]) -> str:
    lines = ["| program | region | trace hazards | same line, with facts | same line, without facts | "
             "def-line changes reported at their uses (with / without facts) | missed with facts (reason) |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['program']} | — | not measured: {row['error']} | | | | |")
            continue
        missed = "; ".join(f"{m['path']}:{m['row']} {m['code']} ({m['reason']})" for m in row["missed"]) or "—"
        note = f" (trace stopped: {row['trace_error']})" if row["trace_error"] else ""
        lines.append(f"| {row['program']} | `{row['region']}` | {len(row['hazards'])}{note} | {row['with_facts']} | "
                     f"{row['without_facts']} | {len(row['at_uses'])} / {row['at_uses_without_facts']} | {missed} |")
    measured = [r for r in rows if "error" not in r]
    total = lambda field: sum(r[field] if isinstance(r[field], int) else len(r[field]) for r in measured)  # noqa: E731
    lines.append(f"| **all** | | {total('hazards')} | {total('with_facts')} | {total('without_facts')} | "
                 f"{total('at_uses')} / {total('at_uses_without_facts')} | {total('missed')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", help="comma-separated corpus programs (default: every one with capture.py)")
    parser.add_argument("--steps", type=int, default=4, help="traced calls per step (default 4)")
    parser.add_argument("--json-out", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
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
