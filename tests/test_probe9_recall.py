"""Shapes a fresh labeller writes from docs/rules.md that the analyzer missed (probe round 9),
each beside a look-alike that must stay silent:

- a model built by a factory, `self.model = build_model()` with `model = Net(); return model`
  (the call graph follows the returned instance, also for a local `model = build(); model(x)`);
- reading a `@property` runs its body: `self.norm` / `self.stats.mean` reach the property's
  hazards, and `if self.has_nan:` branches on the tensor it returns;
- `any(...)`/`all(...)` of tensors in an `if`/`assert` test (GS201);
- `t.data_ptr()` kept in a local before it is used as a key (GS506);
- `x.new_tensor([...])` copies host data (GS402).
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import lines_of, project_diagnostics


found = lines_of  # the lines where a code is reported


def project(tmp_path: Path, files: dict[str, str]) -> set[tuple[str, int, str]]:
    return {(Path(d.path).name, d.start.line, d.code) for d in project_diagnostics(tmp_path, files)}


MODELS = """\
import torch
import torch.nn as nn


class Syncing(nn.Module):
    def forward(self, x):
        return x.sum().item()


class Quiet(nn.Module):
    def forward(self, x):
        return x * 2


def build_syncing():
    model = Syncing()
    model = model.to("cuda")
    return model


def build_quiet():
    model = Quiet()
    return model
"""


def test_factory_built_model_is_followed_across_files(tmp_path):
    train = """\
    import torch
    from models import build_quiet, build_syncing


    class Trainer:
        def __init__(self):
            self.model = build_syncing()
            self.other = build_quiet()

        def step(self, x):  # graphsafe: region
            return self.model(x) + self.other(x)
    """
    assert project(tmp_path, {"models.py": MODELS, "train.py": train}) == {("models.py", 7, "GS101")}


def test_factory_built_model_in_a_local_is_followed(tmp_path):
    run = """\
    from models import build_syncing, build_quiet


    def step(x):  # graphsafe: region
        model = build_syncing()
        return model(x)


    def quiet_step(x):  # graphsafe: region
        model = build_quiet()
        return model(x)
    """
    assert project(tmp_path, {"models.py": MODELS, "run.py": run}) == {("models.py", 7, "GS101")}


def test_unreached_factory_model_stays_silent(tmp_path):
    train = """\
    from models import build_syncing


    class Trainer:
        def __init__(self):
            self.model = build_syncing()

        def step(self, x):  # graphsafe: region
            return x * 2
    """
    assert project(tmp_path, {"models.py": MODELS, "train.py": train}) == set()


PROPERTIES = """
import torch
import torch.nn as nn


class Stats:
    def __init__(self):
        self.total = torch.zeros(())

    @property
    def mean(self):
        return self.total.item()

    @property
    def big(self):
        return self.total > 10

    @property
    def quiet_mean(self):
        return self.total / 2


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.zeros(4))

    @property
    def has_nan(self):
        return torch.isnan(self.buf).any()

    @property
    def n_layers(self):
        return 4


class Net(Base):
    def __init__(self):
        super().__init__()
        self.stats = Stats()

    @property
    def norm(self):
        return self.buf.norm().item()

    def forward(self, x):  # graphsafe: region
        n = self.norm
        m = self.stats.mean
        q = self.stats.quiet_mean
        if self.has_nan:
            x = x * 0
        if self.n_layers > 2:
            x = x + 1
        if self.stats.big:
            x = x - 1
        return x
"""


def test_property_reads_run_the_property():
    assert found(PROPERTIES, "GS101") == [12, 44]


def test_branch_on_a_tensor_property():
    assert found(PROPERTIES, "GS201") == [50, 54]


def test_property_not_read_in_a_region_is_silent():
    source = PROPERTIES.replace("        n = self.norm\n        m = self.stats.mean\n", "")
    assert found(source, "GS101") == []


ANY_ALL = """
import torch


def step(x: torch.Tensor, grads: list[torch.Tensor], params, sizes: list[int]):  # graphsafe: region
    if any(torch.isnan(p.grad).any() for p in params):
        pass
    if not all(torch.isfinite(g).all() for g in grads):
        pass
    assert all(torch.isfinite(x))
    if any(p.grad is None for p in params):
        pass
    if any(s > 2 for s in sizes):
        pass
    if all(d > 1 for d in x.shape):
        pass
    flags = [torch.isnan(g).any() for g in grads]
    return x
"""


def test_any_all_of_tensors_in_a_test():
    assert found(ANY_ALL, "GS201") == [6, 8, 10]


def test_any_shadowed_by_a_local_function_is_not_the_builtin():
    source = ANY_ALL.replace("import torch\n", "import torch\n\n\ndef any(xs):\n    return False\n", 1)
    assert found(source, "GS201") == [12, 14]  # `all` still counts; the module's own `any` does not


DATA_PTR = """
import torch


class Cache:
    def __init__(self):
        self.cache = {}
        self.seen = set()

    def lookup(self, x: torch.Tensor):  # graphsafe: region
        key = (x.data_ptr(), x.shape)
        hit = self.cache.get(key)
        ptr = x.data_ptr()
        if ptr in self.seen:
            pass
        aligned = ptr % 16 == 0
        shape_key = (x.shape[0], x.dtype)
        other = self.cache.get(shape_key)
        return hit
