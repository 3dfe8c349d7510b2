"""GPU-only rules (GS5xx): host work inside a captured region runs once, at capture, never on replay.

A CUDA graph records kernels, not Python. Logging, file I/O, host random numbers, clocks,
progress bars and changes to Python containers happen while the graph is captured and are
skipped by every `graph.replay()`; whatever they computed stays frozen in the graph.

Some checks need to know what a name was bound to elsewhere in the file (`pbar = tqdm(...)`,
`self.rng = np.random.default_rng()`, `self.cache = {}`): those rules are `BindingRule`s,
which note candidates during the walk and decide them at the end of the file. The RNG rules
(rules/rng.py) use the same machinery.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from graphsafe.analyzer.host_draws import HOST_RNG_FACTORIES, is_host_draw
from graphsafe.analyzer.loop_counters import progress_bar

from graphsafe.analyzer import host_effect_helpers, step_state
from graphsafe.analyzer import tensorness as T
from graphsafe.analyzer.names import dotted
from graphsafe.analyzer.nodes import children
from graphsafe.model import Consequence, Example, Principle
from graphsafe.rules.base import Callees, Rule, last_parts
from graphsafe.rules.syntax import keyword

# ------------------------------------------------------------------ shared helpers


def imported_name(expr: cst.BaseExpression, ctx) -> str | None:
    """The dotted name `expr` resolves to, only when its head is an import (not a local).
    Several rules ask this about the same callee in a row: the last answer is kept."""
    memo = file_bindings(ctx)
    if memo.named is not expr:
        memo.named, memo.name = expr, _imported_name(expr, ctx)
    return memo.name


def _imported_name(expr: cst.BaseExpression, ctx) -> str | None:
    name = dotted(expr)
    if name is None:
        return None
    head = name.partition(".")[0]
    if not ctx.scope_imports_has(head) or ctx.local_kind(head) is not None:
        return None
    return ctx.resolve(expr)


def is_builtin(func: cst.BaseExpression, name: str, ctx) -> bool:
    """`func` is the builtin `name`: not imported, not rebound locally or at module level."""
    return (
        type(func) is cst.Name  # `type is`, not isinstance: libcst classes check through ABCMeta (slow)
        and func.value == name
        and not ctx.scope_imports_has(name)
        and ctx.local_kind(name) is None
        and name not in ctx.globals
    )


def binding_key(expr: cst.BaseExpression) -> str | None:
    """How a receiver is matched against bindings elsewhere in the file: `pbar` for a name,
    `.pbar` for any attribute `<obj>.pbar` (`self.pbar` in `__init__`, `model.pbar` outside)."""
    tp = type(expr)
    if tp is cst.Name:
        return expr.value
    if tp is cst.Attribute:
        return "." + expr.attr.value
    return None


def last_name(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


def method_call(node: cst.Call) -> tuple[cst.BaseExpression, str] | None:
    func = node.func
    if type(func) is cst.Attribute:
        return func.value, func.attr.value
    return None


CONTAINER_FACTORIES = frozenset(
    """list dict set collections.deque collections.defaultdict collections.OrderedDict
    collections.Counter deque defaultdict OrderedDict Counter""".split()
)
CONTAINER_ANNOTATIONS = frozenset(
    """list dict set List Dict Set Deque DefaultDict OrderedDict Counter MutableMapping
    MutableSequence MutableSet deque defaultdict""".split()
)
PROGRESS_FACTORIES = frozenset({"rich.progress.Progress", "rich.progress.track"})


def _is_tqdm(name: str | None) -> bool:
    return bool(name) and name.partition(".")[0] == "tqdm" and progress_bar(name) is not None


_CONTAINER_NODES = frozenset({cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp})


def _is_container_value(value: cst.BaseExpression, resolve) -> bool:
    tp = type(value)
    if tp in _CONTAINER_NODES:
        return True
    if tp is cst.BinaryOperation and type(value.operator) in (cst.Multiply, cst.Add):
        # `[0.0] * (2 * n)`, `[None] * n + [x]`: a list built by repetition or concatenation
        return type(value.left) in (cst.List, cst.ListComp) or type(value.right) in (cst.List, cst.ListComp)
    if tp is cst.Call:
        if type(value.func) is cst.Name and value.func.value in ("list", "dict", "set"):
            return True
        return resolve(value.func) in CONTAINER_FACTORIES
    return False


def _is_container_annotation(annotation: cst.BaseExpression) -> bool:
    if isinstance(annotation, cst.Subscript):
        annotation = annotation.value
    name = dotted(annotation)
    return name is not None and name.rpartition(".")[2] in CONTAINER_ANNOTATIONS


def _device_text(call: cst.Call, ctx) -> str:
    """The source text of a `torch.Generator(...)` call's device argument ("" for none)."""
    arg = keyword(call, "device")
    if arg is None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        arg = positional[0] if positional else None
    return ctx.code_for(arg.value) if arg is not None else ""


# generator methods that return the generator itself
_RETURNS_ITS_GENERATOR = frozenset(("manual_seed", "set_state"))


class FileBindings:
    """Names (`x`) and attributes (`.x`) bound anywhere in one file to values some rule cares
    about, collected during the walk (`BindingRule`)."""

    def __init__(self) -> None:
        self.host_rngs: set[str] = set()  # random.Random(), np.random.default_rng()
        self.progress: set[str] = set()  # tqdm(...), trange(...), rich Progress()
        self.wandb_runs: set[str] = set()  # wandb.init()
        self.containers: set[str] = set()  # [], {}, set(), deque(), `x: dict`
        self.generators: dict[str, str] = {}  # torch.Generator(...) → its device argument's text
        self.defines_log_method = False  # a function named `log`/`log_dict` (a class's own `self.log`)
        self.last: cst.CSTNode | None = None  # the node recorded last (see BindingRule._first)
        self.named: cst.CSTNode | None = None  # the expression `imported_name` answered last
        self.name: str | None = None

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None, ctx) -> None:
        key = binding_key(target)
        if key is None or value is None:
            return
        if _is_container_value(value, ctx.resolve):
            self.containers.add(key)
            return
        if not isinstance(value, cst.Call):
            return
        while (type(value.func) is cst.Attribute and value.func.attr.value in _RETURNS_ITS_GENERATOR
               and type(value.func.value) is cst.Call):
            value = value.func.value  # `torch.Generator(device=d).manual_seed(0)` is that generator
        name = ctx.resolve(value.func)
        if name in HOST_RNG_FACTORIES:
            self.host_rngs.add(key)
        elif _is_tqdm(name) or name in PROGRESS_FACTORIES:
            self.progress.add(key)
        elif name == "wandb.init":
            self.wandb_runs.add(key)
        elif name in ("torch.Generator", "torch._C.Generator"):
            self.generators[key] = _device_text(value, ctx)

    def annotate(self, target: cst.BaseExpression, annotation: cst.BaseExpression) -> None:
        key = binding_key(target)
        if key is not None and _is_container_annotation(annotation):
            self.containers.add(key)


