import torch
import torch.nn as nn
import torch.nn.functional as F


class STFTDiscriminator(nn.Module):
    def __init__(self, n_fft: int):
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer("window", torch.hann_window(n_fft))
        self.convs = nn.ModuleList([nn.Conv2d(2, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)])
        self.out = nn.Conv2d(8, 1, 3, padding=1)

    def forward(self, wav: torch.Tensor):
        spec = torch.stft(wav, self.n_fft, hop_length=self.n_fft // 4, window=self.window, return_complex=True)
        x = torch.stack([spec.real, spec.imag], 1)
        feats = []
        for conv in self.convs:
            x = F.leaky_relu(conv(x), 0.2)
            feats.append(x)
        return self.out(x), feats


class MultiScaleSTFTDiscriminator(nn.Module):
    def __init__(self, scales):
        super().__init__()
        self.discs = nn.ModuleList(STFTDiscriminator(n) for n in scales)

    def forward(self, wav: torch.Tensor):
        return [d(wav) for d in self.discs]


def feature_matching(real_feats, fake_feats) -> torch.Tensor:
    loss = 0.0
    for rf, ff in zip(real_feats, fake_feats):
        for r, f in zip(rf, ff):
            loss = loss + (r.detach() - f).abs().mean() / (r.detach().abs().mean() + 1e-5)
    return loss


def hinge_generator_loss(logits) -> torch.Tensor:
    return sum(F.relu(1 - l).mean() for l in logits)
