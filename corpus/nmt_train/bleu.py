from __future__ import annotations

import math
from collections import Counter


def _ngrams(tokens: list[int], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def corpus_bleu(hyps: list[list[int]], refs: list[list[int]], max_n: int = 4) -> float:
    matches = [0] * max_n
    totals = [0] * max_n
    hyp_len = ref_len = 0
    for h, r in zip(hyps, refs):
        hyp_len += len(h)
        ref_len += len(r)
        for n in range(1, max_n + 1):
            hn, rn = _ngrams(h, n), _ngrams(r, n)
            matches[n - 1] += sum((hn & rn).values())
            totals[n - 1] += max(len(h) - n + 1, 0)
    if min(totals) == 0:
        return 0.0
    log_p = sum(math.log(max(m, 1e-9) / t) for m, t in zip(matches, totals)) / max_n
    bp = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / max(hyp_len, 1))
    return 100.0 * bp * math.exp(log_p)


def strip_special(ids: list[int], eos: int, pad: int) -> list[int]:
    out = []
    for t in ids:
        if t == eos:
            break
        if t != pad:
            out.append(t)
    return out
