"""Cross-file return kinds: what a project function defined in another file returns.

The per-file walk cannot know that `log_probs, lens = model(x)` gives tensors when `forward`
lives in another module. It leaves such values unknown, names the call by a *pending id*
(`method:pkg.model.CTC::__call__`, `global:pkg.decode.greedy`, `self:encode@pkg.m.Cls`, with
`#i` for element i of a returned tuple), and lists in `FileFacts.wanted` the ids a rule asked
about. Each function's facts carry a summary of what it returns (`Unit.returns`).

The project pass resolves every wanted id through the call graph and the summaries (following
`@pid` slots through further calls, a few levels deep) and walks again only the files for which
some wanted id turns out to be a tensor (or tuple of tensors), giving the walker those kinds.
Nothing else is re-walked, and a re-walk is cached under the file's content *and* the kinds it
was given, so a changed callee invalidates exactly the callers whose answers depend on it.

The same mechanism gives a function's parameter the kind its callers pass: a parameter whose
kind is unknown (no annotation, no number default) is pending as `arg:pkg.mod.f:name`, and it
resolves to a tensor kind when every call site the project resolves to `f` passes a tensor in
that slot (by position or keyword; `*(a, b)` by position; `*pieces` of tensors gives every
later position a tensor; a call that unpacks `*args`/`**kwargs` of unknown contents, or leaves
the parameter to its default, makes it unknown). Arguments that are themselves pending (a
caller's own parameter, a project call's result) are followed the same way.

A function annotated to return a project object (`-> KVCache`, `-> list[KVCache]`) exports
`O:`/`M:` slots; a file that stores such a call's result in `self.x` asks for it (the id with
OBJECT_PID) and is walked again with that class, so the call graph follows `self.x.method()`.

An attribute read on an instance of a class defined in another file (`batch.probs`,
`self.scheduler.sigmas`) is pending as `field:<class>:<attribute>`; each class exports the
slots of its attributes that hold a tensor or what a project call returns (`ClassInfo.attr_slots`),
looked up through base classes. An attribute of what a project call returns (`terms.kl_per_dim`
with `terms = elbo(...)`) is pending as `rfield:<attribute>|<call's pid>`: the class comes from
the callee's return annotation (or the constructor it returns), the kind from that class's slots.

Not covered: attributes of objects whose class is unknown here, unannotated object returns, `*args` returns, functions that return
different shapes on different paths (merged to unknown; except a tensor on one path and a tuple
of tensors on another, whose elements are tensors either way), and calls through dynamic dispatch
the call graph does not resolve.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from graphsafe.analyzer import tensorness as T
from graphsafe.analyzer.facts import CallRef, FileFacts
from graphsafe.analyzer.pids import ARG_PID, EITHER, ELEMENT, FIELD_PID, FUNCTION_SLOT, OBJECT_PID, RETURNED_FIELD_PID, USES_PID  # noqa: F401 (walker imports them from here)
from graphsafe.analyzer.run_facts import markers

_MAX_DEPTH = 6
# what a pending id resolves to while it is itself being resolved (see ReturnKinds._kind)
_FEEDBACK = T.Kind("unknown", why="fed back")
# H: in host memory; D: a dict of tensors
_SLOT_KINDS = {"T": T.TENSOR, "B": T.BOOL_TENSOR, "L": T.TENSOR_TUPLE, "H": T.TENSOR, "D": T.TENSOR_DICT}


def _merge_slot(a: str, b: str) -> str:
    if a == b:
        return a
    if a in "TB" and b in "TB":
        return "T"
    for prefix in ("O:", FUNCTION_SLOT):  # `return Shift(n)` / `return Ring(n)`: either
        if a.startswith(prefix) and b.startswith(prefix):
            return prefix + "|".join(dict.fromkeys(a[2:].split("|") + b[2:].split("|")))
    return "?"


def _delegated_objects(returns: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """`return self._build_leaf(...)` or `return half` (a recursive call's result) on some paths,
    `return TreeInfo(...)` on others (a recursive builder, a factory delegating its base case):
    the function returns what it makes itself, so the delegated returns count as that class."""
    if not all(len(r) == 1 for r in returns):
        return returns
    made = [r for r in returns if r[0].startswith("O:")]
    if not made or not all(r[0].startswith("O:") or (r[0].startswith("@") and EITHER not in r[0] and "#" not in r[0])
                           for r in returns):
        return returns
    return made


def summarize_returns(returns: list[tuple[str, ...]]) -> tuple[str, ...]:
    """One summary for all of a function's `return`s; () when unknown or never a tensor."""
    if not returns:
        return ()
    returns = _delegated_objects(returns)
    first = returns[0]
    for other in returns[1:]:
        if len(other) != len(first) or (other[0] == "tuple") != (first[0] == "tuple"):
            return _tensor_or_tuple(returns)
        first = tuple(x if i == 0 and x == "tuple" else _merge_slot(x, y) for i, (x, y) in enumerate(zip(first, other)))
    slots = first[1:] if first[0] == "tuple" else first
    if not any(s in _SLOT_KINDS or s.startswith(("@", "O:", "M:", FUNCTION_SLOT)) for s in slots):
        return ()
    return first


def _tensor_or_tuple(returns: list[tuple[str, ...]]) -> tuple[str, ...]:
    """`return out` on one path, `return out, aux` on another (a model in eval vs train mode):
    ("either", "T", "T"). What the call gives as a whole is unknown, but each element of it is
    a tensor either way (a tensor unpacks into its rows), so `out, aux = model(x)` gets tensors."""
    tuples = [r[1:] for r in returns if r[0] == "tuple"]
    singles = [r for r in returns if r[0] != "tuple"]
    if (len({len(t) for t in tuples}) != 1 or not all(s in ("T", "B") for t in tuples for s in t)
            or not all(len(r) == 1 and r[0] in ("T", "B") for r in singles)):
        return ()
    return ("either", *tuples[0])


def _parse(pid: str) -> tuple[list[CallRef], str | None, int | None]:
    base, _, index = pid.partition("#")
    refs_text, _, class_key = base.partition("@")
    refs = []
    for part in refs_text.split(";"):
        kind, _, target = part.partition(":")
        refs.append(CallRef(kind, target))
    return refs, class_key or None, int(index) if index.isdigit() else None


class ReturnKinds:
    """Resolves pending ids against the project's call graph and return summaries."""

    def __init__(self, project) -> None:
        self.project = project
        self._memo: dict[str, T.Kind | None] = {}
        self._active: set[str] = set()  # ids being resolved (a recursion asks one again)

    def kind(self, pid: str, depth: int = 0) -> T.Kind | None:
        """A tensor kind for `pid`, or None when it is not known to be one."""
        found = self._kind(pid, depth)
        return None if found is _FEEDBACK else found

    def _kind(self, pid: str, depth: int) -> T.Kind | None:
        if pid in self._active:  # asked again while being answered: a value fed back (recursion)
            return _FEEDBACK
        if pid in self._memo:
            return self._memo[pid]
        self._active.add(pid)
        try:
            result = self._resolve(pid, depth) if depth < _MAX_DEPTH else None
        finally:
            self._active.discard(pid)
        if result is not _FEEDBACK:  # an answer that hangs on an open question is not final
            self._memo[pid] = result
        return result

    def _resolve(self, pid: str, depth: int) -> T.Kind | None:
        if EITHER in pid:  # `kinetic(r) + pe`: a tensor when any operand is one
            if pid.endswith(OBJECT_PID):
                return None
            for part in pid.split(EITHER):
                found = self.kind(part, depth)
                if found is not None and found.is_tensor:
                    return T.Kind(T.TENSOR.tag, why=found.why or _made_by(part))
            return None
        if pid.endswith(ELEMENT):  # a loop variable over the value
            whole = self.kind(pid[: -len(ELEMENT)], depth)
            if whole is None or not (whole.is_tensor or whole.tag == "tensor-tuple"):
                return None
            return T.BOOL_TENSOR if whole.is_bool_tensor else T.TENSOR
        if pid.endswith(OBJECT_PID):
            found = self._objects(pid[: -len(OBJECT_PID)])
            return found if found is not None and found.tag in ("object", "modules") else None
        if pid.startswith(USES_PID):
            return self._uses_as_tensor(pid[len(USES_PID):])
        if pid.startswith(ARG_PID):
            function, _, name = pid[len(ARG_PID):].rpartition(":")
            found = self._argument_kind(function, name, depth)
            if found is not None and found.is_tensor:  # the reason a report prints (this parameter's, not a caller's)
                caller = ".".join(function.split(".")[-2:]) if function.rpartition(".")[2].startswith("__") else function.rpartition(".")[2]
                found = T.Kind(found.tag, found.refs, why=f"every call of `{caller}` passes a tensor as `{name}`")
            return found
        if pid.startswith(RETURNED_FIELD_PID):  # the class comes from the callee's return annotation
            attr, _, made = pid[len(RETURNED_FIELD_PID):].partition("|")
            returned = self._passed_objects(made) if made.startswith(ARG_PID) else self._objects(made)
            if returned is None or returned.tag != "object" or not returned.refs:
                return None
            found = [self._held(c, attr, depth) for c in returned.refs]
            if any(k is _FEEDBACK for k in found):
                return _FEEDBACK  # `diverging = half.diverging` in the builder that makes `half`
            return T.TENSOR if all(k is not None and k.is_tensor for k in found) else None
        if pid.startswith(FIELD_PID):
            classes, _, attr = pid[len(FIELD_PID):].rpartition(":")
            found = [self._held(c, attr, depth) for c in classes.split("|")]
            return T.TENSOR if found and all(k is not None and k.is_tensor for k in found) else None
        refs, class_key, index = _parse(pid)
        found: list[T.Kind | None] = []
        for ref in refs:
            for key in self.project.callees(ref, class_key):
                if ref.kind == "global" and self.project.resolve_symbol(ref.target) in self.project.classes:
                    return None  # a constructor call makes an object, not what __init__ returns
                summary = self.project.units[key].unit.returns
                found.append(self._from_summary(summary, index, depth))
        if not found or any(k is None for k in found):
            return None
        merged = found[0]
        for k in found[1:]:
            merged = T.merge(merged, k)
        return merged if merged.is_tensor or merged.tag == "tensor-tuple" or merged == T.TENSOR_DICT else None

    def _held(self, class_name: str, attr: str, depth: int, seen: frozenset = frozenset()) -> T.Kind | None:
        """The tensor kind the project class (or a base) keeps in `attr`, if it keeps one."""
        key = self.project.resolve_symbol(class_name)
        info = self.project.classes.get(key) if key else None
        if info is None or key in seen:
            return None
        for name, slot in info.attr_slots:
            if name == attr:
                return self._slot(slot, depth)
        for base in info.bases:
            found = self._held(base, attr, depth, seen | {key})
            if found is not None:
                return found
        return None

    def _passed_objects(self, pid: str) -> T.Kind | None:
        """`arg:<function>:<parameter>`: the project classes of the objects its callers pass."""
        function, _, name = pid[len(ARG_PID):].rpartition(":")
        classes = self.project._passed_classes(function, name)
        return T.instance_of(*classes) if classes else None

    def _uses_as_tensor(self, question: str) -> T.Kind | None:
        """`<dotted function>:<slot>`: a tensor where every function the name resolves to uses
        the parameter at that slot as a tensor (Unit.tensor_params)."""
        target, _, slot = question.rpartition(":")
        if self.project.resolve_symbol(target) in self.project.classes:
            return None  # a constructor: `__init__`'s parameters say nothing here
        keys = self.project.callees(CallRef("global", target), None)
        for key in keys:
            unit = self.project.units[key].unit
            name = unit.params[int(slot)] if slot.isdigit() and int(slot) < len(unit.params) else slot
            if name not in unit.tensor_params:
                return None
        if not keys:
            return None
        return T.Kind(T.TENSOR.tag, why=f"`{target.rpartition('.')[2]}` uses it as a tensor")

    def _objects(self, pid: str) -> T.Kind | None:
        """The project class every function `pid` resolves to is annotated to return."""
        refs, class_key, index = _parse(pid)
        found = None
        for ref in refs:
            for key in self.project.callees(ref, class_key):
                summary = self.project.units[key].unit.returns
                if index is not None:  # `model, opt = build(cfg)`: element `index` of a returned tuple
                    slot = summary[1 + index] if summary[:1] == ("tuple",) and index + 1 < len(summary) else ""
                else:
                    slot = summary[0] if len(summary) == 1 else ""
                if not slot.startswith(("O:", "M:")):
                    return None
                classes = tuple(self.project.resolve_symbol(c) or c for c in slot[2:].split("|"))
                kind = T.instance_of(*classes) if slot[0] == "O" else T.module_set(*classes)
                if found is not None and found != kind:
                    return None
                found = kind
        return found

    def _argument_kind(self, function: str, name: str, depth: int) -> T.Kind | None:
        """The tensor kind every resolved call site passes to parameter `name` of `function`."""
        located = self.project.units.get(function)
        sites = self.project.call_sites().get(function)
        if located is None or not sites:
            return None
        params = located.unit.params
        position = str(params.index(name)) if name in params else None
        merged = None
        for slots in sites:
            code, spread, spread_dict = None, False, None
            if ("*", "?") in slots and not any(slot == name or slot == position for slot, _ in slots):
                # `self.update(*batch, w)` in an eager fallback, beside `self.update(*self.static, w)`
                # spreading tensors: a site that says nothing about the slot is left out (one that
                # says something else still decides, and some site must say)
                continue
            for slot, value in slots:
                if slot == "*":
                    return None  # `f(*args)`, `f(**batch)`: which argument lands where is unknown
                if slot == "**":  # `f(**batch)`: a dict of tensors fills what no argument names
                    spread_dict = value
                    continue
                if slot.startswith("*"):  # `f(x, *batch)`: positions from here on get elements
                    if position is not None and int(position) >= int(slot[1:]) and code is None:
                        code, spread = value, True
                elif slot == name or slot == position:
                    code = value
            if code is None and spread_dict is not None:
                kind = T.TENSOR if self._slot(spread_dict, depth) == T.TENSOR_DICT else None
            else:
                kind = self._slot(code, depth) if code is not None else None
            if kind is _FEEDBACK:
                # a recursive call passing back a field of what this very parameter builds
                # (`Tree(..., half.diverging)`): it adds no kind the other call sites do not give
                continue
            if spread and kind is not None:
                kind = T.TENSOR if kind.is_tensor or kind.tag == "tensor-tuple" else None
            if kind is None:
                return None
            merged = kind if merged is None else T.merge(merged, kind)
        if merged is None:
            return None
        return merged if merged.is_tensor or merged.tag == "tensor-tuple" else None

    def _slot(self, slot: str, depth: int) -> T.Kind | None:
        if slot.startswith("@"):
            return self._kind(slot[1:], depth + 1)
        return _SLOT_KINDS.get(slot)

    def _from_summary(self, summary: tuple[str, ...], index: int | None, depth: int) -> T.Kind | None:
        if not summary:
            return None
        if summary[0] == "either":  # a tensor or a tuple of tensors: only its elements are known
            return T.TENSOR if index is not None else None
        if summary[0] == "tuple":
            elements = summary[1:]
            if index is not None:
                return self._slot(elements[index], depth) if index < len(elements) else None
            kinds = [self._slot(s, depth) for s in elements]
            return T.TENSOR_TUPLE if kinds and all(k is not None and k.is_tensor for k in kinds) else None
        kind = self._slot(summary[0], depth)
        if index is not None:
            if kind is not None and kind.is_tensor:
                return kind  # `box_iou(a, b)[0]`: a row of a tensor (of a mask: a mask)
            return T.TENSOR if kind is not None and kind.tag == "tensor-tuple" else None
        return kind


def _made_by(pid: str) -> str:
    """Why an operand pending as `pid` is a tensor, for a report: "`energy_of(...)` returns a tensor"."""
    if pid.startswith(ARG_PID):
        return f"every caller passes a tensor as `{pid.rpartition(':')[2]}`"
    if pid.startswith((FIELD_PID, RETURNED_FIELD_PID)):
        return "a field that holds a tensor"
    target = pid.split(";")[0].partition(":")[2].split("@")[0].split("#")[0]
    owner, _, name = target.replace("::", ".").rpartition(".")
    if name == "__call__":
        name = owner.rpartition(".")[2]
    return f"`{name}(...)` returns a tensor"


def external_kinds(facts: FileFacts, resolver: ReturnKinds) -> dict[str, T.Kind]:
    """The wanted ids of one file that resolve to tensor kinds (empty: no re-walk needed)."""
    found = {}
    for pid in facts.wanted:
        kind = resolver.kind(pid)
        if kind is not None:
            found[pid] = kind
            # `u * item_vector(i)`: the re-walk looks each operand up by its own id
            for part in pid.split(EITHER) if EITHER in pid else ():
                part_kind = resolver.kind(part)
                if part_kind is not None:
                    found[part] = part_kind
    return found


def refine(facts: list[FileFacts], project: Callable[[list[FileFacts]], object],
           rewalk: Callable[[list[tuple[int, dict[str, T.Kind]]]], dict[int, FileFacts | None]],
           only: Callable[[int], bool] = lambda i: True) -> list[FileFacts]:
    """Facts with the files whose wanted ids resolve to tensors walked again: `rewalk` gets
    every (file index, kinds) at once, so that it can spread them over a pool. `project` makes
    the call graph of the facts (callgraph.Project: passed in, as the call graph imports this
    module's pending-id prefixes)."""
    if not any(f.wanted or f.observed for f in facts):
        return facts
    resolver = ReturnKinds(project(facts))
    todo = []
    for i, f in enumerate(facts):
        if (f.wanted or f.observed) and only(i):
            external = external_kinds(f, resolver)
            external.update(markers(f, external))  # what a traced run saw settles what is left
            if external:
                todo.append((i, external))
    if not todo:
        return facts
    refined = list(facts)
    for i, again in rewalk(todo).items():
        if again is not None:
            refined[i] = replace(again, observed=facts[i].observed) if facts[i].observed else again
    return refined


def external_key(external: dict[str, T.Kind]) -> str:
    """A stable text for a re-walk's inputs, part of its cache key."""
    return ";".join(f"{pid}={kind.tag}" for pid, kind in sorted(external.items()))
