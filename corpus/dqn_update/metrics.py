"""Minimal metrics sink."""

from __future__ import annotations


class MetricsLogger:
    def __init__(self):
        self.rows: list[dict] = []

    def log(self, **values) -> None:
        self.rows.append(values)  # expect: GS503

    def last(self, key: str, default: float = 0.0):
        for row in reversed(self.rows):
            if key in row:
                return row[key]
        return default