def file_bindings(ctx) -> FileBindings:
    """One FileBindings per file, shared by every BindingRule: the walker hands a node to each
    rule in turn, so only the first one to see it records it."""
    return ctx.file_state(FileBindings)


class BindingRule(Rule):
    """A rule whose verdict depends on what a name is bound to somewhere in the file, possibly
    after the use (`self.pbar = tqdm(...)` in `__init__` below `forward`, a module-level
    generator under the function that uses it). Candidates are noted with `later` during the
    walk and decided in `end_module`, once every binding has been seen."""

    def __init__(self) -> None:
        self.pending: list[tuple[Callable[[FileBindings], bool], cst.CSTNode, object, dict[str, str]]] = []

    def later(self, test: Callable[[FileBindings], bool], node: cst.CSTNode, ctx, **fields: str) -> None:
        self.pending.append((test, node, ctx.here(), fields))

    def end_module(self, ctx) -> None:
        bindings = file_bindings(ctx)
        for test, node, place, fields in self.pending:
            if test(bindings):
                ctx.report(self, node, at=place, **fields)

    @staticmethod
    def _first(node: cst.CSTNode, ctx) -> FileBindings | None:
        """The file's bindings if no other rule has recorded `node` yet, else None."""
        bindings = file_bindings(ctx)
        if bindings.last is node:
            return None
        bindings.last = node
        return bindings

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        if bindings := self._first(node, ctx):
            for target in node.targets:
                bindings.bind(target.target, node.value, ctx)

    def visit_AnnAssign(self, node: cst.AnnAssign, ctx) -> None:
        if bindings := self._first(node, ctx):
            bindings.annotate(node.target, node.annotation.annotation)
            bindings.bind(node.target, node.value, ctx)

    def visit_NamedExpr(self, node: cst.NamedExpr, ctx) -> None:
        if bindings := self._first(node, ctx):
            bindings.bind(node.target, node.value, ctx)

    def visit_With(self, node: cst.With, ctx) -> None:
        if bindings := self._first(node, ctx):
            for item in node.items:
                if item.asname is not None:
                    bindings.bind(item.asname.name, item.item, ctx)

    def visit_FunctionDef(self, node: cst.FunctionDef, ctx) -> None:
        if bindings := self._first(node, ctx):
            if node.name.value in ("log", "log_dict"):
                bindings.defines_log_method = True
            params = node.params
            for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
                if param.annotation is not None:
                    bindings.annotate(param.name, param.annotation.annotation)


def persistent_root(receiver: cst.BaseExpression, ctx) -> str | None:
    """Why `receiver` outlives one call: it hangs off `self`, a parameter, or a module global.
    None for locals (a list built in the same function) and anything not rooted in a name."""
    root = receiver
    while isinstance(root, (cst.Attribute, cst.Subscript)):
        root = root.value
    if not isinstance(root, cst.Name):
        return None
    name = root.value
    if ctx.is_self(root):
        return "an attribute of self" if _through_attribute(receiver) else "state of self"
    if name in ctx.params:
        return "a parameter" if root is receiver else "state reached from a parameter"
    if ctx.local_kind(name) is None and name in ctx.globals:
        return "a module-level global"
    return None


CONTAINER_BASES = frozenset(
    "list dict set collections.OrderedDict collections.defaultdict collections.UserDict collections.UserList".split())


def _item_of_container_self(receiver: cst.BaseExpression, ctx) -> bool:
    """`self[-1]["batches"]` (or `self` itself) in a method of a class deriving from a Python
    container (`class History(list)`): the object is the container, and it outlives the call."""
    root = receiver
    while type(root) in (cst.Attribute, cst.Subscript):
        if type(root) is cst.Attribute:
            return False  # `self.x[...]`: an attribute, decided by how the file binds it
        root = root.value
    if not (type(root) is cst.Name and ctx.is_self(root) and ctx.class_key):
        return False
    info = ctx.classes.get(ctx.class_key)
    return info is not None and any(base in CONTAINER_BASES for base in info.bases)


def _through_attribute(expr: cst.BaseExpression) -> bool:
    while type(expr) is cst.Subscript:
        expr = expr.value
    return type(expr) is cst.Attribute


def _loop_shared(receiver: cst.BaseExpression, ctx):
    """The open loop region all of whose passes share the local `receiver` is rooted in."""
    root = receiver
    while isinstance(root, (cst.Attribute, cst.Subscript)):
        root = root.value
    return ctx.step_loop_sharing(root.value) if isinstance(root, cst.Name) else None


class _GpuOnlyRule(Rule):
    principle = Principle.GPU_ONLY
    consequence = Consequence.SILENTLY_WRONG


class _GpuOnlyBindingRule(BindingRule, _GpuOnlyRule):
    pass


# ------------------------------------------------------------------ GS501

LOG_METHODS = frozenset("debug info warning warn error exception critical fatal log log_dict log_metrics".split())
# What a metrics logger object records with (stable-baselines3's `logger.record`, `record_mean`,
# `dump`; `log_metrics`-style trackers): logging only on a receiver that looks like a logger.
LOGGER_RECORD_METHODS = frozenset(
    "record record_mean record_dict dump log_scalar log_scalars log_metric log_value log_image log_text".split()
)
LOGGER_NAMES = frozenset("logger log LOGGER LOG _logger _log _LOGGER _LOG logging_logger console".split())
TRACKER_RECEIVERS = frozenset("fabric accelerator".split())  # Lightning Fabric, HF Accelerate
SUMMARY_WRITER_METHODS = frozenset(
    """add_scalar add_scalars add_histogram add_image add_images add_figure add_text add_audio
    add_video add_embedding add_pr_curve add_hparams add_mesh flush""".split()
)


