"""Entry point for the corpus runner: decode random log-mel features with fallback, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import DecodingOptions, ModelDims  # noqa: E402
from decoding import DecodingTask  # noqa: E402
from model import Whisper  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    dims = ModelDims()
    opts = DecodingOptions(seed=seed, sample_len=steps + 2)
    device = torch.device("cpu")
    model = Whisper(dims, opts.batch_size).to(device).eval()
    task = DecodingTask(model, opts, device)
    g = torch.Generator().manual_seed(seed + 3)
    mel = torch.randn(opts.batch_size, dims.n_mels, 2 * dims.n_audio_ctx, generator=g)
    with torch.no_grad():
        if device.type == "cuda":
            task.graph_encoder(mel)
            task.set_audio(mel)
            task.capture()
        result = task.transcribe(mel)
    return {
        "temperature": float(result["temperature"]),
        "avg_logprob": float(result["avg_logprob"]),
        "no_speech": float(result["no_speech"]),
        "silent": float(result["silent"]),
        "token_sum": float(result["tokens"].sum()),
        "last_logit_max": float(task.logit_history[steps + 1].max()),
        "position": float(task.position),
    }


if __name__ == "__main__":
    print(run())
