"""Real spherical-harmonics evaluation up to degree 2."""

from __future__ import annotations

import torch

SH_C0 = 0.28209479177387814
SH_C1 = 0.4886025119029199
SH_C2 = (1.0925484305920792, -1.0925484305920792, 0.31539156525252005, -1.0925484305920792, 0.5462742152960396)


def eval_sh(deg: int, sh: torch.Tensor, dirs: torch.Tensor) -> torch.Tensor:
    """sh: (N, (max_deg+1)**2, 3), dirs: (N, 3) unit vectors -> (N, 3) colours."""
    result = SH_C0 * sh[:, 0]
    x, y, z = (d[:, None] for d in dirs.unbind(-1))
    if deg > 0:  # expect: GS301
        result = result - SH_C1 * y * sh[:, 1] + SH_C1 * z * sh[:, 2] - SH_C1 * x * sh[:, 3]
    if deg > 1:  # expect: GS301
        xx, yy, zz = x * x, y * y, z * z
        result = (
            result
            + SH_C2[0] * x * y * sh[:, 4]
            + SH_C2[1] * y * z * sh[:, 5]
            + SH_C2[2] * (2.0 * zz - xx - yy) * sh[:, 6]
            + SH_C2[3] * x * z * sh[:, 7]
            + SH_C2[4] * (xx - yy) * sh[:, 8]
        )
    return result + 0.5