def _looks_like_writer(receiver: cst.BaseExpression, ctx) -> bool:
    """`writer.add_scalar`, `self.tb.flush()`, `self.logger.experiment.add_image`: not a module's
    own attribute `self.add_embedding(x)` (diffusers' class embedding), nor a method of an object
    of a class that is no writer or logger."""
    if isinstance(receiver, cst.Name) and ctx.is_self(receiver):
        return False
    kind = ctx.kind(receiver)
    if kind.tag in ("object", "modules") and kind.refs:
        return any(ref.rpartition(".")[2].endswith(_WRITER_CLASSES) or ref.startswith(_WRITER_MODULES)
                   for ref in kind.refs)
    return True


_WRITER_CLASSES = ("Writer", "Logger", "Experiment", "Run")
_WRITER_MODULES = ("torch.utils.tensorboard", "tensorboardX", "wandb", "mlflow")


def _looks_like_logger(receiver: cst.BaseExpression, ctx) -> bool:
    """`logger`, `self._log`, `logging.getLogger(...)`, or an instance of a `...Logger` class."""
    if isinstance(receiver, cst.Call):
        return ctx.resolve(receiver.func) in ("logging.getLogger", "structlog.get_logger")
    name = last_name(receiver)
    if name is not None and (name in LOGGER_NAMES or name.lower().endswith("logger")):
        return True
    kind = ctx.kind(receiver)
    return kind.tag == "object" and any(ref.rpartition(".")[2].lower().endswith("logger") for ref in kind.refs)


def _logging_name(statement: cst.Expr) -> bool:
    """A bare call by a name GS501 judges at the call (`log`, `info`, `add_scalar`, `print`)."""
    func = statement.value.func if type(statement.value) is cst.Call else None
    name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
    return name is not None and name in HostLogging.calls.names


class HostLogging(_GpuOnlyBindingRule):
    """## What it does
    Flags logging from inside a captured region: `logging` and logger calls, `print` of
    non-tensor values, and experiment trackers (wandb, TensorBoard, MLflow, Lightning's
    `self.log`).

    ## Why is this bad?
    A CUDA graph records GPU kernels only. The log call runs once, while the graph is captured,
    and never again: every `graph.replay()` runs silently, so the log shows one line for
    thousands of steps, and the value it shows is the one seen at capture. Logging a tensor's
    value additionally needs it on the host, which makes capture fail: the sync rules report
    that too (`f"{loss:.3f}"` is GS104, `loss.item()` GS101). A bare `print(t)` of a tensor
    is left to GS104 alone.

    ## Example
    ```python
    def train_step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        logger.info("step done")
        writer.add_scalar("loss", loss, step)
    ```

    ## Use instead
    Keep logging outside the region, after `graph.replay()`, reading the graph's static output:
    ```python
    graph.replay()
    writer.add_scalar("loss", static_loss.item(), step)
    ```

    ## Fix safety
    No automatic fix: moving a log call out of the function changes what callers outside the
    region see.

    ## Precise semantics
    Flagged: `logging.*` and logger calls (`logger.info(...)`, `self.logger.warning(...)`,
    `log.debug(...)`), `print(...)` of non-tensor values, `wandb.log`, Lightning's
    `self.log`/`self.log_dict`/`fabric.log`, a logger's record methods (`self.logger.record(k,
    v)`, `record_mean`, `dump`, `log_metric`, ...), TensorBoard `SummaryWriter` calls
    (`writer.add_scalar`, `add_histogram`, `flush`, ...) and `mlflow.log_*`, and `.log(...)` on
    an instance of a class named `...Logger`.
    Also flagged: a call made for its effect (a bare call statement) of a project function
    whose first report in its own body is this rule's and whose other unconditional reports are
    host effects only (GS501/GS503/GS504/GS505; analyzer/host_effect_helpers.py, one call deep):
    `self.say("done")` with `def say(self, text): log.info(text)`. Each such call logs once, at
    capture, and the call is what the region's author moves out of the step.
    Not flagged: `.log()` without arguments (`x.log()`, `probs.clamp(min=eps).log()`: torch
    math, whatever the receiver; a logger's `log` takes a message), and writer method names
    (`add_embedding`, `flush`, ...) called on `self` (a module attribute: diffusers'
    `self.add_embedding(emb)`) or on an object of a project class that is no writer or logger.
    """

    code = "GS501"
    name = "host-logging"
    summary = "logging, `print`, wandb/TensorBoard/Lightning/mlflow logging inside a region"
    message = "`{what}` runs on the host once, while the graph is captured, and never on replay: {consequence}"
    valid = (
        Example("import logging\nlog = logging.getLogger(__name__)"),
        Example('print("step")', region=False),
        Example("logger.info('step')", region=False),
        "print(x)",  # GS104 alone reports it
        "z = torch.log(x)\nw = x.log()\nv = F.log_softmax(x, -1)",
        # receivers of unknown kind: a no-argument `.log()` is torch math, whatever the name
        "def f(log, probs):\n    return log.log() + probs.clamp(min=1e-6).log()",
        Example("class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                "        self.add_embedding = torch.nn.Linear(4, 4)\n"
                "    def forward(self, x):  # graphsafe: region\n        return self.add_embedding(x)", module=True),
        Example("class Embedder(torch.nn.Module):\n    def add_embedding(self, x):\n        return x\n"
                "class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                "        self.emb = Embedder()\n"
                "    def forward(self, x):  # graphsafe: region\n        return self.emb.add_embedding(x)", module=True),
    )
    invalid = (
        "self.logger.record('train/loss', 1.0)",
        'print("step")',
        'print(f"shape {x.shape}")',
        'print(f"loss {x:.3f}")',  # GS104 reports the f-string, this rule the print
        "import logging\nlogging.info('capturing')",
        "logger.info('loss %s', n)",
        "self.logger.warning('slow step')",
        "import wandb\nwandb.log({'n': n})",
        "self.log('train/loss', x)",
        "writer.add_scalar('loss', x, n)",
        "import mlflow\nmlflow.log_metric('n', n)",
        "import warnings\nwarnings.warn('nan values')",
        Example("log.debug('a')\nfabric.log_dict({'n': n})", expect=2),
        "import logging\nlogger.log(logging.INFO, 'step')",
        "self.writer.add_embedding(x)",
        Example("from torch.utils.tensorboard import SummaryWriter\nclass C(torch.nn.Module):\n"
                "    def __init__(self):\n        super().__init__()\n        self.tb = SummaryWriter()\n"
                "    def forward(self, x):  # graphsafe: region\n        self.tb.add_scalar('x', 1.0)\n        return x",
                module=True),
    )

    # Any other method call only has its receiver's kind asked (a tensor's is never logged): the
    # walker asks the same right after the rules (the call's targets; `self.m()` / `super().m()`
    # aside, whose receiver's kind nothing can change), so skipping the question is invisible.
    calls = Callees({"print", "log", "log_dict", "log_artifact", "alert", "warn", "warn_explicit",
                     *LOG_METHODS, *LOGGER_RECORD_METHODS, *SUMMARY_WRITER_METHODS}, prefixes=("mlflow.",))

    def visit_Expr(self, node: cst.Expr, ctx) -> None:
        if _logging_name(node):
            return  # `self.logger.info(...)`: decided at the call (visit_Call)
        helper = host_effect_helpers.condition(node, self.code, ctx)
        if helper is not None:  # `self.log_metrics(m)` of a project helper that logs: decided by the project
            ctx.report(self, node, condition=helper, what=f"{ctx.code_for(node.value.func)}(...)")

    def visit_Call(self, node: cst.Call, ctx) -> None:
        found = self._what(node, ctx)
        if found is None:
            return
        what, test = found if isinstance(found, tuple) else (found, None)
        if test is None:
            ctx.report(self, node, what=what)
        else:
            self.later(test, node, ctx, what=what)

    def _what(self, node: cst.Call, ctx):
        """What the call logs, or (what, test on the file's bindings) when that decides it."""
        func = node.func
        if is_builtin(func, "print", ctx) or ctx.resolve(func) == "rich.print":
            if any(a.keyword is None and ctx.kind(a.value).is_tensor for a in node.args):
                return None  # print(t): GS104 says it already
            return "print()"
        name = imported_name(func, ctx)
        if name is not None:
            head, _, tail = name.rpartition(".")
            if head == "logging" and tail in LOG_METHODS:
                return f"{name}()"
            if name in ("wandb.log", "wandb.run.log", "wandb.log_artifact", "wandb.alert"):
                return f"{name}()"
            if name in ("warnings.warn", "warnings.warn_explicit"):  # the warnings module logs too
                return f"{name}()"
            if name.startswith("mlflow.") and tail.startswith("log_"):
                return f"{name}()"
        call = method_call(node)
        if call is None:
            return None
        receiver, method = call
        if ctx.kind(receiver).is_tensor:
            return None
        if method == "log" and not node.args:
            return None  # `x.log()`, `probs.clamp(min=eps).log()`: torch math; every logger's log takes a message
        shown = dotted(func) or f".{method}"
        if (method in LOG_METHODS or method in LOGGER_RECORD_METHODS) and _looks_like_logger(receiver, ctx):
            return f"{shown}()"
        if method in ("log", "log_dict"):
            if isinstance(receiver, cst.Name) and (ctx.is_self(receiver) or receiver.value == "self"):
                return f"{shown}()", lambda b: not b.defines_log_method
            if last_name(receiver) in TRACKER_RECEIVERS:
                return f"{shown}()"
            key = binding_key(receiver)
            if method == "log" and key is not None:
                return f"{shown}()", lambda b: key in b.wandb_runs
        if method in SUMMARY_WRITER_METHODS and _looks_like_writer(receiver, ctx):
            return f"{shown}()"
        return None


