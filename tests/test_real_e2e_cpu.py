"""The real end-to-end benchmark's CPU part (bench/real_e2e): for steps of real PyPI packages that
install on the CPU, the package as shipped and the package after `graphsafe fix` compute the
same numbers, step by step, with the inputs changing every step.

The pinned wheels (and numpy/scipy, which this venv lacks) are downloaded into the real-code
cache (GS_REAL_CACHE, default ~/.cache/graphsafe-real) on first use; a download that fails is a
failure of this test, not a skip.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("GS_REAL_CACHE", Path.home() / ".cache/graphsafe-real"))
# Every step whose package and EXTRA install on this CPU venv (Python 3.11, torch CPU); speechbrain,
# encodec, kornia and open_clip need torchaudio/torchvision builds that torch 2.13's CPU index lacks.
CPU_STEPS = ["torchdiffeq_rk4", "torchdiffeq_dopri5", "ignite_train", "ignite_confusion", "ignite_accuracy",
             "torchdiffeq_odeint", "torchsde_euler", "pyro_svi", "gpytorch_svgp", "rwkv_decode", "sb3_dqn"]


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("real_e2e")
    done = subprocess.run([sys.executable, "bench/real_e2e/run.py", "--device", "cpu", "--steps", ",".join(CPU_STEPS),
                           "--wheels", str(CACHE / "wheels"), "--out", str(out), "--n-steps", "4"],
                          cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"run.py exited {done.returncode}:\n{done.stderr[-3000:]}"
    return {row["step"]: row for row in json.loads((out / "results.json").read_text())["rows"]}


@pytest.mark.slow
@pytest.mark.parametrize("step", CPU_STEPS)
def test_safely_fixed_package_computes_the_originals_numbers_step_by_step(rows, step):
    row = rows[step]
    assert "error" not in row, (f"{step}: {row['error']}\n(the pinned wheels are downloaded from PyPI into "
                                f"{CACHE}; this machine must reach it)")
    assert not row["static"]["errors"], row["static"]["errors"]
    orig = row["cpu"]["orig"]
    assert "error" not in orig, f"{step} (orig): {orig['error']}\n{orig.get('traceback') or orig.get('output_tail')}"
    assert orig["determinism"]["exact"], f"two builds with one seed differ: {orig['determinism']['differing']}"
    fixed = row["cpu"]["fixed"]
    assert "error" not in fixed, f"{step} (fixed): {fixed['error']}\n{fixed.get('traceback') or fixed.get('output_tail')}"
    assert fixed["vs_orig"]["exact"], f"{step}: the fixed package computes other numbers: {fixed['vs_orig']['differing']}"


@pytest.mark.slow
@pytest.mark.parametrize("step", CPU_STEPS)
def test_the_package_after_graphsafe_graph_computes_the_originals_numbers_step_by_step(rows, step):
    row = rows[step]
    assert "error" not in row, row.get("error")
    summary = row["graph"]
    assert "error" not in summary, f"{step}: graphsafe graph: {summary['error']}"
    graph = row["cpu"]["graph"]
    assert "error" not in graph, f"{step} (graph): {graph['error']}\n{graph.get('traceback') or graph.get('output_tail')}"
    assert graph["vs_orig"]["exact"], f"{step}: the split package computes other numbers: {graph['vs_orig']['differing']}"
