"""Shared pytest setup: `cuda`-marked tests run only where a CUDA GPU is present."""

from __future__ import annotations

import pytest


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if not any(item.get_closest_marker("cuda") for item in items):
        return
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU: run on the GPU machine (see bench/RESULTS.md)")
    for item in items:
        if item.get_closest_marker("cuda"):
            item.add_marker(skip)
