"""Look-alikes that are not tensors stay silent; real tensors through common paths are seen."""

from __future__ import annotations

import pytest

from tests.helpers import codes

REGION = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\ndef step(self, model, x: torch.Tensor, cfg, flag: bool, mask=None):  # graphsafe: region\n"


def body(code: str) -> str:
    return REGION + "".join("    " + line + "\n" for line in code.strip("\n").splitlines())


SILENT = [
    "if x.shape[0] > 1:\n    pass",
    "if x.ndim == 3:\n    pass",
    "if x.dim() == 3:\n    pass",
    "if x.size(0) > 2:\n    pass",
    "if len(x) > 2:\n    pass",
    "if mask is None:\n    pass",
    "if mask is not None and flag:\n    pass",
    "if isinstance(x, torch.Tensor):\n    pass",
    "if self.training:\n    pass",
    "if self.config.use_bias:\n    pass",
    "if cfg.debug:\n    pass",
    "if x.dtype == torch.float16:\n    pass",
    "if x.device.type == 'cuda':\n    pass",
    "if x.is_cuda:\n    pass",
    "if x.requires_grad:\n    pass",
    "if flag:\n    pass",
    "outs = [x, x]\nif outs:\n    pass",
    "a, b = torch.chunk(x, 2)\nif a.shape == b.shape:\n    pass",
    "n = x.numel()\nif n > 0:\n    pass",
    "v = model(x)\nif v:\n    pass",  # unknown: not reported (precision first)
    "x[x > 0] = 0.0",
    "y = torch.where(x > 0, x, 0.0)",
    "y = torch.nonzero_static(x, size=3)",
    "print('step done')",
    "print(x.shape)",
]

FLAGGED = [
    ("loss = F.mse_loss(x, x)\nif loss > 1:\n    pass", "GS201"),
    ("h = nn.Linear(2, 2)(x)\nif h.mean() > 0:\n    pass", "GS201"),
    ("y = x * 2 + 1\nwhile y.max() > 1:\n    y = y / 2", "GS201"),
    ("m = (x > 0)\nz = x[m]", "GS108"),
    ("y = torch.softmax(x, -1)\nprint(y)", "GS104"),
    ("t = th_val = x.sum()\nv = float(t)", "GS105"),
    ("if mask:\n    pass", None),  # unknown kind: silent
    # torch.distributions objects: their methods and value properties give tensors
    ("d = torch.distributions.Categorical(logits=x, validate_args=False)\nif d.log_prob(x).mean() > 0:\n    pass", "GS201"),
    ("d = torch.distributions.Normal(x, 1.0, validate_args=False)\nv = float(d.entropy().sum())", "GS105"),
    ("d = torch.distributions.Normal(x, 1.0, validate_args=False)\nprint(d.mean)", "GS104"),
    ("d = torch.distributions.Normal(x, 1.0, validate_args=False)\nif d.batch_shape:\n    pass", None),
    # torch.autograd.grad gives a tuple of tensors, element by element and through dict(zip(...))
    ("g = torch.autograd.grad(x.sum(), [x])[0]\nif g.sum() > 1:\n    pass", "GS201"),
    ("grads = dict(zip(['x'], torch.autograd.grad(x.sum(), [x])))\nv = float(grads['x'].sum())", "GS105"),
]


def tensor_codes(source: str) -> list[str]:
    """Only the rules that depend on tensor-ness (sync and branch families)."""
    return [c for c in codes(source) if c.startswith(("GS1", "GS2"))]


@pytest.mark.parametrize("code", SILENT)
def test_not_a_tensor_is_silent(code):
    assert tensor_codes(body(code)) == []


@pytest.mark.parametrize("code,expected", FLAGGED)
def test_tensor_paths_are_seen(code, expected):
    found = tensor_codes(body(code))
    assert found == ([expected] if expected else [])


def test_self_attributes_from_init():
    source = """
import torch
from torch import nn

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(1))
        self.w = nn.Parameter(torch.zeros(3))
        self.steps = 0

    @torch.compile(mode="reduce-overhead")
    def forward(self, x):
        if self.scale > 1:
            pass
        if self.w.sum() > 0:
            pass
        if self.steps > 3:
            pass
        return x
"""
    assert tensor_codes(source) == ["GS201", "GS201"]


