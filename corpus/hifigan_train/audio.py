from __future__ import annotations

import math

import torch


def mel_filterbank(n_fft: int, n_mels: int, sample_rate: int) -> torch.Tensor:
    n_freq = n_fft // 2 + 1
    def hz_to_mel(h):
        return 2595.0 * math.log10(1.0 + h / 700.0)
    lo, hi = hz_to_mel(0.0), hz_to_mel(sample_rate / 2)
    pts = [700.0 * (10 ** ((lo + (hi - lo) * i / (n_mels + 1)) / 2595.0) - 1.0) for i in range(n_mels + 2)]
    bins = [int(p / (sample_rate / 2) * (n_freq - 1)) for p in pts]
    fb = torch.zeros(n_mels, n_freq)
    for m in range(1, n_mels + 1):
        l, c, r = bins[m - 1], bins[m], max(bins[m + 1], bins[m] + 1)
        for k in range(l, r):
            fb[m - 1, k] = (k - l) / max(c - l, 1) if k < c else (r - k) / max(r - c, 1)
    return fb


class MelTransform(torch.nn.Module):
    def __init__(self, n_fft: int, hop: int, n_mels: int, sample_rate: int):
        super().__init__()
        self.n_fft = n_fft
        self.hop = hop
        self.register_buffer("fb", mel_filterbank(n_fft, n_mels, sample_rate))
        self.register_buffer("window", torch.hann_window(n_fft))

    def forward(self, wav: torch.Tensor) -> torch.Tensor:
        assert wav.dim() == 2, "expected (batch, samples)"
        assert wav.abs().max() <= 1.0, "waveform out of range"  # expect: GS201
        spec = torch.stft(wav, self.n_fft, self.hop, window=self.window, return_complex=True)
        mag = spec.abs().clamp_min(1e-5)
        return torch.log(torch.matmul(self.fb, mag).clamp_min(1e-5))


def random_segment(wav: torch.Tensor, segment_len: int, gen: torch.Generator) -> torch.Tensor:
    start = torch.randint(0, wav.shape[-1] - segment_len + 1, (1,), generator=gen)
    return wav[..., int(start):int(start) + segment_len]


def synth_corpus(n: int, length: int, sample_rate: int, gen: torch.Generator) -> list[torch.Tensor]:
    t = torch.arange(length) / sample_rate
    clips = []
    for _ in range(n):
        f = 100.0 + 400.0 * torch.rand(1, generator=gen)
        clips.append((0.8 * torch.sin(2 * math.pi * f * t) + 0.05 * torch.randn(length, generator=gen)).clamp(-1.0, 1.0))
    return clips
