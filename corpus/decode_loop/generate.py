"""Batched generation with a KV cache. The one-token decode step is captured with torch.cuda.graph
on a GPU the first time a request comes in, and replayed for every later token and request."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from model import GPT, GPTConfig, KVCache
from sampling import sample_next


@dataclass
class DecodeState:
    finished: torch.Tensor
    lengths: torch.Tensor
    eos_id: int
    stream: list = field(default_factory=list)  # tokens pushed to the client as they come
    done: bool = False

    def reset(self, length: int) -> None:
        self.finished.zero_()
        self.lengths.fill_(length)
        self.stream = []
        self.done = False


@torch.no_grad()
def decode_step(model: GPT, tokens: torch.Tensor, caches: list[KVCache], state: DecodeState,
                temperature: float, top_k: int | None) -> torch.Tensor:
    logits = model(tokens, caches)[:, -1, :]
    next_token = sample_next(logits, temperature, top_k)
    # finished rows keep emitting eos
    next_token = torch.where(state.finished.unsqueeze(-1), torch.full_like(next_token, state.eos_id), next_token)
    newly_done = (next_token.squeeze(-1) == state.eos_id) & ~state.finished
    done_rows = newly_done.nonzero(as_tuple=True)[0]  # expect: GS107
    state.lengths[done_rows] = caches[0].pos  # expect: GS301
    state.finished |= newly_done
    state.stream.append(next_token.squeeze(-1).tolist())  # expect: GS102, GS503
    if state.finished.all():  # expect: GS201
        state.done = True
    return next_token


class Generator:
    def __init__(self, model: GPT, batch_size: int, device: torch.device, eos_id: int = 0, top_k: int | None = 8):
        self.model = model.eval()
        self.device = device
        self.top_k = top_k
        self.caches = model.make_caches(batch_size, device)
        self.state = DecodeState(
            finished=torch.zeros(batch_size, dtype=torch.bool, device=device),
            lengths=torch.zeros(batch_size, dtype=torch.long, device=device),
            eos_id=eos_id,
        )
        self.use_graph = device.type == "cuda"
        self.graph: torch.cuda.CUDAGraph | None = None
        self.static_tokens = torch.zeros(batch_size, 1, dtype=torch.long, device=device)
        self.static_next: torch.Tensor | None = None

    def _capture(self, temperature: float) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                decode_step(self.model, self.static_tokens, self.caches, self.state, temperature, self.top_k)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_next = decode_step(self.model, self.static_tokens, self.caches, self.state,
                                           temperature, self.top_k)

    @torch.no_grad()
    def generate(self, prompt: torch.Tensor, max_new_tokens: int, temperature: float = 1.0) -> list[list[int]]:
        for cache in self.caches:
            cache.reset()
        self.state.reset(prompt.size(1) + max_new_tokens)
        logits = self.model(prompt.to(self.device), self.caches)[:, -1, :]  # prefill, eager
        cur = sample_next(logits, temperature, self.top_k)
        out = [cur]
        for _ in range(max_new_tokens - 1):
            if self.use_graph:
                if self.graph is None:
                    self._capture(temperature)
                self.static_tokens = cur  # expect: GS401
                self.graph.replay()
                cur = self.static_next.clone()
            else:
                cur = decode_step(self.model, cur, self.caches, self.state, temperature, self.top_k)
            out.append(cur)
            if self.state.done:
                break
        return torch.cat([prompt.to(self.device)] + out, dim=1).tolist()


def build(seed: int, device: torch.device, batch_size: int = 3) -> Generator:
    torch.manual_seed(seed)
    model = GPT(GPTConfig()).to(device)
    return Generator(model, batch_size, device)


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gen = build(0, dev)
    prompt = torch.randint(1, 64, (3, 5))
    for temp in (0.8, 1.2):
        print(temp, gen.generate(prompt, max_new_tokens=12, temperature=temp))
