"""Span-level precision/recall/F1 over BIO tag sequences."""

from __future__ import annotations

import torch


def extract_spans(tags: list[int], labels: tuple[str, ...]) -> set[tuple[str, int, int]]:
    spans, start, kind = set(), None, None
    for i, t in enumerate(list(tags) + [0]):
        name = labels[t]
        if name.startswith("I-") and kind == name[2:]:
            continue
        if kind is not None:
            spans.add((kind, start, i))
            kind, start = None, None
        if name.startswith(("B-", "I-")):
            kind, start = name[2:], i
    return spans


class SpanF1:
    def __init__(self, labels: tuple[str, ...]):
        self.labels = labels
        self.tp = 0
        self.fp = 0
        self.fn = 0

    def reset(self) -> None:
        self.tp = self.fp = self.fn = 0

    def update(self, pred_paths: list[list[int]], gold: torch.Tensor) -> None:
        gold_rows = gold.tolist()  # expect: GS102
        for pred, ref in zip(pred_paths, gold_rows):
            ps, gs = extract_spans(pred, self.labels), extract_spans(ref, self.labels)
            self.tp += len(ps & gs)  # expect: GS302
            self.fp = self.fp + len(ps - gs)  # expect: GS302
            self.fn += len(gs - ps)  # expect: GS302

    @property
    def f1(self) -> float:
        precision = self.tp / max(self.tp + self.fp, 1)
        recall = self.tp / max(self.tp + self.fn, 1)
        return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
