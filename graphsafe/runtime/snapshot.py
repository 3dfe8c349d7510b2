"""The state a step mutates: find it, snapshot it, put it back bit-for-bit, read and compare it.

A trial capture runs the user's step many times (warm-up, capture, replays, eager reference,
timing) on the user's own objects: a graph reads fixed addresses, so copies would not do. What
it changes is put back afterwards, into the same objects:

- modules: parameters and buffers (values, and which tensor object sits in each slot), gradients
  (None or the same tensor object), and plain Python attributes (counters, flags);
- optimizers: per-parameter state (entries created later are dropped again), param_groups'
  values (Python numbers and tensors);
- user objects (a Trainer whose method is the step, a KV cache or dataclass passed as an argument):
  the tensors, modules and optimizers among their attributes as above, and the attributes
  themselves (rebindings undone, lists and dicts given their old contents back);
- tensors (step arguments, closure or global tensors, what a state callable returns), generators,
  and the RNG states: CPU, every initialised CUDA device, `random`, `numpy.random`.

Reading a state gives `{name: value}` with cloned tensors; `compare_values` compares two such
readings (a replayed run against the eager one) under a tolerance.
"""

from __future__ import annotations

import functools
import math
import random
import sys
import types
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable

import torch

from graphsafe.runtime.capture_report import Comparison, Tolerance

_PLAIN = (bool, int, float, complex, str, bytes, type(None))


# --- what is tracked ----------------------------------------------------------------------------


@dataclass
class Tracked:
    """Named state roots. `objects` holds (name, object) pairs: modules, optimizers, tensors,
    generators, containers of those, or callables returning live tensors."""

    objects: list[tuple[str, Any]]

    def modules(self) -> list[tuple[str, torch.nn.Module]]:
        return [(n, o) for n, o in self._flat() if isinstance(o, torch.nn.Module)]

    def optimizers(self) -> list[tuple[str, torch.optim.Optimizer]]:
        return [(n, o) for n, o in self._flat() if isinstance(o, torch.optim.Optimizer)]

    def tensors(self) -> list[tuple[str, torch.Tensor]]:
        return [(n, o) for n, o in self._flat() if isinstance(o, torch.Tensor)]

    def generators(self) -> list[tuple[str, torch.Generator]]:
        return [(n, o) for n, o in self._flat() if isinstance(o, torch.Generator)]

    def plain_objects(self) -> list[tuple[str, Any]]:
        return [(n, o.obj) for n, o in self._flat() if isinstance(o, PlainObject)]

    def _flat(self) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        seen: set[int] = set()
        for name, obj in self.objects:
            _flatten(name, obj, out, seen, depth=0)
        return out

    def summary(self) -> list[str]:
        lines = []
        for name, obj in self._flat():
            if isinstance(obj, torch.nn.Module):
                count = sum(1 for _ in obj.parameters())
                lines.append(f"{name}: {type(obj).__name__} ({count} parameters, "
                             f"{sum(1 for _ in obj.buffers())} buffers)")
            elif isinstance(obj, torch.optim.Optimizer):
                capturable = [g.get("capturable") for g in obj.param_groups]
                lines.append(f"{name}: {type(obj).__name__} (capturable={capturable[0] if len(set(capturable)) == 1 else capturable})")
            elif isinstance(obj, torch.Tensor):
                lines.append(f"{name}: tensor {tuple(obj.shape)} {str(obj.dtype).replace('torch.', '')} {obj.device}")
            elif isinstance(obj, torch.Generator):
                lines.append(f"{name}: generator on {obj.device}")
        return lines


