"""Array-backed sum tree for proportional prioritized sampling."""

from __future__ import annotations

import random


class SumTree:
    def __init__(self, capacity: int):
        self.capacity = capacity
        self.nodes = [0.0] * (2 * capacity)

    @property
    def total(self) -> float:
        return self.nodes[1]

    def set(self, index: int, value: float) -> None:
        node = index + self.capacity
        self.nodes[node] = value  # expect: GS503
        node //= 2
        while node >= 1:
            self.nodes[node] = self.nodes[2 * node] + self.nodes[2 * node + 1]  # expect: GS503
            node //= 2

    def find(self, mass: float) -> int:
        node = 1
        while node < self.capacity:
            left = 2 * node
            if mass <= self.nodes[left]:
                node = left
            else:
                mass -= self.nodes[left]
                node = left + 1
        return node - self.capacity

    def sample(self, k: int, rng: random.Random) -> list[int]:
        segment = self.total / k
        return [self.find(min(rng.uniform(i * segment, (i + 1) * segment), self.total - 1e-9)) for i in range(k)]