@pytest.mark.parametrize("code", [
    "u = torch.unique(x).tolist()",
    "u, inv = torch.unique(x, return_inverse=True)\nv = inv.tolist()",
])
def test_unique_gives_one_tensor_unless_inverse_or_counts(code):
    assert "GS102" in codes(body(code))


def test_a_list_of_instances_reaches_their_call_methods():
    source = """
import torch

class Eos:
    def __call__(self, ids):
        print("done")
        return ids

class Step:
    def __init__(self):
        self.criteria = [Eos(), Eos()]

    def run(self, ids: torch.Tensor):  # graphsafe: region
        for c in self.criteria:
            ids = c(ids)
"""
    assert "GS501" in codes(source)


def test_starred_elements_keep_what_they_hold():
    source = body("parts = (*torch.chunk(x, 2), x)\nfor p in (*parts,):\n    if p.sum() > 0:\n        pass")
    assert tensor_codes(source) == ["GS201"]
    source = body("parts = (*x.shape,)\nfor p in (*parts,):\n    if p > 0:\n        pass")
    assert tensor_codes(source) == []


PARAM_USE = "import torch\n\n\ndef step(labels, scores):  # graphsafe: region\n"


def with_params(code: str) -> str:
    return PARAM_USE + "".join("    " + line + "\n" for line in code.strip("\n").splitlines())


@pytest.mark.parametrize(("code", "expected"), [
    # `labels.bool()` (a method only tensors have) makes `labels` a tensor in all of the
    # function, also above that call: the branch and the conversion read it on the host
    ("if labels.sum() == 0:\n    pass\nrate = float(labels.mean())\nreturn scores[labels.bool()]",
     ["GS201", "GS105", "GS108"]),
    ("keep = scores.detach()\nif scores.max() > 1:\n    keep = keep * 0.5\nreturn keep", ["GS201"]),
])
def test_a_parameter_the_function_uses_as_a_tensor_is_one(code, expected):
    assert codes(with_params(code)) == expected


@pytest.mark.parametrize("code", [
    # methods numpy arrays (or modules) have too say nothing about the parameter
    "if labels.any():\n    pass\nreturn labels.argmax()",
    "if labels:\n    pass\nreturn labels.half()",
    # the tensor-only call is on a name a nested function binds
    "if labels.sum() == 0:\n    pass\n\ndef inner(labels):\n    return labels.detach()\nreturn inner",
])
def test_a_parameter_used_only_in_shared_ways_stays_unknown(code):
    assert codes(with_params(code)) == []


@pytest.mark.parametrize("code", [
    # a parameter the function tests with isinstance takes other types too
    "if isinstance(labels, torch.Tensor):\n    return labels.detach()\nif labels:\n    pass",
    "if isinstance(scores, float):\n    msg = f'{scores}'\nelse:\n    keep = scores.detach()",
])
def test_a_parameter_tested_with_isinstance_is_not_taken_for_a_tensor(code):
    assert codes(with_params(code)) == []


@pytest.mark.parametrize("code", [
    "if scores.detach().sparse_dim() > 1:\n    pass",
    "if not scores.detach().is_inference():\n    pass",
])
def test_tensor_methods_that_give_python_values(code):
    assert codes(with_params(code)) == []


def test_a_parameter_passed_first_to_a_tensor_only_torch_function_is_a_tensor():
    from tests.helpers import codes

    assert codes("""
        import torch
        def step(dt, y):  # graphsafe: region
            ok = torch.isfinite(dt)
            if dt > 0:
                y = y * 2
            return y, ok
    """) == ["GS201"]
    # `torch.cat(parts)`: a sequence, not a tensor
    assert codes("""
        import torch
        def step(parts, y):  # graphsafe: region
            z = torch.cat(parts)
            if parts:
                y = y * 2
            return y, z
    """) == []