def _flatten(name: str, obj: Any, out: list, seen: set[int], depth: int) -> None:
    if depth > 4 or id(obj) in seen:
        return
    if isinstance(obj, (torch.nn.Module, torch.optim.Optimizer, torch.Tensor, torch.Generator)):
        seen.add(id(obj))
        out.append((name, obj))
        if isinstance(obj, torch.nn.Module):  # an optimizer a module keeps (sb3's `policy.optimizer`)
            for module_name, module in obj.named_modules():
                for key, value in vars(module).items():
                    if isinstance(value, torch.optim.Optimizer):
                        _flatten(f"{name}.{module_name + '.' if module_name else ''}{key}", value, out, seen, depth + 1)
    elif isinstance(obj, dict):
        seen.add(id(obj))
        for index, (key, value) in enumerate(obj.items()):
            # a tensor key (pyro's `optim_objs[param]`) is named by position: its repr reads device data
            plain = isinstance(key, (str, int, float, bool, type(None)))
            shown = repr(key) if plain else f"<{type(key).__name__} {index}>"
            _flatten(f"{name}[{shown}]", value, out, seen, depth + 1)
    elif isinstance(obj, (list, tuple)):
        seen.add(id(obj))
        for index, value in enumerate(obj):
            _flatten(f"{name}[{index}]", value, out, seen, depth + 1)
    elif isinstance(obj, LiveState):
        _flatten(name, obj.fn(), out, seen, depth + 1)  # the live tensors it names, read now
    elif is_plain_object(obj):  # a Trainer, a KV cache, a dataclass of tensors: its attributes
        seen.add(id(obj))
        out.append((name, PlainObject(obj)))
        for key, value in list(vars(obj).items()):
            _flatten(f"{name}.{key}", value, out, seen, depth + 1)


# objects of these libraries are not the user's step state, even when they carry a __dict__ (graphsafe's
# own: a graphed core installed on the step's object must not have its captured graphs "restored" away)
_NOT_STATE_MODULES = ("graphsafe", "torch", "builtins", "logging", "threading", "queue", "numpy", "typing", "collections",
                      "functools", "abc", "io", "_io", "subprocess", "multiprocessing", "concurrent")


def _rebound_to_a_tensor(current: Any, saved: Any) -> bool:
    """An attribute the step rebound to a tensor (`self.stat = x.mean().detach()`). A value restore
    after a capture keeps that binding: the tensor is the graph's, and every replay refreshes it
    (putting back the number it held would leave it stale for good)."""
    return isinstance(current, torch.Tensor) and current is not saved


def is_plain_object(obj: Any) -> bool:
    """An instance of a user class (not a function, class or module, nor a library object)."""
    if isinstance(obj, (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType,
                        functools.partial)) or not hasattr(obj, "__dict__"):
        return False
    return type(obj).__module__.split(".")[0] not in _NOT_STATE_MODULES


@dataclass(frozen=True, eq=False)
class PlainObject:
    """A user object among the state (the owner of a step method, an argument): its attributes
    are put back after a trial: which object sits in each, and the contents of lists and dicts."""

    obj: Any


@dataclass(frozen=True)
class LiveState:
    """A state callable given by the user: returns the live tensors (a tensor, list or dict) the
    step mutates. Called whenever the state is read, snapshot or restored."""

    fn: Callable[[], Any]


def _explicit(obj: Any) -> Any:
    if isinstance(obj, (torch.nn.Module, torch.optim.Optimizer, torch.Tensor, torch.Generator, dict, list, tuple)):
        return obj
    if callable(obj):
        return LiveState(obj)
    raise TypeError(f"state: expected modules, optimizers, tensors, generators or callables returning tensors, "
                    f"got {type(obj).__name__}")


def resolve_state(state: Any, step: Callable, args: tuple, kwargs: dict) -> Tracked:
    """`state=None`: modules, optimizers, tensors and generators among the arguments, the step
    itself (a Module or a bound method's owner), its closure cells and the globals it names.
    Otherwise `state` is one object, a tuple/list of them, a dict name -> object, or a callable
    returning live tensors."""
    objects: list[tuple[str, Any]] = []
    if state is None:
        objects.extend(_step_roots(step))
    elif isinstance(state, dict) and all(isinstance(k, str) for k in state):
        objects.extend((k, _explicit(v)) for k, v in state.items())
    elif isinstance(state, (list, tuple)):
        objects.extend((_default_name(obj, i), _explicit(obj)) for i, obj in enumerate(state))
    else:
        objects.append((_default_name(state, 0), _explicit(state)))
    for index, value in enumerate(args):
        objects.append((f"args[{index}]", value))
    for key, value in kwargs.items():
        objects.append((f"kwargs[{key!r}]", value))
    return Tracked(objects)


