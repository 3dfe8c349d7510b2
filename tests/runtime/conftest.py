"""Runtime tests need torch: where it is not installed, this directory is not collected."""

from __future__ import annotations

import importlib.util

import pytest

if importlib.util.find_spec("torch") is None:
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture
def cpu_only_tracer(monkeypatch):
    """The CPU tests expect the tracer of a CPU-only machine (every tensor stands for a device
    tensor, no sync debug mode), also when they run on a GPU machine."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # for the CLI tests' subprocesses
