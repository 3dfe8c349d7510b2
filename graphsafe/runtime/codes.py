"""The rule codes the run-time tracer reports, and which torch operation maps to which code.

One table, shared vocabulary: the static analyzer uses the same codes (graphsafe/rules). Keep
the names and the one-line messages here in step with the rules' summaries. Pure data, no
torch import: the tracer resolves these names against torch when it starts.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuntimeRule:
    code: str
    name: str
    message: str  # plain language, says what happens on capture or replay


_RULES = [
    RuntimeRule("GS101", "item-sync", "`.item()` copies a tensor value to the host and waits for the device"),
    RuntimeRule("GS102", "tolist-sync", "`.tolist()` copies a tensor to the host and waits for the device"),
    RuntimeRule("GS103", "host-copy", "copy to the host (`.cpu()`, `.numpy()`, `.to('cpu')`) waits for the device"),
    RuntimeRule("GS104", "tensor-format", "printing or formatting a tensor copies it to the host and waits for the device"),
    RuntimeRule("GS105", "tensor-to-python", "a tensor used as a Python value (bool(), int(), float(), an index or "
                "slice bound) is read on the host: a device sync"),
    RuntimeRule("GS106", "explicit-sync", "explicit synchronization: capture fails"),
    RuntimeRule("GS107", "dynamic-shape-op", "the output shape depends on the data: the host waits to learn it"),
    RuntimeRule("GS108", "bool-mask-index", "boolean-mask indexing needs the mask's count on the host: a device sync"),
    RuntimeRule("GS109", "tensor-equality-sync", "`torch.equal`/`allclose` return a Python bool: a device sync"),
    RuntimeRule("GS110", "nonfinite-check-sync", "`clip_grad_norm_(error_if_nonfinite=True)` reads the norm on the host: "
                "a device sync"),
    RuntimeRule("GS111", "distribution-validation", "a torch.distributions distribution checks its arguments or a "
                "sample on the host (`validate_args` defaults to on): a device sync"),
    RuntimeRule("GS201", "tensor-branch", "a Python branch on a tensor value (`if`/`while`/`and`/`not`): "
                "a device sync, and replay always takes the branch taken at capture"),
    RuntimeRule("GS301", "python-scalar-drift", "a Python scalar changes between steps: replay keeps the value seen "
                "at capture"),
    RuntimeRule("GS401", "static-input-rebinding", "an input tensor is a different storage on each call: replay reads "
                "the captured one; copy new data into a static tensor with `.copy_()`"),
    RuntimeRule("GS402", "host-data-tensor", "tensor from host data copied to the device inside the step (pageable H2D): "
                "capture fails or replay reuses the captured data"),
    RuntimeRule("GS403", "dynamic-input-shape", "an input's shape, dtype or device changes between calls: one graph "
                "serves one shape"),
    RuntimeRule("GS601", "unregistered-generator", "a custom CUDA generator must be registered with the graph "
                "(`graph.register_generator_state(g)`), or replay repeats the same random numbers"),
    RuntimeRule("GS701", "optimizer-not-capturable", "the optimizer's step() syncs: build it with capturable=True "
                "(capture fails otherwise)"),
]

RULES: dict[str, RuntimeRule] = {rule.code: rule for rule in _RULES}


# --- torch-function level: calls the dispatch mode cannot see, or sees without the user's intent.
# Keys are `torch.<attr>`, `torch.Tensor.<attr>` or `torch.nn.functional.<attr>`. An op listed here
# "claims" the aten ops it runs, so `.item()` is reported once (GS101), not again as the
# `_local_scalar_dense` it runs.
FUNCTION_SYNCS: dict[str, str] = {
    "Tensor.item": "GS101",
    "Tensor.tolist": "GS102",
    "Tensor.__repr__": "GS104",
    "Tensor.__str__": "GS104",
    "Tensor.__format__": "GS104",
    "Tensor.__float__": "GS105",
    "Tensor.__int__": "GS105",
    "Tensor.__index__": "GS105",
    "Tensor.__complex__": "GS105",
    "Tensor.__bool__": "GS201",  # a branch (`if t:`); an explicit `bool(t)` is EXPLICIT_BOOL (tracer.py)
    "Tensor.is_nonzero": "GS201",
    "torch.is_nonzero": "GS201",
    "Tensor.equal": "GS109",
    "torch.equal": "GS109",
    "Tensor.allclose": "GS109",
    "torch.allclose": "GS109",
}

# Host copies that only show at the torch-function level on a CPU-only machine (where every
# tensor already lives on the host, so no aten copy runs): reported as would-be syncs there.
FUNCTION_HOST_COPIES: dict[str, str] = {
    "Tensor.numpy": "GS103",
    "Tensor.__array__": "GS103",
    "Tensor.cpu": "GS103",
}

# Factories that build a tensor from host data: with a device argument they copy it to the device.
HOST_DATA_FACTORIES = ("torch.tensor", "torch.as_tensor", "torch.asarray")

# Ops that are graph-safe on CUDA but run a host read on CPU (e.g. one_hot's range check):
# claimed silently when their CUDA form is safe, so a CPU trace does not report them.
ONE_HOT = "torch.nn.functional.one_hot"


# --- dispatch level: aten ops by schema name. Checked only when no function-level op claimed them.
DISPATCH_SYNCS: dict[str, str] = {
    "aten::_local_scalar_dense": "GS105",  # item/bool/int/float seen only here: slice bounds, sizes
    "aten::nonzero": "GS107",  # also 1-arg torch.where, argwhere
    "aten::masked_select": "GS107",
    "aten::_unique": "GS107",
    "aten::_unique2": "GS107",
    "aten::unique_dim": "GS107",
    "aten::unique_consecutive": "GS107",
    "aten::unique_dim_consecutive": "GS107",
    "aten::bincount": "GS107",
    "aten::equal": "GS109",
    "aten::allclose": "GS109",
    "aten::is_nonzero": "GS201",
}
# Checked with their arguments (see tracer.py): repeat_interleave without output_size (GS107),
# index.Tensor with a bool index (GS108), index_put_ with a bool index that cannot become a
# masked_fill (GS108), _to_copy/copy_ across host and device (GS103, GS402), generator= (GS601).
REPEAT_INTERLEAVE = "aten::repeat_interleave"
INDEX = "aten::index"
INDEX_PUT = ("aten::index_put", "aten::index_put_", "aten::_index_put_impl_")
COPIES = ("aten::_to_copy", "aten::copy_")

# A sync inside these torch functions is reported under a more specific code: the user wrote
# the call, torch does the sync. (path suffix inside torch, function name) -> code.
TORCH_ORIGINS: dict[tuple[str, str], str] = {
    ("nn/utils/clip_grad.py", "_get_total_norm"): "GS110",
    # every optimizer's step() runs inside this wrapper: a sync there is a non-capturable step
    ("optim/optimizer.py", "_use_grad"): "GS701",
}

# Explicit synchronization entry points wrapped while tracing: (module or class path, attribute).
EXPLICIT_SYNCS = (
    ("torch.cuda", "synchronize"),
    ("torch.cuda.Stream", "synchronize"),
    ("torch.cuda.Stream", "query"),
    ("torch.cuda.Event", "synchronize"),
    ("torch.cuda.Event", "query"),
)
EXPLICIT_SYNC_CODE = "GS106"

# torch.cuda.set_sync_debug_mode("warn") warns with this text; a warning no traced op accounts
# for becomes a finding of this code (it is a synchronization the tracer has no better name for).
SYNC_DEBUG_MESSAGE = "called a synchronizing CUDA operation"
SYNC_DEBUG_FALLBACK = "GS106"

# Between calls.
SCALAR_DRIFT = "GS301"
INPUT_REBINDING = "GS401"
HOST_DATA_TENSOR = "GS402"
INPUT_SHAPE_DRIFT = "GS403"
UNREGISTERED_GENERATOR = "GS601"
HOST_COPY = "GS103"
BOOL_MASK_INDEX = "GS108"
DYNAMIC_SHAPE_OP = "GS107"
# `bool(t)` written out reads the tensor as a Python value, as `int(t)`/`float(t)` do: the static
# rules' GS105 (tensor-to-python); `if t:`/`not t`/`t and u` stay GS201 (tensor-branch).
EXPLICIT_BOOL = "GS105"