def _default_name(obj: Any, index: int) -> str:
    if isinstance(obj, torch.nn.Module):
        return "model" if index == 0 else f"module{index}"
    if isinstance(obj, torch.optim.Optimizer):
        return "optimizer"
    if callable(obj) and hasattr(obj, "__name__"):
        return obj.__name__
    return f"state[{index}]"


def _step_roots(step: Callable) -> list[tuple[str, Any]]:
    import functools

    roots: list[tuple[str, Any]] = []
    target = step
    while isinstance(target, functools.partial):
        roots.extend((f"partial.args[{i}]", a) for i, a in enumerate(target.args))
        roots.extend((f"partial.{k}", v) for k, v in target.keywords.items())
        target = target.func
    target = getattr(target, "_torchdynamo_orig_callable", target)
    if isinstance(target, torch.nn.Module):
        return roots + [("model", target)]
    owner = getattr(target, "__self__", None)
    if isinstance(owner, torch.nn.Module) or is_plain_object(owner):
        roots.append(("self", owner))
    function = getattr(target, "__func__", target)
    code = getattr(function, "__code__", None)
    if code is None:
        return roots
    for name, cell in zip(code.co_freevars, getattr(function, "__closure__", None) or ()):
        try:
            roots.append((name, cell.cell_contents))
        except ValueError:  # an empty cell
            pass
    module_globals = getattr(function, "__globals__", {})
    for name in _names_used(code):
        if name in module_globals:
            roots.append((name, module_globals[name]))
    return [(n, o) for n, o in roots if _is_state_root(o)]


def _names_used(code) -> list[str]:
    names = list(code.co_names)
    for const in code.co_consts:  # nested functions and comprehensions
        if hasattr(const, "co_names"):
            names.extend(n for n in _names_used(const) if n not in names)
    return names


def _is_state_root(obj: Any) -> bool:
    if isinstance(obj, (torch.nn.Module, torch.optim.Optimizer, torch.Tensor, torch.Generator)):
        return True
    if is_plain_object(obj):
        out: list = []
        _flatten("", obj, out, set(), depth=0)
        return any(not isinstance(o, PlainObject) for _, o in out)
    if isinstance(obj, (list, tuple, dict)) and 0 < len(obj) <= 64:
        values = obj.values() if isinstance(obj, dict) else obj
        return any(isinstance(v, (torch.nn.Module, torch.optim.Optimizer, torch.Tensor)) for v in values)
    return False


def is_ddp(tracked: Tracked) -> bool:
    ddp = getattr(torch.nn.parallel, "DistributedDataParallel", None)
    return ddp is not None and any(isinstance(m, ddp) for _, m in tracked.modules())


# --- snapshot and restore -----------------------------------------------------------------------


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    return value


def _copy_into(target: torch.Tensor, saved: torch.Tensor) -> None:
    with torch.no_grad():
        if target.shape != saved.shape:  # resized in place (resize_, set_): give it its shape back
            target.resize_(saved.shape)
        if _overlaps_itself(target):  # an expanded view (stride 0) cannot be written; its base is restored
            return
        target.copy_(saved)


def _overlaps_itself(tensor: torch.Tensor) -> bool:
    return any(stride == 0 and size > 1 for stride, size in zip(tensor.stride(), tensor.shape))


