"""Entry point for the corpus runner: evaluate a tiny LM on synthetic tasks, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import EvalConfig  # noqa: E402
from harness import Evaluator  # noqa: E402
from model import TinyLM  # noqa: E402
from tasks import documents, make_tasks  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = EvalConfig(seed=seed)
    device = torch.device("cpu")
    model = TinyLM(cfg.lm).to(device)
    n_examples = steps * cfg.batch_questions
    tasks = make_tasks(cfg.tasks, n_examples, cfg.n_choices, 6, cfg.lm.vocab, seed)
    docs = documents(steps, 12, cfg.lm.vocab, seed)
    ev = Evaluator(model, cfg, device, total_batches=len(tasks) * steps)
    rows, ppl, _table = ev.run(tasks, docs)
    out = {f"acc_{r['task']}": float(r["acc"]) for r in rows}
    out.update(
        {
            "perplexity": float(ppl),
            "mean_conf": float(ev.scorer.conf_total) / max(1, ev.scorer.batches_scored),
            "batches_scored": float(ev.scorer.batches_scored),
            "early_stops": float(sum(r["early"] for r in rows)),
            "progress": float(ev.pbar.n),
        }
    )
    return out


if __name__ == "__main__":
    print(run())
