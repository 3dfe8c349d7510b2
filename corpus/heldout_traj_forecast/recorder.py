"""Per-scene records of a training run."""

from __future__ import annotations

import json


class SceneRecorder:
    def __init__(self, path: str):
        self.path = path
        self.entries: list = []

    def record(self, scene_ids: list[int], n_agents: int, write: bool) -> None:
        self.entries.append({"scenes": list(scene_ids), "agents": n_agents})  # expect: GS503
        if write:
            with open(self.path, "a") as fh:  # expect: GS504
                json.dump(self.entries[-1], fh)  # expect: GS504


class ConsoleBar:
    def __init__(self, total: int):
        self.total = total
        self.desc = ""

    def set_description(self, desc: str) -> None:
        self.desc = desc