class Snapshot:
    """Everything `Tracked` names, cloned.

    `restore()` puts values and identities back: which tensor sits in each parameter, buffer and
    gradient slot, which optimizer-state entries exist (later ones are dropped). Use it when no
    graph holds on to what was created meanwhile.

    `restore_values()` only copies values back into the tensors as they are now, keeping every
    slot and every object created meanwhile (a captured graph reads their addresses): new
    optimizer-state tensors and new gradients are zeroed instead of dropped (a fresh state for
    Adam/AdamW and for SGD momentum without dampening). Python numbers go back; an attribute the
    step rebound to a tensor keeps it (the graph's output: replays refresh it).
    """

    def __init__(self, tracked: Tracked, rng: bool = True, parameters: bool = True) -> None:
        self._restores: list[Callable[[], None]] = []
        self._value_restores: list[Callable[[], None]] = []
        self._parameters = parameters
        seen_tensors: dict[int, torch.Tensor] = {}
        for _, module in tracked.modules():
            for sub in module.modules():
                self._module(sub, seen_tensors)
        for _, optimizer in tracked.optimizers():
            self._optimizer(optimizer, seen_tensors)
        for _, tensor in tracked.tensors():
            self._tensor(tensor, seen_tensors)
        for _, obj in tracked.plain_objects():
            self._plain_object(obj)
        for _, generator in tracked.generators():
            state = generator.get_state()
            self._both(lambda g=generator, s=state: g.set_state(s))
        if rng:
            self._rng()

    def restore(self) -> None:
        for restore in self._restores:
            restore()

    def restore_values(self) -> None:
        """Values back as they were (tensors in place, numbers and containers of user objects);
        attributes the step rebound to tensors keep their new tensors (see _rebound_to_a_tensor)."""
        for restore in self._value_restores:
            restore()

    def keep_as_now(self, obj: Any) -> None:
        """A plain object is restored to what it holds now instead (its attributes and the entries
        of its dicts and lists): state a warm-up built that must stay (graphed: an owner of
        optimizers the step built on its first call)."""
        self._plain_object(obj)

    def _both(self, fn: Callable[[], None]) -> None:
        self._restores.append(fn)
        self._value_restores.append(fn)

    # parts --------------------------------------------------------------------------------------
    def _tensor(self, tensor: torch.Tensor, seen: dict[int, torch.Tensor]) -> None:
        if id(tensor) in seen:
            return
        seen[id(tensor)] = tensor
        saved = tensor.detach().clone()
        has_grad_slot = tensor.is_leaf and tensor.requires_grad
        grad = tensor.grad if has_grad_slot else None
        saved_grad = grad.detach().clone() if grad is not None else None

        def restore() -> None:
            _copy_into(tensor, saved)
            if has_grad_slot:
                tensor.grad = grad
                if grad is not None:
                    _copy_into(grad, saved_grad)

        def restore_values() -> None:
            _copy_into(tensor, saved)
            current = tensor.grad if has_grad_slot else None
            if current is not None:
                with torch.no_grad():
                    if saved_grad is not None and current.shape == saved_grad.shape:
                        current.copy_(saved_grad)
                    else:
                        current.zero_()

        self._restores.append(restore)
        self._value_restores.append(restore_values)

    def _plain_object(self, obj: Any) -> None:
        slots = dict(vars(obj))
        contents = {k: (list(v) if isinstance(v, list) else dict(v)) for k, v in slots.items()
                    if isinstance(v, (list, dict))}

        def restore(keep_tensors: bool = False) -> None:
            current = vars(obj)
            for key in [k for k in current if k not in slots]:
                if not (keep_tensors and isinstance(current[key], torch.Tensor)):
                    del current[key]
            for key, value in slots.items():
                if keep_tensors and _rebound_to_a_tensor(current.get(key), value):
                    continue
                current[key] = value  # the same object in the slot again (a rebinding undone)
                if key in contents:  # appended to / updated in place: its old contents
                    if isinstance(value, list):
                        value[:] = contents[key]
                    else:
                        value.clear()
                        value.update(contents[key])

        self._restores.append(restore)
        self._value_restores.append(lambda: restore(keep_tensors=True))

    def _module(self, module: torch.nn.Module, seen: dict[int, torch.Tensor]) -> None:
        parameters = dict(module._parameters)
        buffers = dict(module._buffers)
        plain = {k: v for k, v in vars(module).items() if isinstance(v, _PLAIN) and not k.startswith("_")}

        def restore_slots() -> None:
            module._parameters.clear()
            module._parameters.update(parameters)
            module._buffers.clear()
            module._buffers.update(buffers)
            restore_plain()

        def restore_plain(keep_tensors: bool = False) -> None:
            for key in [k for k, v in vars(module).items() if isinstance(v, _PLAIN) and not k.startswith("_")]:
                if key not in plain:
                    delattr(module, key)
            for key, value in plain.items():
                if keep_tensors and _rebound_to_a_tensor(vars(module).get(key), value):
                    continue
                object.__setattr__(module, key, value)

        self._restores.append(restore_slots)
        self._value_restores.append(lambda: restore_plain(keep_tensors=True))
        tensors = list(buffers.values()) + (list(parameters.values()) if self._parameters else [])
        for tensor in tensors:
            if tensor is not None:
                self._tensor(tensor, seen)

    def _optimizer(self, optimizer: torch.optim.Optimizer, seen: dict[int, torch.Tensor]) -> None:
        entries = {param: dict(state) for param, state in optimizer.state.items()}
        groups = [{k: v for k, v in group.items() if k != "params"} for group in optimizer.param_groups]
        group_params = [list(group["params"]) for group in optimizer.param_groups]
        extra = {k: v for k, v in vars(optimizer).items() if isinstance(v, _PLAIN)}

        def restore() -> None:
            for param in list(optimizer.state.keys()):
                if param not in entries:
                    del optimizer.state[param]
            for param, state in entries.items():
                optimizer.state[param] = dict(state)
            restore_groups()

        def restore_groups() -> None:
            for group, saved, params in zip(optimizer.param_groups, groups, group_params):
                group.clear()
                group.update(saved)
                group["params"] = params
            for key, value in extra.items():
                object.__setattr__(optimizer, key, value)

        def restore_values() -> None:
            with torch.no_grad():
                for param, state in optimizer.state.items():
                    for key, value in state.items():
                        old = entries.get(param, {}).get(key)
                        if isinstance(value, torch.Tensor) and value is not old:
                            value.zero_()  # created meanwhile: back to a fresh state
            restore_groups()

        self._restores.append(restore)
        self._value_restores.append(restore_values)
        for state in entries.values():
            for value in state.values():
                if isinstance(value, torch.Tensor):
                    self._tensor(value, seen)
        for group in groups:
            for value in group.values():
                if isinstance(value, torch.Tensor):
                    self._tensor(value, seen)
        if self._parameters:
            for params in group_params:
                for param in params:
                    self._tensor(param, seen)

    def _rng(self) -> None:
        cpu = torch.get_rng_state()
        python = random.getstate()
        self._both(lambda: torch.set_rng_state(cpu))
        self._both(lambda: random.setstate(python))
        numpy = sys.modules.get("numpy")
        if numpy is not None and hasattr(numpy, "random"):
            try:
                state = numpy.random.get_state()
                self._both(lambda: numpy.random.set_state(state))
            except Exception:
                pass
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            states = torch.cuda.get_rng_state_all()
            self._both(lambda: torch.cuda.set_rng_state_all(states))