# ------------------------------------------------------------------ GS502



class HostNondeterminism(_GpuOnlyBindingRule):
    """## What it does
    Flags host-side random numbers and clocks inside a captured region: `random`,
    `numpy.random`, torch's CPU random draws, `time.time()`, `datetime.now()`, `uuid.uuid4()`.

    ## Why is this bad?
    The value is computed on the host once, while the graph is captured. Whatever it feeds —
    a dropout probability, a random crop offset, a noise scale, a timestamp — is baked into the
    graph as a constant kernel argument, so every replay reuses the number drawn at capture.
    Nothing fails; the randomness (or the clock) simply stops changing.

    ## Example
    ```python
    def step(x):
        scale = random.uniform(0.8, 1.2)
        return model(x * scale)
    ```

    ## Use instead
    Draw on the device, so each replay draws again (the graph advances the CUDA generator's
    offset on every replay):
    ```python
    def step(x):
        scale = torch.empty((), device=x.device).uniform_(0.8, 1.2)
        return model(x * scale)
    ```
    For clocks, time `graph.replay()` from outside, with CUDA events.

    ## Fix safety
    No automatic fix: device random numbers come from a different stream of numbers.

    ## Precise semantics
    Flagged: the `random` module, `numpy.random` (functions and `default_rng()`/`RandomState()`
    objects), torch's `rand`/`randn`/`randint`/`randperm` without a `device=` (the CPU generator
    draws them; under `torch.set_default_device("cuda")` they would be device draws, which is
    fine), `time.time`, `time.perf_counter`, `time.monotonic`, `time.process_time` (and their
    `_ns` forms), `datetime.now()`/`utcnow()`/`today()`, `uuid.uuid4()` and `os.urandom()`.
    """

    code = "GS502"
    name = "host-nondeterminism"
    summary = "`random`, `numpy.random`, CPU `torch.rand*`, `time.time()`, `datetime.now()` inside a region"
    message = "`{what}` is evaluated on the host once, at capture; every replay reuses that value: {consequence}"
    valid = (
        "z = torch.rand_like(x)",
        "z = torch.randn(4, device=x.device)",
        "perm = torch.randperm(8, device=x.device)",
        Example("import random\np = random.random()", region=False),
        "import numpy as np\nrng = np.random.default_rng(0)",
        "import random\nrandom.seed(0)",  # GS602
        "import time\ntime.sleep(0)",
    )
    invalid = (
        "import random\np = random.random()",
        "from random import randint\nk = randint(0, 3)",
        "import numpy as np\nnoise = np.random.randn(4)",
        "import time\nt0 = time.perf_counter()",
        "from datetime import datetime\nstamp = datetime.now()",
        "import numpy as np\nrng = np.random.default_rng(0)\nk = rng.integers(0, 4)",
        Example("import numpy as np\nimport time\np = np.random.uniform()\nt = time.time()", expect=2),
        "keep = torch.randn(4, 8).topk(2).indices",
    )

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = imported_name(node.func, ctx)
        if is_host_draw(name):
            ctx.report(self, node, what=f"{name}()")
            return
        resolved = ctx.resolve(node.func)
        if resolved in CPU_DRAWS and not any(a.keyword and a.keyword.value in ("device", "generator") for a in node.args):
            # no device: the CPU generator draws, on the host, once (a `generator=` may be a CUDA one: GS601's)
            ctx.report(self, node, what=f"{resolved}()")
            return
        call = method_call(node)
        if call is None:
            return
        receiver, method = call
        if method in ("seed", "bit_generator", "spawn"):
            return
        if isinstance(receiver, cst.Call) and ctx.resolve(receiver.func) in HOST_RNG_FACTORIES:
            ctx.report(self, node, what=f"{ctx.resolve(receiver.func)}().{method}()")
        else:
            key = binding_key(receiver)
            if key is not None:
                self.later(lambda b: key in b.host_rngs, node, ctx, what=f"{dotted(node.func) or method}()")


