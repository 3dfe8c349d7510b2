import math

import torch


def bitrate_kbps(n_quantizers: int, codebook_size: int, sample_rate: int, hop: int) -> float:
    frames_per_sec = sample_rate / hop
    return n_quantizers * math.log2(codebook_size) * frames_per_sec / 1000.0


def multi_scale_stft_loss(ref: torch.Tensor, est: torch.Tensor, scales) -> torch.Tensor:
    weights = torch.tensor([1.0 / n for n in scales], device=ref.device)  # expect: GS402
    total = torch.zeros((), device=ref.device)
    for i, n in enumerate(scales):
        win = torch.hann_window(n, device=ref.device)
        r = torch.stft(ref, n, hop_length=n // 4, window=win, return_complex=True).abs()
        e = torch.stft(est, n, hop_length=n // 4, window=win, return_complex=True).abs()
        sc = (r - e).norm() / (r.norm() + 1e-7)
        mag = (torch.log(r + 1e-5) - torch.log(e + 1e-5)).abs().mean()
        total = total + weights[i] * (sc + mag)
    return total


def code_histogram(codes: torch.Tensor, size: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(codes.flatten(), num_classes=size).sum(0)