# --- reading and comparing ----------------------------------------------------------------------


def read_state(tracked: Tracked, rng: bool = True) -> dict[str, tuple[str, Any]]:
    """`{name: (kind, value)}` with tensors cloned; kinds: parameter, grad, buffer, python,
    optimizer-state, optimizer-group, tensor, rng."""
    values: dict[str, tuple[str, Any]] = {}
    param_names: dict[int, str] = {}
    for root, module in tracked.modules():
        for name, param in module.named_parameters(remove_duplicate=True):
            full = f"{root}.{name}"
            param_names.setdefault(id(param), full)
            values[full] = ("parameter", _clone(param))
            values[f"{full}.grad"] = ("grad", _clone(param.grad))
        for name, buffer in module.named_buffers(remove_duplicate=True):
            values[f"{root}.{name}"] = ("buffer", _clone(buffer))
        for sub_name, sub in module.named_modules():
            prefix = f"{root}.{sub_name}" if sub_name else root
            for key, value in vars(sub).items():
                if isinstance(value, _PLAIN) and not key.startswith("_") and key != "training":
                    values[f"{prefix}.{key}"] = ("python", value)
    for root, optimizer in tracked.optimizers():
        for g, group in enumerate(optimizer.param_groups):
            for p, param in enumerate(group["params"]):
                pname = param_names.get(id(param), f"param_groups[{g}].params[{p}]")
                if pname.startswith("param_groups"):
                    values[f"{root}.{pname}"] = ("parameter", _clone(param))
                    values[f"{root}.{pname}.grad"] = ("grad", _clone(param.grad))
                for key, value in optimizer.state.get(param, {}).items():
                    values[f"{root}.state[{pname}].{key}"] = ("optimizer-state", _clone(value))
            for key, value in group.items():
                if key != "params" and isinstance(value, (torch.Tensor, *_PLAIN)):
                    values[f"{root}.param_groups[{g}].{key}"] = ("optimizer-group", _clone(value))
    for name, tensor in tracked.tensors():
        values[name] = ("tensor", _clone(tensor))
        if tensor.is_leaf and tensor.requires_grad:
            values[f"{name}.grad"] = ("grad", _clone(tensor.grad))
    for name, generator in tracked.generators():
        values[f"{name}.state"] = ("rng", generator.get_state())
    if rng:
        values["rng.cpu"] = ("rng", torch.get_rng_state())
        values["rng.python"] = ("rng", hash(random.getstate()))
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            for index, state in enumerate(torch.cuda.get_rng_state_all()):
                values[f"rng.cuda:{index}"] = ("rng", state)
    return values


