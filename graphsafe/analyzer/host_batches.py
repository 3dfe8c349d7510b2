"""Host batches handed to helpers that move them to the GPU.

A training loop's batch comes from a data loader, in host memory (host_resident.record_loop).
Handed to a helper (`batch_to_device(batch, device)`, `batch = self.preprocess_batch(batch)`) that
moves it, or its entries, to the device (`batch[k] = v.to(device)` for `k, v in batch.items()`),
the move is a host-to-device copy inside the region: refused during capture unless the memory is
pinned, and on every replay it copies the capture's batch again. The walker sees each side alone,
so both reports carry a condition the project pass decides:

- the helper's move, HOST_BATCH_PARAM (function, parameter): a call of the function that the
  regions reach hands that parameter a host batch (argument slot HOST_BATCH_SLOT), and none hands
  it a tensor of the step;
- the call, HOST_BATCH_CALL (class of the calling code, slots, refs): a function it resolves to
  moves the parameter that slot fills so (a HOST_BATCH_PARAM report on it).
A helper given device tensors by every caller moves nothing: no report.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.analyzer import host_copy_helpers
from graphsafe.analyzer.nodes import own_nodes

HOST_BATCH_SLOT = "HB"  # an argument holding a data loader's batch (host memory)
HOST_BATCH_PARAM = "host-batch-param"
HOST_BATCH_CALL = "host-batch-call"


def moved_parameter(receiver: cst.BaseExpression, function: cst.FunctionDef | None, params) -> str | None:
    """The parameter whose entries `receiver` is: `batch[k]`, or a value a loop of the function
    takes from them (`for k, v in batch.items()`, `for v in batch.values()`). A parameter moved
    as a whole is another helper's shape (a CPU-tested move: host_move_helpers.py)."""
    if type(receiver) is cst.Subscript:  # `batch["image"]`, `batch[k]`: an entry under a key
        held = receiver.value
        keyed = len(receiver.slice) == 1 and type(receiver.slice[0].slice) is cst.Index and type(
            receiver.slice[0].slice.value) in (cst.SimpleString, cst.Name)
        return held.value if keyed and type(held) is cst.Name and held.value in params else None
    if type(receiver) is not cst.Name or function is None:
        return None
    return _entry_names(function, tuple(params)).get(receiver.value)


_ENTRIES: dict[tuple[int, tuple], tuple[cst.FunctionDef, dict[str, str]]] = {}  # one scan per function


def _entry_names(function: cst.FunctionDef, params: tuple) -> dict[str, str]:
    """The names the function's loops bind to a parameter's entries → that parameter."""
    key = (id(function), params)
    held = _ENTRIES.get(key)
    if held is not None and held[0] is function:  # (an id is reused only after its node is gone)
        return held[1]
    found: dict[str, str] = {}
    for node in _loops(function.body):
        source = _iterated_parameter(node.iter, params)
        if source is not None:
            found.update(dict.fromkeys(_bound_values(node.target, node.iter), source))
    if len(_ENTRIES) > 256:
        _ENTRIES.clear()
    _ENTRIES[key] = (function, found)
    return found


def _loops(root: cst.CSTNode):
    return (node for node in own_nodes(root) if type(node) is cst.For)


def _iterated_parameter(iterable: cst.BaseExpression, params) -> str | None:
    if (type(iterable) is cst.Call and type(iterable.func) is cst.Attribute and not iterable.args
            and iterable.func.attr.value in ("items", "values") and type(iterable.func.value) is cst.Name
            and iterable.func.value.value in params):
        return iterable.func.value.value
    return None


def _bound_values(target: cst.BaseExpression, iterable: cst.BaseExpression) -> set[str]:
    """The names a loop binds to the iterated values (`v` of `for k, v in d.items()`)."""
    if type(iterable) is cst.Call and iterable.func.attr.value == "items":
        if type(target) in (cst.Tuple, cst.List) and len(target.elements) == 2 and type(target.elements[1].value) is cst.Name:
            return {target.elements[1].value.value}
        return set()
    return {target.value} if type(target) is cst.Name else set()


def param_holds(project, condition: tuple[str, ...]) -> bool:
    """Does a call of the function from the code the regions reach (for a region root: any call;
    its own recursive calls aside) hand this parameter a host batch, and none a tensor of the step?"""
    function, name = condition[1], condition[2]
    slots = project.param_slots(function, name)
    calls = [(caller, site) for caller, site in project.calls_into(function) if caller != function]
    if not project.is_root(function):  # a region root is called from outside the regions
        calls = [(caller, site) for caller, site in calls if project.is_reached(caller)]
    # a call known to hand device data (a tensor, a dict of tensors of the step) contradicts; one
    # handing on a parameter of its own (`super().preprocess_batch(batch)`) or a value of unknown
    # kind neither confirms nor contradicts
    given = [value for _, site in calls for slot, value in site if slot in slots]
    return HOST_BATCH_SLOT in given and not any(value in _DEVICE_SLOTS for value in given)


_DEVICE_SLOTS = frozenset({"T", "B", "L", "D"})  # returns.py's slots of tensors of the step


def call_holds(project, condition: tuple[str, ...]) -> bool:
    """Does a function the call resolves to move a parameter the call hands a host batch?"""
    for unit, names in host_copy_helpers.callee_parameters(project, condition):
        if any(hit.code == "GS402" and hit.condition and hit.condition[0] == HOST_BATCH_PARAM
               and hit.condition[2] in names for hit in unit.hits):
            return True
    return False
