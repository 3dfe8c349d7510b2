"""A graph-safe training step: static input buffers filled with copy_(), lr as a device tensor
updated with fill_() outside the region, capturable AdamW on the GPU, plain clip_grad_norm_, every
number logged after the replay. Captured with torch.cuda.graph on a GPU, eager on CPU."""

from __future__ import annotations

import math

import torch

import graphsafe
from data import batches, make_dataset
from masking import class_balance, expand_rows, first_positions
from model import Classifier, Config


class Trainer:
    def __init__(self, config: Config, batch_size: int, device: torch.device, lr: float = 2e-3):
        self.config = config
        self.device = device
        self.model = Classifier(config).to(device)
        self.base_lr = lr
        self.lr = torch.tensor(lr, device=device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=self.lr, capturable=device.type == "cuda")
        self.static_tokens = torch.zeros(batch_size, config.max_len, dtype=torch.long, device=device)
        self.static_labels = torch.zeros(batch_size, dtype=torch.long, device=device)
        self.step_count = torch.zeros((), dtype=torch.long, device=device)
        # one-time setup outside any region: syncs here are fine
        self.init_scale = self.model.head.weight.detach().std().item()
        self.n_params = sum(p.numel() for p in self.model.parameters())

    @graphsafe.region
    def train_step(self):
        tokens, labels = self.static_tokens, self.static_labels
        logits, loss = self.model(tokens, labels)
        weights = class_balance(labels, self.config.n_classes)
        loss = loss * (weights.mean() / weights.max())
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        self.step_count += 1
        finite = torch.isfinite(loss)
        loss = torch.where(finite, loss.detach(), torch.zeros_like(loss))
        first_pad = first_positions(tokens == self.config.pad_id, max_items=4)
        doubled = expand_rows(labels[:2], torch.full((2,), 2, device=labels.device), total=4)
        acc = (logits.argmax(dim=-1) == labels).float().mean()
        return loss, grad_norm, acc, first_pad, doubled

    def set_lr(self, it: int, total: int) -> None:
        lr = self.base_lr * 0.5 * (1.0 + math.cos(math.pi * it / max(1, total)))
        self.lr.fill_(lr)


def train(steps: int, seed: int, device: torch.device, batch_size: int = 8):
    torch.manual_seed(seed)
    config = Config()
    trainer = Trainer(config, batch_size, device)
    data = batches(make_dataset(64, config.vocab_size, config.max_len, config.n_classes, seed), batch_size,
                   config.max_len, seed)
    trainer.model.train()
    graph = None
    if device.type == "cuda":
        tokens, labels, _ = next(data)
        trainer.static_tokens.copy_(tokens)
        trainer.static_labels.copy_(labels)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                trainer.train_step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = trainer.train_step()
    history = []
    for it in range(steps):
        tokens, labels, stats = next(data)
        trainer.static_tokens.copy_(tokens, non_blocking=True)
        trainer.static_labels.copy_(labels, non_blocking=True)
        trainer.set_lr(it, steps)
        if graph is not None:
            graph.replay()
            out = [t.clone() for t in static_out]
        else:
            out = trainer.train_step()
        loss, grad_norm, acc = out[0], out[1], out[2]
        history.append(loss.item())  # outside the region: a sync per step, but capture is unaffected
        print(f"step {it} loss {loss.item():.4f} grad_norm {grad_norm.item():.3f} acc {acc.item():.2f} "
              f"max_len {stats['max_len']}")
    return trainer, history, out


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train(10, 0, dev)