_MISMATCH_CODES = {
    "python": "GS302",
    "rng.cpu": "GS502",
    "rng.python": "GS502",
}


def compare_tensors(replayed: torch.Tensor, eager: torch.Tensor, tolerance: Tolerance) -> tuple[bool, bool, float, float, str | None]:
    """(ok, bitwise, max_abs, max_rel, note) of a replayed tensor against the eager one."""
    if replayed.shape != eager.shape or replayed.dtype != eager.dtype:
        return False, False, math.inf, math.inf, (f"replay gives {tuple(replayed.shape)} {replayed.dtype}, eager "
                                                   f"{tuple(eager.shape)} {eager.dtype}")
    a, b = replayed.detach(), eager.detach().to(replayed.device)
    if a.numel() == 0:
        return True, True, 0.0, 0.0, None
    if not (a.is_floating_point() or a.is_complex()):
        equal = bool(torch.equal(a, b))
        diff = 0.0 if equal else float((a.long() - b.long()).abs().max()) if a.dtype != torch.bool else 1.0
        return equal, equal, diff, diff if not equal else 0.0, None
    a64 = a.to(torch.complex128 if a.is_complex() else torch.float64)
    b64 = b.to(a64.dtype)
    both_nan = torch.isnan(a64) & torch.isnan(b64)
    same = (a64 == b64) | both_nan
    bitwise = bool(same.all())
    if bitwise:
        return True, True, 0.0, 0.0, None
    finite = torch.isfinite(a64) & torch.isfinite(b64)
    nonfinite_mismatch = bool((~same & ~finite).any())
    diff = (a64 - b64).abs().masked_fill(~finite, 0)
    max_abs = float(diff.max())
    scale = float(b64.abs().masked_fill(~finite, 0).max())
    max_rel = max_abs / scale if scale > 0 else (math.inf if max_abs > 0 else 0.0)
    ok = (not nonfinite_mismatch) and bool(torch.allclose(a64, b64, rtol=tolerance.rtol, atol=tolerance.atol,
                                                          equal_nan=True))
    note = "NaN/inf where the other run is finite" if nonfinite_mismatch else None
    if nonfinite_mismatch:
        max_abs = math.inf
    return ok, False, max_abs, max_rel, note


