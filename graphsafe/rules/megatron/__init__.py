"""Megatron-Core / Megatron-Bridge CUDA-graph configuration checks (GS8xx).

settings.py   the facts: canonical keys, values, a Recipe of settings in source order
tokens.py     launcher words (flags, VAR=value, Bridge overrides) → settings
python_config.py  Python configs → settings (one pass per file, shared by the rules)
shell.py      launch scripts (*.sh) → settings → FileFacts (the engine's hook for .sh files)
checks.py     the rules
"""

from graphsafe.rules.megatron.checks import RULES

__all__ = ["RULES"]
