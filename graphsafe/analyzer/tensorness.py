"""Tensor-ness inference: is this expression a tensor, surely not a tensor, or unknown?

Rules that fire on a truth test (`if t:`) or a conversion (`float(t)`) must only fire when the
value is known to be a tensor; shape checks, `is None`, `self.training`, dtype/device checks and
config flags are known not to be. Inference is local and cheap: annotations, torch factories
and ops, tensor methods and attributes, module calls, arithmetic, and the kinds of names
assigned earlier in the same function (in source order).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from graphsafe.analyzer.argument_calls import GRAD_SCALERS
from graphsafe.analyzer.names import dotted


@dataclass(frozen=True, slots=True)
class Kind:
    """What a value is. `tag` is one of the constants below; `refs` names classes for objects."""

    tag: str
    refs: tuple[str, ...] = ()
    # why a value nothing declares is a tensor (from its use, from what a helper returns), for
    # the report to print; not part of the kind's identity
    why: str = field(default="", compare=False)

    @property
    def is_tensor(self) -> bool:
        return self.tag in (_TENSOR, _BOOL)

    @property
    def is_bool_tensor(self) -> bool:
        return self.tag == _BOOL

    @property
    def not_tensor(self) -> bool:
        return self.tag in (_SCALAR, _TUPLE, _STREAM, _OBJ, _MODULES, _CONFIG, _DICT)


_TENSOR, _BOOL, _TUPLE, _SCALAR, _UNKNOWN, _STREAM, _OBJ, _MODULES, _CONFIG = (
    "tensor", "bool-tensor", "tensor-tuple", "scalar", "unknown", "stream-or-event", "object",
    "modules", "config",
)
TENSOR = Kind(_TENSOR)
BOOL_TENSOR = Kind(_BOOL)
TENSOR_TUPLE = Kind(_TUPLE)  # a tuple/list of tensors: truthiness is a length check
MIXED_TUPLE = Kind(_TUPLE, ("mixed",))  # `(x, 3)`: tensors and other values (not spread as tensors)
SCALAR = Kind(_SCALAR)  # any non-tensor Python value (number, str, bool, None, shape, dtype)
UNKNOWN = Kind(_UNKNOWN)
STREAM_OR_EVENT = Kind(_STREAM)
CONFIG = Kind(_CONFIG)
# `{"mase": mase, "smape": s}` or `-> dict[str, Tensor]`: a dict whose values are tensors
# (indexing it gives a tensor; iterating it gives keys)
_DICT = "tensor-dict"
TENSOR_DICT = Kind(_DICT)


def instance_of(*classes: str) -> Kind:
    """A value made by calling `classes` (an nn.Module instance, an optimizer, ...)."""
    return Kind(_OBJ, tuple(classes))


def module_set(*classes: str) -> Kind:
    """A ModuleList/Sequential whose elements are instances of `classes`."""
    return Kind(_MODULES, tuple(classes))


def merge(a: Kind, b: Kind) -> Kind:
    """A name assigned twice with different kinds: keep what both agree on."""
    if a == b:
        return a
    if a.is_tensor and b.is_tensor:
        return TENSOR
    if a.tag == b.tag == _TUPLE:
        return MIXED_TUPLE
    if a.tag == b.tag and a.tag in (_OBJ, _MODULES) and a.refs and b.refs:
        # `self.model = self.moco` or `DDP(...)`, `x = A() if c else B()`: either one's methods run
        return Kind(a.tag, tuple(dict.fromkeys(a.refs + b.refs)))
    if a.not_tensor and b.not_tensor:
        return SCALAR
    return UNKNOWN


# Methods of Python ints and floats that no tensor has: what they return is a number.
PYTHON_NUMBER_METHODS = frozenset({"bit_length", "bit_count", "is_integer", "as_integer_ratio", "to_bytes"})


# --- what torch's API returns -------------------------------------------------------------

TENSOR_NAMESPACES = ("torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special")

# Functions in those namespaces that do not return a tensor.
TORCH_NON_TENSOR = frozenset(
    """is_tensor is_storage is_floating_point is_complex is_nonzero numel get_default_dtype
    set_default_dtype manual_seed seed initial_seed set_grad_enabled no_grad enable_grad
    inference_mode is_grad_enabled is_inference_mode_enabled compile device dtype Size
    Generator use_deterministic_algorithms are_deterministic_algorithms_enabled equal allclose
    typename result_type promote_types can_cast broadcast_shapes save load finfo iinfo
    get_rng_state set_rng_state set_printoptions autocast set_float32_matmul_precision
    get_float32_matmul_precision is_autocast_enabled cond vmap jit onnx export
    get_num_threads set_num_threads is_same_size""".split()
)

TORCH_TUPLE = frozenset(
    """split chunk unbind meshgrid tensor_split hsplit vsplit dsplit sort topk kthvalue mode
    median_with_indices aminmax frexp histogram lu qr svd eig eigh slogdet lstsq unique
    unique_consecutive std_mean var_mean broadcast_tensors atleast_1d atleast_2d atleast_3d
    cummax cummin""".split()
)

# Tensor methods/attributes that do not give a tensor.
TENSOR_NON_TENSOR_METHODS = frozenset(
    """item tolist size dim ndimension numel nelement element_size stride data_ptr
    storage_offset is_contiguous is_floating_point is_complex is_signed get_device
    untyped_storage numpy equal allclose is_set_to type __len__ is_pinned is_shared
    has_names sparse_dim dense_dim is_inference is_coalesced is_neg is_conj q_scale
    q_zero_point q_per_channel_axis""".split()
)
TENSOR_NON_TENSOR_ATTRS = frozenset(
    """shape ndim dtype device is_cuda is_cpu is_meta is_sparse is_quantized requires_grad
    grad_fn layout names is_leaf itemsize nbytes output_nr _version""".split()
)
TENSOR_TENSOR_ATTRS = frozenset("T mT H mH real imag grad data".split())
TENSOR_TUPLE_METHODS = TORCH_TUPLE

# Methods that exist on tensors but not on numpy arrays, sympy or Python objects, so a call
# `x.m(...)` is a tensor op even when `x`'s kind is unknown. (`sum`, `mean`, `reshape`, `any`
# ... are left out: numpy has them too, and a false alarm costs more than a miss here.)
TENSOR_ONLY_METHODS = frozenset(
    """float half bfloat16 double long contiguous detach view_as unsqueeze
    masked_fill masked_fill_ softmax log_softmax sigmoid relu new_zeros new_ones new_full
    new_empty new_tensor type_as expand expand_as narrow index_select gather scatter scatter_
    scatter_add scatter_add_ index_add_ index_copy_ copy_ fill_ zero_ add_ mul_ div_ sub_ lerp_
    addcmul_ addcdiv_ matmul bmm mm addmm baddbmm logsumexp amax amin argmax argmin permute
    clamp_min clamp_max clone""".split()
)

# torch functions that join a sequence of tensors (`torch.cat([buf, x])`): a buffer joined
# onto itself grows (GS404), whichever of them joins it.
CONCAT_FUNCTIONS = frozenset(
    "cat concat concatenate stack hstack vstack dstack column_stack row_stack".split()
)


def concat_parts(value: cst.BaseExpression, resolve) -> list[cst.BaseExpression] | None:
    """The tensors `torch.cat([a, b])` (or stack, vstack, ...) joins, written as a list or
    tuple (positionally or as `tensors=`); None for anything else."""
    if type(value) is not cst.Call:
        return None
    namespace, _, func = (resolve(value.func) or "").rpartition(".")
    if namespace != "torch" or func not in CONCAT_FUNCTIONS:
        return None
    first = next((a for a in value.args if a.keyword is not None and a.keyword.value == "tensors"),
                 next((a for a in value.args if a.keyword is None and not a.star), None))
    if first is None or type(first.value) not in (cst.List, cst.Tuple):
        return None
    return [e.value for e in first.value.elements if type(e) is cst.Element]


def joined_onto_itself(target: cst.BaseExpression, value: cst.BaseExpression, resolve) -> bool:
    """`self.logs[k] = torch.vstack([self.logs[k], x])`: an entry (of a dict or list) replaced
    by a concatenation of itself, so the tensor it holds grows; the container keeps its keys."""
    if type(target) is not cst.Subscript:
        return False
    return any(part.deep_equals(target) for part in concat_parts(value, resolve) or ())


# What surely gives an integer tensor (positions, ids, counts): `~` on one is a bitwise not,
# not a mask's inversion (GS108).
INT_TENSOR_METHODS = frozenset("long int short argmax argmin argsort".split())
INT_TENSOR_FUNCTIONS = frozenset(
    "arange randint randint_like randperm argmax argmin argsort searchsorted bucketize multinomial".split()
)
INT_DTYPES = frozenset("long int int64 int32 int16 int8 uint8 short".split())
INT_ANNOTATIONS = frozenset("torch.LongTensor torch.IntTensor".split())


def _int_dtype(expr: cst.BaseExpression, resolve) -> bool:
    return (type(expr) is cst.Attribute and expr.attr.value in INT_DTYPES
            and (resolve(expr) or "").rpartition(".")[0] == "torch")


def is_integer_tensor(expr: cst.BaseExpression, resolve) -> bool:
    """`torch.arange(n)`, `x.argmax(-1)`, `x.long()`, `x.to(torch.int64)`, `torch.zeros(n,
    dtype=torch.long)`, `x.topk(k).indices`: an integer tensor, whatever else is unknown.
    (`torch.arange(0.0, 1.0)` is a float tensor, which `~` rejects: not a mask either.)"""
    tp = type(expr)
    if tp is cst.Attribute:
        return expr.attr.value == "indices"  # `torch.topk(x, k).indices`, `x.max(1).indices`
    if tp is not cst.Call:
        return False
    func = expr.func
    if type(func) is cst.Attribute:
        method = func.attr.value
        if method in INT_TENSOR_METHODS and not (method in ("long", "int", "short") and expr.args):
            return True
        if method in ("to", "type") and expr.args and _int_dtype(expr.args[0].value, resolve):
            return True
    if any(a.keyword is not None and a.keyword.value == "dtype" and _int_dtype(a.value, resolve) for a in expr.args):
        return True
    namespace, _, name = (resolve(func) or "").rpartition(".")
    return namespace == "torch" and name in INT_TENSOR_FUNCTIONS


BOOL_RESULT_METHODS = frozenset(
    "bool isnan isinf isfinite isneginf isposinf isreal signbit logical_and logical_or logical_not logical_xor lt gt le ge eq ne any all isin".split()
)
# The subset that marks an unknown receiver as a tensor (numpy has any/all/...).
BOOL_ONLY_METHODS = frozenset("bool isnan isinf isfinite isneginf isposinf signbit".split())

# Calling one of these on an unannotated parameter says the function takes a tensor there
# (`labels.bool()`, `x.detach()`): TENSOR_ONLY_METHODS without the casts nn.Module has too
# (`model.half()`, `model.float()`), numpy's `argmax`/`argmin` and sympy's `expand`, plus the
# bool-only methods.
PARAM_TENSOR_METHODS = (
    TENSOR_ONLY_METHODS - {"float", "half", "bfloat16", "double", "argmax", "argmin", "expand", "clone"}
) | BOOL_ONLY_METHODS
# Anchored on the dot (fast to scan for); the receiver's name is read backwards from there.
_PARAM_TENSOR_CALL = re.compile(r"\.(?:" + "|".join(sorted(PARAM_TENSOR_METHODS, key=len, reverse=True)) + r")\(")


# torch functions whose first argument must be a tensor (a Python number raises TypeError):
# `torch.isfinite(dt)`, `torch.sign(x)`. Not factories, not functions taking a sequence first
# (`cat`, `stack`), not those with a number overload (`pow`, `add`, `mul`).
TENSOR_INPUT_FUNCTIONS = frozenset(
    """abs exp expm1 log log1p log2 log10 sqrt rsqrt sign sgn isfinite isnan isinf isneginf isposinf
    isreal signbit clamp clip clamp_min clamp_max sum mean nansum nanmean prod max min amax amin
    aminmax norm sigmoid tanh relu softmax log_softmax logsumexp matmul mm bmm flatten reshape
    squeeze unsqueeze transpose permute movedim argmax argmin argsort sort topk kthvalue cumsum
    cumprod cummax cummin diff gather scatter index_select masked_fill masked_select any all floor
    ceil round trunc frac lerp maximum minimum eq ne gt lt ge le logical_not logical_and logical_or
    logical_xor bucketize searchsorted zeros_like ones_like empty_like full_like rand_like
    randn_like randint_like clone sin cos tan asin acos atan atan2 sinh cosh erf erfc erfinv
    square reciprocal neg negative nan_to_num count_nonzero nonzero unique flip roll repeat_interleave
    narrow select take take_along_dim tril triu diagonal diag_embed outer einsum_dummy std var
    std_mean var_mean median nanmedian quantile nanquantile histc bincount""".split()
) - {"einsum_dummy"}
# `torch.isfinite(dt)`, `F.softmax(logits, -1)`: a cheap text pre-filter for the names passed first.
_TENSOR_INPUT_CALL = re.compile(r"\.(?:" + "|".join(sorted(TENSOR_INPUT_FUNCTIONS, key=len, reverse=True))
                                + r")\(\s*(\w+)\s*[,)]")


def requires_tensor_input(qualified: str) -> bool:
    """Does the torch function `qualified` take a tensor as its first argument (and only one)?"""
    module, _, name = qualified.rpartition(".")
    return (module == "torch" and name in TENSOR_INPUT_FUNCTIONS) or module == "torch.nn.functional"


# `F.mse_loss(values, zs)`: a torch loss's input and target are tensors (a number raises).
_LOSS_CALL = re.compile(r"(?:_loss|cross_entropy|_with_logits|kl_div)\(\s*(\w+)\s*,\s*(\w+)\s*[,)]")


def is_torch_loss(qualified: str) -> bool:
    """`torch.nn.functional.mse_loss`, `...cross_entropy`, `...kl_div`: input and target are tensors."""
    module, _, name = qualified.rpartition(".")
    return module == "torch.nn.functional" and (
        name.endswith("_loss") or name in ("cross_entropy", "binary_cross_entropy",
                                           "binary_cross_entropy_with_logits", "kl_div"))


def tensor_method_receivers(source: str) -> frozenset[str]:
    """Names some call in `source` treats as tensors (`name.detach(`, `F.mse_loss(a, b)`): a
    cheap text pre-filter before looking for such calls on a function's parameters in its
    syntax tree."""
    found = set()
    if "(" in source:
        for match in _LOSS_CALL.finditer(source):
            found.update(match.groups())
        found.update(match.group(1) for match in _TENSOR_INPUT_CALL.finditer(source))
    for match in _PARAM_TENSOR_CALL.finditer(source):
        name = name_before(source, match.start())
        if name:
            found.add(name)
    return frozenset(found)


def name_before(source: str, end: int) -> str:
    """The identifier characters that end at `end` in `source` (`x` of `x.detach(`), or ""."""
    start = end
    while start and (source[start - 1].isalnum() or source[start - 1] == "_"):
        start -= 1
    return source[start:end]


TENSOR_RETURNING = frozenset(
    """torch.nn.utils.clip_grad_norm_ torch.nn.utils.clip_grad.clip_grad_norm_
    torch.nn.utils.get_total_norm torch.nn.utils.parameters_to_vector
    torch.utils.checkpoint.checkpoint torch.nn.utils.rnn.pad_sequence""".split()
)

# torch functions outside the tensor namespaces that return a tuple of tensors
TENSOR_TUPLE_RETURNING = frozenset({"torch.autograd.grad", "torch.autograd.functional.vjp",
                                    "torch.autograd.functional.jvp"})

TENSOR_CLASSES = frozenset(
    """torch.nn.Parameter torch.nn.parameter.Parameter torch.nn.Buffer torch.nn.parameter.Buffer
    torch.Tensor torch.FloatTensor torch.LongTensor torch.BoolTensor""".split()
)

# What a torch.distributions object gives: every method that computes on its parameters returns
# a tensor (`dist.log_prob(a)`, `dist.entropy()`, `dist.sample()`), and so do these properties.
DISTRIBUTION_NON_TENSOR_METHODS = frozenset("expand set_default_validate_args".split())
DISTRIBUTION_TENSOR_ATTRS = frozenset(
    "mean mode variance stddev probs logits loc scale concentration rate low high df".split()
)


# The Distribution classes of torch.distributions (not its transforms or constraints).
DISTRIBUTION_CLASSES = frozenset(
    """Bernoulli Beta Binomial Categorical Cauchy Chi2 ContinuousBernoulli Dirichlet Distribution
    Exponential ExponentialFamily FisherSnedecor Gamma GeneralizedPareto Geometric Gumbel HalfCauchy
    HalfNormal Independent InverseGamma Kumaraswamy LKJCholesky Laplace LogNormal LogisticNormal
    LowRankMultivariateNormal MixtureSameFamily Multinomial MultivariateNormal NegativeBinomial Normal
    OneHotCategorical OneHotCategoricalStraightThrough Pareto Poisson RelaxedBernoulli
    RelaxedOneHotCategorical StudentT TransformedDistribution Uniform VonMises Weibull Wishart""".split()
)


def is_distribution(kind: "Kind") -> bool:
    """An instance of a torch.distributions Distribution (`Categorical(logits=x)`)."""
    return kind.tag == _OBJ and bool(kind.refs) and all(
        r.startswith("torch.distributions.") and r.rpartition(".")[2] in DISTRIBUTION_CLASSES for r in kind.refs
    )


STREAM_FACTORIES = frozenset(
    """torch.cuda.Event torch.cuda.Stream torch.cuda.current_stream torch.cuda.default_stream
    torch.cuda.ExternalStream torch.Event torch.Stream torch.accelerator.current_stream
    torch.cuda.streams.Event torch.cuda.streams.Stream""".split()
)

# nn.Module methods that return the module itself: `Model(cfg).to(device)` is still a Model.
MODULE_SELF_METHODS = frozenset("to cuda cpu train eval half float double bfloat16 requires_grad_ to_empty share_memory".split())

# Names that hold tensors by near-universal convention in training code. Used only when
# nothing better is known about a value (it came from an unresolved call).
CONVENTIONAL_TENSOR_NAME = re.compile(r"^(loss|.+_loss|loss_.+|logits|.+_logits|probs|log_probs|grad_norm|total_norm)$")

# Number parameters named like sizes are configuration (re-capture on change), not per-step values.
SIZE_NAME = re.compile(r"^(n|k|d|dim|size|length|len|\w+_(dim|dims|size|len|length|period|classes|heads|layers|experts|steps)|(n|num|max|min)_\w+)$")
# Tensor parameters named like masks hold booleans (`mask`, `attn_mask`, `keep_mask`).
MASK_NAME = re.compile(r"^(\w+_)?mask$")
SHAPE_METHODS = frozenset("reshape view flatten unsqueeze squeeze expand expand_as contiguous clone detach permute transpose".split())

CONFIG_NAMES = frozenset(
    "config cfg conf args opt opts hparams hp settings options flags training".split()
)

TENSOR_ANNOTATIONS = frozenset(
    "Tensor torch.Tensor torch.FloatTensor torch.LongTensor torch.BoolTensor torch.nn.Parameter Parameter nn.Parameter".split()
)


# jaxtyping's array annotations (`Float[Tensor, "b n"]`, `Bool[torch.Tensor, "b"]`)
_JAXTYPING_DTYPES = frozenset(
    """Float Float16 Float32 Float64 BFloat16 Int Int8 Int16 Int32 Int64 UInt8 UInt16 UInt32 UInt64
    Integer UInt Num Real Inexact Complex Complex64 Complex128 Shaped Bool""".split()
)


def _shape_annotation(name: str, expr: cst.Subscript, resolve) -> Kind | None:
    """A tensor annotated with its shape: torchtyping's `TensorType["batch", torch.bool]`, or
    jaxtyping's `Float[Tensor, "b n"]` of a torch tensor; a boolean one is a mask."""
    module, _, tail = name.rpartition(".")
    parts = [e.slice.value for e in expr.slice if isinstance(e.slice, cst.Index)]
    if module == "torchtyping" and tail == "TensorType":
        return BOOL_TENSOR if any(resolve(p) == "torch.bool" for p in parts) else TENSOR
    if module == "jaxtyping" and tail in _JAXTYPING_DTYPES and parts and resolve(parts[0]) in (
            "torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.BoolTensor"):
        return BOOL_TENSOR if tail == "Bool" else TENSOR
    return None


