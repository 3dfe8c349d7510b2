"""Reliability harness: generated programs and mutants of corpus files through check and fix.

    python bench/fuzz_reliability.py --count 10000 --seed 0 [--cli-every 50] [--sources DIR ...]

Programs come from our own hypothesis strategies (hypothesmith is not a dependency): modules
with helpers, a class, a `@torch.compile(mode="reduce-overhead")` step calling the helpers with
`.item()`, `if t > 0:`, prints and Python scalars, plus random statements. Mutants are corpus
files (or of the `.py` files under `--sources`, e.g. the real packages bench/real/score.py unpacks
into ~/.cache/graphsafe-real/src) with a token deleted or duplicated, two lines swapped, or the
text truncated. Each sample
goes through check and fix in-process (every `--cli-every`-th also through the CLI, on a copy
on disk), and the harness counts:

- crashes: an exception out of check/fix, a GS000 "internal error", a CLI traceback or exit 2;
- hangs: one sample over --hang-s seconds of CPU time;
- impossible positions: a diagnostic or edit whose line/column lies outside the text;
- unparsable fixes: a fix whose output CPython cannot compile while the input compiled;
- lost or corrupted files (CLI): a file missing, or neither its original nor a text that parses.
tests/test_reliability.py runs a few dozen of each and asserts all counts are zero.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
import traceback
import warnings
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graphsafe.analyzer.engine import check_source  # noqa: E402
from graphsafe.config import Settings  # noqa: E402
from graphsafe.fixer import fix_text  # noqa: E402

KINDS = ("crashes", "hangs", "impossible_positions", "unparsable_fixes", "lost_or_corrupted_files")

# --- generated programs -------------------------------------------------------------------

NAMES = st.sampled_from(["t", "x", "loss", "scale", "lr", "step", "out", "h"])
NUMBERS = st.sampled_from(["0", "1", "0.5", "1e-3", "self.lr", "self.step", "n"])


@st.composite
def expressions(draw, depth: int = 0) -> str:
    leaf = st.one_of(NAMES, NUMBERS, st.sampled_from(["x.sum()", "t.item()", "torch.ones(4)", "len(x)", "x.shape[0]"]))
    if depth > 3 or draw(st.booleans()):
        return draw(leaf)
    kind = draw(st.sampled_from(["bin", "call", "method", "cmp", "paren"]))
    a, b = draw(expressions(depth + 1)), draw(expressions(depth + 1))
    if kind == "bin":
        return f"{a} {draw(st.sampled_from(['+', '-', '*', '/', '**']))} {b}"
    if kind == "call":
        return f"{draw(st.sampled_from(['torch.where', 'max', 'float', 'helper', 'torch.exp']))}({a}, {b})"
    if kind == "method":
        method = draw(st.sampled_from(["item()", "cpu()", "tolist()", "clone()", 'to("cuda")']))
        return f"({a}).{method}"
    if kind == "cmp":
        return f"{a} {draw(st.sampled_from(['>', '<', '==', 'is']))} {b}"
    return f"({a})"


@st.composite
def statements(draw, indent: str, depth: int = 0) -> list[str]:
    kind = draw(st.sampled_from(["assign", "print", "if", "for", "return", "augment", "call", "log"]
                                if depth < 2 else ["assign", "print", "augment", "call"]))
    name, value = draw(NAMES), draw(expressions())
    if kind == "assign":
        return [f"{indent}{name} = {value}"]
    if kind == "augment":
        return [f"{indent}self.{draw(st.sampled_from(['step', 'lr', 'total']))} += {value}"]
    if kind == "print":
        return [f"{indent}print({value})"]
    if kind == "call":
        return [f"{indent}{draw(st.sampled_from(['self.helper', 'helper', 'self.opt.step']))}({value})"]
    if kind == "log":
        return [f"{indent}self.history.append({value})"]
    if kind == "return":
        return [f"{indent}return {value}"]
    body = draw(st.lists(statements(indent + "    ", depth + 1), min_size=1, max_size=3))
    head = f"{indent}if {value} > 0:" if kind == "if" else f"{indent}for {name} in range(n):"
    return [head, *[line for block in body for line in block]]


@st.composite
def programs(draw) -> str:
    lines = ["import torch", "", ""]
    for i in range(draw(st.integers(0, 2))):
        lines += [f"def helper{i or ''}(t, n=1):", *[s for b in draw(st.lists(statements("    "), min_size=1, max_size=4)) for s in b]]
        lines += ["    return t", "", ""]
    lines += ["class Model(torch.nn.Module):", "    def __init__(self):", "        super().__init__()",
              "        self.step = 0", "        self.lr = 0.1", "        self.history = []", ""]
    lines += ["    def helper(self, t):", *[s for b in draw(st.lists(statements("        "), min_size=1, max_size=3)) for s in b],
              "        return t", ""]
    decorator = draw(st.sampled_from(['    @torch.compile(mode="reduce-overhead")', "    @torch.compile()", ""]))
    lines += [decorator] if decorator else []
    lines += ["    def forward(self, x, n=2):", "        t = x * 2"]
    lines += [s for b in draw(st.lists(statements("        "), min_size=1, max_size=6)) for s in b]
    lines += ["        return t", ""]
    if draw(st.booleans()):
        lines += ["", "for _ in range(3):", "    Model()(torch.ones(4))", ""]
    return "\n".join(lines)


# --- mutants of real files ----------------------------------------------------------------

def corpus_files() -> list[Path]:
    return sorted(p for p in (ROOT / "corpus").rglob("*.py") if "_probes" not in p.parts)


def source_files(folders: list[Path]) -> list[Path]:
    """The .py files to mutate: under `folders`, or the corpus's without them."""
    if not folders:
        return corpus_files()
    return sorted(p for folder in folders for p in folder.rglob("*.py") if p.is_file())