# torch's random factories: without `device=` they draw with the CPU generator.
CPU_DRAWS = frozenset({"torch.rand", "torch.randn", "torch.randint", "torch.randperm"})


# ------------------------------------------------------------------ GS503

APPEND_METHODS = frozenset("append appendleft extend extendleft insert".split())
MAPPING_METHODS = frozenset("add update setdefault __setitem__".split())


class _GrownEntries(set):
    """ids of `obj[k]` targets rebound to a concatenation of themselves in this file."""


def _replaces_a_slot(target: cst.BaseExpression, value: cst.BaseExpression, ctx) -> bool:
    """`state[i * 3 + 1] = h` over the layers, `batch["img"] = batch["img"].float()` on the
    caller's dict: a device tensor put in a slot that is the same every step, in a container
    the caller passed or at a layer's index. A reader after the replay finds the graph's output
    buffer there, refreshed by the replay; no key is added or lost. Still reported: a key that
    changes per step (`self.by_step[n] = x`), a host value, and state computed from the slot's
    old value (`self.ema[k] = 0.9 * self.ema[k] + g`: the graph keeps reading the old tensor)."""
    if type(target) is not cst.Subscript or not ctx.kind(value).is_tensor:
        return False
    if T.is_host_copy(value, ctx.resolve) or _reads_slot(value, target, ctx):
        return False
    by_loop = False
    for element in target.slice:
        index = element.slice
        if not isinstance(index, cst.Index):
            return False
        key = index.value
        if type(key) in (cst.SimpleString, cst.Integer):
            continue
        if ctx.scalar_source(key) is not None or _mentions_tensor(key, ctx) or not _loop_or_literal_arithmetic(key, ctx):
            return False
        by_loop = True
    function = ctx.function_node
    passed = (type(target.value) is cst.Name and function is not None
              and any(p.name.value == target.value.value for p in function.params.params))
    return by_loop or passed


def _reads_slot(value: cst.BaseExpression, slot: cst.Subscript, ctx) -> bool:
    """Does `value` read the slot it is stored in (`self.ema[k] = 0.9 * self.ema[k] + g`)?"""
    code = ctx.code_for(slot)
    stack: list[cst.CSTNode] = [value]
    while stack:
        node = stack.pop()
        if type(node) is cst.Subscript and ctx.code_for(node) == code:
            return True
        stack.extend(children(node))
    return False


def _mentions_tensor(expr: cst.BaseExpression, ctx) -> bool:
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Name, cst.Attribute)) and ctx.kind(node).is_tensor:
            return True
        if type(node) is cst.Attribute and node.attr.value in ("shape", "device", "dtype"):
            return True  # `self.cache[t.shape]`: keyed by what a value is
        stack.extend(children(node))
    return False


def _loop_or_literal_arithmetic(expr: cst.BaseExpression, ctx) -> bool:
    """`i * 3 + 2`, `f"blocks.{i}"` over a `for i in range(...)` of the function: the same
    slots every step (a layer index), not keys that depend on the step."""
    tp = type(expr)
    if tp in (cst.Integer, cst.SimpleString):
        return True
    if tp is cst.Name:
        return ctx.is_loop_variable(expr.value)
    if tp is cst.BinaryOperation:
        return _loop_or_literal_arithmetic(expr.left, ctx) and _loop_or_literal_arithmetic(expr.right, ctx)
    return False