def annotation_kind(annotation: cst.BaseExpression, resolve) -> Kind:
    """Kind from a parameter annotation: Tensor, Optional[Tensor], Tensor | None, float, ..."""
    expr = annotation
    if isinstance(expr, cst.SimpleString):
        text = expr.evaluated_value if isinstance(expr.evaluated_value, str) else ""
        if text.replace("torch.", "") in ("Tensor", "Optional[Tensor]", "Tensor | None"):
            return TENSOR
        quoted = _quoted_annotation(text)  # `strategy: "SupervisedTemplate"`, a forward reference
        return annotation_kind(quoted, resolve) if quoted is not None else UNKNOWN
    if isinstance(expr, cst.Subscript):
        name = resolve(expr.value) or ""
        inner = expr.slice[0].slice if expr.slice else None
        if not isinstance(inner, cst.Index):
            return UNKNOWN
        shaped = _shape_annotation(name, expr, resolve)
        if shaped is not None:
            return shaped
        if name.endswith("Optional") and len(expr.slice) == 1:
            return annotation_kind(inner.value, resolve)
        if name.rpartition(".")[2] == "Union":
            return _union_of_classes(expr, resolve)
        if (name.rpartition(".")[2] in ("dict", "Dict", "Mapping") and len(expr.slice) == 2
                and isinstance(expr.slice[1].slice, cst.Index)):
            value = annotation_kind(expr.slice[1].slice.value, resolve)
            if value.is_tensor:
                return TENSOR_DICT
            if value.tag == _OBJ:  # dict[str, LoraVariant]: its values are such objects
                return module_set(*value.refs)
        if name.rpartition(".")[2] in ("list", "List", "Sequence", "tuple", "Tuple", "Iterable", "ModuleList"):
            element = annotation_kind(inner.value, resolve)
            if element.tag == _OBJ:  # list[KVCache]: indexing/iterating gives KVCache objects
                return module_set(*element.refs)
            if element.is_tensor:
                return TENSOR_TUPLE
        return UNKNOWN
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        # `Tensor | None` is a tensor wherever it is used as one; `float | Tensor` may be either.
        left, right = annotation_kind(expr.left, resolve), annotation_kind(expr.right, resolve)
        none_side = _is_none(expr.left) or _is_none(expr.right)
        if (left.is_tensor or right.is_tensor) and none_side:
            return TENSOR
        if none_side and (left.tag in (_OBJ, _MODULES) or right.tag in (_OBJ, _MODULES)):
            return left if left.tag in (_OBJ, _MODULES) else right  # `KVCache | None`
        return SCALAR if left.not_tensor and right.not_tensor else UNKNOWN
    if isinstance(expr, cst.Name) and expr.value == "None":
        return SCALAR
    name = resolve(expr)
    if name is None:
        return UNKNOWN
    if name in TENSOR_ANNOTATIONS or name in ("torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"):
        return TENSOR
    if name in ("int", "float", "bool", "str", "bytes", "torch.dtype", "torch.device", "torch.Size"):
        return SCALAR
    if name.rpartition(".")[2][:1].isupper() and not name.startswith(("typing.", "collections.")):
        return instance_of(name)  # a class: `state: DecodeState`, `model: GPT`
    return UNKNOWN


