"""Project level: resolve calls across files, find region roots, walk from them to hazards.

Every diagnostic says why its code is in a captured region: the region root and the shortest
call chain from it (`train_step → GPT.forward → Block.forward`).
"""

from __future__ import annotations

import fnmatch
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from graphsafe.analyzer import default_guards, generators, hooks, host_batches, host_copy_helpers, host_effect_helpers, host_move_helpers, param_paths, step_loops, untyped_calls
from graphsafe.analyzer.class_values import CLASS_SLOT, NEW_PID
from graphsafe.analyzer.facts import (ANY_OF, GROUP_KEY, HELD_COUNTER, LOOP, SCHEDULED_LR, CallRef, ClassInfo, FileFacts, Unit,
                                      parts_of)
from graphsafe.analyzer.names import STAR_PREFIX, TABLE_SUFFIX
from graphsafe.analyzer.pids import ARG_PID, FUNCTION_SLOT
from graphsafe.analyzer.run_facts import ObservedIndex
from graphsafe.model import CallSite, Confidence, Diagnostic, Hit, Region, RegionKind

_MAX_ALIAS_DEPTH = 8
# Hit condition: (REBOUND_AFTER_REPLAY, rebinding function, "reader,reader", "other rebinder,...",
# "class::attr" whose readers through instances, in any file, count too)
REBOUND_AFTER_REPLAY = "rebound-after-replay"
# Hit condition: (REACHES_CAPTURE, class of the calling code, depth, "kind|target" call refs...):
# one of these calls runs a `torch.cuda.graph` block or a capture_begin segment within depth calls
REACHES_CAPTURE = "reaches-capture"
# Hit condition: (NOT, condition...): holds where the condition after it does not
NOT = "not"
# Hit condition: (REACHED_ANY, unit, unit...): one of these units is reached from a region (the
# method that reads the state another method rebinds: analyzer/step_state.py)
REACHED_ANY = "reached-any"


@dataclass(frozen=True)
class Reach:
    parent: dict[str, str | None]  # unit key → its caller on a shortest chain (None: a region root)
    root_of: dict[str, Region]
    order: tuple[str, ...]  # breadth-first
    called_at: dict[str, int] = field(default_factory=dict)  # unit key → line of its call in `parent`


@dataclass(frozen=True)
class _Located:
    unit: Unit
    path: str


_AUTOGRAD_FUNCTIONS = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})