class PythonContainerAccumulate(_GpuOnlyBindingRule):
    """## What it does
    Flags changes, inside a captured region, to a Python list, dict or set that outlives the
    call (an attribute of `self`, a parameter, a global): `self.losses.append(x)`,
    `stats[k] = v`. Containers created in the same function are not reported.

    ## Why is this bad?
    The container is changed once, while the graph is captured. Replays never touch it: a
    history list keeps the single entry appended at capture (and that entry is the graph's
    output buffer, overwritten by each replay), a dict of per-step results keeps the capture
    step's key, a set of seen ids never grows. Code that reads the container later sees a
    frozen, wrong picture.

    ## Example
    ```python
    def forward(self, x):
        h = self.net(x)
        self.activations.append(h)
        return h
    ```

    ## Use instead
    Collect into a preallocated device buffer, indexed by a device-side step counter, or
    append the graph's outputs outside the region, after each replay:
    ```python
    graph.replay()
    history.append(static_out.clone())
    ```

    ## Fix safety
    No automatic fix: where the values should go depends on the program.

    ## Precise semantics
    Flagged: `.append`/`.extend`/`.insert` (and deque's `appendleft`/`extendleft`) on a list
    that is an attribute of `self`, a parameter, or a module-level global, and
    `.add`/`.update`/`.setdefault`, `obj[k] = v` and `obj[k] += v` on such a list, dict or set
    (a list built as `[0.0] * n` included). In a loop region (`for ...:  # graphsafe: region`),
    a local bound before the loop that the body never rebinds counts too: every pass shares it
    (`ds = []`, then `ds.append(d)` on each pass).

    Also flagged: a call made for its effect (a bare call statement) of a project function
    whose first report in its own body is this rule's and whose other unconditional reports are
    host effects only (logging, containers, files, progress bars; analyzer/host_effect_helpers.py,
    one call deep): `self.track_data("loss", v)` with `def track_data(self, tag, value):
    self.tracking_data[tag].append(value)`. The helper's own line is reported too; each call in
    the region is a change of its own, and the call is what the region's author moves out.
    A call by a logging name (`self.tracker.log(row)`) is left to GS501.

    Containers created in the same function are not reported, nor is a device tensor put in a
    slot that is the same every step: at a layer's index (`state[i * 3 + 1] = h` in a `for`
    loop) or under a literal key of a container the caller passed (`batch["img"] =
    img.float()`); a reader after the replay finds the graph's refreshed output there (a slot
    computed from its old value is state, and still reported; where it is a list's or dict's
    tensor bound to a new tensor, `x, state[i] = cell(x, state[i])`, GS401 reports it instead:
    the slot keeps its key, the graph stops following its tensor). Nor is an entry replaced by a
    concatenation of itself (`self.logs[k] = torch.cat([self.logs[k], x])`): the keys stay the
    same and the entry's tensor grows, which GS404 reports.
    """

    code = "GS503"
    name = "python-container-accumulate"
    summary = "appending to or updating a list/dict/set that outlives the call"
    message = "`{what}` changes {where} once, at capture; replays never change it: {consequence}"
    valid = (
        "out = []\nout.append(x)\nz = torch.stack(out)",
        "seen = {}\nseen['a'] = x",
        "x.add_(y)\nz = x.add(y)",
        Example("def step(t: torch.Tensor):  # graphsafe: region\n    out = []\n    out.append(t)\n    return out",
                module=True),
        "self.meter.update(x)",  # not known to be a container
        "y[0] = x[0]",
        Example("self.history.append(x)", region=False),
        "self.logs = {'loss': x[:0]}\nself.logs['loss'] = torch.cat([self.logs['loss'], y])",  # GS404's
        # the same slots every step, refreshed by each replay
        "self.state = [x, x, x]\nfor i in range(3):\n    self.state[i * 1] = x * i",
        Example("def step(batch: dict, x: torch.Tensor):  # graphsafe: region\n"
                "    batch['img'] = x.float() / 255", module=True),
    )
    invalid = (
        "self.history.append(x)",
        "self.buffers[0].extend([x, y])",
        Example("self.by_step = {}\nself.by_step[n] = x\nself.by_step.update(last=x)", expect=2),
        Example("self.seen: set = set()\nself.seen.add(n)\nself.counts = {}\nself.counts[n] += 1", expect=2),
        "self.tree = [0.0] * 8\nself.tree[n] = 1.0",
        Example("HISTORY = []\n\n\ndef step(t: torch.Tensor):  # graphsafe: region\n    HISTORY.append(t.detach())",
                module=True),
        Example("class C:\n    def forward(self, t: torch.Tensor):  # graphsafe: region\n"
                "        self.cache[t.shape] = t\n\n"
                "    def __init__(self):\n        self.cache = {}", module=True),
    )

    calls = Callees(APPEND_METHODS | MAPPING_METHODS)

    def visit_Expr(self, node: cst.Expr, ctx) -> None:
        if _logging_name(node):
            return  # `self.tracker.log(row)`: GS501's, at the call
        helper = host_effect_helpers.condition(node, self.code, ctx)
        if helper is not None:  # `self.track_data(tag, v)`: decided where the project knows the helper
            # reported at the statement: the call itself stays the container rule's own to report
            func = node.value.func
            name = func.attr.value if type(func) is cst.Attribute else ctx.code_for(func)
            ctx.report(self, node, condition=helper, what=f"{ctx.code_for(func)}(...)",
                       where=f"a container `{name}` keeps,")

    def visit_Call(self, node: cst.Call, ctx) -> None:
        call = method_call(node)
        if call is None:
            return
        receiver, method = call
        if method in APPEND_METHODS:
            kind = ctx.kind(receiver)
            if kind.is_tensor or kind.tag in ("object", "modules"):
                return
            self._check(node, receiver, f".{method}()", ctx, known_container=False)
        elif method in MAPPING_METHODS:
            self._check(node, receiver, f".{method}()", ctx, known_container=True)

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        super().visit_Assign(node, ctx)
        # `self.logs[k] = torch.cat([self.logs[k], x])` keeps the keys and grows the entry's
        # tensor: that is GS404's, not a change to the container
        grown = ctx.file_state(_GrownEntries)
        for target in node.targets:
            if T.joined_onto_itself(target.target, node.value, ctx.resolve) or _replaces_a_slot(target.target, node.value, ctx):
                grown.add(id(target.target))

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        if (ctx.is_store(node) and id(node) not in ctx.file_state(_GrownEntries)
                and id(node) not in ctx.file_state(step_state.HandedPlaces)):  # GS401's
            self._check(node, node.value, "[...] = ...", ctx, known_container=True)

    def visit_AugAssign(self, node: cst.AugAssign, ctx) -> None:
        target = node.target
        operator = ctx.code_for(node.operator).strip()
        if isinstance(target, cst.Subscript):
            self._check(node, target.value, f"[...] {operator} ...", ctx, known_container=True)
        elif isinstance(node.operator, cst.AddAssign) and isinstance(node.value, (cst.List, cst.ListComp)):
            self._check(node, target, " += [...]", ctx, known_container=True)

    def _check(self, node: cst.CSTNode, receiver: cst.BaseExpression, action: str, ctx, known_container: bool) -> None:
        where = persistent_root(receiver, ctx)
        condition = None
        if where is None:
            step = _loop_shared(receiver, ctx)
            if step is None:
                return
            # `ds = []` before a loop region, `ds.append(d)` in its body: every pass shares the list
            where, condition = "a name every pass of the loop region shares", step.condition
        shown = ctx.code_for(receiver)
        if len(shown) > 40 or "\n" in shown:
            shown = "obj"
        what = f"{shown}{action}"
        where = f"`{shown}`, {where}," if shown != "obj" else where
        if not known_container:
            ctx.report(self, node, what=what, where=where, condition=condition)
            return
        if _item_of_container_self(receiver, ctx):  # `self[-1]["batches"].append(...)` in a `list` subclass
            ctx.report(self, node, what=what, where=where, condition=condition)
            return
        key = binding_key(receiver)
        if key is not None and not ctx.kind(receiver).is_tensor:
            self.later(lambda b: key in b.containers, node, ctx, what=what, where=where, condition=condition)


# ------------------------------------------------------------------ GS504

