"""Synthetic multiple-choice tasks with continuations of different lengths."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class MCExample:
    context: list[int]
    choices: list[list[int]]
    gold: int


@dataclass
class Task:
    name: str
    examples: list[MCExample]


def make_tasks(names: tuple, n_examples: int, n_choices: int, ctx_len: int, vocab: int, seed: int) -> list[Task]:
    gen = torch.Generator().manual_seed(seed)
    tasks = []
    for name in names:
        examples = []
        for _ in range(n_examples):
            ctx = torch.randint(1, vocab, (ctx_len,), generator=gen).tolist()
            choices = []
            for _ in range(n_choices):
                n = int(torch.randint(1, 5, (), generator=gen))
                choices.append(torch.randint(1, vocab, (n,), generator=gen).tolist())
            gold = int(torch.randint(0, n_choices, (), generator=gen))
            examples.append(MCExample(context=ctx, choices=choices, gold=gold))
        tasks.append(Task(name=name, examples=examples))
    return tasks


def documents(n_docs: int, length: int, vocab: int, seed: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed + 100)
    return [torch.randint(1, vocab, (2, length), generator=gen) for _ in range(n_docs)]
