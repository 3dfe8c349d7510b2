"""Evaluation loop: a compiled eval step (CUDA graphs through mode="reduce-overhead" on a GPU,
eager on CPU) that runs the model, decodes, times itself with CUDA events and logs metrics."""

from __future__ import annotations

import torch

from decode import ctc_greedy, frame_stats
from model import CTCModel


class MetricsLogger:
    """Stands in for wandb / tensorboard: collects dicts of numbers."""

    def __init__(self):
        self.rows: list[dict] = []

    def log(self, row: dict) -> None:
        self.rows.append(row)  # expect: GS503


def edit_distance(a: list[int], b: list[int]) -> int:
    d = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, y in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (x != y))
    return d[-1]


@torch.compile(mode="reduce-overhead", disable=not torch.cuda.is_available())
@torch.no_grad()
def eval_step(model: CTCModel, feats: torch.Tensor, lengths: torch.Tensor, metrics: MetricsLogger):
    if feats.is_cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
    log_probs, out_lens = model(feats, lengths)
    if bool(torch.isnan(log_probs).any()):  # expect: GS105
        raise FloatingPointError("NaN log-probs")
    hyps, pred, confidence = ctc_greedy(log_probs, out_lens)
    stats = frame_stats(pred, out_lens)
    posteriors = log_probs.exp().to("cpu")  # expect: GS103
    metrics.log({"frames": int(out_lens.sum()), "first_pred": repr(pred[0])})  # expect: GS105, GS104, GS501
    if feats.is_cuda:
        end.record()
        if not end.query():  # expect: GS106
            end.synchronize()  # expect: GS106
        metrics.log({"ms": start.elapsed_time(end)})  # expect: GS106, GS501
    return hyps, confidence.mean(), stats, posteriors


def evaluate(steps: int, seed: int, device: torch.device, batch: int = 4, max_frames: int = 20):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 3)
    model = CTCModel().to(device).eval()
    metrics = MetricsLogger()
    errors, total, confidences, blank_frames = 0, 0, [], 0.0
    for _ in range(steps):
        lengths = torch.randint(max_frames // 2, max_frames + 1, (batch,), generator=gen)
        feats = torch.randn(batch, max_frames, 16, generator=gen)
        refs = [torch.randint(1, 12, (int(n) // 4,), generator=gen).tolist() for n in lengths]
        hyps, conf, stats, _ = eval_step(model, feats.to(device), lengths.to(device), metrics)
        errors += sum(edit_distance(h, r) for h, r in zip(hyps, refs))
        total += sum(len(r) for r in refs)
        confidences.append(float(conf))
        blank_frames += float(stats["blank_frames"])
    return {"cer": errors / max(1, total), "confidence": sum(confidences) / len(confidences),
            "blank_frames": blank_frames, "logged": float(len(metrics.rows))}


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(evaluate(5, 0, dev))