# Forward references parsed once per text and kept: resolvers memoise by node identity, so a
# node must not be freed and its id reused by another
_QUOTED: dict[str, cst.BaseExpression | None] = {}


def _quoted_annotation(text: str) -> cst.BaseExpression | None:
    """The annotation a string holds (`"SupervisedTemplate"`, `"pl.Trainer"`), or None."""
    if text not in _QUOTED:
        try:
            parsed = cst.parse_expression(text) if len(text) < 200 else None
        except Exception:  # not an expression: a docstring-like annotation
            parsed = None
        _QUOTED[text] = parsed if not isinstance(parsed, cst.SimpleString) else None
    return _QUOTED[text]


def _union_of_classes(expr: cst.Subscript, resolve) -> Kind:
    """`Union[OffloadActivations, contextlib.nullcontext]`: an object of one of the classes it
    names (one outside the project, whatever its spelling, calls nothing). A Union with a
    number, a string or a tensor says nothing here."""
    classes: list[str] = []
    for element in expr.slice:
        if not isinstance(element.slice, cst.Index) or _is_none(element.slice.value):
            continue
        kind = annotation_kind(element.slice.value, resolve)
        if kind.tag == _OBJ:
            classes.extend(kind.refs)
        elif kind != UNKNOWN or type(element.slice.value) is not cst.Attribute:
            return UNKNOWN
    return instance_of(*classes) if classes else UNKNOWN


