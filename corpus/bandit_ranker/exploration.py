from dataclasses import dataclass


@dataclass
class ExplorationSchedule:
    start: float
    end: float
    horizon: int

    def value(self, t: int) -> float:
        frac = min(1.0, t / self.horizon)
        return self.start + frac * (self.end - self.start)


def forgetting_factor(t: int, base: float) -> float:
    return base ** (1.0 / (1 + t))
