"""Image encoder (frozen), prompt encoder and mask decoder."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from config import SamConfig


class ImageEncoder(nn.Module):
    def __init__(self, cfg: SamConfig):
        super().__init__()
        self.proj = nn.Conv2d(1, cfg.embed_dim, cfg.patch, stride=cfg.patch)
        self.norm = nn.GroupNorm(4, cfg.embed_dim)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.dim() == 3:
            images = images.unsqueeze(1)
        return self.norm(self.proj(images))


class PromptEncoder(nn.Module):
    def __init__(self, cfg: SamConfig):
        super().__init__()
        self.image_size = cfg.image_size
        self.point_embed = nn.Embedding(2, cfg.embed_dim)
        self.box_embed = nn.Linear(4, cfg.embed_dim)
        self.pos = nn.Linear(2, cfg.embed_dim)

    def forward(self, points, labels, boxes=None):
        coords = points / self.image_size
        tokens = self.pos(coords) + self.point_embed(labels)
        if boxes is None:
            return tokens
        box_tok = self.box_embed(boxes / self.image_size).unsqueeze(1)
        return torch.cat([tokens, box_tok], dim=1)


class MaskDecoder(nn.Module):
    def __init__(self, cfg: SamConfig):
        super().__init__()
        self.num_masks = cfg.num_masks
        self.mask_tokens = nn.Parameter(torch.randn(cfg.num_masks, cfg.embed_dim) * 0.02)
        self.attn = nn.MultiheadAttention(cfg.embed_dim, 4, batch_first=True)
        self.upscale = nn.ConvTranspose2d(cfg.embed_dim, cfg.embed_dim, cfg.patch, stride=cfg.patch)
        self.iou_head = nn.Sequential(nn.Linear(cfg.embed_dim, 32), nn.ReLU(), nn.Linear(32, cfg.num_masks))

    def forward(self, image_emb: torch.Tensor, prompt_tokens: torch.Tensor):
        b, c, h, w = image_emb.shape
        queries = torch.cat([self.mask_tokens.expand(b, -1, -1), prompt_tokens], dim=1)
        keys = image_emb.flatten(2).transpose(1, 2)
        out, _ = self.attn(queries, keys, keys)
        mask_q = out[:, : self.num_masks]
        up = self.upscale(image_emb)
        masks = torch.einsum("bkc,bchw->bkhw", mask_q, up)
        iou_pred = self.iou_head(out[:, 0])
        return masks, iou_pred
