import math


def inverse_sqrt(step: int, warmup: int, base: float) -> float:
    return base / math.sqrt(max(step, warmup))


class RelativeStep:
    def __init__(self, warmup: int, max_step: float):
        self.warmup = warmup
        self.max_step = max_step

    def value(self, step: int) -> float:
        return min(self.max_step, 1.0 / math.sqrt(step + 1)) * min(1.0, (step + 1) / self.warmup)
