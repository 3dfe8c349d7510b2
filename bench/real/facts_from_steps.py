"""Run-time facts for the yardstick: trace the real steps of bench/real_e2e on the CPU (or a GPU)
and save what they saw, for `score.py --facts-dir`.

    python bench/real/facts_from_steps.py --out DIR [--steps a,b] [--n-steps 4] [--device cuda]
    python bench/real/score.py --part dev --facts-dir DIR

For each step (by default every step whose package is in the development part and imports on
the CPU): install the step's EXTRA wheels and
the CPU-side dependencies (bench/real_e2e/packages.py), then run
`graphsafe trace <driver>:run --args <driver>:make --save-facts DIR/<package>.json` there, in a
fresh process, the driver building the step once (`build(device, seed)`) and calling it with the
inputs of each step. The trace runs in score.py's own unpacked copy of the wheel (facts are about
one tree: their paths are relative to it, and each function's source hash is checked), and the
steps of one package add to one facts file (the tracer merges).

Which steps feed which labels is recorded in the output (`DIR/steps.json`); the labels were
written before these drivers and independently of them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "bench" / "real_e2e"))

import packages  # noqa: E402  (bench/real_e2e/packages.py)
import score  # noqa: E402  (bench/real/score.py)
from step_api import read_step_info, step_names  # noqa: E402

DEFAULT_WHEELS = Path(os.environ.get("GS_REAL_CACHE", Path.home() / ".cache/graphsafe-real")) / "wheels"
# Steps whose packages need what no CPU wheel of torch 2.13 offers (torchaudio, torchvision).
NOT_ON_CPU = frozenset({"speechbrain_greedy", "encodec_codec", "open_clip_train"})

DRIVER = '''\
from bench.real_e2e.steps import {step} as _step

_built = _step.build({device!r}, {seed})


def run(*args):
    return _built.step(*args)


def make(step):
    return _built.inputs(step)
'''


def dev_steps(device: str = "cpu") -> list[str]:
    """The steps of the development part's packages that install for `device`."""
    split = json.loads((HERE / "split.json").read_text())
    chosen = []
    for name in step_names():
        info = read_step_info(name)
        if info.package in split["dev"] and (device != "cpu" or name not in NOT_ON_CPU):
            chosen.append(name)
    return chosen


def prepare_step(name: str, wheels: Path, work: Path, seed: int, device: str = "cpu") -> tuple[Path, dict]:
    """Install what step `name` needs and write its driver; (the package's source root, the
    environment a traced child runs with). PackageError when an archive cannot be had."""
    info = read_step_info(name)
    on_cpu = device == "cpu"
    pip_options = () if on_cpu else packages.GPU_PIP_OPTIONS
    archives = [packages.fetch(pin, wheels, pip_options) for pin in packages.pins_of(info, for_cpu=on_cpu)]
    step_dir = work / name
    # the very tree score.py checks: facts are about one tree (their paths are relative to it)
    root = score.fetch(score.load_labels(HERE / "labels")[info.package], wheels.parent)
    site = step_dir / "site"
    packages.install(archives[1:], site)
    paths = [root, site]
    if on_cpu:  # numpy, scipy and the like: in the GPU image, not in the CPU venv
        cpu_site = wheels.parent / f"cpu-site-py{sys.version_info.major}{sys.version_info.minor}"
        packages.install([packages.fetch(packages.Pin(*dep), wheels) for dep in packages.CPU_DEPS], cpu_site)
        paths.append(cpu_site)
    driver = step_dir / "driver"
    driver.mkdir(parents=True, exist_ok=True)
    (driver / "_gs_facts_driver.py").write_text(DRIVER.format(step=name, seed=seed, device=device))
    # the caller's PYTHONPATH stays last: on the GPU image libcst itself comes from there
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in (*paths, REPO, driver, *inherited)))
    return root, env


def trace_command(facts: Path, n_steps: int, static: bool = False) -> list[str]:
    """`graphsafe trace` of the driver's step, saving its facts to `facts` (JSON on stdout)."""
    return [sys.executable, "-m", "graphsafe", "trace", "_gs_facts_driver:run", "--args", "_gs_facts_driver:make",
            "--steps", str(n_steps), "--save-facts", str(facts), "--format", "json", *(["--static"] if static else [])]


def trace_step(name: str, out: Path, wheels: Path, work: Path, n_steps: int, seed: int, device: str = "cpu") -> str:
    """Trace one step; a line saying what happened."""
    try:
        root, env = prepare_step(name, wheels, work, seed, device)
    except packages.PackageError as error:
        return f"{name}: not traced: {error}"
    facts = out / f"{read_step_info(name).package}.json"
    done = subprocess.run(trace_command(facts, n_steps), cwd=root, env=env, capture_output=True, text=True,
                          timeout=900)
    if not facts.is_file():
        return f"{name}: no facts written (exit {done.returncode}): {done.stderr.strip()[-400:]}"
    return f"{name}: facts in {facts.name} (trace exit {done.returncode})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for <package>.json facts files")
    parser.add_argument("--steps", help="comma-separated step names (default: the dev part's steps that run on CPU)")
    parser.add_argument("--n-steps", type=int, default=4, help="traced calls per step (default 4)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--wheels", type=Path, default=DEFAULT_WHEELS)
    parser.add_argument("--device", default="cpu", help="build the steps on this device (cuda: device facts; the "
                                                        "GPU image's wheels, from bench/real_e2e/run.py --prepare)")
    args = parser.parse_args(argv)
    names = args.steps.split(",") if args.steps else dev_steps(args.device)
    args.out.mkdir(parents=True, exist_ok=True)
    record = {}
    with tempfile.TemporaryDirectory(prefix="gs-facts-") as work:
        for name in names:
            line = trace_step(name, args.out.resolve(), args.wheels, Path(work), args.n_steps, args.seed,
                              args.device)
            print(line, flush=True)
            record[name] = line
    (args.out / "steps.json").write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
