import torch


def edit_distance(a: list, b: list) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            cur = min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
            prev, row[j] = row[j], cur
    return row[-1]


def greedy_errors(best: torch.Tensor, out_lens: torch.Tensor, refs: list, blank: int) -> int:
    errors = 0
    for b, ref in enumerate(refs):
        seq = best[b, : int(out_lens[b])]  # expect: GS105
        collapsed = torch.unique_consecutive(seq)  # expect: GS107
        hyp = [t for t in collapsed.tolist() if t != blank]  # expect: GS102
        errors += edit_distance(hyp, ref)
    return errors