def compare_values(replayed: dict[str, tuple[str, Any]], eager: dict[str, tuple[str, Any]],
                   tolerance: Tolerance) -> list[Comparison]:
    """Compare two readings name by name; names missing on one side are mismatches."""
    out: list[Comparison] = []
    for name in list(eager) + [n for n in replayed if n not in eager]:
        kind = (eager.get(name) or replayed.get(name))[0]
        if name not in replayed or name not in eager:
            side = "replay" if name not in replayed else "eager"
            out.append(Comparison(name, kind, False, False, note=f"missing after the {side} run"))
            continue
        a, b = replayed[name][1], eager[name][1]
        out.append(_compare_one(name, kind, a, b, tolerance))
    return out


def _compare_one(name: str, kind: str, a: Any, b: Any, tolerance: Tolerance) -> Comparison:
    code = _MISMATCH_CODES.get(name, _MISMATCH_CODES.get(kind))
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if kind == "rng":
            equal = bool(torch.equal(a.cpu(), b.cpu()))
            note = None if equal else "the generator advanced differently: random numbers drawn on the host, or an "\
                                      "unregistered generator"
            return Comparison(name, kind, equal, equal, note=note, code=None if equal else (code or "GS601"))
        ok, bitwise, max_abs, max_rel, note = compare_tensors(a, b, tolerance)
        return Comparison(name, kind, ok, bitwise, max_abs, max_rel, note, None if ok else _value_code(kind))
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        which = "replay" if a is None else "eager" if b is None else None
        note = f"None after the {which} run" if which else f"replay gives {type(a).__name__}, eager {type(b).__name__}"
        return Comparison(name, kind, False, False, note=note)
    equal = a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    note = None if equal else f"replay {_short(a)}, eager {_short(b)}"
    if not equal and kind == "python":
        note += ": Python state changes only in eager steps (Python code runs once, at capture)"
    if not equal and kind == "rng" and code == "GS502":
        note = "host random state advances only in eager steps: host randomness runs once, at capture"
    return Comparison(name, kind, bool(equal), bool(equal), note=note, code=None if equal else code)


def _value_code(kind: str) -> str | None:
    # A tensor that differs after replays: stale Python numbers or host data baked in at capture
    # are the usual reasons; the report says so without claiming which.
    return "GS301" if kind in ("parameter", "optimizer-state", "output", "tensor", "buffer", "grad") else None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def leaves_with_names(value: Any, root: str = "output") -> list[tuple[str, Any]]:
    """Pytree leaves named like `output[0]['logits']`."""
    import torch.utils._pytree as pytree

    try:
        flat, _ = pytree.tree_flatten_with_path(value)
    except Exception:
        return [(root, value)]
    return [(root + pytree.keystr(path), leaf) for path, leaf in flat]


def clone_tree(value: Any) -> Any:
    import torch.utils._pytree as pytree

    return pytree.tree_map(lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v, value)


def merge_step_comparisons(per_step: list[list[Comparison]]) -> list[Comparison]:
    """One comparison per output leaf over all replayed steps: the worst step, and which first differed."""
    merged: dict[str, Comparison] = {}
    first_bad: dict[str, int] = {}
    for step, comparisons in enumerate(per_step, 1):
        for c in comparisons:
            current = merged.get(c.name)
            if not c.ok and c.name not in first_bad:
                first_bad[c.name] = step
            if current is None:
                merged[c.name] = Comparison(**asdict(c))
                continue
            current.ok = current.ok and c.ok
            current.bitwise = current.bitwise and c.bitwise
            for key in ("max_abs", "max_rel"):
                mine, theirs = getattr(current, key), getattr(c, key)
                if theirs is not None and (mine is None or theirs > mine):
                    setattr(current, key, theirs)
            if c.note and not current.note:
                current.note = c.note
            current.code = current.code or c.code
    for name, step in first_bad.items():
        c = merged[name]
        c.note = f"first differs at step {step}" + (f"; {c.note}" if c.note else "")
    return list(merged.values())


def describe_objects(objects: Iterable[tuple[str, Any]]) -> list[str]:
    return Tracked(list(objects)).summary()
