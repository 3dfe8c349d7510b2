import torch
import torch.nn.functional as F


def corrupt_spans(tokens: torch.Tensor, density: float, sentinel_ids: torch.Tensor, pad_id: int):
    noise = torch.rand(tokens.shape, device=tokens.device) < density  # expect: GS301
    if tokens.dim() != 2:
        raise ValueError("tokens must be (rows, seq_len)")
    starts = noise & ~F.pad(noise[:, :-1], (1, 0), value=False)
    span_idx = (starts.long().cumsum(-1) - 1).clamp(0, sentinel_ids.numel() - 1)
    enc = torch.where(starts, sentinel_ids[span_idx], tokens)
    keep = ~noise | starts
    if not keep.any():  # expect: GS201
        keep = keep | (tokens == pad_id)
    n_keep = int(keep.sum(-1).max())  # expect: GS105
    order = torch.argsort((~keep).long(), dim=-1, stable=True)
    enc = enc.masked_fill(~keep, pad_id).gather(-1, order)[:, :n_keep]  # expect: GS301
    targets = torch.where(starts, sentinel_ids[span_idx], tokens.masked_fill(~noise, pad_id))
    n_spans = starts.nonzero().shape[0]  # expect: GS107
    return enc, targets, n_spans


def shift_right(targets: torch.Tensor, start_id: int) -> torch.Tensor:
    return F.pad(targets[:, :-1], (1, 0), value=start_id)
