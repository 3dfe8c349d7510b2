from __future__ import annotations

import torch

from config import ASRConfig
from decoder import GreedyTransducer, frame_entropy
from encoder import StreamingEncoder
from joint import Joiner, Predictor
from wer import WERStats, collapse

try:
    from tqdm import tqdm
except ImportError:  # pragma: no cover
    tqdm = None


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class StreamingRecognizer:
    def __init__(self, cfg: ASRConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.encoder = StreamingEncoder(cfg).to(device).eval()
        self.predictor = Predictor(cfg).to(device).eval()
        self.joiner = Joiner(cfg).to(device).eval()
        self.joiner.register_forward_hook(self._keep_logits)  # expect: GS706
        self.decoder = GreedyTransducer(self.predictor, self.joiner, cfg.blank_id, cfg.max_symbols_per_frame)
        self.pbar = tqdm(desc="chunks", disable=True) if tqdm is not None else _NoBar()
        self.chunk_idx = 0
        self.pred_state = torch.zeros(cfg.batch_size, cfg.d_model, device=device)
        self.last_tokens = torch.full((cfg.batch_size,), cfg.blank_id, dtype=torch.long, device=device)
        self.cache_len = 0
        self.stats = WERStats()
        self._last_logits: torch.Tensor | None = None
        if torch.cuda.is_available():
            self.start_evt = torch.cuda.Event(enable_timing=True)
            self.end_evt = torch.cuda.Event(enable_timing=True)
        self.graph: torch.cuda.CUDAGraph | None = None

    def _keep_logits(self, module, inputs, output) -> None:
        self._last_logits = output.detach()

    @torch.no_grad()
    def recognize_chunk(self, feats: torch.Tensor, lengths: torch.Tensor,
                        att_cache: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if self.cfg.profile:
            self.start_evt.record()
        enc, att_cache = self.encoder.forward_chunk(feats, lengths, att_cache)
        hyp, state, last = self.decoder.decode(enc, self.pred_state, self.last_tokens)
        self.pred_state.copy_(state)
        self.last_tokens.copy_(last)
        if self.cfg.debug:
            print(hyp)  # expect: GS104
        if self.cfg.host_copy:
            host = torch.empty(hyp.shape, dtype=hyp.dtype, pin_memory=True)  # expect: GS406
            host.copy_(hyp, non_blocking=True)
        if self.cfg.profile:
            self.end_evt.record()
            latency_ms = self.start_evt.elapsed_time(self.end_evt)  # expect: GS106
            self.pbar.set_postfix(latency_ms=latency_ms)  # expect: GS505
        self.pbar.update(1)  # expect: GS505
        self.chunk_idx += 1  # expect: GS302
        return hyp, enc, att_cache

    def _capture(self, feats: torch.Tensor, lengths: torch.Tensor, att_cache: torch.Tensor) -> None:
        confidence = torch.compile(frame_entropy, dynamic=False)
        self.joiner = torch.cuda.make_graphed_callables(
            self.joiner, (torch.zeros(self.cfg.batch_size, self.cfg.d_model, device=self.device),
                          torch.zeros(self.cfg.batch_size, self.cfg.d_model, device=self.device)))
        self.decoder.joiner = self.joiner
        self.static_feats, self.static_lengths = feats.clone(), lengths.clone()
        self.static_cache = att_cache.clone()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            hyp, enc, cache_out = self.recognize_chunk(self.static_feats, self.static_lengths, self.static_cache)
            self.static_conf = confidence(enc)  # expect: GS709
        self.static_hyp, self.static_cache_out = hyp, cache_out

    def stream(self, chunks: list[tuple[torch.Tensor, torch.Tensor]], refs: list[list[int]]) -> list[list[int]]:
        hyps: list[list[int]] = [[] for _ in range(self.cfg.batch_size)]
        att_cache = torch.zeros(self.cfg.batch_size, 0, self.cfg.d_model, device=self.device)
        for feats, lengths in chunks:
            if self.device.type == "cuda":
                if self.graph is None:
                    self._capture(feats.to(self.device), lengths.to(self.device), att_cache)
                self.static_feats.copy_(feats)
                self.static_lengths.copy_(lengths)
                self.graph.replay()
                hyp = self.static_hyp.cpu()
            else:
                hyp, _, att_cache = self.recognize_chunk(feats, lengths, att_cache)
            for b, frames in enumerate(hyp.tolist()):
                hyps[b].extend(collapse(frames, self.cfg.blank_id))
        for ref, hyp_tokens in zip(refs, hyps):
            self.stats.add(ref, hyp_tokens)
        self.cache_len = att_cache.shape[1]
        self.pbar.close()
        return hyps
