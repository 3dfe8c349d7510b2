"""graphsafe: find and fix what breaks CUDA-graph capture in PyTorch code.

Importing `graphsafe` is cheap and never imports torch; the torch side lives in
`graphsafe.runtime`.
"""

from __future__ import annotations

from typing import Callable, TypeVar

__version__ = "0.1.0"

F = TypeVar("F", bound=Callable)


def region(fn: F) -> F:
    """Mark `fn` as a capture region: `graphsafe check` reports the hazards reachable from it,
    and `graphsafe trace` traces it. It changes nothing at run time."""
    try:
        fn.__graphsafe_region__ = True  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        pass
    return fn


__all__ = ["__version__", "region"]