FILE_FUNCTIONS = frozenset(
    """torch.save torch.load json.dump json.load pickle.dump pickle.load numpy.save numpy.savez
    numpy.savez_compressed numpy.savetxt numpy.load numpy.loadtxt numpy.genfromtxt
    numpy.fromfile safetensors.torch.save_file safetensors.torch.load_file os.makedirs os.mkdir
    os.remove os.unlink os.rename os.replace os.rmdir os.removedirs io.open codecs.open""".split()
)
PATH_METHODS = frozenset("write_text write_bytes read_text read_bytes mkdir unlink touch".split())


class FileIoInRegion(_GpuOnlyRule):
    """## What it does
    Flags file-system access inside a captured region: opening, saving or loading files
    (`open`, `torch.save`, `json.load`, ...) and creating, moving or deleting them.

    ## Why is this bad?
    File I/O is host work: it happens once, while the graph is captured, and never on replay.
    A checkpoint written inside the region holds the capture-time values forever; a file read
    inside it is read once and its contents are frozen into the graph. Saving or loading a CUDA
    tensor also copies it to or from pageable host memory, which makes capture itself fail.

    ## Example
    ```python
    def train_step(x, y):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        torch.save(model.state_dict(), "last.pt")
    ```

    ## Use instead
    Do the I/O outside the region, between replays:
    ```python
    graph.replay()
    if step % 1000 == 0:
        torch.save(model.state_dict(), "last.pt")
    ```

    ## Fix safety
    No automatic fix.

    ## Precise semantics
    Flagged: `open(...)`, `torch.save`/`torch.load`, `json.dump`/`json.load`,
    `pickle.dump`/`pickle.load`, `np.save*`/`np.load`, safetensors' `save_file`/`load_file`,
    `Path.write_text`/`read_text`/`write_bytes`/`read_bytes`/`mkdir`/`unlink`, `shutil.*` and
    `os.makedirs`/`remove`/`rename`/`replace`.
    """

    code = "GS504"
    name = "file-io-in-region"
    summary = "`open`, `torch.save/load`, `json`/`pickle`/`np.save`, `Path.write_text`, `shutil`, `os` file calls"
    message = (
        "`{what}` touches the file system on the host: it runs once, at capture, and never on replay: {consequence}"
    )
    valid = (
        "z = torch.cat([x, y])",
        Example("torch.save(x, 'x.pt')", region=False),
        "import json\ns = json.dumps({'n': n})",
        "import os\np = os.path.join('a', 'b')",
    )
    invalid = (
        "torch.save(x, 'x.pt')",
        "with open('log.txt', 'a') as f:\n    f.write('step')",
        "import json\njson.dump({'n': n}, self.f)",
        "import numpy as np\nnp.savez('out.npz', a=n)",
        "from pathlib import Path\nPath('out.txt').write_text('done')",
        "import shutil\nshutil.copy('a', 'b')",
        Example("import os\nimport pickle\nos.makedirs('ckpt', exist_ok=True)\npickle.dump(n, self.f)", expect=2),
    )

    calls = Callees({"open"} | last_parts(FILE_FUNCTIONS) | PATH_METHODS, prefixes=("shutil.",))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if is_builtin(func, "open", ctx):
            ctx.report(self, node, what="open()")
            return
        name = imported_name(func, ctx)
        if name is not None and (name in FILE_FUNCTIONS or name.startswith("shutil.")):
            ctx.report(self, node, what=f"{name}()")
            return
        call = method_call(node)
        if call is not None and call[1] in PATH_METHODS and name is None:
            if not ctx.kind(call[0]).is_tensor:
                ctx.report(self, node, what=f".{call[1]}()")


# ------------------------------------------------------------------ GS505

BAR_METHODS = frozenset(
    "update set_postfix set_postfix_str set_description set_description_str refresh advance reset write display".split()
)
BAR_NAMES = frozenset("pbar bar progress progress_bar progressbar prog_bar pb".split())


def _named_like_bar(receiver: cst.BaseExpression) -> bool:
    name = last_name(receiver)
    if name is None:
        return False
    lowered = name.lower().lstrip("_")
    return lowered in BAR_NAMES or lowered.endswith(("pbar", "_bar", "_progress"))


class ProgressBarInRegion(_GpuOnlyBindingRule):
    """## What it does
    Flags progress bars inside a captured region: creating one (`tqdm(...)`, rich's
    `Progress(...)`) or updating one (`pbar.update(1)`, `pbar.set_postfix(...)`).

    ## Why is this bad?
    A progress bar is host state. It is advanced once, while the graph is captured, and never
    on replay: the bar stands still (or shows the capture step's loss) while training runs.
    A `tqdm(...)` loop inside the region is unrolled into the graph at capture.

    ## Example
    ```python
    def train_step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        pbar.update(1)
    ```

    ## Use instead
    Advance the bar in the loop that calls `graph.replay()`:
    ```python
    for x, y in pbar:
        static_x.copy_(x); static_y.copy_(y)
        graph.replay()
        pbar.update(1)
    ```

    ## Fix safety
    No automatic fix.

    ## Precise semantics
    Flagged: `tqdm(...)`/`trange(...)`, rich's `Progress(...)`/`track(...)`, and
    `.update()`/`.set_postfix()`/`.set_description()`/`.advance()`/`.refresh()`/`.write()` on a
    bar — a receiver bound from one of those calls anywhere in the file, or named like one
    (`pbar`, `bar`, `progress`, `self.train_pbar`).
    """

    code = "GS505"
    name = "progress-bar-in-region"
    summary = "tqdm/rich progress bars created or advanced inside a region"
    message = "`{what}` drives a progress bar on the host: it runs once, at capture, and never on replay: {consequence}"
    valid = (
        Example("from tqdm import tqdm\nfor i in tqdm(range(n)):\n    pass", region=False),
        "self.meter.update(x)",
        "self.ema.update()",
        "progress = n / 10",
    )
    invalid = (
        "pbar.update(1)",
        "self.pbar.set_postfix(loss=n)",
        "from tqdm import tqdm\nfor i in tqdm(range(n)):\n    x = x * 2",
        Example("from tqdm.auto import tqdm\nit = tqdm(total=n)\nit.set_description('train')", expect=2),
        "from rich.progress import track\nfor i in track(range(n)):\n    pass",
    )

    calls = Callees({"tqdm", "trange", "write"} | last_parts(PROGRESS_FACTORIES) | BAR_METHODS)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = imported_name(node.func, ctx)
        if name is not None and (_is_tqdm(name) or name in PROGRESS_FACTORIES):
            ctx.report(self, node, what=f"{name}()")
            return
        if name is not None and name.startswith("tqdm.") and name.endswith(".write"):
            ctx.report(self, node, what=f"{name}()")
            return
        call = method_call(node)
        if call is None:
            return
        receiver, method = call
        if method not in BAR_METHODS or ctx.kind(receiver).is_tensor:
            return
        what = f"{dotted(node.func) or '.' + method}()"
        if _named_like_bar(receiver):
            ctx.report(self, node, what=what)
            return
        key = binding_key(receiver)
        if key is not None:
            self.later(lambda b: key in b.progress, node, ctx, what=what)


