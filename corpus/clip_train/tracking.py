"""A minimal experiment tracker (the shape of wandb/aim run objects): rows of metrics kept in memory
and flushed to a JSON-lines file by the caller."""

from __future__ import annotations

import json


class MetricsLogger:
    def __init__(self, project: str):
        self.project = project
        self.rows: list[dict] = []

    def log(self, row: dict) -> None:
        self.rows.append(row)  # expect: GS503

    def dump(self, path: str) -> None:
        with open(path, "w") as f:
            for row in self.rows:
                f.write(json.dumps({k: float(v) for k, v in row.items()}) + "\n")
