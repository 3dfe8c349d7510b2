"""A region on a model's forward reaches the forward of the blocks it keeps in a container,
however the container is built or passed: `nn.ModuleList` from a generator or a list
comprehension, inside `nn.ModuleDict(dict(h=...))`, handed to the constructor (`self.layers =
layers`), or filled by `.append(make_block(...))` from a factory function; iterated
(`for blk in self.transformer.h`) or indexed (`self.layers[i](x)`).

Each case is a small project in three files: the cache with a `.item()` in `update`, the
attention and block that call it, and the model whose forward is the region.
"""

from __future__ import annotations

import pytest

from tests.helpers import project_diagnostics

CACHE = """
import torch


class Cache:
    def __init__(self):
        self.k = torch.zeros(4, 8)
        self.pos = torch.zeros((), dtype=torch.long)

    def update(self, k):
        end = int(self.pos.item())
        self.k[end] = k
        return self.k
"""

BLOCK = """
import torch
from torch import nn
from cache import Cache


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.cache = Cache()

    def forward(self, x):
        k = self.cache.update(self.proj(x))
        return x + k.sum()


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = Attention(d)

    def forward(self, x):
        return self.attn(x)


def make_block(d):
    return Block(d)
"""

CACHE_ITEM = ("cache.py", 11, "GS101")

MODELS = {
    "generator": """
        from torch import nn
        from blocks import Block


        class GPT(nn.Module):
            def __init__(self, n, d):
                super().__init__()
                self.h = nn.ModuleList(Block(d) for _ in range(n))

            def forward(self, x):
                for blk in self.h:
                    x = blk(x)
                return x
        """,
    "list comprehension, indexed": """
        from torch import nn
        from blocks import Block


        class GPT(nn.Module):
            def __init__(self, n, d):
                super().__init__()
                self.layers = nn.ModuleList([Block(d) for _ in range(n)])

            def forward(self, x):
                for i in range(len(self.layers)):
                    x = self.layers[i](x)
                return x
        """,
    "ModuleDict of dict(h=ModuleList)": """
        from torch import nn
        from blocks import Block


        class GPT(nn.Module):
            def __init__(self, n, d):
                super().__init__()
                self.transformer = nn.ModuleDict(dict(
                    wte=nn.Embedding(10, d),
                    h=nn.ModuleList([Block(d) for _ in range(n)]),
                    ln_f=nn.LayerNorm(d),
                ))

            def forward(self, x):
                for blk in self.transformer.h:
                    x = blk(x)
                return self.transformer.ln_f(x)
        """,
    "passed to the constructor": """
        from torch import nn
        from blocks import Block


        class GPT(nn.Module):
            def __init__(self, layers):
                super().__init__()
                self.layers = layers

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x


        def build(n, d):
            return GPT(nn.ModuleList([Block(d) for _ in range(n)]))
        """,
    "wrapped in a ModuleList by the constructor": """
        from torch import nn
        from blocks import Block


        class GPT(nn.Module):
            def __init__(self, blocks):
                super().__init__()
                self.blocks = nn.ModuleList(blocks)

            def forward(self, x):
                for i in range(len(self.blocks)):
                    x = self.blocks[i](x)
                return x


        def build(n, d):
            return GPT([Block(d) for _ in range(n)])
        """,
    "appended from a factory": """
        from torch import nn
        from blocks import make_block


        class GPT(nn.Module):
            def __init__(self, n, d):
                super().__init__()
                self.layers = nn.ModuleList()
                for _ in range(n):
                    self.layers.append(make_block(d))

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x
        """,
}


@pytest.mark.parametrize("shape", sorted(MODELS))
def test_a_region_on_the_model_reaches_the_cache_item_in_its_blocks(tmp_path, shape):
    found = project_diagnostics(tmp_path, {"cache.py": CACHE, "blocks.py": BLOCK, "model.py": MODELS[shape]},
                                regions=("GPT.forward",))
    assert CACHE_ITEM in located(found)


def located(found):
    return {(d.path.rpartition("/")[2], d.start.line, d.code) for d in found}


def test_parts_unpacked_from_module_lists_of_module_lists_run_their_forward(tmp_path):
    found = project_diagnostics(tmp_path, {"layers.py": """
        import torch
        from torch import nn


        class Attention(nn.Module):
            def forward(self, x: torch.Tensor):
                return x * x.sum().item()


        class Layers(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([])
                for _ in range(3):
                    self.layers.append(nn.ModuleList([nn.LayerNorm(4), Attention()]))

            def forward(self, x):
                for i, (norm, block) in enumerate(self.layers):
                    x = block(norm(x))
                return x
        """}, regions=("Layers.forward",))
    assert ("layers.py", 8, "GS101") in located(found)


def test_a_module_made_and_called_at_once_runs_its_forward(tmp_path):
    found = project_diagnostics(tmp_path, {"layers.py": """
        import torch
        from torch import nn


        class Attention(nn.Module):
            def forward(self, x: torch.Tensor):
                return x * x.sum().item()


        def step(x):
            return Attention()(x)
        """}, regions=("step",))
    assert ("layers.py", 8, "GS101") in located(found)


def test_a_module_kept_in_an_attribute_set_to_none_first_reaches_the_layers_it_is_handed_to(tmp_path):
    found = project_diagnostics(tmp_path, {"layers.py": """
        import torch
        from torch import nn


        class Alibi(nn.Module):
            def forward(self, i, j):
                return torch.arange(j - i, j, device="cuda").sum().item()


        class Attention(nn.Module):
            def forward(self, x: torch.Tensor, rel_pos=None):
                if rel_pos is not None:
                    x = x + rel_pos(x.shape[-2], x.shape[-1])
                return x


        class Layers(nn.Module):
            def __init__(self, alibi: bool):
                super().__init__()
                self.rel_pos = None
                if alibi:
                    self.rel_pos = Alibi()
                self.layers = nn.ModuleList([Attention() for _ in range(3)])

            def forward(self, x):
                for block in self.layers:
                    x = block(x, rel_pos=self.rel_pos)
                return x
        """}, regions=("Layers.forward",))
    assert ("layers.py", 8, "GS101") in located(found)
