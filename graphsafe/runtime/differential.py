"""Differential check of one fix: run the statements it rewrote, before and after, on generated
inputs, and compare what they compute, bind, mutate, call and raise.

A fix changes a few statements and leaves the rest of the program as it was, so the program
behaves the same exactly when those statements do, from every state the original accepts.
The statements are run as the body of a function whose parameters are the names they read
from outside; each such name (and each attribute path read off it, `self.k`, `cfg.flag`) gets
values from a pool of boundary cases: 0-dim, one-element, empty, integer and boolean tensors,
Python numbers and bools, None. Names that are called become recorders that log their calls.
An input counts when the original runs on it without raising; the fix changes behaviour when,
on such an input, the fixed statements raise, return or leave anything different (values,
dtypes, shapes, Python types, the recorders' logs).

    verdict = compare(before_code, after_code)   # Verdict(changed, tried, accepted, example)

Statements that only make sense with the rest of their function (a `yield`, names the
generator cannot guess such as a module's own helpers, which become recorders) are still run:
a recorder stands in for the helper on both sides, so its calls are compared, not its results.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import itertools
import math
import random
import textwrap
import types
import warnings
from dataclasses import dataclass

import torch

# Modules a statement may use by name without them being inputs.
_MODULES = {"torch": torch, "math": math}
_TENSOR_METHODS = frozenset(dir(torch.Tensor))
_MAX_TRIALS = 3000


def _pool() -> list:
    return [
        torch.tensor(0.5), torch.tensor(-1.0), torch.tensor([1.0, -2.0, 3.0]), torch.tensor([[1.0, 2.0], [3.0, 4.0]]),
        torch.zeros(0), torch.tensor(2), torch.tensor(0), torch.tensor([1, 0, 2]), torch.tensor([True, False, True]),
        torch.tensor(True), torch.tensor(False), torch.tensor([float("nan"), 1.0, float("inf")]),
        torch.arange(24.0).reshape(4, 6), torch.arange(24).reshape(4, 6),
        0, 1, 2, -1, 2.5, 0.0, True, False, None, _first_argument,
    ]


def _first_argument(*args, **kwargs):
    """A callable input (a block handed to `checkpoint`, a callback): gives back what it got."""
    return args[0] if args else None


class Recorder:
    """A stand-in for something the statements call: logs each call and returns the value the
    trial chose for it (another recorder for calls further down a chain)."""

    _unset = object()

    def __init__(self, name: str, log: list, returns: object = _unset) -> None:
        self._name, self._log, self._returns = name, log, returns

    def __call__(self, *args, **kwargs):
        self._log.append((self._name, _snapshot(args), _snapshot(kwargs)))
        if self._returns is not Recorder._unset:
            value = self._returns
            return value.clone() if isinstance(value, torch.Tensor) else value
        return Recorder(f"{self._name}()", self._log)

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Recorder(f"{self._name}.{attr}", self._log)


@dataclass(frozen=True)
class Verdict:
    changed: bool      # some accepted input gives another outcome
    tried: int         # inputs generated
    accepted: int      # inputs the original ran on without raising
    example: str = ""  # the first input that tells them apart, and how


def reads(code: str, modules: dict | None = None) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """(value paths, called paths) the statements read from outside: `self.k` → ("self", "k").
    A name assigned before it is read gets a value all the same: it is then simply unused."""
    modules = {**_MODULES, **(modules or {})}
    tree = ast.parse(code)
    own = {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}  # a lambda's own parameters
    own |= {n.id for c in ast.walk(tree) if isinstance(c, ast.comprehension)  # `[v for v in xs]`: v
            for n in ast.walk(c.target) if isinstance(n, ast.Name)}
    loaded = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    values: set[tuple[str, ...]] = set()
    called: set[tuple[str, ...]] = set()
    calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    chained = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Name, ast.Attribute)) or id(node) in chained:
            continue
        path = _path(node)
        if path is None or path[0] not in loaded or path[0] in own or path[0] in modules or hasattr(builtins, path[0]):
            continue
        if len(path) > 1 and path[-1] in _TENSOR_METHODS:
            values.add(path[:-1])  # `self.k.to(...)`, `k.dtype`: a method or attribute of a value
        elif id(node) in calls:
            called.add(path)
        else:
            values.add(path)
    # a path that is also the prefix of a longer one is an object holding the longer one
    values = {p for p in values if not any(q[: len(p)] == p and q != p for q in values | called)}
    return sorted(values), sorted(called)


def _path(node: ast.AST) -> tuple[str, ...] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return (node.id, *reversed(parts))


def _environment(values: dict[tuple[str, ...], object], called: dict[tuple[str, ...], object], log: list) -> dict:
    env: dict[str, object] = {}

    def place(path: tuple[str, ...], value: object) -> None:
        if len(path) == 1:
            env[path[0]] = value
            return
        holder = env.setdefault(path[0], types.SimpleNamespace())
        for part in path[1:-1]:
            if not hasattr(holder, part):
                setattr(holder, part, types.SimpleNamespace())
            holder = getattr(holder, part)
        setattr(holder, path[-1], value)

    for path, value in values.items():
        place(path, value.clone() if isinstance(value, torch.Tensor) else value)
    for path, returns in called.items():
        place(path, Recorder(".".join(path), log, returns))
    return env


def _run(code: str, env: dict, log: list, modules: dict):
    names = sorted(env)
    body = textwrap.indent(code if code.strip() else "pass", "    ")  # a fix may delete the statement
    source = (f"def __hunk__({', '.join(names)}):\n    for __once in (0,):\n{textwrap.indent(body, '    ')}\n"
              "    return ('fell through', {k: v for k, v in locals().items() if k != '__once'})\n")
    namespace = {**_MODULES, **modules}
    printed = io.StringIO()  # what the statements print is behaviour too
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            warnings.simplefilter("ignore")  # torch's own warnings on odd inputs; the statements' are recorded
            exec(compile(source, "<hunk>", "exec"), namespace)
            result = namespace["__hunk__"](**env)
    except Exception as error:  # noqa: BLE001 - what it raises is part of the behaviour compared
        return ("raises", type(error).__name__, _snapshot(env), tuple(log), printed.getvalue())
    return ("returns", _snapshot(result), _snapshot(env), tuple(log), printed.getvalue())


def _snapshot(value, depth: int = 0):
    """A comparable picture of a value: tensors by type, dtype, shape and values."""
    if depth > 6:
        return "..."
    if isinstance(value, torch.Tensor):
        v = value.detach()
        data = tuple(torch.nan_to_num(v.double(), nan=1e300).flatten().tolist()) if v.numel() < 10_000 else v.sum().item()
        return ("tensor", str(v.dtype), tuple(v.shape), data, tuple(v.isnan().flatten().tolist()) if v.is_floating_point() else ())
    if isinstance(value, (bool, int, float, str, type(None))):
        return (type(value).__name__, value if not (isinstance(value, float) and math.isnan(value)) else "nan")
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_snapshot(v, depth + 1) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), _snapshot(v, depth + 1)) for k, v in value.items())))
    if isinstance(value, types.SimpleNamespace):
        return ("object", _snapshot(vars(value), depth + 1))
    if isinstance(value, Recorder):
        return ("recorder", value._name)
    if callable(value) and hasattr(value, "__name__"):
        return ("callable", value.__name__)
    return (type(value).__name__,)


def compare(before: str, after: str, modules: dict | None = None, trials: int = _MAX_TRIALS, seed: int = 0) -> Verdict:
    """Run `before` and `after` (dedented statements) on the same generated inputs; `modules`
    are names the statements' module imports (`F` for torch.nn.functional), not inputs."""
    modules = modules or {}
    before, after = textwrap.dedent(before), textwrap.dedent(after)
    values_b, called_b = reads(before, modules)
    values_a, called_a = reads(after, modules)
    called = sorted(set(called_b) | set(called_a))
    # one choice per input value and per called thing (what the call gives back)
    paths = sorted((set(values_b) | set(values_a)) - set(called)) + called
    pool = _pool()
    if len(pool) ** len(paths) <= trials:
        choices = itertools.product(range(len(pool)), repeat=len(paths))
    else:
        rng = random.Random(seed)
        choices = (tuple(rng.randrange(len(pool)) for _ in paths) for _ in range(trials))
    tried = accepted = 0
    for choice in choices:
        tried += 1
        chosen = {path: pool[i] for path, i in zip(paths, choice)}
        values = {path: value for path, value in chosen.items() if path not in called}
        returns = {path: value for path, value in chosen.items() if path in called}
        log_b: list = []
        original = _run(before, _environment(values, returns, log_b), log_b, modules)
        if original[0] == "raises":
            continue
        accepted += 1
        log_a: list = []
        fixed = _run(after, _environment(values, returns, log_a), log_a, modules)
        if fixed != original:
            shown = ", ".join(f"{'.'.join(p)}{'()' if p in returns else ''}={_short(v)}" for p, v in chosen.items())
            how = f"raises {fixed[1]}" if fixed[0] == "raises" else "computes another result"
            return Verdict(True, tried, accepted, f"{shown}: the fixed code {how}")
    return Verdict(False, tried, accepted)


def _short(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor({value.tolist()}, {str(value.dtype).replace('torch.', '')})"
    return repr(value)
