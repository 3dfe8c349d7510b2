"""Greedy/sampled decoding with temperature fallback; the decoder step is one CUDA graph on a GPU."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from config import DecodingOptions
from logit_filters import ApplyTimestampRules, SuppressBlank, SuppressTokens
from model import Whisper


def log_activation_stats(module, inputs, output):
    module.last_output_norm = output.detach().norm()


class DecodingTask:
    def __init__(self, model: Whisper, opts: DecodingOptions, device: torch.device):
        self.model = model
        self.opts = opts
        self.device = device
        sp = opts.special
        self.sot, self.eot, self.no_speech_id = sp["sot"], sp["eot"], sp["no_speech"]
        b, n_ctx = opts.batch_size, model.dims.n_text_ctx
        self.sample_begin = 1
        self.position = 0
        self.temperature = opts.temperatures[0]
        self.static_tokens = torch.full((b, 1), self.sot, dtype=torch.long, device=device)
        self.pos_t = torch.zeros(1, dtype=torch.long, device=device)
        self.tokens_out = torch.full((b, n_ctx), self.eot, dtype=torch.long, device=device)
        self.tokens_out[:, 0] = self.sot
        self.sum_logprobs = torch.zeros(b, device=device)
        self.audio_features = torch.zeros(b, model.dims.n_audio_ctx, model.dims.d_model, device=device)
        self.sample_gen = torch.Generator(device=device)
        self.sample_gen.manual_seed(opts.seed)
        self.suppress_blank = SuppressBlank(sp["blank"], self.eot, self.sample_begin) if opts.suppress_blank else None
        self.suppress_tokens = SuppressTokens(opts.suppress_tokens)
        self.timestamp_rules = ApplyTimestampRules(
            sp["timestamp_begin"], self.eot, self.sample_begin, opts.max_initial_timestamp_index
        )
        self.no_speech_probs: list[float] = []
        self.logit_history: dict[int, torch.Tensor] = {}
        self.last_tokens_host = None
        self.static_logits = None
        self.graph = None
        self.encoder = model.encoder

    def sample(self, logits: torch.Tensor) -> torch.Tensor:
        if self.temperature == 0.0:  # expect: GS301
            return logits.argmax(dim=-1)
        probs = F.softmax(logits / self.temperature, dim=-1)  # expect: GS301
        return torch.multinomial(probs, 1, generator=self.sample_gen).squeeze(-1)  # expect: GS601

    def decode_step(self, tokens: torch.Tensor) -> torch.Tensor:
        logits = self.model.decoder(tokens, self.audio_features, self.pos_t)[:, -1].float()
        if self.position == 0:  # expect: GS301
            probs_at_sot = logits.softmax(dim=-1)
            self.no_speech_probs.extend(probs_at_sot[:, self.no_speech_id].tolist())  # expect: GS102, GS503
        if self.suppress_blank is not None:
            self.suppress_blank.apply(logits, self.tokens_out, self.position + 1)
        self.suppress_tokens.apply(logits, self.tokens_out, self.position + 1)
        self.timestamp_rules.apply(logits, self.tokens_out, self.position + 1)
        next_tokens = self.sample(logits)
        logprobs = F.log_softmax(logits, dim=-1)
        self.sum_logprobs = self.sum_logprobs + logprobs.gather(-1, next_tokens[:, None]).squeeze(-1)  # expect: GS401
        self.tokens_out[:, self.position + 1] = next_tokens  # expect: GS301
        tokens.copy_(next_tokens[:, None])
        self.pos_t.add_(1)
        self.position += 1  # expect: GS302
        completed = bool((next_tokens == self.eot).all())  # expect: GS105
        if self.opts.verbose:
            print(f"step {self.position}: {next_tokens} done={completed}")  # expect: GS104, GS501
        self.last_tokens_host = next_tokens.to("cpu")  # expect: GS103
        return logits

    def graph_encoder(self, mel: torch.Tensor) -> None:
        self.encoder.register_forward_hook(log_activation_stats)  # expect: GS706
        self.encoder = torch.cuda.make_graphed_callables(self.encoder, (mel,))

    def capture(self) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(self.opts.sample_len):
                self.decode_step(self.static_tokens)
        torch.cuda.current_stream().wait_stream(side)
        self.reset()
        pick = torch.compile(lambda z: z.argmax(-1), dynamic=False)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_logits = self.decode_step(self.static_tokens)
            self.static_best = pick(self.static_logits)  # expect: GS709

    def reset(self) -> None:
        self.position = 0
        self.pos_t.zero_()
        self.static_tokens.fill_(self.sot)
        self.tokens_out.fill_(self.eot)
        self.tokens_out[:, 0] = self.sot
        self.sum_logprobs.zero_()

    def set_audio(self, mel: torch.Tensor) -> None:
        self.audio_features = self.encoder(mel)  # expect: GS401

    def run(self, mel: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
        self.set_audio(mel)
        self.reset()
        self.temperature = temperature
        self.sample_gen.manual_seed(self.opts.seed)
        for step in range(self.opts.sample_len):
            if self.graph is not None:
                self.graph.replay()
                self.position += 1
            else:
                self.static_logits = self.decode_step(self.static_tokens)
            self.logit_history[step] = self.static_logits  # expect: GS407
        return self.tokens_out.clone(), self.sum_logprobs.clone()

    def transcribe(self, mel: torch.Tensor) -> dict[str, float]:
        result = None
        for t in self.opts.temperatures:
            tokens, sum_lp = self.run(mel, t)
            avg_logprob = (sum_lp / self.opts.sample_len).mean().item()
            result = {"temperature": t, "avg_logprob": avg_logprob, "tokens": tokens}
            if avg_logprob >= self.opts.logprob_threshold:
                break
        no_speech = self.no_speech_probs[-1]
        result["no_speech"] = no_speech
        result["silent"] = float(no_speech > self.opts.no_speech_threshold and result["avg_logprob"] < self.opts.logprob_threshold)
        return result
