import torch


class TokenMetrics:
    def __init__(self, pad_id: int, vocab_size: int):
        self.pad_id = pad_id
        self.vocab_size = vocab_size
        self.history = []

    def update(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        pred = logits.argmax(-1)
        valid = targets != self.pad_id
        acc = ((pred == targets) & valid).sum() / valid.sum().clamp(min=1)
        self.nonzero_acc = valid.any() and acc > 0  # expect: GS201
        self.history.append(acc.detach())  # expect: GS503
        hits = pred[valid]  # expect: GS108
        self.pred_counts = torch.bincount(hits, minlength=self.vocab_size)  # expect: GS107
        return acc

