from __future__ import annotations


def collapse(frames: list[list[int]], blank_id: int) -> list[int]:
    return [tok for frame in frames for tok in frame if tok != blank_id]


def edit_distance(ref: list[int], hyp: list[int]) -> int:
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


class WERStats:
    def __init__(self):
        self.errors = 0
        self.words = 0

    def add(self, ref: list[int], hyp: list[int]) -> None:
        self.errors += edit_distance(ref, hyp)
        self.words += max(len(ref), 1)

    @property
    def wer(self) -> float:
        return self.errors / max(self.words, 1)