"""


def test_data_ptr_kept_in_a_local_then_used_as_a_key():
    assert found(DATA_PTR, "GS506") == [12, 14]


def test_new_tensor_copies_host_data():
    source = """
    import torch


    def step(x: torch.Tensor):  # graphsafe: region
        w = x.new_tensor([0.5, 2.0])
        v = x.new_tensor(x)
        z = x.new_zeros(2)
        return w + v + z
    """
    assert found(source, "GS402") == [6]


def test_tuple_returned_by_a_factory_keeps_each_element_class(tmp_path):
    models = MODELS + '''

def build_pair():
    model = Syncing()
    return model, Quiet()
'''
    train = """\
    import torch
    from models import build_pair


    class Trainer:
        def __init__(self):
            self.model, self.other = build_pair()

        def step(self, x):  # graphsafe: region
            return self.model(x)


    def script(x):
        quiet, loud = build_pair()[::-1]
        model, other = build_pair()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = other(x)
        return out
    """
    # the Trainer's `self.model` is element 0 (Syncing); the script captures element 1 (Quiet)
    assert project(tmp_path, {"models.py": models, "train.py": train}) == {("models.py", 7, "GS101")}


def test_with_block_runs_enter_and_exit_of_a_project_class(tmp_path):
    util = """\
    import time


    class Timer:
        def __enter__(self):
            self.start = time.perf_counter()
            return self

        def __exit__(self, *exc):
            return False


    class Quiet:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def report(self):
            return time.time()
    """
    step = """\
    from util import Quiet, Timer


    def step(x):  # graphsafe: region
        with Timer():
            y = x * 2
        with Quiet() as q:
            y = y + 1
        return y
    """
    assert project(tmp_path, {"util.py": util, "step.py": step}) == {("util.py", 6, "GS502")}


def test_module_list_element_called_by_index():
    source = """
    import torch
    import torch.nn as nn


    class Block(nn.Module):
        def forward(self, x):
            return x.sum().item()


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Block() for _ in range(2)])
            self.spare = nn.ModuleList([Block()])

        def forward(self, x):  # graphsafe: region
            for i in range(len(self.layers)):
                x = self.layers[i](x)
            return x
    """
    assert found(source, "GS101") == [8]
    assert found(source.replace("x = self.layers[i](x)", "x = x + i"), "GS101") == []


def test_super_forward_of_a_torch_module_is_a_tensor():
    source = """
    import torch.nn as nn


    class Layer(nn.Linear):
        def forward(self, x):  # graphsafe: region
            y = super().forward(x)
            if y.sum() > 0:
                y = -y
            return y


    class Plain(nn.Module):
        def forward(self, x):  # graphsafe: region
            y = super().forward(x)
            if y:
                pass
            return y
    """
    assert found(source, "GS201") == [8]


def test_module_level_logger_named_LOG():
    source = """
    from mylib.logs import _LOG, _LOGGING_LEVELS


    def step(x):  # graphsafe: region
        _LOG.info("step")
        _LOGGING_LEVELS.get("info")
        return x
    """
    assert found(source, "GS501") == [6]


FUNCTION_ALIASES = """
import functools
import torch
import torch.nn as nn


def log_value(t):
    return t.item()


def quiet(t):
    return t * 2


reduce_fn = functools.partial(log_value)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.reduce = functools.partial(log_value)
        self.post = quiet

    def forward(self, x):  # graphsafe: region
        y = self.fc(x)
        a = self.reduce(y)
        b = self.post(y)
        return y
"""


def test_partial_held_by_an_attribute_runs_the_function():
    assert found(FUNCTION_ALIASES, "GS101") == [8]


def test_partial_held_by_a_module_name_runs_the_function():
    source = FUNCTION_ALIASES.replace("a = self.reduce(y)", "a = reduce_fn(y)")
    assert found(source, "GS101") == [8]


def test_alias_to_a_quiet_function_stays_silent():
    source = FUNCTION_ALIASES.replace("a = self.reduce(y)", "a = self.post(y)")
    assert found(source, "GS101") == []


def test_mask_parameter_of_a_helper_gets_what_callers_pass():
    source = """
    import torch


    def masked_mean(x, mask):
        return x[mask].mean()


    def step(x: torch.Tensor, keep: torch.Tensor):  # graphsafe: region
        return masked_mean(x * 2, keep > 0)
    """
    assert found(source, "GS108") == [6]
    assert found(source.replace("keep > 0", "keep.long()"), "GS108") == []


def test_any_over_a_loop_variable_takes_the_element_kind():
    source = """
    import torch


    def step(grads: list[torch.Tensor], sizes: list[int]):  # graphsafe: region
        if any((g != g).any() for g in grads):
            pass
        if any((s != 0) for s in sizes):
            pass
        return grads
    """
    assert found(source, "GS201") == [6]


def test_property_of_a_base_class_in_another_file(tmp_path):
    base = """\
    import torch
    import torch.nn as nn


    class Base(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("buf", torch.zeros(4))
            self.head = nn.Linear(4, 4)

        @property
        def norm(self):
            return self.buf.norm().item()

        def helper(self):
            return self.buf.sum().item()
    """
    model = """\
    from base import Base


    class Model(Base):
        def forward(self, x):  # graphsafe: region
            n = self.norm
            h = self.head
            f = self.helper
            return x
    """
    # `self.helper` is read, not called: only the property runs
    assert project(tmp_path, {"base.py": base, "model.py": model}) == {("base.py", 13, "GS101")}
