"""Run every corpus program's own `__main__` on a CUDA machine, each in a fresh subprocess, and report
where it first fails: the innermost corpus frame of the traceback and whether that line carries an
expect-label comment. Programs with labels should fail at a labelled line; `negatives` should finish.
Run from the repository root: `PYTHONPATH=. python corpus/_probes/gpu_smoke.py`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent
MAINS = {
    "train_loop": "train.py",
    "decode_loop": "generate.py",
    "negatives": "train.py",
    "diffusion_sampler": "sample.py",
    "rl_policy": "train.py",
    "moe_router": "train.py",
    "beam_search": "beam.py",
    "speech_eval": "evaluate.py",
}
LABEL = "# " + "expect:"  # spelled apart so that this file carries no label itself
FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def main() -> None:
    env = dict(os.environ, PYTHONPATH=str(CORPUS.parent))
    for name, script in MAINS.items():
        folder = CORPUS / name
        if not (folder / script).exists():
            continue
        p = subprocess.run([sys.executable, script], cwd=folder, env=env, capture_output=True, text=True, timeout=300)
        if p.returncode == 0:
            print(f"## {name}: finished (rc 0)\n    stdout tail: {p.stdout.strip().splitlines()[-1][:200] if p.stdout.strip() else ''}")
            continue
        # a sync inside capture raises at the hazard; leaving the `with torch.cuda.graph` block then
        # raises again ("during handling of the above exception"): the first traceback is the cause
        first = re.split(r"\n(?:During handling of the above exception|The above exception was the direct cause)", p.stderr)[0]
        frames = [(f, int(n), fn) for f, n, fn in FRAME.findall(first) if str(folder) in str(Path(f).resolve())]
        errs = [line for line in first.splitlines() if re.match(r"[\w.]+(Error|Exception)\b", line)]
        err = errs[-1] if errs else first.strip().splitlines()[-1]
        print(f"## {name}: FAILED rc {p.returncode}: {err[:300]}")
        if frames:
            f, n, fn = frames[-1]
            text = Path(f).read_text().splitlines()[n - 1].strip()
            print(f"    innermost corpus frame: {Path(f).name}:{n} in {fn}: {text}")
            print(f"    labelled: {LABEL in text}")
        ctx = [line for line in p.stderr.splitlines() if "not permitted" in line or "capturable" in line or "pinned" in line]
        if ctx:
            print(f"    cause: {ctx[0].strip()[:300]}")


if __name__ == "__main__":
    main()