# ------------------------------------------------------------------ GS506


def _is_data_ptr(expr: cst.BaseExpression, ctx) -> bool:
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "data_ptr"
        and not expr.args
        and not ctx.kind(expr.func.value).not_tensor
    )


def _data_ptrs_in_key(expr: cst.BaseExpression, ctx) -> list[cst.BaseExpression]:
    """`t.data_ptr()` used as a key: itself, inside a tuple key `(t.data_ptr(), t.shape)`, or a
    local name bound to either (`ptr = t.data_ptr()` then `ptr in seen`)."""
    if _is_data_ptr(expr, ctx):
        return [expr]
    if type(expr) is cst.Tuple:
        return [e.value for e in expr.elements if _is_data_ptr(e.value, ctx)]
    if type(expr) is cst.Name:
        bound = ctx.file_state(_pointer_locals).get((ctx.function_key, expr.value), ())
        return [expr] if any(_data_ptrs_in_key(value, ctx) for value in bound) else []
    return []


def _pointer_locals() -> dict[tuple[str | None, str], list[cst.BaseExpression]]:
    """(function, local name) → the `t.data_ptr()` keys it was bound to."""
    return {}


def _syntactic_data_ptr(expr: cst.BaseExpression) -> bool:
    return (type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value == "data_ptr"
            and not expr.args)


class IdentityKeyedCache(_GpuOnlyRule):
    """## What it does
    Flags tensor identity (`id(t)`, `hash(t)`, `t.data_ptr()`) used as a cache key or compared
    inside a captured region.

    ## Why is this bad?
    A graph replays on the same buffers, so identity never changes between replays — but the
    contents do. The cache lookup runs once, at capture: if it hit (the warm-up runs filled
    the cache), the graph holds no kernels for the cached computation and every replay returns
    the value computed during warm-up, however the inputs change; if it missed, later cache
    bookkeeping in Python never happens again.

    ## Example
    ```python
    def forward(self, x):
        key = id(x)
        if key not in self._rope_cache:
            self._rope_cache[key] = self.build_rope(x)
        return x * self._rope_cache[key]
    ```

    ## Use instead
    Key caches by static properties (shape, dtype, device) and build them before capture:
    ```python
    def forward(self, x):
        rope = self._rope_cache[(x.shape[-2], x.dtype)]  # filled during warm-up
        return x * rope
    ```

    ## Fix safety
    No automatic fix.

    ## Precise semantics
    Flagged: `id(t)` and `hash(t)` of a tensor, and `t.data_ptr()` used as a dict key
    (`cache[t.data_ptr()]`, `{t.data_ptr(): ...}`, `cache.get(t.data_ptr())`) or in a
    comparison (`a.data_ptr() == b.data_ptr()`, `t.data_ptr() in seen`).
    """

    code = "GS506"
    name = "identity-keyed-cache"
    summary = "`id(t)`, `hash(t)` or `t.data_ptr()` as a cache key or identity check"
    message = (
        "{what} decides a cache hit or an identity check once, at capture; replays reuse the same buffers "
        "with new contents: {consequence}"
    )
    valid = (
        "key = (x.shape[0], x.dtype)",
        "aligned = x.data_ptr() % 16 == 0",
        "ptr = x.data_ptr()\naligned = ptr % 16 == 0",
        "k = id(self)",
        Example("k = id(x)", region=False),
    )
    invalid = (
        "k = id(x)",
        "h = hash(x)",
        "z = self.cache[x.data_ptr()]",
        "same = x.data_ptr() == y.data_ptr()",
        Example("if x.data_ptr() in self.seen:\n    pass\nz = self.cache.get((y.data_ptr(), y.shape))", expect=2),
        Example("key = (x.data_ptr(), x.shape)\nz = self.cache.get(key)"),
        Example("ptr = x.data_ptr()\nif ptr in self.seen:\n    pass"),
    )

    calls = Callees({"id", "hash", "get", "setdefault", "pop", "__getitem__", "__contains__"})

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        for builtin in ("id", "hash"):
            if is_builtin(func, builtin, ctx) and len(node.args) == 1 and ctx.kind(node.args[0].value).is_tensor:
                ctx.report(self, node, what=f"`{builtin}()` of a tensor")
                return
        call = method_call(node)
        if call is not None and call[1] in ("get", "setdefault", "pop", "__getitem__", "__contains__") and node.args:
            for ptr in _data_ptrs_in_key(node.args[0].value, ctx):
                ctx.report(self, ptr, what="`data_ptr()` as a cache key")

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        # `key = (x.data_ptr(), x.shape)`: remembered for a later `cache.get(key)`
        value = node.value
        if len(node.targets) != 1 or type(node.targets[0].target) is not cst.Name:
            return
        if _syntactic_data_ptr(value) or (type(value) is cst.Tuple and any(
                _syntactic_data_ptr(e.value) for e in value.elements)):
            name = node.targets[0].target.value
            ctx.file_state(_pointer_locals).setdefault((ctx.function_key, name), []).append(value)

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        if ctx.kind(node.value).is_tensor:
            return
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                for ptr in _data_ptrs_in_key(element.slice.value, ctx):
                    ctx.report(self, ptr, what="`data_ptr()` as a cache key")

    def visit_Dict(self, node: cst.Dict, ctx) -> None:
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                for ptr in _data_ptrs_in_key(element.key, ctx):
                    ctx.report(self, ptr, what="`data_ptr()` as a cache key")

    def visit_Comparison(self, node: cst.Comparison, ctx) -> None:
        operands = [node.left] + [c.comparator for c in node.comparisons]
        if any(_data_ptrs_in_key(operand, ctx) for operand in operands):
            ctx.report(self, node, what="comparing `data_ptr()`")


RULES = (HostLogging, HostNondeterminism, PythonContainerAccumulate, FileIoInRegion, ProgressBarInRegion,
         IdentityKeyedCache)