class Project:
    def __init__(self, files: list[FileFacts], library: list[FileFacts] = ()) -> None:
        """`library`: facts of installed libraries' files (analyzer/libraries.py): their functions
        and classes are called like the project's, but they hold no regions of their own."""
        self.files = files
        self.library_paths = frozenset(f.path for f in library)
        self.units: dict[str, _Located] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.aliases: dict[str, dict[str, str]] = {}
        self._by_suffix: dict[str, list[str]] | None = None
        self._stars: dict[str, dict[str, str]] | None = None  # _star_exports
        self._top_names: dict[str, set[str]] = {}  # module → the names it defines (for _star_exports)
        self._subclasses: dict[str, list[str]] | None = None
        self._methods_named: dict[str, list[str]] | None = None
        self._library_methods: frozenset[str] | None = None
        self._untyped: dict[tuple[str, str], list[str]] = {}  # untyped_targets
        self._constructed: frozenset[str] | None = None
        self._abstracts: dict[str, frozenset[str]] = {}  # class → its bodiless methods (_duck_implementations)
        self._ducks: dict[str, list[str]] = {}  # class → the classes built to its shape
        self._scalar_index: dict[str, list[tuple[str, tuple]]] | None = None
        self._call_sites: dict[str, list[tuple[tuple[str, str], ...]]] | None = None
        # callee key → (caller, argument sources) of each entry of call_sites() (default_guards.py)
        self._site_callers: dict[str, list[tuple[str, tuple[tuple[str, str], ...]]]] = {}
        self._injected: dict[str, list[str]] | None = None
        self._building_sites = False
        self._callers: dict[str, list[str]] | None = None
        self._reachable: dict[str, str | None] = {}
        self._capturing: frozenset[str] | None = None  # functions holding a capture block
        self._param_memo: dict[frozenset, dict[tuple[str, str], bool]] = {}
        for i, facts in enumerate([*files, *library]):
            if i < len(files) or facts.module not in self.aliases:  # the project's own modules first
                self.aliases[facts.module] = dict(facts.aliases)
            for unit in facts.units:
                self.units.setdefault(unit.key, _Located(unit, facts.path))
            for info in facts.classes:
                self.classes.setdefault(info.key, info)
        self._library_classes = frozenset(info.key for facts in library for info in facts.classes) - \
            {info.key for facts in files for info in facts.classes} if library else frozenset()
        self._outside_sets = {pair for facts in files for pair in facts.outside_sets}
        self._group_keys = {key for facts in files for key in facts.group_keys}
        self._lr_changers = {key for facts in files for key in facts.lr_changers}
        self._held_counters = {key for facts in files for key in facts.held_counters}
        self._attr_readers: dict[tuple[str, str], list[str]] | None = None
        self._resolved: dict[str, str | None] = {}
        self._methods: dict[tuple[str, str], str | None] = {}
        self._units_by_class: dict[str, list[str]] | None = None
        self.observed = ObservedIndex(files)  # what a traced run saw (analyzer/run_facts.py)

    # ---------------------------------------------------------------- symbols
    def resolve_symbol(self, name: str, depth: int = 0) -> str | None:
        """A dotted name → the key of a unit or class defined in the project, or None."""
        if name in self.units or name in self.classes:
            return name
        if name in self._resolved:
            return self._resolved[name]
        self._resolved[name] = None  # guards cycles
        result = None
        parts = name.split(".")
        # Re-exports: `pkg.GPT` where pkg/__init__.py does `from .model import GPT`.
        if depth < _MAX_ALIAS_DEPTH:
            for i in range(len(parts) - 1, 0, -1):
                module = ".".join(parts[:i])
                imported = self.aliases.get(module, {})
                target = imported.get(parts[i])
                if target is not None and target != name:
                    result = self.resolve_symbol(".".join([target, *parts[i + 1 :]]), depth + 1)
                    if result is not None:
                        break
                if target is None:
                    # `pkg.AffineGenerator` where pkg/__init__.py does `from ._2d import *`
                    home = self._star_exports(module).get(parts[i])
                    if home is not None:
                        result = self.resolve_symbol(".".join([home, *parts[i:]]), depth + 1)
                        if result is not None:
                            break
        if result is None and len(parts) >= 2:
            # The analysed root may differ from the import root: `mypkg.model.GPT` ↔ `model.GPT`.
            candidates = self._suffix_index().get(".".join(parts[-2:]), [])
            matching = [c for c in candidates if name.endswith(c) or c.endswith(name)]
            if len(matching) == 1:
                result = matching[0]
        self._resolved[name] = result
        return result

    def _star_exports(self, module: str) -> dict[str, str]:
        """Public name → the module defining or importing it, for the names `module` takes in
        with `from m import *` (through the starred modules' own star imports)."""
        if self._stars is None:
            self._stars = {}
            for key in [*self.units, *self.classes]:
                owner, _, name = key.rpartition(".")
                if owner in self.aliases:
                    self._top_names.setdefault(owner, set()).add(name)
        if module in self._stars:
            return self._stars[module]
        self._stars[module] = exports = {}  # guards cycles
        for key, starred in self.aliases.get(module, {}).items():
            if not key.startswith(STAR_PREFIX) or starred == module:
                continue
            own = self._top_names.get(starred, set()) | {k for k in self.aliases.get(starred, {})
                                                          if not k.startswith(STAR_PREFIX) and not k.endswith(TABLE_SUFFIX)}
            for name in own:
                if not name.startswith("_"):  # what `import *` takes without an `__all__`
                    exports.setdefault(name, starred)
            for name, home in self._star_exports(starred).items():
                exports.setdefault(name, home)
        return exports

    def _table_entries(self, name: str, depth: int = 0) -> list[str]:
        """The functions of the module-level table `name` (`pkg.center.CENTER_FUNCTIONS`),
        through re-exports of it; [] where no project module defines such a table."""
        module, _, table = name.rpartition(".")
        imported = self.aliases.get(module, {})
        entries = imported.get(table + TABLE_SUFFIX)
        if entries is not None:
            return entries.split("|")
        target = imported.get(table)
        if target is not None and target != name and depth < _MAX_ALIAS_DEPTH:
            return self._table_entries(target, depth + 1)
        return []

    def _suffix_index(self) -> dict[str, list[str]]:
        if self._by_suffix is None:
            index: dict[str, list[str]] = {}
            # library names are always full (found by their package's name): only the project's
            own = [k for k, located in self.units.items() if located.path not in self.library_paths]
            for key in own + [k for k in self.classes if k not in self._library_classes]:
                parts = key.rsplit(".", 2)  # only the last two parts matter: not a full split
                if len(parts) >= 2:
                    index.setdefault(".".join(parts[-2:]), []).append(key)
            self._by_suffix = index
        return self._by_suffix

    def lookup_method(self, class_key: str, name: str, seen: frozenset = frozenset()) -> str | None:
        """`Class.name` through the base classes (depth-first, like a simple MRO)."""
        cache_key = (class_key, name)
        if cache_key in self._methods:
            return self._methods[cache_key]
        result = None
        key = f"{class_key}.{name}"
        if key in self.units:
            result = key
        else:
            info = self.classes.get(class_key)
            if info is not None and class_key not in seen:
                for base in info.bases:
                    base_key = self.resolve_symbol(base)
                    if base_key in self.classes:
                        result = self.lookup_method(base_key, name, seen | {class_key})
                        if result:
                            break
        self._methods[cache_key] = result
        return result

    def overrides(self, class_key: str, name: str) -> list[str]:
        """Methods `name` defined by the project's subclasses of `class_key` (transitively), and
        those a subclass inherits from another of its bases where `class_key` has none with a
        body (a mixin's `self._before_forward()`, declared `...` in its protocol, runs the
        template's on `class Naive(SGDUpdate, BaseTemplate)`)."""
        found = []
        seen = {class_key}
        own = self.lookup_method(class_key, name)
        bodiless = own is None or self.units[own].unit.is_abstract
        stack = list(self._subclass_index().get(class_key, ()))
        while stack:
            sub = stack.pop()
            if sub in seen:
                continue
            seen.add(sub)
            key = f"{sub}.{name}"
            if key in self.units:
                found.append(key)
            elif bodiless and len(self.classes[sub].bases) > 1:
                inherited = self._method_with_body(sub, name)
                if inherited is not None and inherited != own and inherited not in found:
                    found.append(inherited)
            stack.extend(self._subclass_index().get(sub, ()))
        return sorted(found)

    def _method_with_body(self, class_key: str, name: str, seen: frozenset = frozenset()) -> str | None:
        """`Class.name` through the base classes, depth-first, passing over methods without a
        body of their own (Unit.is_abstract)."""
        key = f"{class_key}.{name}"
        if key in self.units and not self.units[key].unit.is_abstract:
            return key
        info = self.classes.get(class_key)
        if info is None or class_key in seen:
            return None
        for base in info.bases:
            base_key = self.resolve_symbol(base)
            if base_key in self.classes:
                found = self._method_with_body(base_key, name, seen | {class_key})
                if found:
                    return found
        return None

    def methods_named(self, name: str) -> list[str]:
        """Every project class's own method `name` (the callbacks a trainer calls by name)."""
        if self._methods_named is None:
            index: dict[str, list[str]] = {}
            for keys in self._class_units().values():
                for key in keys:
                    if self.units[key].path not in self.library_paths:  # the project's callbacks
                        index.setdefault(key.rpartition(".")[2], []).append(key)
            self._methods_named = index
        return sorted(self._methods_named.get(name, ()))

    def untyped_targets(self, name: str, near: str = "") -> list[str]:
        """The project methods a call of `name` on an object of unknown class runs, when the name
        is distinctive (analyzer/untyped_calls.py); of several, those nearest module `near`."""
        found = self._untyped.get((name, near))
        if found is not None:
            return found
        defining = self.methods_named(name)
        # one interface's implementations count once: the definitions no base class of theirs has
        roots = [key for key in defining if not self._inherits(self.units[key].unit.class_key, name)]
        if not untyped_calls.distinctive(name, roots, defining) or name in self._library_method_names():
            found = []
        else:
            chosen = {self.units[key].unit.class_key for key in (untyped_calls.nearest(roots, near) if near else roots)}
            found = [key for key in defining if any(self.is_subclass(self.units[key].unit.class_key, c) for c in chosen)]
        self._untyped[(name, near)] = found
        return found

    def _attr_from_call(self, class_key: str, path: str) -> bool:
        """Whether the first attribute of `path` on `class_key` is bound to what a project call
        returns (`self.caches = lm.make_caches(2)`), not to what callers pass."""
        first = path.partition(".")[0]
        info = self.classes.get(class_key)
        if info is None:
            return False
        return first in info.made or any(name == first and slot.startswith("@") and not slot.startswith("@" + ARG_PID)
                                         for name, slot in info.attr_slots)

    def _inherits(self, class_key: str | None, name: str) -> bool:
        """Whether a base class of `class_key` (the project's) has a method `name`."""
        info = self.classes.get(class_key) if class_key else None
        return info is not None and any(
            base_key in self.classes and self.lookup_method(base_key, name) is not None
            for base_key in (self.resolve_symbol(base) for base in info.bases))

    def _library_method_names(self) -> frozenset[str]:
        """Methods a followed library's classes define (`TensorDict.exclude`): an unknown object
        called with one of them may be that library's object."""
        if self._library_methods is None:
            self._library_methods = frozenset(
                key.rpartition(".")[2] for keys in self._class_units().values() for key in keys
                if self.units[key].path in self.library_paths)
        return self._library_methods

    def _constructed_classes(self) -> frozenset[str]:
        """Classes some code (the project's or a followed library's) constructs: directly, or
        through a module-level table of classes."""
        if self._constructed is None:
            made = set()
            for located in self.units.values():
                for ref in located.unit.calls:
                    if ref.kind != "global":
                        continue
                    targets = (self._table_entries(ref.target[: -len(TABLE_SUFFIX)])
                               if ref.target.endswith(TABLE_SUFFIX) else (ref.target,))
                    made.update(key for key in map(self.resolve_symbol, targets) if key in self.classes)
            self._constructed = frozenset(made)
        return self._constructed

    def _subclass_index(self) -> dict[str, list[str]]:
        if self._subclasses is None:
            index: dict[str, list[str]] = {}
            for key, info in self.classes.items():
                for base in info.bases:
                    base_key = self.resolve_symbol(base)
                    if base_key in self.classes and base_key != key:
                        index.setdefault(base_key, []).append(key)
            self._subclasses = index
        return self._subclasses

    def attr_classes(self, class_key: str, attr: str, seen: frozenset = frozenset()) -> tuple[str, ...]:
        info = self.classes.get(class_key)
        if info is None or class_key in seen:
            return ()
        found: dict[str, None] = {}
        for name, classes in info.attr_classes:
            if name == attr:
                found.update(dict.fromkeys(classes))
        for name, slot in info.attr_slots:
            if name == attr and slot.startswith("@" + ARG_PID):
                # what the constructor's callers pass, beside a declared class (a dataclass field
                # `callbacks: List[Callback]` given `[History()]`) or a default (`m or Default()`)
                passed = self._passed_classes(*slot[1 + len(ARG_PID):].rsplit(":", 1))
                if not found:
                    return passed
                found.update(dict.fromkeys(passed))
            if name == attr and slot.startswith("@" + NEW_PID):  # `self.attn = impl_cls()`: what callers pass
                found.update(dict.fromkeys(self._passed_classes(*slot[1 + len(NEW_PID):].rsplit(":", 1),
                                                                values=CLASS_SLOT)))
        if found:
            return tuple(found)
        return self._in_bases(info, seen, lambda base, seen: self.attr_classes(base, attr, seen)) or ()

    def _in_bases(self, info: ClassInfo, seen: frozenset, lookup):
        """The first base class (of the project) of `info` for which `lookup(base, seen)` finds
        something, and what it finds; None for none."""
        for base in info.bases:
            base_key = self.resolve_symbol(base)
            if base_key in self.classes:
                found = lookup(base_key, seen | {info.key})
                if found:
                    return found
        return None

    def _attr_functions(self, class_key: str, attr: str, seen: frozenset = frozenset()) -> list[str]:
        """The project functions the constructor's callers pass for what attribute `attr` keeps
        (`self.sample = sample`, built as `Codebook(sample=gumbel_sample)`), looked up through
        base classes."""
        info = self.classes.get(class_key)
        if info is None or class_key in seen:
            return []
        found = []
        for name, slot in info.attr_slots:
            if name != attr:
                continue
            if slot.startswith("@" + ARG_PID):
                found += self._passed_functions(*slot[1 + len(ARG_PID):].rsplit(":", 1), "__call__")
            elif slot.startswith("@") and not any(c in slot for c in "#|;"):  # one call's result
                found += self._returned_functions(slot[1:])  # `self.grid = self._grid_from_step(h)`
        if found:
            return found
        return self._in_bases(info, seen, lambda base, seen: self._attr_functions(base, attr, seen)) or []

    def _returned_functions(self, pid: str) -> list[str]:
        """The project functions the project call `pid` (`self:_grid_from_step@pkg.m.Solver`,
        `global:pkg.m.make`) returns: a factory's nested `def` (an "F:" return slot)."""
        text, _, class_key = pid.partition("@")
        kind, _, target = text.partition(":")
        if kind not in ("self", "global", "method", "super"):
            return []
        found = []
        for key in self.callees(CallRef(kind, target), class_key or None):
            returns = self.units[key].unit.returns
            if len(returns) == 1 and returns[0].startswith(FUNCTION_SLOT):
                found += [f for f in returns[0][len(FUNCTION_SLOT):].split("|")
                          if f in self.units and self.units[f].unit.is_function]
        return found

    def _path_classes(self, class_name: str, path: list[str]) -> list[str]:
        """The classes attribute path `path` reaches from an instance of `class_name`. An entry
        of a ModuleDict (`transformer.h`) is one step where the class records it (containers.py)."""
        classes = [class_name]
        i = 0
        while i < len(path) and classes:
            keys = [k for k in (self.resolve_symbol(c) for c in classes) if k]
            if i + 1 < len(path):
                entry = f"{path[i]}.{path[i + 1]}"
                found = list(dict.fromkeys(c for k in keys for c in self.attr_classes(k, entry)))
                if found:
                    classes, i = found, i + 2
                    continue
            classes = list(dict.fromkeys(c for k in keys for c in self.attr_classes(k, path[i])))
            i += 1
        return classes

    def attr_is_varying(self, class_name: str, attr: str, seen: frozenset = frozenset()) -> bool:
        """Is `attr` a Python number that class `class_name` (or a base) reassigns per step?"""
        class_key = self.resolve_symbol(class_name)
        info = self.classes.get(class_key) if class_key else None
        if info is None or class_key in seen:
            return False
        if attr in info.varying or self.observed.changed_attr(class_key, attr):
            return True
        if attr in info.advanced and self._kept_number(info, attr):
            return True
        if attr in info.numbers and any(  # a number attribute that code elsewhere sets in a loop
                a == attr and self.resolve_symbol(c) == class_key for c, a in self._outside_sets):
            return True
        return any(self.attr_is_varying(base, attr, seen | {class_key}) for base in info.bases)

    def _kept_number(self, info: ClassInfo, attr: str) -> bool:
        """Does every constructor call resolved to the class pass a Python number for the
        parameter that attribute `attr` keeps (`PIDController(h_init, ...)`)?"""
        slot = next((s for name, s in info.attr_slots if name == attr and s.startswith("@" + ARG_PID)), None)
        if slot is None:
            return False
        function, _, param = slot[1 + len(ARG_PID):].rpartition(":")
        located = self.units.get(function)
        sites = self.call_sites().get(function)
        if located is None or not sites:
            return False
        position = str(located.unit.params.index(param)) if param in located.unit.params else None
        given = [value for slots in sites for name, value in slots if name in (param, position)]
        return len(given) == len(sites) and all(value == "S" for value in given)

    def _call_targets_of_instance(self, class_name: str, method: str) -> list[str]:
        return [key for key, _ in self._instance_targets(class_name, method)]

    def _instance_targets(self, class_name: str, method: str) -> list[tuple[str, str | None]]:
        """(unit, receiver) pairs a call of `method` on an instance of `class_name` runs. A method
        the class inherits runs on that class (its `self` calls go to that class's overrides, not
        to every subclass's of the base): the receiver; None where the method is its own."""
        class_key = self.resolve_symbol(class_name)
        if class_key not in self.classes:
            return []
        if method == "__call__":
            found = self.lookup_method(class_key, "__call__") or self.lookup_method(class_key, "forward")
        else:
            found = self.lookup_method(class_key, method)
            if found and self.units[found].unit.is_property:  # `self.crit.matcher(x)`, as above
                return [self._on(found, class_key), *(t for cls in self.attr_classes(class_key, method)
                                                      for t in self._instance_targets(cls, "__call__"))]
            if not found:
                # `self.model.decoder(x)`: a submodule held by the instance, like `self.decoder(x)`
                # in the class itself (the "self" case below); else a method only its subclasses
                # define (`loss.loss_and_grads` on an `ELBO`): those the code constructs
                held = [t for cls in self.attr_classes(class_key, method) for t in self._instance_targets(cls, "__call__")]
                return held or [(o, None) for o in self._made_overrides(class_key, method)]
        if found and self.units[found].unit.is_abstract:
            # an object declared of an abstract class (`self.variant: dict[str, LoraVariant]`)
            # runs the override of one of its subclasses that the code constructs somewhere, or
            # of a class built to its shape without deriving from it (duck typing)
            return [self._on(found, class_key), *((o, None) for o in self._made_overrides(class_key, method)),
                    *((key, None) for key in self._duck_implementations(class_key, method) if key != found)]
        return [self._on(found, class_key)] if found else []

    def _made_overrides(self, class_key: str, method: str) -> list[str]:
        """The overrides of `method` in the subclasses of `class_key` that the code constructs; where
        it constructs none (a library whose users build `RandomMemory(...)`), every override, when
        there are few (untyped_calls.MAX_IMPLEMENTATIONS)."""
        overrides = self.overrides(class_key, method)
        made = self._constructed_classes()
        built = [o for o in overrides if self.units[o].unit.class_key in made]
        if built or len(overrides) > untyped_calls.MAX_IMPLEMENTATIONS:
            return built
        return overrides

    def _duck_implementations(self, class_key: str, method: str) -> list[str]:
        """`method` of each project class outside `class_key`'s subclasses that defines every one
        of its (two or more) bodiless methods: `IntegralController(nn.Module)`, which users give
        where `StepSizeController` is declared, with `init`, `adapt_step_size` and `merge_states`
        (the shape is the evidence: the user, not the package, may construct it)."""
        abstract = self._abstract_methods(class_key)
        if len(abstract) < 2 or method not in abstract:
            return []
        if class_key not in self._ducks:
            self._ducks[class_key] = [other for other in sorted(self._class_units())
                                      if other != class_key and not self.is_subclass(other, class_key)
                                      and all(f"{other}.{name}" in self.units for name in abstract)]
        return [f"{other}.{method}" for other in self._ducks[class_key]
                if not self.units[f"{other}.{method}"].unit.is_abstract]

    def _abstract_methods(self, class_key: str) -> frozenset[str]:
        """The names of the methods `class_key` itself declares without a body."""
        if class_key not in self._abstracts:
            self._abstracts[class_key] = frozenset(
                key.rpartition(".")[2] for key in self._class_units().get(class_key, ())
                if self.units[key].unit.is_abstract)
        return self._abstracts[class_key]

    def _on(self, key: str, class_key: str) -> tuple[str, str | None]:
        """Unit `key` run on an instance of `class_key`: its receiver where it is inherited."""
        return key, (class_key if self.units[key].unit.class_key not in (None, class_key) else None)

    def callees(self, ref: CallRef, class_key: str | None) -> list[str]:
        """The units a call may run, for code of class `class_key` on any instance of it."""
        return [key for key, _ in self.callees_on(ref, class_key, None)]

    def callees_on(self, ref: CallRef, class_key: str | None, receiver: str | None,
                   seen_calls: frozenset[str] | None = None) -> list[tuple[str, str | None]]:
        """(unit, receiver) pairs a call may run, for code of class `class_key` running on an
        instance of `receiver` (a subclass of `class_key`; None: any instance of it). Calls on
        `self` keep the receiver, so that a base class's `self.apply()` runs the receiver's
        override only, not every subclass's; calls on other objects start afresh (None).
        `seen_calls`: what a traced run saw this code call (unit keys), which narrows a `self`
        call's subclass overrides to those it ran."""
        if ref.kind in ("self", "prop", "super") and class_key is not None:
            base = receiver if receiver is not None and self.is_subclass(receiver, class_key) else class_key
            if ref.kind == "super":
                return [(key, base) for key in self._callees(ref, class_key)]
            targets = self._callees(ref, base)
            if seen_calls and ref.kind == "self":
                # a traced run saw what this code called: of the subclasses' overrides, only the
                # ones it ran (the class it ran on), not every sibling's
                others = set(self.overrides(base, ref.target)) - seen_calls
                targets = [t for t in targets if t not in others]
            return [(key, base if self.is_subclass(base, self.units[key].unit.class_key or "") else None)
                    for key in targets]
        if ref.kind in ("method", "attrs", "param"):  # the instance's class, where construction tells it
            found = self._instance_callees(ref)
            if found or ref.kind == "method":
                return found
            # an object of no known class: by the method's name (not what a project call made:
            # the project decides that one's class)
            if ref.kind == "attrs" and self._attr_from_call(*ref.target.split("::")[:2]):
                return []
            return [(key, None) for key in self.untyped_targets(ref.target.rpartition("::")[2],
                                                                 ref.target.partition("::")[0])]
        return [(key, None) for key in self._callees(ref, class_key)]

    def _autograd_function(self, target: str) -> list[str]:
        """`GatherLayer.apply(x)` of a project `torch.autograd.Function`: its `forward` runs now
        and its `backward` in the step's backward pass."""
        owner, _, method = target.rpartition(".")
        if method != "apply":
            return []
        class_key = self.resolve_symbol(owner)
        if class_key not in self.classes or not self._derives_from(class_key, _AUTOGRAD_FUNCTIONS):
            return []
        return [key for key in (self.lookup_method(class_key, "forward"), self.lookup_method(class_key, "backward"))
                if key is not None]

    def _derives_from(self, class_key: str, outside: frozenset[str], seen: frozenset = frozenset()) -> bool:
        """Is project class `class_key` derived from one of the `outside` (non-project) classes?"""
        info = self.classes.get(class_key)
        if info is None or class_key in seen:
            return False
        for base in info.bases:
            resolved = self.resolve_symbol(base) or base
            if base in outside or resolved in outside or self._derives_from(resolved, outside, seen | {class_key}):
                return True
        return False

    def is_subclass(self, class_key: str, base_key: str, seen: frozenset = frozenset()) -> bool:
        """Is project class `class_key` `base_key` or derived from it (through project classes)?"""
        if class_key == base_key:
            return True
        info = self.classes.get(class_key)
        if info is None or class_key in seen:
            return False
        return any(self.is_subclass(b, base_key, seen | {class_key})
                   for b in (self.resolve_symbol(base) for base in info.bases) if b in self.classes)

    def _instance_callees(self, ref: CallRef) -> list[tuple[str, str | None]]:
        """(unit, receiver) pairs of a call on an object of known class (CallRef kinds "method",
        "attrs", "param"; see _instance_targets)."""
        if ref.kind == "method":
            class_name, _, method = ref.target.partition("::")
            return self._instance_targets(class_name, method)
        if ref.kind == "param":
            function, name, method = ref.target.split("::")
            return [t for c in self._passed_classes(function, name) for t in self._instance_targets(c, method)] + [
                (f, None) for f in self._passed_functions(function, name, method)]
        class_name, path, method = ref.target.split("::")
        return [t for c in self._path_classes(class_name, path.split(".")) for t in self._instance_targets(c, method)]

    def _callees(self, ref: CallRef, class_key: str | None) -> list[str]:
        if ref.kind == "global":
            if ref.target.endswith(TABLE_SUFFIX):
                return [c for entry in self._table_entries(ref.target[: -len(TABLE_SUFFIX)])
                        for c in self._callees(CallRef("global", entry), None)]
            key = self.resolve_symbol(ref.target)
            if key is None:
                return self._autograd_function(ref.target)

            if key in self.classes:  # a constructor call runs __init__
                init = self.lookup_method(key, "__init__")
                return [init] if init else []
            return [key]
        if ref.kind == "method":
            class_name, _, method = ref.target.partition("::")
            return self._call_targets_of_instance(class_name, method)
        if ref.kind == "param":
            return self._param_targets(*ref.target.split("::"))
        if ref.kind == "untyped":  # `memory.sample_batch(n)` on an object of no known class
            near, _, name = ref.target.rpartition("::")
            return self.untyped_targets(name, near)
        if ref.kind == "hook":  # `getattr(cb, "on_batch_end")(...)` for each callback: any class's
            return self.methods_named(ref.target)
        if ref.kind == "named":  # `trigger_plugins(self, "before_forward")`: where it dispatches by that slot
            kind, target, slot, name = ref.target.rsplit("|", 3) if ref.target.count("|") >= 3 else ("", "", "", "")
            return [m for key in self._callees(CallRef(kind, target), class_key)
                    if _dispatches_slot(self.units[key].unit.dispatches, slot) for m in self.methods_named(name)]
        if ref.kind == "attrs":
            class_name, path, method = ref.target.split("::")
            return [t for c in self._path_classes(class_name, path.split("."))
                    for t in self._call_targets_of_instance(c, method)]
        if ref.kind == "returned":  # `self.grid(t)` with `self.grid = self._grid_from_step(h)`; a decorator's wrapper
            if ref.target.startswith("self:"):
                return self._returned_functions(f"{ref.target}@{class_key}") if class_key is not None else []
            return self._returned_functions(ref.target)
        if class_key is None:
            return []
        if ref.kind == "self":
            method = self.lookup_method(class_key, ref.target)
            # `self.update()` in a base class runs the subclass's override on its instances
            overrides = self.overrides(class_key, ref.target)
            if method or overrides:
                found = [method, *overrides] if method else overrides
                if method and self.units[method].unit.is_property:
                    # `self.matcher(x)`: calls what the property hands out (`return self._matcher`)
                    found += [t for cls in self.attr_classes(class_key, ref.target)
                              for t in self._call_targets_of_instance(cls, "__call__")]
                return found
            targets: list[str] = []
            for cls in self.attr_classes(class_key, ref.target):
                targets.extend(self._call_targets_of_instance(cls, "__call__"))
            return targets + [f for f in self._attr_functions(class_key, ref.target) if f not in targets]
        if ref.kind == "prop":
            method = self.lookup_method(class_key, ref.target)
            return [method] if method is not None and self.units[method].unit.is_property else []
        if ref.kind == "super":
            info = self.classes.get(class_key)
            for base in info.bases if info else ():
                base_key = self.resolve_symbol(base)
                if base_key in self.classes:
                    found = self.lookup_method(base_key, ref.target)
                    if found:
                        return [found]
        return []

    # ---------------------------------------------------------------- regions
    def regions(self, patterns: tuple[str, ...] = (), root: Path | None = None, marked: bool = True) -> list[Region]:
        """Region roots: functions and blocks the code marks (unless `marked` is False), then the
        functions `patterns` name."""
        found: dict[tuple[str, str | None], Region] = {}

        def add(region: Region) -> None:
            key = (region.function, region.receiver)
            current = found.get(key)
            if current is None or (current.confidence is not Confidence.CERTAIN and region.confidence is Confidence.CERTAIN):
                found[key] = region

        for key, located in self.units.items():
            for mark in located.unit.marks if marked else ():
                add(Region(key, located.unit.display, mark.kind, mark.confidence, located.path, mark.line))
        for facts in self.files if marked else ():
            for ref in facts.region_refs:
                for target in ref.targets:
                    for key in self.callees(target, ref.class_key):
                        unit = self.units[key].unit
                        add(Region(key, unit.display, ref.kind, ref.confidence, facts.path, ref.line))
        if patterns:
            for key, located in self.units.items():
                unit = located.unit
                if unit.is_function and located.path not in self.library_paths and \
                        matches_pattern(patterns, unit.display, located.path, root):
                    kind = RegionKind.PATTERN
                    add(Region(key, unit.display, kind, Confidence.CERTAIN, located.path, unit.line))
            for region in self.inherited_regions(patterns, root):
                add(region)
        return sorted(found.values(), key=lambda r: (r.confidence is not Confidence.CERTAIN, r.path, r.line, r.function,
                                                     r.receiver or ""))

    def inherited_regions(self, patterns: tuple[str, ...], root: Path | None) -> list[Region]:
        """Regions a pattern names through a class that inherits the method: `RandomAffine.forward`
        where `forward` is defined by a base class. They run on instances of the named class, so
        `self` calls in the inherited code go to that class's overrides (Region.receiver)."""
        found = []
        wanted = [p for p in patterns if p != "*" and "." in (p.partition("::")[2] or p)]
        if not wanted:
            return found
        for facts in self.files:
            for info in facts.classes:
                class_display = info.key[len(facts.module) + 1:] if info.key.startswith(facts.module + ".") else info.key
                for pattern in wanted:
                    class_pattern, _, method_pattern = (pattern.partition("::")[2] or pattern).rpartition(".")
                    if not fnmatch.fnmatchcase(class_display, class_pattern):
                        continue
                    for method in self._inherited_names(info.key, method_pattern):
                        display = f"{class_display}.{method}"
                        if not matches_pattern((pattern,), display, facts.path, root):
                            continue
                        key = self.lookup_method(info.key, method)
                        if key is not None and self.units[key].unit.class_key != info.key:
                            from graphsafe.analyzer.region_hints import def_line  # imports this module

                            unit, path = self.units[key].unit, self.units[key].path
                            found.append(Region(key, display, RegionKind.PATTERN, Confidence.CERTAIN, path,
                                                unit.line or def_line(path, unit.display), receiver=info.key))
        return found

    def _inherited_names(self, class_key: str, method_pattern: str) -> list[str]:
        """Method names matching `method_pattern` that `class_key` gets from a project base."""
        if not any(ch in method_pattern for ch in "*?["):
            return [method_pattern]
        names: set[str] = set()
        stack, seen = [class_key], set()
        while stack:
            current = stack.pop()
            info = self.classes.get(current)
            if info is None or current in seen:
                continue
            seen.add(current)
            prefix = current + "."
            names.update(k[len(prefix):] for k in self._class_units().get(current, ()))
            stack.extend(b for b in (self.resolve_symbol(base) for base in info.bases) if b in self.classes)
        return sorted(n for n in names if fnmatch.fnmatchcase(n, method_pattern))

    def _class_units(self) -> dict[str, list[str]]:
        if self._units_by_class is None:
            index: dict[str, list[str]] = {}
            for key, located in self.units.items():
                unit = located.unit
                if unit.is_function and unit.class_key and key == f"{unit.class_key}.{key.rpartition('.')[2]}":
                    index.setdefault(unit.class_key, []).append(key)
            self._units_by_class = index
        return self._units_by_class

    # ---------------------------------------------------------------- reachability
    def reachable_diagnostics(self, regions: list[Region]) -> list[Diagnostic]:
        """Hazards in units reachable from any region, each with its shortest chain."""
        return self.hit_diagnostics(self.reach(regions))

    def reach(self, regions: list[Region]) -> Reach:
        """Every unit reachable from a region, its caller on a shortest chain and its root.

        One breadth-first walk from all roots at once: O(units + calls) even with `--region '*'`.
        Depends on calls, classes and regions only, never on hits."""
        parent: dict[str, str | None] = {}
        called_at: dict[str, int] = {}
        root_of: dict[str, Region] = {}
        # A unit is walked once per receiver class it runs on (a base method reached from two
        # subclasses' regions calls each one's overrides); chains keep the first, shortest, reach.
        queue: deque[tuple[str, str | None]] = deque()
        visited: set[tuple[str, str | None]] = set()
        for region in regions:
            state = (region.function, region.receiver)
            if state not in visited:
                visited.add(state)
                queue.append(state)
                if region.function not in parent:
                    parent[region.function] = None
                    root_of[region.function] = region
        order: list[str] = []
        order_set: set[str] = set()
        injected = self.injected()
        while queue:
            key, receiver = queue.popleft()
            if key not in order_set:
                order_set.add(key)
                order.append(key)
            unit = self.units[key].unit
            in_library = self.units[key].path in self.library_paths
            extra: list[str] = []
            if unit.class_key in injected and key.rpartition(".")[2] in ("forward", "__call__"):
                extra = injected[unit.class_key]  # module surgery: the injected class runs in this forward
            lines = unit.call_lines or (0,) * len(unit.calls)
            seen_calls = frozenset(self.observed.calls_from(key)) or None
            found, sites = [], []  # sites: each call, its line and what static analysis resolves it to
            for index, (ref, line) in enumerate(zip(unit.calls, lines)):
                if index in unit.cold_calls:
                    continue  # runs only before the program is warm (default_guards.py)
                callees = self.callees_on(ref, unit.class_key, receiver, seen_calls)
                if in_library and ref.kind == "self" and len(callees) > 1:
                    callees = self._library_dispatch(ref, unit.class_key, receiver, callees)
                found += [(c, line) for c in callees]
                sites.append((ref, line, [c for c, _ in callees]))
            found += [((c, None), 0) for c in extra]
            # what a traced run saw it call; a base-class method of the object this code runs on
            # keeps running on it (its `self` calls go to that object's overrides only)
            here = receiver or unit.class_key
            found += [((c, here if here and self.is_subclass(here, self.units[c].unit.class_key or "") else None),
                       _observed_call_line(c, sites))
                      for c in self.observed.calls_from(key) if c in self.units]
            for (callee, callee_receiver), line in found:
                if callee not in parent:
                    parent[callee] = key
                    called_at[callee] = line
                    root_of[callee] = root_of[key]
                if (callee, callee_receiver) not in visited:
                    visited.add((callee, callee_receiver))
                    queue.append((callee, callee_receiver))
        return Reach(parent, root_of, tuple(order), called_at)

    def _library_dispatch(self, ref: CallRef, class_key: str | None, receiver: str | None,
                          callees: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
        """`self._clone()` in a library's base class, run on an object of no known class: the
        method the class (or the receiver) has, and the overrides of the project's subclasses,
        not every override in the library's own hierarchy (a tensordict's `clone` would otherwise
        run every storage backend's `_clone`, files and memory maps included)."""
        own = self.lookup_method(receiver or class_key or "", ref.target)
        if own is None:
            return callees
        # (also where its own is abstract: which storage backend a library object is stays unknown,
        # and every one of them is noise at the project's calling line)
        kept = [(c, r) for c, r in callees if c == own or self.units[c].path not in self.library_paths]
        return kept or callees

    def hit_diagnostics(self, reach: Reach, path: str | None = None, units: dict[str, Unit] | None = None
                        ) -> list[Diagnostic]:
        """The hits of the reachable units (of file `path` only, if given; `units` by key
        replace that file's units: same calls, newer hits)."""
        parent, root_of = reach.parent, reach.root_of
        diagnostics: dict[tuple, Diagnostic] = {}
        roots = frozenset(key for key, up in parent.items() if up is None)
        self._reachable = parent  # condition_holds asks whether a loop's unit is reached
        for key in reach.order:
            located = self.units[key]
            if path is not None and located.path != path or located.path in self.library_paths:
                continue  # a library's hazards are said at the project's calls into it (library_hits)
            unit = units[key] if units is not None and located.path == path else located.unit
            hits = unit.hits + self.observed.branch_hits(key, unit.hits)  # branches only a traced run saw
            if not hits:
                continue
            chain = self._chain(key, parent)
            sites = self._chain_sites(key, parent, reach.called_at)
            is_root = parent[key] is None
            for hit in hits:
                if hit.root_only and not is_root:
                    continue
                if hit.condition is not None and not self.condition_holds(hit.condition, key, roots):
                    continue
                if hit.guard and not self.guard_passes(hit.guard, roots):
                    continue
                ident = (located.path, hit.start, hit.code)
                if ident in diagnostics:
                    continue
                diagnostics[ident] = Diagnostic(
                    hit.code, hit.message + self._source_note(hit.condition, key, roots), located.path, hit.start, hit.end, root_of[key], chain, hit.fix,
                    call_sites=sites,
                )
        return list(diagnostics.values())

    def library_hits(self, reach: Reach) -> list[tuple[str, int, tuple[tuple[str, str, int], ...], Hit]]:
        """The hazards reached code runs inside library files, once per project call into them:
        (calling project unit, line of the call, the library steps as (unit, file, line where it
        calls the next or the hit's line), hit). Conditions are judged as for project hits."""
        if not self.library_paths:
            return []
        self._reachable = reach.parent
        roots = frozenset(key for key, up in reach.parent.items() if up is None)
        inside: dict[str, list] = {}  # library unit → the hits it reaches and how
        found = []
        for key in reach.order:
            located = self.units[key]
            if located.path in self.library_paths:
                continue
            unit = located.unit
            for index, (ref, line) in enumerate(zip(unit.calls, unit.call_lines or (0,) * len(unit.calls))):
                if index in unit.cold_calls:
                    continue
                for callee in self.callees(ref, unit.class_key):
                    if self.units[callee].path in self.library_paths and line > 0:
                        found += [(key, line, steps, hit) for steps, hit in self._library_closure(callee, inside, roots)]
        return found

    def _library_closure(self, start: str, memo: dict[str, list], roots: frozenset) -> list:
        """(steps, hit) for each hazard of the library units reached from `start` through library
        calls only, each by a shortest path (steps as in library_hits)."""
        if start in memo:
            return memo[start]
        parent: dict[str, tuple[str, int] | None] = {start: None}
        queue, results, seen_hits = deque([start]), [], set()
        while queue:
            key = queue.popleft()
            located = self.units[key]
            unit = located.unit
            for hit in unit.hits:
                if hit.root_only or (located.path, hit.start, hit.code) in seen_hits:
                    continue
                if hit.condition is not None and not self.condition_holds(hit.condition, key, roots):
                    continue
                if hit.guard and not self.guard_passes(hit.guard, roots):
                    continue
                seen_hits.add((located.path, hit.start, hit.code))
                steps, current, at = [], key, (located.path, hit.start.line)
                while current is not None:
                    steps.append((current, *at))
                    up = parent[current]
                    if up is not None:
                        at = (self.units[up[0]].path, up[1])
                        current = up[0]
                    else:
                        current = None
                results.append((tuple(reversed(steps)), hit))
            for index, (ref, line) in enumerate(zip(unit.calls, unit.call_lines or (0,) * len(unit.calls))):
                if index in unit.cold_calls:
                    continue
                callees = self.callees_on(ref, unit.class_key, None)
                if ref.kind == "self" and len(callees) > 1:
                    callees = self._library_dispatch(ref, unit.class_key, None, callees)
                for callee, _ in callees:
                    if callee not in parent and self.units[callee].path in self.library_paths:
                        parent[callee] = (key, line)
                        queue.append(callee)
        memo[start] = results
        return results

    def chain_of(self, key: str, reach: Reach) -> tuple[tuple[str, ...], tuple[CallSite, ...]]:
        """Unit `key`'s shortest chain from its region (display names) and where each step calls the next."""
        return self._chain(key, reach.parent), self._chain_sites(key, reach.parent, reach.called_at)

    def condition_holds(self, condition: tuple[str, ...], unit_key: str, roots: frozenset) -> bool:
        """A Hit/argument condition: a varying attribute of a class, or a number parameter that
        is per-step (the code using it is a region root, or some caller passes a per-step value)."""
        if not condition:
            return True
        if condition[0] == NOT:
            return not self.condition_holds(condition[1:], unit_key, roots)
        if condition[0] == ANY_OF:
            return any(self.condition_holds(part, unit_key, roots) for part in parts_of(condition))
        if condition[0] == LOOP:  # a loop variable or counter: per step where the loop drives the steps
            return unit_key not in self._reachable
        if condition[0] == step_loops.STEP_LOOP:  # a loop region's counter or carried value: in its body only
            return unit_key == condition[1]
        if condition[0] == GROUP_KEY:  # `group["momentum"]`: rewritten between steps somewhere
            return condition[1] in self._group_keys
        if condition[0] == SCHEDULED_LR:  # a scheduler built, or a warm-up outside the regions
            return any(key == "" or key not in self._reachable for key in self._lr_changers)
        if condition[0] == HELD_COUNTER:  # `engine.state.iteration`: advanced with `+=` somewhere
            return condition[1] in self._held_counters
        if condition[0] == REACHED_ANY:
            return any(unit in self._reachable for unit in condition[1:])
        if condition[0] == REBOUND_AFTER_REPLAY:
            readers = [r for r in condition[2].split(",") if r]
            if len(condition) > 4:  # `class::attr`: readers through instances, in any file
                class_key, _, attr = condition[4].partition("::")
                readers += self.attribute_readers(class_key, attr)
            return self.rebound_after_replay(condition[1], readers, condition[3].split(","))
        if condition[0] == "host-param":  # a sync on a parameter: none where callers pass host tensors
            return not self.param_is_host(condition[1], condition[2], roots)
        if condition[0] == "param" and len(condition) == 3:
            if unit_key in roots and unit_key.startswith(condition[1] + ".<loop#"):
                # a parameter of the function whose loop is the region: the same on every pass
                # (`eta`, `order` of a sampler), unless a caller is seen passing it per-step values
                return self.root_param_varies(condition[1], condition[2], roots) is True
            if unit_key in roots:
                return self.root_param_varies(condition[1], condition[2], roots) is not False
            return self.param_is_varying(condition[1], condition[2], roots)
        if condition[0] == "param" and len(condition) == 4:  # an undeclared parameter: only what callers pass
            return self.param_is_varying(condition[1], condition[2], roots, callers_only=True)
        if condition[0] == generators.GENERATOR_PARAM:
            return generators.holds(self, condition, roots)
        if condition[0] == host_copy_helpers.HOST_COPY_HELPER:
            return host_copy_helpers.holds(self, condition)
        if condition[0] == host_effect_helpers.HOST_EFFECT_HELPER:
            return host_effect_helpers.holds(self, condition)
        if condition[0] == host_move_helpers.HOST_MOVE_HELPER:
            return host_move_helpers.holds(self, condition)
        if condition[0] == host_batches.HOST_BATCH_PARAM:
            return host_batches.param_holds(self, condition)
        if condition[0] == host_batches.HOST_BATCH_CALL:
            return host_batches.call_holds(self, condition)
        if condition[0] == REACHES_CAPTURE:
            refs = [CallRef(*ref.split("|", 1)) for ref in condition[3:]]
            return self.reaches_capture(refs, condition[1] or None, int(condition[2]))
        if condition[0].startswith("@" + ARG_PID):  # a number attribute of an object a constructor keeps
            function, _, param = condition[0][1 + len(ARG_PID):].rpartition(":")
            return any(self.attr_is_varying(c, condition[1]) for c in self._passed_classes(function, param))
        return self.attr_is_varying(*condition)

    def argument_holds(self, condition: tuple[str, ...], caller: str, callee: str, roots: frozenset) -> bool:
        """Does `caller` pass `callee` a per-step value (an argument's condition)? A loop's value
        is per step where the loop drives the steps: its function runs outside the regions, or
        the callee is itself a region root, whose graph each pass of the loop replays (a beam
        search's `forward` looping over `search_step`, both marked as regions)."""
        if condition and condition[0] == LOOP:
            return caller not in self._reachable or callee in roots
        if condition and condition[0] == ANY_OF:
            return any(self.argument_holds(part, caller, callee, roots) for part in parts_of(condition))
        return self.condition_holds(condition, caller, roots)

    def capturing_units(self) -> frozenset[str]:
        """Functions holding a `torch.cuda.graph` block or a capture_begin."""
        if self._capturing is None:
            self._capturing = frozenset(
                key.rpartition(".<")[0] for key, located in self.units.items()
                if any(m.kind in (RegionKind.GRAPH_BLOCK, RegionKind.CAPTURE_BEGIN) for m in located.unit.marks))
        return self._capturing

    def reaches_capture(self, refs: list[CallRef], class_key: str | None, depth: int) -> bool:
        """Does one of these calls run a capture block (its own, or a callee's within `depth`
        calls)? A function captures where it holds a `torch.cuda.graph` or capture_begin unit.
        A method taken by its name alone (CallRef "untyped") is not enough to say so."""
        frontier = [c for ref in refs if ref.kind != "untyped" for c in self.callees(ref, class_key)]
        seen: set[str] = set()
        for _ in range(depth):
            deeper = []
            for key in frontier:
                if key in seen:
                    continue
                if key in self.capturing_units():
                    return True
                seen.add(key)
                unit = self.units[key].unit
                deeper.extend(c for ref in unit.calls if ref.kind != "untyped" for c in self.callees(ref, unit.class_key))
            frontier = deeper
        return False

    def root_param_varies(self, function: str, name: str, roots: frozenset) -> bool | None:
        """A region root's number parameter: True where a visible caller passes it a per-step value
        (a loop variable, a counter) or a run saw it change; False where every visible caller
        passes a step-invariant one (a per-run setting: `eta`, `temperature`); None where no caller
        is visible: it may vary (reported, and said so)."""
        return self._number_param_varies(function, name, roots, set())

    def _number_param_varies(self, function: str, name: str, roots: frozenset, seen: set) -> bool | None:
        if (function, name) in seen:
            return None
        seen.add((function, name))
        if self.param_is_varying(function, name, roots, as_root=True):
            return True
        callers = [c for c in self.callers().get(function, ()) if c != function]
        # a caller that captures passes the value baked at capture: what replays see is not shown
        if not callers or any(c.rpartition(".<")[0] in self.capturing_units() for c in callers):
            return None
        # a caller forwarding its own number parameter (a wrapper around the region) passes what its
        # own callers pass: unknown where theirs is
        slots = self._param_slots(function, name)
        for _, slot_conditions in self._scalar_callers().get(function, ()):
            for slot, cond in slot_conditions:
                if slot in slots and cond and cond[0] == "param" and len(cond) >= 3 and \
                        self._number_param_varies(cond[1], cond[2], roots, seen) is None:
                    return None
        return False

    def calls_into(self, function: str) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
        """(caller unit, argument slots) of each call site resolved to `function`."""
        sites = self.call_sites().get(function, [])
        callers = self._site_callers.get(function, [])
        return [(caller, slots) for (caller, _), slots in zip(callers, sites)]

    def is_reached(self, key: str) -> bool:
        """Is unit `key` reached from a region (as hit_diagnostics judges the hits)?"""
        return key in self._reachable

    def is_root(self, key: str) -> bool:
        """Is unit `key` a region root (as hit_diagnostics judges the hits)?"""
        return key in self._reachable and self._reachable[key] is None

    def param_slots(self, function: str, name: str) -> set[str]:
        return self._param_slots(function, name)

    def _param_slots(self, function: str, name: str) -> set[str]:
        """The argument slots a call fills `function`'s parameter `name` through: its name, its
        position, its place from the end after `*args`."""
        slots = {name}
        located = self.units.get(function)
        if located is not None and name in located.unit.params:
            params = located.unit.params
            index = params.index(name)
            slots.add(str(index))
            if len(params) - index <= located.unit.required_tail:
                slots.add(f"-{len(params) - index}")  # passed after `*args` (`f(*batch, lr)`)
        return slots

    def _source_note(self, condition: tuple[str, ...] | None, unit_key: str, roots: frozenset) -> str:
        """Why a conditional hit's value varies, as a message suffix: what a run saw, that no
        caller is visible (may vary), or the path from the caller that passes it a per-step value."""
        note = self.observed.note_for(condition) or self.may_vary_note(condition, unit_key, roots)
        return note or param_paths.path_note(self, condition, roots) or self._handed_note(condition, roots)

    def may_vary_note(self, condition: tuple[str, ...] | None, unit_key: str, roots: frozenset) -> str:
        """The message suffix of a region root's number parameter no visible caller passes."""
        if condition and condition[0] == generators.GENERATOR_PARAM and condition[1] in roots:
            return " (may vary: the region root's caller chooses the generator; a CUDA one needs registering)"
        if (condition and condition[0] == "param" and len(condition) == 3 and unit_key in roots
                and self.root_param_varies(condition[1], condition[2], roots) is None):
            return f" (may vary: no call of `{self.units[condition[1]].unit.display}` shows what it is passed)" \
                if condition[1] in self.units else " (may vary: no call shows what it is passed)"
        return ""

    def _handed_note(self, condition: tuple[str, ...] | None, roots: frozenset) -> str:
        """The message suffix of a number parameter given a region root's own parameter."""
        if condition and condition[0] == "param" and len(condition) == 3 and condition[1] in self.units:
            slots = self._param_slots(condition[1], condition[2])
            for _, slot_conditions in self._scalar_callers().get(condition[1], ()):
                for slot, cond in slot_conditions:
                    if slot in slots and _handed_root_param(cond, roots) and cond[1] in self.units:
                        return (f" (may vary: it is given `{cond[2]}` of `{self.units[cond[1]].unit.display}`,"
                                " whose caller is not shown)")
        return ""

    def param_is_varying(self, function: str, name: str, roots: frozenset, callers_only: bool = False,
                         as_root: bool = False) -> bool:
        """`callers_only`: a parameter declared as nothing is a number only where a caller passes
        one (not because its function is a root, nor for a loop variable that may be a batch).
        `as_root`: what the callers pass to a region root (its being one proves nothing; a loop
        of a caller that is a region too replays the root's graph on each pass)."""
        memo = self._param_memo.setdefault(roots, {})
        key = (function, name, callers_only, as_root)
        if key in memo:
            return memo[key]
        memo[key] = False  # guards recursion
        result = (not callers_only and not as_root and function in roots) or bool(
            self.observed.changed_number(function, name))
        located = self.units.get(function)
        if not result and located is not None:
            slots = self._param_slots(function, name)
            for caller, slot_conditions in self._scalar_callers().get(function, ()):
                if any(slot in slots and not (callers_only and cond == (LOOP,)) and (
                        self.argument_holds(cond, caller, function, roots)
                        # a region root's parameter declared as nothing, handed to this declared
                        # number (`forward(idx)` calling `forward_one(idx[0])` with `idx: int`)
                        or not callers_only and _handed_root_param(cond, roots)
                        and self.root_param_varies(cond[1], cond[2], roots) is not False)
                       for slot, cond in slot_conditions):
                    result = True
                    break
        memo[key] = result
        return result

    def rebound_after_replay(self, function: str, readers: list[str], rebinders: list[str]) -> bool:
        """An attribute rebound in `function`, read by `readers`: a hazard when captured code
        reads it (a reader is reached from a region, no reached code rebinds it itself) and
        `function` runs outside the region, called from code that replays a graph (a few
        calls up; or a driver that also calls a method that replays: `session.reset(...)` then
        `session.run()`), so the rebinding happens between replays. Not `__init__`: a new object
        is built before its graph is captured."""
        reached = self._reachable
        if function in reached or not any(r in reached for r in readers) or any(b in reached for b in rebinders if b):
            return False
        if function.rpartition(".")[2] == "__init__":
            return False
        seen, frontier = {function}, [function]
        for _ in range(3):
            frontier = [c for f in frontier for c in self.callers().get(f, ()) if c not in seen]
            if any(self.units[c].unit.replays or self._calls_replayer(c) for c in frontier):
                return True
            seen.update(frontier)
        return False

    def attribute_readers(self, class_key: str, attr: str) -> list[str]:
        """Units that read `attr` of an instance of `class_key` (`self.scheduler.sigmas`)."""
        if self._attr_readers is None:
            index: dict[tuple[str, str], list[str]] = {}
            for facts in self.files:
                for unit, ref, name in facts.attr_reads:
                    resolved = self.resolve_symbol(ref)
                    if resolved is not None:
                        index.setdefault((resolved, name), []).append(unit)
            self._attr_readers = index
        return self._attr_readers.get((class_key, attr), [])

    def _calls_replayer(self, key: str) -> bool:
        """Does unit `key` call a function that replays a graph (`run()` around `g.replay()`)?"""
        located = self.units.get(key)
        if located is None:
            return False
        for ref in located.unit.calls:
            for callee in self.callees(ref, located.unit.class_key):
                target = self.units.get(callee)
                if target is not None and target.unit.replays:
                    return True
        return False

    def callers(self) -> dict[str, list[str]]:
        """callee key → the units that call it."""
        if self._callers is None:
            index: dict[str, list[str]] = {}
            for key, located in self.units.items():
                for ref in located.unit.calls:
                    for callee in self.callees(ref, located.unit.class_key):
                        index.setdefault(callee, []).append(key)
            self._callers = index
        return self._callers

    def always_diagnostics(self, facts: FileFacts, reach: Reach) -> list[Diagnostic]:
        """A file's region-independent hits (configuration, rebinding between replays), those
        whose project-wide condition holds."""
        self._reachable = reach.parent
        roots = frozenset(key for key, up in reach.parent.items() if up is None)
        return [
            Diagnostic(h.code, h.message, facts.path, h.start, h.end, None, (), h.fix) for h in facts.always
            if h.condition is None or self.condition_holds(h.condition, "", roots)
        ]

    def param_is_host(self, function: str, name: str, roots: frozenset) -> bool:
        """Does every call site of `function` pass a tensor in host memory (`t.cpu()`) as `name`?
        (A region root's parameters come from whoever captures it: not known.)"""
        located = self.units.get(function)
        sites = self.call_sites().get(function)
        if function in roots or located is None or not sites:
            return False
        params = located.unit.params
        position = str(params.index(name)) if name in params else None
        for slots in sites:
            passed = [value for slot, value in slots if slot in (name, position, "*")]
            if passed != ["H"]:
                return False
        return True

    def guard_passes(self, guard: tuple[str, ...], roots: frozenset, seen: frozenset = frozenset()) -> bool:
        """Hit.guard: may the guarded code run? `P=d`: some reached call of the function passes
        P something other than its default d (or hands on a parameter of its own that its
        callers pass); `~P=d`: some reached call leaves P at d. A region root's parameters come
        from whoever captures it, and a function reached only in ways that show no arguments (a
        callback, a hook) may be passed anything: both may run either way."""
        function = guard[0]
        if any(needed.startswith(default_guards.NEVER) for needed in guard[1:]):
            return False  # a constant that is always false, a cache miss: not once the program is warm
        located = self.units.get(function)
        if function in roots or located is None or function in seen:
            return True
        if not any(caller in self._reachable for caller in self.callers().get(function, ())):
            return True
        params = located.unit.params
        reached = self.reached_call_sites(function)
        unlisted = len(reached) < sum(1 for c in self.callers().get(function, ()) if c in self._reachable)
        for needed in guard[1:]:
            keeps_default = needed.startswith(default_guards.DEFAULT)
            name, _, default = needed.lstrip(default_guards.DEFAULT).partition("=")
            position = params.index(name) if name in params else None
            if keeps_default and unlisted:
                continue  # a reached call with no arguments at all leaves every default
            if not any(self._site_passes(slots, given, name, position, default, keeps_default, roots,
                                         seen | {function}) for slots, given in reached):
                return False
        return True

    def reached_call_sites(self, function: str) -> list[tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]]:
        """(argument slots, argument sources: default_guards.argument_sources) of each call of
        `function` made by a unit the current reach holds (every call when no reach is set)."""
        sites = self.call_sites().get(function, ())
        callers = self._site_callers.get(function, ())
        return [(slots, given) for (caller, given), slots in zip(callers, sites)
                if not self._reachable or caller in self._reachable]

    def _site_passes(self, slots, given, name: str, position: int | None, default: str, keeps_default: bool,
                     roots: frozenset, seen: frozenset) -> bool:
        """Does this call site let the guarded code run: pass P something other than its
        default, or (`keeps_default`) leave it at its default? A value not known here may be
        either; only a literal proves the default away."""
        how = default_guards.passed_as(slots, given, name, position, default)
        if how is None:
            return keeps_default
        if how == "" or how.startswith("="):
            if not keeps_default:
                return True
            # the default kept? only a value that cannot be it says no
            return how == "" or (how == "=value" and default != "None")
        caller, _, own = how.rpartition(":")  # the caller's own guardable parameter, handed on
        if own.partition("=")[2] != default:  # its default is not ours: it may pass either
            return True
        return self.guard_passes((caller, default_guards.DEFAULT + own if keeps_default else own), roots, seen)

    def injected(self) -> dict[str, list[str]]:
        """class key → forwards of project classes that `setattr(...)` installs into its module
        tree (Unit.injects, through the objects callers pass as that parameter)."""
        if self._injected is None:
            found: dict[str, dict[str, None]] = {}
            for located in self.units.values():
                unit = located.unit
                for name, class_name in unit.injects:
                    targets = self._call_targets_of_instance(class_name, "__call__")
                    position = str(unit.params.index(name)) if name in unit.params else None
                    for slots in self.call_sites().get(unit.key, ()):
                        for slot, value in slots:
                            if slot in (name, position) and value.startswith("O:"):
                                for host in value[2:].split("|"):
                                    host_key = self.resolve_symbol(host)
                                    if host_key in self.classes:
                                        found.setdefault(host_key, {}).update(dict.fromkeys(targets))
            self._injected = {k: list(v) for k, v in found.items()}
        return self._injected

    def _param_targets(self, function: str, name: str, method: str) -> list[str]:
        """`model(...)` on a parameter: the methods of the project objects its callers pass;
        `scheduler(step)`: the functions they pass (`cosine_lr(...)`'s nested `_lr_adjuster`)."""
        found = [t for c in self._passed_classes(function, name) for t in self._call_targets_of_instance(c, method)]
        return found + [f for f in self._passed_functions(function, name, method) if f not in found]

    def _passed_functions(self, function: str, name: str, method: str) -> list[str]:
        """`scheduler(step)` on a parameter: the project functions its callers pass as it (a
        `def`, or what a factory returns: `cosine_lr(opt, ...)`'s nested `_lr_adjuster`)."""
        if method != "__call__":
            return []
        return [f for f in self._passed_classes(function, name, values=FUNCTION_SLOT)
                if f in self.units and self.units[f].unit.is_function]

    def _passed_classes(self, function: str, name: str, seen: frozenset = frozenset(),
                        values: str = "O:") -> tuple[str, ...]:
        """The project classes of the objects the call sites of `function` pass as parameter
        `name` (a constructor's: what `self.matcher = matcher` holds), through callers that pass
        on a parameter of their own (`super().__init__(matcher)`). `values=CLASS_SLOT`: the
        classes themselves that they pass (`Model(impl_cls=Slow)`)."""
        located = self.units.get(function)
        if located is None or self._call_sites is None and self._building_sites or (function, name) in seen:
            return ()
        params = located.unit.params
        position = str(params.index(name)) if name in params else None
        classes: dict[str, None] = {}
        for slots in self.call_sites().get(function, ()):
            for slot, value in slots:
                if slot not in (name, position):
                    continue
                if value.startswith(values):
                    key = value[len(values):]
                    if values == CLASS_SLOT:
                        classes[self.resolve_symbol(key) or key] = None
                    else:
                        classes.update(dict.fromkeys(self.resolve_symbol(k) or k for k in key.split("|")))
                elif value.startswith("@" + ARG_PID) and len(seen) < 4:
                    outer, _, param = value[1 + len(ARG_PID):].rpartition(":")
                    classes.update(dict.fromkeys(self._passed_classes(outer, param, seen | {(function, name)}, values)))
                elif values != CLASS_SLOT and value.startswith("@global:") and not any(c in value[1:] for c in ";@#"):
                    # `Criterion(matcher=HungarianMatcher())`: a class of another file, built in the call
                    key = self.resolve_symbol(value[len("@global:"):])
                    if key in self.classes:
                        if values == "O:":
                            classes[key] = None
                    elif key in self.units and self.units[key].unit.returns[:1] != ("tuple",):
                        # `loss = create_loss(args)` (`scheduler = cosine_lr(opt, ...)`) passed on:
                        # the classes (the function) the factory returns
                        made = self.units[key].unit.returns
                        if len(made) == 1 and made[0].startswith(values):
                            classes.update(dict.fromkeys(self.resolve_symbol(c) or c for c in made[0][2:].split("|")))
        return tuple(classes)

    def _handed_to_hook(self, ref: CallRef, slots: tuple[tuple[str, str], ...], class_key: str | None
                        ) -> tuple[tuple[str, str], ...]:
        """For a "named" call (`trigger_plugins(self, "before_backward")`): the slots the
        dispatched method gets (hooks.handed_slots), through the dispatcher the call resolves to."""
        kind, target, slot, _ = ref.target.rsplit("|", 3) if ref.target.count("|") >= 3 else ("", "", "", "")
        for key in self._callees(CallRef(kind, target), class_key):
            unit = self.units[key].unit
            if _dispatches_slot(unit.dispatches, slot):
                return hooks.handed_slots(unit.dispatches, unit.params, slots)
        return ()

    def call_sites(self) -> dict[str, list[tuple[tuple[str, str], ...]]]:
        """callee key → the argument slots (Unit.arg_kinds) of every call site resolved to it.
        (A call in a capture block is listed by the block and by its function: the same slots.)"""
        if self._call_sites is None:
            index: dict[str, list[tuple[tuple[str, str], ...]]] = {}
            self._building_sites = True  # calls on parameters are not followed while indexing
            for key, located in self.units.items():
                unit = located.unit
                sources = unit.arg_sources if len(unit.arg_sources) == len(unit.arg_kinds) else ((),) * len(unit.arg_kinds)
                for (ref, slots), given in zip(unit.arg_kinds, sources):
                    if ref.kind == "named":  # the dispatcher's call: what it hands the method on
                        slots = self._handed_to_hook(ref, slots, unit.class_key)
                    for callee in self.callees(ref, unit.class_key):
                        index.setdefault(callee, []).append(slots)
                        self._site_callers.setdefault(callee, []).append((key, given))
            self._building_sites = False
            self._call_sites = index
        return self._call_sites

    def _scalar_callers(self) -> dict[str, list[tuple[str, tuple]]]:
        """callee key → [(caller unit key, its per-step arguments)]."""
        if self._scalar_index is None:
            index: dict[str, list[tuple[str, tuple]]] = {}
            for key, located in self.units.items():
                unit = located.unit
                for ref, slots in unit.scalar_args:
                    for callee in self.callees(ref, unit.class_key):
                        index.setdefault(callee, []).append((key, slots))
            self._scalar_index = index
        return self._scalar_index

    def _chain_sites(self, key: str, parent: dict[str, str | None], called_at: dict[str, int]) -> tuple[CallSite, ...]:
        """Where each step of `_chain(key)` calls the next, root first."""
        sites = []
        current = key
        while (up := parent[current]) is not None:
            sites.append(CallSite(self.units[up].path, called_at.get(current, 0)))
            current = up
        return tuple(reversed(sites))

    def _chain(self, key: str, parent: dict[str, str | None]) -> tuple[str, ...]:
        names = []
        current: str | None = key
        while current is not None:
            names.append(self.units[current].unit.display)
            current = parent[current]
        return tuple(reversed(names))


