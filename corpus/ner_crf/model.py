"""Char-CNN + word embeddings -> BiLSTM encoder -> emission scores, with a CRF head."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from torch.utils.checkpoint import checkpoint

from config import NERConfig
from crf import CRF


class CharCNN(nn.Module):
    def __init__(self, cfg: NERConfig):
        super().__init__()
        self.embed = nn.Embedding(cfg.char_vocab, cfg.char_dim, padding_idx=0)
        self.conv = nn.Conv1d(cfg.char_dim, cfg.char_filters, kernel_size=3, padding=1)

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        b, t, c = chars.shape
        x = self.embed(chars.reshape(b * t, c)).transpose(1, 2)
        x = F.relu(self.conv(x)).max(dim=-1).values
        return x.reshape(b, t, -1)


class BiLSTMEncoder(nn.Module):
    def __init__(self, in_dim: int, hidden: int):
        super().__init__()
        self.lstm = nn.LSTM(in_dim, hidden, batch_first=True, bidirectional=True)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        lengths = mask.sum(dim=1)
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)  # expect: GS103
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        return out


class NERTagger(nn.Module):
    def __init__(self, cfg: NERConfig, device: torch.device):
        super().__init__()
        self.cfg = cfg
        self.device = device
        self.word_embed = nn.Embedding(cfg.word_vocab, cfg.word_dim, padding_idx=cfg.pad_idx)
        self.char_cnn = CharCNN(cfg)
        self.dropout = nn.Dropout(cfg.dropout)
        self.encoder = BiLSTMEncoder(cfg.word_dim + cfg.char_filters, cfg.hidden)
        self.proj = nn.Linear(2 * cfg.hidden, len(cfg.labels))
        self.crf = CRF(len(cfg.labels))
        self.word_dropout_gen = torch.Generator(device=self.device)
        self.word_dropout_gen.manual_seed(cfg.seed + 101)

    def encoder_parameters(self):
        for name, p in self.named_parameters():
            if not name.startswith("crf."):
                yield p

    def replace_rare_words(self, words: torch.Tensor) -> torch.Tensor:
        if not self.training or self.cfg.word_dropout == 0.0:
            return words
        keep_prob = torch.full(words.shape, 1.0 - self.cfg.word_dropout, device=words.device)
        keep = torch.bernoulli(keep_prob, generator=self.word_dropout_gen)  # expect: GS601
        return torch.where(keep.bool() | (words == self.cfg.pad_idx), words, torch.full_like(words, self.cfg.unk_idx))

    def forward(self, words: torch.Tensor, chars: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        words = self.replace_rare_words(words)
        char_feats = checkpoint(self.char_cnn, chars, use_reentrant=False)  # expect: GS603
        x = torch.cat([self.word_embed(words), char_feats], dim=-1)
        h = self.encoder(self.dropout(x), mask)
        return self.proj(self.dropout(h))
