"""A rewriter's starting point: the source parsed, the name `import torch` binds, node positions."""

from __future__ import annotations

from typing import Any, NamedTuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from graphsafe.rewriters.boundary import _torch_name


class TorchModule(NamedTuple):
    module: cst.Module
    torch: str  # the name `import torch` binds at the top level
    positions: Any  # node -> CodeRange (libcst PositionProvider)


def parse_torch_module(source: str) -> TorchModule | None:
    """None where the source does not parse or does not `import torch` at the top level."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None
    torch = _torch_name(module)
    if torch is None:
        return None
    return TorchModule(module, torch, MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))
