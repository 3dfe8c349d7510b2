from __future__ import annotations

import logging

log = logging.getLogger("nerf")


class MetricsLogger:
    def __init__(self, name: str):
        self.name = name
        self.records: list[dict[str, float]] = []

    def log(self, **values) -> None:
        self.records.append(dict(values))  # expect: GS503
