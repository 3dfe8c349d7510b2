"""Entry point for the corpus runner: stream a few samples from a random WaveNet, on CPU."""

from __future__ import annotations

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import StreamConfig, WaveNetConfig  # noqa: E402
from model import WaveNet  # noqa: E402
from mulaw import mu_law_decode  # noqa: E402
from streamer import WaveNetStreamer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    random.seed(seed)
    torch.manual_seed(seed)
    mcfg = WaveNetConfig()
    scfg = StreamConfig(seed=seed)
    model = WaveNet(mcfg)
    streamer = WaveNetStreamer(model, scfg, torch.device("cpu"))
    n_samples = 8 * steps
    frames = (n_samples + mcfg.hop - 1) // mcfg.hop
    mel = torch.randn(scfg.batch, mcfg.cond_channels, frames)
    idx = streamer.synthesize(mel, n_samples, scfg.temperature)
    audio = mu_law_decode(idx, mcfg.quantization_channels)
    return {
        "n_samples": float(idx.shape[1]),
        "idx_sum": float(idx.sum()),
        "audio_rms": float(audio.pow(2).mean().sqrt()),
        "entropy": float(torch.stack(streamer.levels["entropy"]).mean()),
        "t": float(streamer.t),
        "samples_out": float(streamer.samples_out),
        "chunks": float(len(streamer.out_chunks)),
    }


if __name__ == "__main__":
    print(run())
