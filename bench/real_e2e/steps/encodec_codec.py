"""encodec: compress and decompress a batch of audio, `out = model(wav)` (encode -> RVQ codes -> decode).

An EncodecModel assembled as EncodecModel._get_model does (causal SEANet encoder and decoder
with weight norm, a ResidualVectorQuantizer), only smaller; the codebooks start uniform
(kmeans_init=False), standing in for a trained model's filled codebooks. Inference in eval
mode; no state is kept between calls, so state() is empty and the waveforms are compared.
"""
import torch

from bench.real_e2e.step_api import Built

PACKAGE = "encodec"
KIND = "decode"
REGION = "encodec/model.py::EncodecModel.forward"
# encodec (an sdist) imports torchaudio (2.11.0 cp312 for the GPU image's torch 2.11, sha256
# 6503c0bdb29daf2e6281bb70ea2dfe2c3553b782b619eb5d73bdadd8a3f7cecf); no torchaudio loads into
# the local torch 2.13 CPU venv, so this step does not run on the CPU side. einops, numpy: image.
EXTRA = [("torchaudio", "2.11.0", "6503c0bdb29daf2e6281bb70ea2dfe2c3553b782b619eb5d73bdadd8a3f7cecf")]

BATCH, SAMPLE_RATE, SAMPLES = 2, 24_000, 2_400


def build(device: str, seed: int) -> Built:
    from encodec import modules as m
    from encodec import quantization as qt
    from encodec.model import EncodecModel

    torch.manual_seed(seed)
    seanet = {"channels": 1, "dimension": 32, "n_filters": 8, "ratios": [4, 4, 2], "causal": True,
              "norm": "weight_norm"}
    model = EncodecModel(
        m.SEANetEncoder(**seanet), m.SEANetDecoder(**seanet),
        qt.ResidualVectorQuantizer(dimension=32, n_q=4, bins=256, kmeans_init=False),
        target_bandwidths=[1.5], sample_rate=SAMPLE_RATE, channels=1, name="tiny",
    ).to(device).eval()

    def inputs(i: int) -> tuple:
        gen = torch.Generator().manual_seed(seed * 1_000_003 + i)
        return ((0.1 * torch.randn(BATCH, 1, SAMPLES, generator=gen)).to(device),)

    @torch.no_grad()
    def step(wav):
        return model(wav)

    return Built(step=step, inputs=inputs, state=lambda: {})
