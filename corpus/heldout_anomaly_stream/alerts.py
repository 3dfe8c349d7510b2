"""Alarm bookkeeping and the alert log."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

logger = logging.getLogger("stream.alerts")
logger.addHandler(logging.NullHandler())


@dataclass
class AlertRecord:
    step: int
    sensor: int
    score: float


class AlertLog:
    def __init__(self, n_sensors: int, device: torch.device, path: str = ""):
        self.path = path
        self.records: list[AlertRecord] = []
        self.alarm_count = 0
        self.sensor_hits = torch.zeros(n_sensors, dtype=torch.long, device=device)
        self.alert_scores = torch.zeros(0, device=device)

    def record(self, step: int, scores: torch.Tensor, alarm_mask: torch.Tensor) -> None:
        self.sensor_hits = self.sensor_hits + alarm_mask.long().sum(0)  # expect: GS401
        if not alarm_mask.any():  # expect: GS201
            return
        self.alarm_count += int(alarm_mask.sum())  # expect: GS105
        flagged = scores[alarm_mask]  # expect: GS108
        self.alert_scores = torch.cat([self.alert_scores, flagged])  # expect: GS404
        sensors = torch.nonzero(alarm_mask.any(0)).squeeze(-1)  # expect: GS107
        peaks = scores.amax(0).tolist()  # expect: GS102
        new = []
        for sensor in sensors.tolist():  # expect: GS102
            new.append(AlertRecord(step=step, sensor=sensor, score=peaks[sensor]))
            logger.warning("alarm on sensor %d at step %d", sensor, step)  # expect: GS501
        self.records.extend(new)  # expect: GS503
        if self.path:
            with open(self.path, "a") as fh:  # expect: GS504
                fh.writelines(f"{r.step},{r.sensor},{r.score:.4f}\n" for r in new)