def mutant(text: str, rng: random.Random) -> str:
    kind = rng.choice(["delete", "duplicate", "swap", "truncate"])
    if kind == "truncate":
        return text[: rng.randrange(len(text) + 1)]
    lines = text.split("\n")
    if kind == "swap" and len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines)
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.string.strip()]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text[: rng.randrange(len(text) + 1)]
    if not tokens:
        return text
    token = rng.choice(tokens)
    (row, col), (end_row, end_col) = token.start, token.end
    if row != end_row:
        return text
    line = lines[row - 1]
    replacement = "" if kind == "delete" else token.string * 2
    lines[row - 1] = line[:col] + replacement + line[end_col:]
    return "\n".join(lines)


# --- one sample through check and fix -----------------------------------------------------

def position_ok(text_lines: list[str], line: int, column: int) -> bool:
    return 1 <= line <= len(text_lines) and 0 <= column <= len(text_lines[line - 1])


def compiles(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "sample.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


def judge(text: str, counts: Counter, failures: list, hang_s: float, label: str) -> None:
    """Check and fix `text` in-process; add what went wrong to `counts` (and `failures`)."""
    started = time.process_time()
    try:
        result = check_source(text, "sample.py", Settings(regions=("*",)))
        outcome = fix_text(text, "sample.py", Settings(regions=("*",)), [], unsafe=True)
    except BaseException:  # noqa: BLE001  (what the harness counts)
        counts["crashes"] += 1
        failures.append((label, "crash", traceback.format_exc(limit=3), text))
        return
    if time.process_time() - started > hang_s:
        counts["hangs"] += 1
        failures.append((label, "hang", f"{time.process_time() - started:.1f} s", text))
    lines = text.split("\n")
    for d in result.diagnostics:
        if d.code == "GS000" and "internal error" in d.message:
            counts["crashes"] += 1
            failures.append((label, "internal error", d.message, text))
        spots = [(d.start.line, d.start.column), (d.end.line, d.end.column)]
        for edit in (d.fix.edits if d.fix else ()):
            spots += [(edit.start.line, edit.start.column), (edit.end.line, edit.end.column)]
        if not all(position_ok(lines, line, column) for line, column in spots):
            counts["impossible_positions"] += 1
            failures.append((label, "position", f"{d.code} {spots}", text))
    if outcome.changed and compiles(text) and not compiles(outcome.fixed):
        counts["unparsable_fixes"] += 1
        failures.append((label, "unparsable fix", outcome.fixed, text))


def judge_cli(texts: list[str], counts: Counter, failures: list, label: str) -> None:
    """Run `check` and `fix` on copies on disk; nothing may crash, go missing or be half-written."""
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder) / f"sample{i}.py" for i in range(len(texts))]
        for path, text in zip(paths, texts):
            path.write_text(text)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for command in ("check", "fix"):
            run = subprocess.run([sys.executable, "-m", "graphsafe", command, "--no-cache", "--unsafe-fixes" if command == "fix" else "--quiet", folder],
                                 capture_output=True, text=True, env=env, cwd=folder)
            if run.returncode not in (0, 1, 3) or "Traceback" in run.stderr:
                counts["crashes"] += 1
                failures.append((label, f"cli {command} exit {run.returncode}", run.stderr[-2000:], ""))
        for path, text in zip(paths, texts):
            if not path.exists():
                counts["lost_or_corrupted_files"] += 1
                failures.append((label, "lost", str(path), text))
                continue
            now = path.read_text()
            if now != text and not compiles(now):
                counts["lost_or_corrupted_files"] += 1
                failures.append((label, "corrupted", now, text))
        if [p for p in Path(folder).iterdir() if p.name.endswith(".graphsafe")]:
            counts["lost_or_corrupted_files"] += 1
            failures.append((label, "temporary file left", "", ""))


