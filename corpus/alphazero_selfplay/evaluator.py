"""Leaf evaluation for MCTS: the policy/value net replayed as a CUDA graph on the GPU."""

from __future__ import annotations

import random

import torch

from config import AlphaZeroConfig
from net import PolicyValueNet


class LeafEvaluator:
    def __init__(self, net: PolicyValueNet, cfg: AlphaZeroConfig, device: torch.device):
        self.net = net
        self.cfg = cfg
        self.device = device
        n = cfg.board
        self.static_states = torch.zeros(cfg.eval_batch, 2, n, n, device=device)
        self.static_legal = torch.ones(cfg.eval_batch, n * n, dtype=torch.bool, device=device)
        self.prior_temperature = 1.0
        self.tie_gen = torch.Generator(device=device)
        self.tie_gen.manual_seed(cfg.seed + 3)
        self.evals = 0
        self.value_trace: list[torch.Tensor] = []
        self.graph = None
        self.static_priors = self.static_values = None

    def _mix_root_noise(self, priors: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
        alpha = self.cfg.dirichlet_alpha
        draws = [[random.gammavariate(alpha, 1.0) for _ in range(priors.shape[1])] for _ in range(priors.shape[0])]  # expect: GS502
        noise = torch.tensor(draws, device=priors.device) * legal  # expect: GS402
        noise = noise / noise.sum(-1, keepdim=True)
        return (1.0 - self.cfg.dirichlet_frac) * priors + self.cfg.dirichlet_frac * noise

    def _evaluate(self, states: torch.Tensor, legal: torch.Tensor):
        logits, values = self.net(states, legal)
        priors = torch.softmax(logits / self.prior_temperature, -1)  # expect: GS301
        tie = torch.rand(priors.shape, generator=self.tie_gen, device=priors.device)
        priors = priors + 1e-6 * tie * legal
        if self.cfg.noise_in_graph:
            priors = self._mix_root_noise(priors, legal)
        self.evals += states.shape[0]  # expect: GS302
        if self.cfg.debug_eval:
            print("leaf batch", states.shape[0], "evaluations so far", self.evals)  # expect: GS501
        return priors / priors.sum(-1, keepdim=True), values

    def capture(self) -> None:
        if self.cfg.compile_net:
            return self._capture_compiled()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.no_grad():
            with torch.cuda.stream(side):
                for _ in range(3):
                    self._evaluate(self.static_states, self.static_legal)
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            self.graph.register_generator_state(self.tie_gen)
            with torch.cuda.graph(self.graph, capture_error_mode="thread_local"):
                self.static_priors, self.static_values = self._evaluate(self.static_states, self.static_legal)

    def _capture_compiled(self) -> None:
        evaluate = torch.compile(self._evaluate, dynamic=False)
        self.graph = torch.cuda.CUDAGraph()
        self.graph.register_generator_state(self.tie_gen)
        with torch.no_grad(), torch.cuda.graph(self.graph, capture_error_mode="thread_local"):
            self.static_priors, self.static_values = evaluate(self.static_states, self.static_legal)  # expect: GS709

    @torch.no_grad()
    def evaluate(self, states: torch.Tensor, legal: torch.Tensor) -> tuple[list[float], float]:
        if self.graph is None:
            priors, values = self._evaluate(states.to(self.device), legal.to(self.device))
        else:
            self.static_states.copy_(states)
            self.static_legal.copy_(legal)
            self.graph.replay()
            priors, values = self.static_priors, self.static_values
            self.value_trace.append(self.static_values)  # expect: GS407
        return priors[0].cpu().tolist(), values[0].item()
