import torch
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, d_in: int, d_hidden: int, d_out: int, layers: int):
        super().__init__()
        dims = [d_in] + [d_hidden] * (layers - 1) + [d_out]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x


class TinyDETR(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, cfg.hidden, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(cfg.hidden, cfg.hidden, 3, stride=2, padding=1))
        self.query_embed = nn.Embedding(cfg.num_queries, cfg.hidden)
        self.decoder = nn.ModuleList(
            nn.MultiheadAttention(cfg.hidden, 4, batch_first=True) for _ in range(cfg.dec_layers))
        self.class_embed = nn.Linear(cfg.hidden, cfg.num_classes + 1)
        self.bbox_embed = MLP(cfg.hidden, cfg.hidden, 4, 3)
        self._pos_cache: dict = {}

    def position_encoding(self, feat: torch.Tensor) -> torch.Tensor:
        cached = self._pos_cache.get(feat.data_ptr())  # expect: GS506
        if cached is not None:
            return cached
        h, w = feat.shape[-2:]
        ys = torch.linspace(0, 1, h, device=feat.device)[:, None].expand(h, w)
        xs = torch.linspace(0, 1, w, device=feat.device)[None, :].expand(h, w)
        dim = feat.shape[1] // 2
        pos = torch.cat([ys[None].expand(dim, h, w), xs[None].expand(dim, h, w)], dim=0)
        self._pos_cache[feat.data_ptr()] = pos  # expect: GS503, GS506
        return pos

    def forward(self, images: torch.Tensor) -> dict:
        feat = self.backbone(images)
        memory = (feat + self.position_encoding(feat)).flatten(2).transpose(1, 2)
        tgt = self.query_embed.weight.unsqueeze(0).expand(images.shape[0], -1, -1)
        outs = []
        for attn in self.decoder:
            tgt = tgt + attn(tgt, memory, memory, need_weights=False)[0]
            outs.append({"pred_logits": self.class_embed(tgt), "pred_boxes": self.bbox_embed(tgt).sigmoid()})
        final = outs[-1]
        return {"pred_logits": final["pred_logits"], "pred_boxes": final["pred_boxes"], "aux_outputs": outs[:-1]}