def run_harness(count: int, seed_value: int, cli_every: int = 50, hang_s: float = 30.0,
                programs_share: float = 0.5, source_folders: list[Path] | None = None) -> tuple[Counter, list]:
    counts: Counter = Counter({kind: 0 for kind in KINDS})
    failures: list = []
    generated = max(1, int(count * programs_share))
    batch: list[str] = []

    def add(text: str, label: str) -> None:
        judge(text, counts, failures, hang_s, label)
        counts["samples"] += 1
        batch.append(text)
        if len(batch) >= cli_every:
            judge_cli(batch[-4:], counts, failures, label)
            counts["cli_runs"] += 1
            batch.clear()

    @seed(seed_value)
    @settings(max_examples=generated, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def each_program(text: str) -> None:
        add(text, "program")

    each_program()
    rng = random.Random(seed_value)
    sources = [p.read_text(encoding="utf-8", errors="replace") for p in source_files(source_folders or [])]
    for i in range(count - generated):
        source = rng.choice(sources)
        text = source
        for _ in range(rng.randint(1, 3)):
            text = mutant(text, rng)
        add(text, f"mutant {i}")
    if batch:
        judge_cli(batch[-4:], counts, failures, "last")
        counts["cli_runs"] += 1
    return counts, failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=10_000, help="samples: half generated programs, half mutants")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cli-every", type=int, default=50, help="run the CLI on every Nth batch of samples")
    parser.add_argument("--hang-s", type=float, default=30.0, help="CPU seconds after which a sample counts as a hang")
    parser.add_argument("--failures", type=Path, help="write failing samples to this folder")
    parser.add_argument("--sources", type=Path, nargs="*", default=[],
                        help="mutate the .py files under these folders (default: the corpus)")
    args = parser.parse_args()
    started = time.monotonic()
    counts, failures = run_harness(args.count, args.seed, args.cli_every, args.hang_s, source_folders=args.sources)
    print(f"samples {counts['samples']} (cli runs {counts['cli_runs']}) in {time.monotonic() - started:.0f} s")
    for kind in KINDS:
        print(f"{kind}: {counts[kind]}")
    if args.failures and failures:
        args.failures.mkdir(parents=True, exist_ok=True)
        for i, (label, what, detail, text) in enumerate(failures):
            (args.failures / f"{i:04d}.py").write_text(f"# {label}: {what}\n# {detail!r}\n{text}")
    return 1 if any(counts[kind] for kind in KINDS) else 0


if __name__ == "__main__":
    sys.exit(main())