def _dispatches_slot(dispatches: str, slot: str) -> bool:
    """Does a unit dispatching by "<position>:<parameter>:..." take the hook's name in `slot` (a
    position or a keyword)?"""
    position, parameter = (dispatches.split(":") + ["", ""])[:2]
    return bool(dispatches) and slot in (position, parameter)


def _handed_root_param(condition: tuple[str, ...], roots: frozenset) -> bool:
    """An argument condition naming a region root's own parameter that declares nothing (the
    root's caller, not shown, decides it)."""
    return len(condition) == 4 and condition[0] == "param" and condition[1] in roots


def matches_pattern(patterns: tuple[str, ...], display: str, path: str, root: Path | None) -> bool:
    if "*" in patterns:  # `--region '*'`: every function, without matching each one
        return True
    for pattern in patterns:
        if "::" in pattern:
            file_pattern, _, name_pattern = pattern.partition("::")
            rel = _relative(path, root)
            if not (fnmatch.fnmatch(rel, file_pattern) or rel.endswith(file_pattern.lstrip("./"))):
                continue
            if fnmatch.fnmatchcase(display, name_pattern):
                return True
        elif fnmatch.fnmatchcase(display, pattern):
            return True
    return False


def _relative(path: str, root: Path | None) -> str:
    p = Path(path)
    if root is not None:
        try:
            return p.absolute().relative_to(root).as_posix()
        except ValueError:
            pass
    return p.as_posix()


