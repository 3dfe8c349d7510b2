"""rwkv: one-token decode of an RWKV-5.2 model, `out, state = model.forward([token], state)`.

The model is rwkv's own `RWKV` class loading a small random checkpoint written to a temporary
file (the class only loads from a path). TorchScript and the custom CUDA kernels are off, so
the region is the Python decode path (att_one_v5_1 / ffn_one) the labels cover.
"""
import os
import tempfile

import torch

from bench.real_e2e.step_api import Built

PACKAGE = "rwkv"
KIND = "decode"
REGION = "rwkv/model.py::RWKV.forward"
EXTRA = []  # torch only; tokenizers is needed by rwkv.utils, not by the model

VOCAB, EMBD, FFN, LAYERS, HEADS = 256, 64, 224, 2, 2


def _random_checkpoint(gen: torch.Generator) -> dict:
    """A v5.2 state dict; per block, ln_x and gate come before time_decay: the loader
    detects the version from the key order."""
    def rand(*shape, scale=0.1):
        return torch.randn(*shape, generator=gen) * scale

    head = EMBD // HEADS
    w = {"emb.weight": rand(VOCAB, EMBD), "blocks.0.ln0.weight": 1 + rand(EMBD),
         "blocks.0.ln0.bias": rand(EMBD)}
    for i in range(LAYERS):
        b = f"blocks.{i}."
        for ln in ("ln1", "ln2", "att.ln_x"):
            w[f"{b}{ln}.weight"] = 1 + rand(EMBD)
            w[f"{b}{ln}.bias"] = rand(EMBD)
        for name in ("gate", "key", "value", "receptance", "output"):
            w[f"{b}att.{name}.weight"] = rand(EMBD, EMBD)
        for mix in ("k", "v", "r", "g"):
            w[f"{b}att.time_mix_{mix}"] = torch.rand(1, 1, EMBD, generator=gen)
        w[f"{b}att.time_decay"] = rand(HEADS, head, scale=1.0)
        w[f"{b}att.time_faaaa"] = rand(HEADS, head, scale=1.0)
        w[f"{b}ffn.time_mix_k"] = torch.rand(1, 1, EMBD, generator=gen)
        w[f"{b}ffn.time_mix_r"] = torch.rand(1, 1, EMBD, generator=gen)
        w[f"{b}ffn.key.weight"] = rand(FFN, EMBD)
        w[f"{b}ffn.receptance.weight"] = rand(EMBD, EMBD)
        w[f"{b}ffn.value.weight"] = rand(EMBD, FFN)
    w["ln_out.weight"] = 1 + rand(EMBD)
    w["ln_out.bias"] = rand(EMBD)
    w["head.weight"] = rand(VOCAB, EMBD)
    return w


def build(device: str, seed: int) -> Built:
    # read once, at the first import of rwkv.model: the decode path in Python, no nvcc build
    os.environ["RWKV_JIT_ON"] = "0"
    os.environ["RWKV_CUDA_ON"] = "0"
    from rwkv.model import RWKV

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tiny.pth")
        torch.save(_random_checkpoint(torch.Generator().manual_seed(seed)), path)
        model = RWKV(path, f"{device} fp32", verbose=False)
    # the state list a user keeps between tokens: forward fills it and rebinds its slots
    _, state = model.forward([0], None)

    def step(tokens):
        out, _ = model.forward(tokens, state)
        return out

    def inputs(i: int) -> tuple:
        gen = torch.Generator().manual_seed(seed * 1_000_003 + i)
        return ([int(torch.randint(VOCAB, (1,), generator=gen))],)

    def current_state() -> dict:
        return {f"state.{k}": t for k, t in enumerate(state)}

    return Built(step=step, inputs=inputs, state=current_state)
