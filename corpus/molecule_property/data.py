"""Random small molecules: atom types, partial charges, bond-type matrices, targets."""

from __future__ import annotations

import torch


def random_molecules(n: int, cfg, gen: torch.Generator):
    types, charges, bonds, ys = [], [], [], []
    for _ in range(n):
        k = int(torch.randint(3, cfg.max_atoms + 1, (1,), generator=gen))
        t = torch.randint(0, cfg.num_atom_types, (k,), generator=gen)
        c = torch.randn(k, generator=gen) * 0.1
        b = torch.zeros(cfg.max_atoms, cfg.max_atoms, dtype=torch.long)
        b[:k, :k] = torch.randint(0, cfg.num_bond_types, (k, k), generator=gen)
        types.append(t)
        charges.append(c)
        bonds.append(b)
        ys.append(torch.stack([t.float().mean(), c.sum(), b.float().mean()]))
    return types, charges, bonds, torch.stack(ys)