SCALAR_PREFIXES = ("is_", "are_", "has_", "get_", "set_", "use_")


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def torch_call_kind(name: str, call: cst.Call) -> Kind | None:
    """Kind of `torch.xxx(...)` for a resolved dotted name; None if not a torch function."""
    if name in STREAM_FACTORIES:
        return STREAM_OR_EVENT
    if name in TENSOR_CLASSES or name in TENSOR_RETURNING:
        return TENSOR
    if name in TENSOR_TUPLE_RETURNING:
        return TENSOR_TUPLE
    namespace, _, func = name.rpartition(".")
    if namespace not in TENSOR_NAMESPACES:
        if name.startswith("torch.nn.") and func[:1].isupper():
            return instance_of(name)  # a torch module constructor, e.g. nn.Linear(...)
        if name.startswith(("torch.optim.", "torch.distributions.")) and func[:1].isupper():
            return instance_of(name)
        if name in GRAD_SCALERS:
            return instance_of(name)  # its `step(optimizer)` runs the optimizer's step (argument_calls.py)
        if name.startswith("torch."):
            return UNKNOWN
        return None
    if func.startswith("_"):
        return UNKNOWN  # private helpers return anything
    if func in TORCH_NON_TENSOR or func[:1].isupper() or func.startswith(SCALAR_PREFIXES):
        return SCALAR if func not in ("Generator",) else instance_of(name)
    if func in ("unique", "unique_consecutive"):
        return unique_kind(call, positional_limit=2)
    if func == "nonzero" and as_tuple(call):
        return TENSOR_TUPLE
    if func in TORCH_TUPLE:
        return TENSOR_TUPLE
    if func in ("max", "min") and (len(call.args) > 1 or any(a.keyword and a.keyword.value == "dim" for a in call.args)):
        return TENSOR_TUPLE
    if func == "where" and len(call.args) == 1:
        return TENSOR_TUPLE
    if func in BOOL_RESULT_METHODS or func in ("isclose", "isin", "eq", "ne", "gt", "lt", "ge", "le"):
        return BOOL_TENSOR
    for arg in call.args:  # torch.ones_like(x, dtype=torch.bool)
        if arg.keyword is not None and arg.keyword.value == "dtype" and isinstance(arg.value, cst.Attribute):
            if arg.value.attr.value == "bool":
                return BOOL_TENSOR
    return TENSOR


