import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence


def pack_documents(docs: list[torch.Tensor], rows: int, seq_len: int, eos_id: int, pad_id: int) -> torch.Tensor:
    eos = docs[0].new_full((1,), eos_id)
    stream = torch.cat([t for d in docs for t in (d, eos)])
    budget = rows * seq_len
    stream = F.pad(stream, (0, budget), value=pad_id)[:budget]
    return stream.view(rows, seq_len)


def position_ids(lengths: list[int], device) -> torch.Tensor:
    return torch.arange(max(lengths), device=device)  # expect: GS408


def document_mask(docs: list[torch.Tensor], pad_id: int) -> torch.Tensor:
    padded = pad_sequence(docs, batch_first=True, padding_value=pad_id)  # expect: GS408
    return padded != pad_id
