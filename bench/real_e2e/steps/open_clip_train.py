"""open-clip-torch: one contrastive training step of a tiny CLIP with open_clip's ClipLoss.

The step is the body of open_clip_train's train_one_epoch for one batch (without AMP,
accumulation or distributed): model(images, texts) -> ClipLoss(cache_labels=True), as
create_loss builds it -> backward -> AdamW step -> logit_scale clamped to [0, ln 100].
"""
import math

import torch

from bench.real_e2e.step_api import Built

PACKAGE = "open-clip-torch"
KIND = "train"
REGION = "open_clip/loss.py::ClipLoss.forward"
# ftfy (and its dependency wcwidth, a binary wheel) is not in the GPU image; torchvision, timm,
# regex, tqdm, huggingface-hub and safetensors are. open_clip imports torchvision, whose PyPI
# wheels need CUDA libraries, so this step does not run in the local CPU venv. cp312 wheels:
EXTRA = [
    ("ftfy", "6.3.1", "7c70eb532015cd2f9adb53f101fb6c7945988d023a085d127d1573dc49dd0083"),
    ("wcwidth", "0.9.4", "b185c8b927b23af2721be1783499d1cfa5c028b098b0858951b4ae224477f1c2"),
]

BATCH, IMAGE, CONTEXT, VOCAB = 8, 32, 16, 1000


def build(device: str, seed: int) -> Built:
    from open_clip.loss import ClipLoss
    from open_clip.model import CLIP, CLIPTextCfg, CLIPVisionCfg

    torch.manual_seed(seed)
    model = CLIP(
        embed_dim=32,
        vision_cfg=CLIPVisionCfg(layers=2, width=64, head_width=32, patch_size=8, image_size=IMAGE),
        text_cfg=CLIPTextCfg(context_length=CONTEXT, vocab_size=VOCAB, width=64, heads=2, layers=2),
    ).to(device).train()
    loss_fn = ClipLoss(cache_labels=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.2)

    def inputs(i: int) -> tuple:
        gen = torch.Generator().manual_seed(seed * 1_000_003 + i)
        images = torch.randn(BATCH, 3, IMAGE, IMAGE, generator=gen)
        texts = torch.randint(1, VOCAB, (BATCH, CONTEXT), generator=gen)
        return images.to(device), texts.to(device)

    def step(images, texts):
        losses = loss_fn(*model(images, texts), output_dict=True)
        total_loss = sum(losses.values())
        optimizer.zero_grad()
        total_loss.backward()
        optimizer.step()
        with torch.no_grad():
            model.logit_scale.clamp_(0, math.log(100))
        return total_loss.detach()

    def state() -> dict:
        params = {f"model.{k}": v for k, v in model.state_dict().items()}
        moments = {f"adam.{n}.{k}": v for n, (p, s) in enumerate(optimizer.state.items())
                   for k, v in s.items() if isinstance(v, torch.Tensor)}
        return {**params, **moments}

    return Built(step=step, inputs=inputs, state=state)
