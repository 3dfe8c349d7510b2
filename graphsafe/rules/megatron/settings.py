"""Megatron-Core / Megatron-Bridge settings as plain facts, whatever syntax wrote them.

A recipe sets the same option in many spellings: `cfg.model.cuda_graph_impl = "local"`,
`TransformerConfig(enable_cuda_graph=True)`, `{"cuda_graph_impl": "local"}`, a launcher flag
`--cuda-graph-impl local`, a Bridge override `model.cuda_graph_impl=local`. The front-ends
(python_config.py, shell.py) turn each into a `Setting` with a canonical key; the rules
(checks.py) only look at a `Recipe`: the settings of one recipe, in source order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

UNKNOWN = ...  # a value that is not a literal (a variable, `$IMPL`, an f-string)

VALID_IMPLS = ("none", "local", "transformer_engine")
VALID_SCOPES = ("full_iteration", "attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba")
# Older Megatron-Core accepted "full" (the whole layer) and normalises it away: not an error.
LEGACY_SCOPES = ("full",)
# The newest Megatron-Core also accepts `cuda_graph_impl="full_iteration"`: the same local
# full-iteration graph as `local` + scope `full_iteration`, and read as that here.
NEWER_IMPLS = ("full_iteration",)


class Origin(Enum):
    """Who reads the setting decides its defaults and how a fix is spelled."""

    CONFIG = "config"  # a Python config object, constructor keyword or dict (Bridge / MCore dataclasses)
    OVERRIDE = "override"  # a Bridge/OmegaConf override `model.cuda_graph_impl=local`
    MEGATRON_FLAG = "megatron-flag"  # a Megatron-LM launcher flag `--cuda-graph-impl local`
    BRIDGE_FLAG = "bridge-flag"  # Bridge's performance harness `--cuda_graph_impl local`
    ENV = "env"  # an environment variable


# name as written (attribute, keyword, dict key, flag without dashes) → canonical key
NAMES = {
    "cuda_graph_impl": "impl",
    "cuda_graph_scope": "scope",
    "cuda_graph_modules": "scope",
    "enable_cuda_graph": "enable",
    "external_cuda_graph": "external",
    "cuda_graph_warmup_steps": "warmup",
    "use_te_rng_tracker": "te_rng",
    "te_rng_tracker": "te_rng",
    "check_for_nan_in_loss": "nan_loss",
    "check_for_nan_in_loss_and_grad": "nan_loss",
    "check_for_nan_in_grad": "nan_grad",
    "cpu_offloading": "cpu_offloading",
    "cpu_offloading_num_layers": "cpu_offloading_layers",
    "fine_grained_activation_offloading": "fine_grained_offloading",
    "recompute_granularity": "recompute",
    "packed_sequence": "packed",
    "packed_sequence_specs": "packed_specs",
    "packed_sequence_size": "packed_size",
    "variable_seq_lengths": "variable_seq",
    "transformer_impl": "transformer_impl",
    "fp16": "fp16",
    "loss_scale": "loss_scale",
}
ENV_NAMES = {"PYTORCH_CUDA_ALLOC_CONF": "alloc_conf", "NCCL_GRAPH_REGISTER": "nccl_graph_register"}
# Launcher flags that take values (the others are switches); scope takes several.
VALUE_FLAGS = frozenset(
    {"impl", "scope", "warmup", "recompute", "transformer_impl", "loss_scale", "cpu_offloading_layers", "packed_specs", "packed_size"}
)
MULTI_VALUE = frozenset({"scope"})
# Words a file must contain for any of these checks to have something to do.
TRIGGER_WORDS = ("cuda_graph", "cuda-graph")


@dataclass
class Setting:
    key: str  # canonical key (NAMES / ENV_NAMES values)
    value: object  # str, bool, int, tuple of str (scopes), None, or UNKNOWN
    written: str  # how the user wrote the name: "cfg.model.cuda_graph_impl", "--cuda-graph-impl"
    origin: Origin
    anchor: object = field(default=None, repr=False)  # where to report: the front-end's own position data
    group: str | None = None  # the recipe it belongs to (a top-level function), None: file level
    order: int = 0  # position in the file, to merge file-level and group settings in order


_NUMBERS = frozenset({"warmup", "cpu_offloading_layers", "packed_size", "nccl_graph_register"})


def normalise(key: str, value: object) -> object:
    """Values as the rules compare them: scopes as a tuple, switches as bools."""
    if value is UNKNOWN:
        return value
    if key == "scope":
        if isinstance(value, str):
            value = [value]
        if isinstance(value, (list, tuple)):
            parts: list[str] = []
            for item in value:
                if item is UNKNOWN or not isinstance(item, str):
                    return UNKNOWN
                parts.extend(p.strip() for p in item.replace(",", " ").split() if p.strip())
            return tuple(parts)
        return UNKNOWN if value is not None else ()
    if isinstance(value, str):
        text = value.strip()
        lowered = text.lower()
        if key in ("impl", "recompute", "transformer_impl"):
            return text
        if lowered in ("true", "1", "yes") and key not in _NUMBERS:
            return True
        if lowered in ("false", "0", "no") and key not in _NUMBERS:
            return False
        if lowered in ("none", "null", "~") and key != "alloc_conf":
            return None
        if key in ("warmup", "cpu_offloading_layers", "packed_size"):
            try:
                return int(text)
            except ValueError:
                return UNKNOWN
        return text
    return value


@dataclass
class Recipe:
    """The settings of one recipe, in source order; the last one written wins."""

    settings: list[Setting] = field(default_factory=list)

    def last(self, key: str) -> Setting | None:
        for setting in reversed(self.settings):
            if setting.key == key:
                return setting
        return None

    def value(self, key: str, default: object = None) -> object:
        setting = self.last(key)
        return default if setting is None else setting.value

    def has(self, key: str) -> bool:
        return self.last(key) is not None

    # ---------------------------------------------------------------- derived facts
    def impl(self) -> tuple[object, Setting | None]:
        """The graph implementation and the setting that chose it (`enable_cuda_graph` means
        "local", `external_cuda_graph` "transformer_engine", as Megatron-Core maps them)."""
        chosen = self.last("impl")
        if chosen is not None:
            return ("local" if chosen.value == "full_iteration" else chosen.value), chosen
        enable = self.last("enable")
        if enable is not None and enable.value is True:
            return "local", enable
        external = self.last("external")
        if external is not None and external.value is True:
            return "transformer_engine", external
        if enable is not None and enable.value is UNKNOWN or external is not None and external.value is UNKNOWN:
            return UNKNOWN, enable or external
        return "none", None

    def graphs_on(self) -> Setting | None:
        """The setting that enables CUDA graphs, if they are surely on."""
        impl, setting = self.impl()
        if isinstance(impl, str) and impl != "none" and setting is not None:
            return setting
        return None

    def scopes(self) -> tuple[tuple[str, ...] | None, Setting | None]:
        chosen = self.last("impl")
        if chosen is not None and chosen.value == "full_iteration":
            return ("full_iteration",), chosen
        setting = self.last("scope")
        if setting is None or setting.value is UNKNOWN:
            return None, setting
        return setting.value, setting


def closest(word: str, choices: tuple[str, ...]) -> str | None:
    import difflib

    found = difflib.get_close_matches(word.lower(), choices, n=1, cutoff=0.5)
    return found[0] if found else None
