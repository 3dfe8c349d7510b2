import torch
import torch.nn as nn


class TinyT5(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.shared = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.seq_len * 2, cfg.d_model)
        self.core = nn.Transformer(cfg.d_model, cfg.n_heads, 1, 1, cfg.d_ff, dropout=0.0, batch_first=True)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    def forward(self, enc_in: torch.Tensor, dec_in: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        src = self.shared(enc_in) + self.pos(pos[: enc_in.shape[1]])
        tgt = self.shared(dec_in) + self.pos(pos[: dec_in.shape[1]])
        causal = self.core.generate_square_subsequent_mask(dec_in.shape[1], device=dec_in.device)
        return self.lm_head(self.core(src, tgt, tgt_mask=causal))
