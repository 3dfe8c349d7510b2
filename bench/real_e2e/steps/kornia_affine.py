"""kornia: a RandomAffine augmentation of an image batch, `out = aug(images)`.

Set up as the labellers assumed: RandomAffine(degrees=30, translate=(0.1, 0.1), scale=(0.9, 1.1),
shear=10, p=0.5), the module left on the CPU (kornia then draws its random parameters on the
host from torch's global generator), images on the device.
"""
import torch

from bench.real_e2e.step_api import Built

PACKAGE = "kornia"
KIND = "decode"  # sampling: fresh random parameters every call
REGION = "kornia/augmentation/_2d/geometric/affine.py::RandomAffine.forward"
# kornia_rs is a binary wheel absent from the GPU image: the cp312 wheel is listed (the GPU
# image's Python); the local CPU checks (Python 3.11) used kornia_rs-0.2.0 cp311, sha256
# 82833277685b31e9ae1a2e9ecd00a28646463a05c0ea8b72e3ddb329699f8d16. numpy: CPU_DEPS.
EXTRA = [("kornia-rs", "0.2.0", "a5ccc43e7b54a845c4250dee107b62d221b4a76f6812a8041196784f4add342a")]

BATCH, CHANNELS, SIZE = 8, 3, 32


def build(device: str, seed: int) -> Built:
    from kornia.augmentation import RandomAffine

    torch.manual_seed(seed)
    aug = RandomAffine(degrees=30, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=10, p=0.5)

    def inputs(i: int) -> tuple:
        gen = torch.Generator().manual_seed(seed * 1_000_003 + i)
        return (torch.rand(BATCH, CHANNELS, SIZE, SIZE, generator=gen).to(device),)

    def state() -> dict:
        # the parameters kornia drew and recorded for the last call (used by .inverse())
        params = aug._params or {}
        return {f"params.{k}": v for k, v in params.items() if isinstance(v, torch.Tensor)}

    return Built(step=aug, inputs=inputs, state=state)
