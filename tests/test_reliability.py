"""The reliability harness (bench/fuzz_reliability.py) in small, and `fix` killed at random moments."""

from __future__ import annotations

import importlib.util
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # random programs, mutants and a kill -9 loop of fresh processes (about 30 s)

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("fuzz_reliability", ROOT / "bench" / "fuzz_reliability.py")
fuzz = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fuzz)


def test_generated_programs_and_corpus_mutants_never_crash_misplace_or_break_a_fix():
    counts, failures = fuzz.run_harness(count=36, seed_value=7, cli_every=36, hang_s=20)
    assert counts["samples"] == 36 and counts["cli_runs"] == 1
    assert {kind: counts[kind] for kind in fuzz.KINDS} == dict.fromkeys(fuzz.KINDS, 0), failures[:3]


FILES = ("llama_gen", "gan_train", "ppo_update")


def _tree(folder: Path) -> dict[str, str]:
    texts = {}
    for name in FILES:
        for path in sorted((ROOT / "corpus" / name).glob("*.py"))[:2]:
            target = folder / f"{name}_{path.name}"
            shutil.copyfile(path, target)
            texts[target.name] = path.read_text()
    return texts


def _fix(folder: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "graphsafe", "fix", "--no-cache", "--unsafe-fixes", "-q", "."],
                            cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_fix_killed_at_random_moments_leaves_each_file_original_or_fully_fixed(tmp_path):
    reference = tmp_path / "reference"
    reference.mkdir()
    originals = _tree(reference)
    started = time.monotonic()
    assert _fix(reference).wait(timeout=120) in (0, 1)
    duration = time.monotonic() - started
    fixed = {name: (reference / name).read_text() for name in originals}
    assert fixed != originals  # something to write, or the test proves nothing
    rng = random.Random(3)
    for attempt in range(6):
        folder = tmp_path / f"run{attempt}"
        folder.mkdir()
        _tree(folder)
        process = _fix(folder)
        time.sleep(rng.uniform(0.3, 1.0) * duration)
        process.send_signal(signal.SIGKILL)
        process.wait()
        for name, original in originals.items():
            assert (folder / name).read_text() in (original, fixed[name]), (attempt, name)
        # the writer's documented leftover (writing.py): `.NAME.XXXX.graphsafe`, never in place of a file
        leftovers = [p.name for p in folder.iterdir() if p.name not in originals]
        assert all(n.startswith(".") and n.endswith(".graphsafe") and n[1:].split(".py.")[0] + ".py" in originals
                   for n in leftovers), leftovers