@pytest.mark.parametrize("code,expected", [
    ("v = torch.tensor([x.sum(), x.mean()])", True),
    ("v = torch.as_tensor(torch.split(x, 2))", True),
    ("v = torch.tensor([1.0, 2.0])", False),
    ("v = torch.tensor([x.shape[0], x.ndim])", False),
])
def test_torch_tensor_of_a_list_of_tensors_reads_each_on_the_host(code, expected):
    assert ("GS105" in codes(body(code))) is expected


def test_torch_tensor_of_a_name_narrowed_by_isinstance_is_not_a_list_of_tensors():
    # declared a tensor, but the branch has just found it to be a tuple of numbers
    source = ("import torch\n\n\ndef f(x: torch.Tensor, sigma: torch.Tensor):  # graphsafe: region\n"
              "    if isinstance(sigma, tuple):\n        s = torch.tensor([sigma])\n    return x\n")
    assert "GS105" not in codes(source)


def test_a_list_filled_only_with_tensors_is_a_list_of_tensors():
    filled = "kls = []\nfor i in range(3):\n    kls.append((x * i).mean())\nv = torch.tensor(kls)"
    mixed = "kls = []\nkls.append(x.mean())\nkls.append(1.0)\nv = torch.tensor(kls)"
    assert "GS105" in codes(body(filled))
    assert "GS105" not in codes(body(mixed))


SHAPED = """\
import torch
from torch import Tensor
from jaxtyping import Bool, Float
from torchtyping import TensorType


def step(x: {x}, t: {t}, keep: {keep}):  # graphsafe: region
    if t > 0:
        x = x * 2
    return x[keep]
"""


def test_shape_annotations_of_jaxtyping_and_torchtyping_declare_tensors_and_masks():
    source = SHAPED.format(x='Float[Tensor, "b n"]', t='TensorType["b"]', keep='Bool[Tensor, "b"]')
    assert codes(source) == ["GS201", "GS108"]
    source = SHAPED.format(x='Float[torch.Tensor, "b n"]', t='Float[Tensor, ""]', keep='TensorType["b", torch.bool]')
    assert codes(source) == ["GS201", "GS108"]


def test_a_shape_annotation_of_another_array_library_or_integers_is_no_mask():
    source = SHAPED.format(x='Float[Tensor, "b n"]', t='Float[np.ndarray, ""]', keep='TensorType["b", torch.long]')
    assert codes(source) == []


@pytest.mark.parametrize(("annotation", "classes"), [
    ("Union[Offload, contextlib.nullcontext]", ("Offload",)),  # a class outside the project calls nothing
    ("Union[Offload, Cache, None]", ("Offload", "Cache")),
    ("Union[Offload, float]", None),  # may be a number: says nothing
    ("Union[Offload, torch.Tensor]", None),
    ("Union[Offload, nullcontext]", None),  # an unresolved bare name may be anything
])
def test_a_union_of_classes_is_an_object_of_one_of_them(annotation, classes):
    import libcst as cst

    from graphsafe.analyzer import tensorness

    expr = cst.parse_expression(annotation)
    kind = tensorness.annotation_kind(expr, lambda e: tensorness_dotted(e))
    assert (kind.refs if kind.tag == "object" else None) == classes


def tensorness_dotted(expr) -> str | None:
    """A resolver as the walker's: a dotted name as written (`Union` from typing)."""
    import libcst as cst

    if isinstance(expr, cst.Name):
        return "typing.Union" if expr.value == "Union" else expr.value
    if isinstance(expr, cst.Attribute):
        head = tensorness_dotted(expr.value)
        return f"{head}.{expr.attr.value}" if head else None
    return None


def test_a_quoted_annotation_is_read_as_the_annotation_it_holds():
    import libcst as cst

    from graphsafe.analyzer import tensorness

    def kind(text):
        return tensorness.annotation_kind(cst.parse_expression(text), tensorness_dotted)

    assert kind('"Template"').refs == ("Template",)  # a forward reference to a class
    assert kind('"pl.Trainer"').refs == ("pl.Trainer",)
    assert kind('"Optional[Tensor]"') == tensorness.TENSOR
    assert kind('"not an expression ("') == tensorness.UNKNOWN
