"""Entry point for the corpus runner: stream a few batches through the detector on CPU."""

from __future__ import annotations

import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import StreamConfig  # noqa: E402
from detector import StreamDetector  # noqa: E402
from stream import SensorStream  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = StreamConfig(seed=seed)
    device = torch.device("cpu")
    det = StreamDetector(cfg, device)
    n_batches = steps * 3
    stream = SensorStream(n_batches * cfg.batch_size, cfg.model.n_sensors, seed, shift_at=(n_batches // 2) * cfg.batch_size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batches = list(det.make_loader(stream))
    total = torch.zeros(())
    for x in batches[:n_batches]:
        total += det.feed(x).sum()
    return {
        "score_sum": float(total),
        "threshold": float(det.quantile.threshold),
        "alarm_count": float(det.alerts.alarm_count),
        "alert_records": float(len(det.alerts.records)),
        "drift_resets": float(det.drift.resets),
        "sensor_hits": float(det.alerts.sensor_hits.sum()),
        "norm_mean": float(det.norm.mean.sum()),
        "steps_seen": float(det.steps_seen),
    }


if __name__ == "__main__":
    print(run())