def is_host_copy(expr: cst.BaseExpression, resolve) -> bool:
    """`t.cpu()`, `t.to("cpu")`, `t.to(device=torch.device("cpu"))`: a tensor in host memory."""
    if type(expr) is not cst.Call or type(expr.func) is not cst.Attribute:
        return False
    method = expr.func.attr.value
    if method == "cpu":
        return not expr.args
    if method != "to":
        return False
    for arg in expr.args:
        if arg.keyword is None or arg.keyword.value == "device":
            return _is_cpu_device(arg.value, resolve)
    return False


def _is_cpu_device(expr: cst.BaseExpression, resolve) -> bool:
    if type(expr) is cst.SimpleString:
        value = expr.evaluated_value
        return isinstance(value, str) and value.split(":")[0] == "cpu"
    if type(expr) is cst.Call and resolve(expr.func) == "torch.device" and expr.args:
        return _is_cpu_device(expr.args[0].value, resolve)
    return False


def as_tuple(call: cst.Call) -> bool:
    """`nonzero(as_tuple=True)`: a tuple of index tensors, one per dimension."""
    return any(a.keyword is not None and a.keyword.value == "as_tuple"
               and not (type(a.value) is cst.Name and a.value.value in ("False", "None")) for a in call.args)


def unique_kind(call: cst.Call, positional_limit: int) -> Kind:
    """`unique` gives one tensor unless inverse/counts are asked for (by keyword, or by
    position past `positional_limit`: `torch.unique(x, sorted)`, `x.unique(sorted)`)."""
    extra = any(a.keyword is not None and a.keyword.value in ("return_inverse", "return_counts")
                and not (isinstance(a.value, cst.Name) and a.value.value == "False") for a in call.args)
    return TENSOR_TUPLE if extra or len([a for a in call.args if a.keyword is None]) > positional_limit else TENSOR


def looks_like_config(expr: cst.BaseExpression) -> bool:
    """`self.config.x`, `cfg.flag`, `args.debug`, `self.training`: settings, not tensors."""
    name = dotted(expr)
    if name is None:
        return False
    parts = name.split(".")
    if parts[0] == "self":
        parts = parts[1:]
    return any(p in CONFIG_NAMES for p in parts)