_CALLED_AS_OBJECT = frozenset({"__call__", "forward"})  # what calling an object (`self.bm(t0, t1)`) runs


def _observed_call_line(callee: str, sites: list) -> int:
    """The line of the call a traced run saw reach `callee` (a unit key): the one line with a call
    whose name fits and that static analysis resolves to nothing (`self.bm(...)` for
    `BrownianInterval.__call__`, `self.buf.sample(...)` for `Buffer.sample`) or to a method of the
    same name (the abstract base's `__call__` the run's class overrides); 0 when no line or several
    fit (the chain then names no line of the caller)."""
    method = callee.rpartition(".")[2]
    lines = set()
    for ref, line, resolved in sites:
        if resolved:
            fits = any(key.rpartition(".")[2] == method for key in resolved)
        elif ref.kind in ("self", "global"):  # `self.bm(...)`, `fn(...)`: an object called, or a function
            fits = method in _CALLED_AS_OBJECT or ref.target.rpartition(".")[2] == method
        else:  # kinds that name the method they call last (`Class::sde::f_and_g`); "prop" reads an attribute
            fits = ref.kind != "prop" and ref.target.replace("::", ".").rpartition(".")[2] == method
        if fits and line:
            lines.add(line)
    return lines.pop() if len(lines) == 1 else 0
