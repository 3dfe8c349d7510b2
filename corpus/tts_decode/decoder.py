import time

import torch
from torch import nn

from attention import describe_alignment, location_attention, monotonic_peak, stop_probability
from config import TTSConfig


class TTSDecoder(nn.Module):
    def __init__(self, cfg: TTSConfig, device: torch.device):
        super().__init__()
        self.cfg = cfg
        self.text_emb = nn.Embedding(cfg.vocab, cfg.dim)
        self.mem_proj = nn.Linear(cfg.dim, cfg.dim)
        self.prenet = nn.Sequential(nn.Linear(cfg.n_mels, cfg.dim), nn.ReLU())
        self.cell = nn.GRUCell(2 * cfg.dim, cfg.dim)
        self.mel_out = nn.Linear(cfg.dim, cfg.n_mels)
        self.stop_out = nn.Linear(cfg.dim, 1)
        self.codec_out = nn.Linear(cfg.dim, cfg.codec_vocab)
        self.postnet = nn.Sequential(nn.Linear(cfg.n_mels, cfg.n_mels), nn.Tanh())
        self.post_norms: list = []
        self.postnet.register_forward_hook(self._track_post)  # expect: GS706
        self.to(device)
        b = cfg.batch
        self.register_buffer("mel_cache", torch.zeros(b, cfg.max_frames, cfg.n_mels, device=device))
        self.register_buffer("hidden", torch.zeros(b, cfg.dim, device=device))
        self.register_buffer("prev_mel", torch.zeros(b, cfg.n_mels, device=device))
        self.prev_peak = torch.zeros(b, dtype=torch.long, device=device)
        self.mel_history = torch.zeros(b, 0, cfg.n_mels, device=device)
        self.sampler_gen = torch.Generator(device=device)
        self.pos = 0
        self.finished = False
        self.proj_cache: dict = {}
        self.stop_probs: list = []
        self.codes: list = []
        self.timings: list = []

    def _track_post(self, module, inputs, output):
        self.post_norms.append(output.detach().norm())

    def graph_postnet(self) -> None:
        sample = torch.zeros(self.cfg.batch, self.cfg.n_mels, device=self.prev_mel.device)
        self.postnet = torch.cuda.make_graphed_callables(self.postnet, (sample,))

    def decode_step(self, memory: torch.Tensor, temperature: float) -> torch.Tensor:
        cfg = self.cfg
        t0 = time.monotonic()  # expect: GS502
        if id(memory) not in self.proj_cache:  # expect: GS506
            self.proj_cache[id(memory)] = self.mem_proj(memory)  # expect: GS506, GS503
        keys = self.proj_cache[id(memory)]  # expect: GS506
        x = self.prenet(self.prev_mel)
        prior = torch.zeros(memory.shape[:2], device=memory.device)
        attn = location_attention(self.hidden, keys, prior)
        context = torch.einsum("bt,btd->bd", attn, memory)
        self.hidden.copy_(self.cell(torch.cat([x, context], -1), self.hidden))
        peak = monotonic_peak(attn, self.prev_peak)
        self.prev_peak = torch.maximum(peak, self.prev_peak)  # expect: GS401
        mel = self.mel_out(self.hidden)
        mel = mel + self.postnet(mel)
        ok = not torch.isnan(mel).any()  # expect: GS201
        mel = torch.nan_to_num(mel) if cfg.trace_timing else mel
        self.mel_cache[:, self.pos] = mel  # expect: GS301
        self.prev_mel.copy_(mel)
        self.mel_history = torch.cat([self.mel_history, mel.unsqueeze(1)], dim=1)  # expect: GS404
        stop_logit = self.stop_out(self.hidden)
        stop = torch.sigmoid(stop_logit) > cfg.stop_threshold
        if stop.all():  # expect: GS201
            self.finished = True
        self.stop_probs.append(stop_probability(stop_logit))  # expect: GS503
        logits = self.codec_out(self.hidden) / temperature  # expect: GS301
        banned = torch.tensor(cfg.banned_tokens, device=logits.device)  # expect: GS402
        logits = logits.index_fill(-1, banned, float("-inf"))
        top_vals, top_idx = torch.topk(logits, cfg.top_k, dim=-1)
        probs = torch.softmax(top_vals, dim=-1)
        self.sampler_gen.manual_seed(cfg.seed + 1)  # expect: GS602
        choice = torch.multinomial(probs, 1, generator=self.sampler_gen)  # expect: GS601
        code = top_idx.gather(-1, choice)
        self.codes.append(code.tolist())  # expect: GS102, GS503
        if cfg.trace_timing:
            describe_alignment(peak)
            self.timings.append(ok)  # expect: GS503
            torch.cuda.synchronize()  # expect: GS106
            self.timings.append(time.monotonic() - t0)  # expect: GS502, GS503
        self.pos += 1  # expect: GS302
        return code
