"""Per-file facts: what one file defines, calls and contains, before any cross-file reasoning.

These are plain, picklable dataclasses: they cross the process pool and live in the on-disk
cache, so nothing here refers to a syntax tree.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from graphsafe.analyzer.noqa import NoqaDirective
from graphsafe.analyzer.run_facts import Observed
from graphsafe.model import Confidence, Diagnostic, Hit, RegionKind


GROUP_KEY = "group-key"  # Hit condition (GROUP_KEY, key): some file rewrites that param-group key per step
SCHEDULED_LR = "scheduled-lr"  # Hit condition (SCHEDULED_LR,): the program changes `group["lr"]` outside the regions
HELD_COUNTER = "held-counter"  # Hit condition (HELD_COUNTER, "holder.field"): some file advances it with `+=`
# Argument condition (LOOP,): a value computed from a loop variable (a number or not); (LOOP, COUNTER,
# how): a number the loop changes on each pass (loop_counters.py). Per step where the loop's
# function runs outside the regions (it drives the steps).
LOOP = "loop"
COUNTER = "counter"
# Hit condition (ANY_OF, part, ...): holds where one of the parts does (arithmetic on two values
# each of which varies only if the project says so, `self.length / self.sched.step_size`); each
# part is a condition written as `repr` of its tuple, so that conditions stay tuples of strings
# and parts may hold any condition (NOT, another ANY_OF's parts are taken in flat).
ANY_OF = "any-of"


def any_of(conditions: list[tuple[str, ...]]) -> tuple[str, ...]:
    """One condition that holds where one of `conditions` does (the one itself if it is alone)."""
    flat: list[tuple[str, ...]] = []
    for condition in conditions:
        flat.extend(parts_of(condition) if condition and condition[0] == ANY_OF else [condition])
    unique = list(dict.fromkeys(flat))
    return unique[0] if len(unique) == 1 else (ANY_OF, *(repr(c) for c in unique))


def parts_of(condition: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The conditions an ANY_OF condition joins."""
    return [ast.literal_eval(part) for part in condition[1:]]


@dataclass(frozen=True)
class CallRef:
    """A call seen in a unit, unresolved.

    kind:
      "global"  target is a dotted name (`pkg.mod.func`, `pkg.mod.Class`) after import aliasing;
      "self"    target is a method or attribute name on the unit's own class (`self.x(...)`);
      "super"   target is a method name looked up on the unit's base classes;
      "method"  target is `dotted.Class::name` (a method of an instance of a known class);
      "attrs"   target is `dotted.Class::a.b::name`: a method of what attribute path `a.b` of an
                instance of that class holds, followed through classes in other files;
      "prop"    target is an attribute name read on `self` (`self.norm`) of a class with a base
                class in another file: the base's `@property` of that name, if it has one;
      "returned" target is `self:<method>` or `global:<dotted>`: the function that call returns
                (an attribute bound to a factory's result, `self.grid = self._grid_from_step(h)`);
      "hook"    target is a method name a trainer calls on each of its callbacks
                (`getattr(cb, "on_batch_end")(...)`, analyzer/hooks.py): every project class's.
      "untyped" target is `module::name`: a method called on an object of no known class, taken to
                run the project methods of that distinctive name (analyzer/untyped_calls.py).
    """

    kind: str
    target: str


@dataclass(frozen=True)
class RegionMark:
    kind: RegionKind
    confidence: Confidence
    line: int


@dataclass(frozen=True)
class Unit:
    """A function, method, module body or capture block: the nodes of the call graph."""

    key: str  # module-qualified: "pkg.mod.Class.method", "pkg.mod.main.<graph@12>"
    display: str  # "Class.method", "torch.cuda.graph block in main (line 12)"
    class_key: str | None  # the class `self` refers to, for methods
    line: int
    calls: tuple[CallRef, ...]
    hits: tuple[Hit, ...]
    marks: tuple[RegionMark, ...]  # this unit is itself a region root
    is_function: bool  # a def (matched by --region patterns), not a module body or block
    # What calling it returns, for callers in other files (analyzer/returns.py): () unknown,
    # ("T",) one tensor, ("tuple", "T", "S") a tuple by element; "@pid" slots defer to another call.
    returns: tuple[str, ...] = ()
    params: tuple[str, ...] = ()  # positional parameter names without self (for argument slots)
    # calls that pass per-step Python numbers: (callee, ((position or keyword, condition), ...));
    # condition () is certain, else as Hit.condition
    scalar_args: tuple[tuple[CallRef, tuple[tuple[str, tuple[str, ...]], ...]], ...] = ()
    # every call with arguments, by call site: (callee, ((position or keyword, kind slot), ...))
    # with slots as in `returns`; ("*", "?") ends a call that unpacks `*args`/`**kwargs` of
    # unknown contents, ("*2", "L") one whose positions from 2 on get elements of that slot
    # (`f(x, *pieces)`). The project pass gives a callee's unannotated parameter the kind all
    # its callers pass.
    arg_kinds: tuple[tuple[CallRef, tuple[tuple[str, str], ...]], ...] = ()
    replays: bool = False  # calls `.replay()`: runs a captured graph (a serving or training loop)
    # module surgery: (parameter, class) for `setattr(m, name, LoRALinear(...))` with `m` from
    # `param.named_modules()`: the class's forward runs inside the forward of what callers pass
    injects: tuple[tuple[str, str], ...] = ()
    # how many of the last positional parameters have no default (0 with `*args`): an argument
    # passed after `*args` in "-k" slots (Unit.scalar_args) lands k-th from the end of those
    required_tail: int = 0
    is_property: bool = False  # a `@property`: reading the attribute runs it (CallRef "prop")
    call_lines: tuple[int, ...] = ()  # the line of the first call of each of `calls` (0: not known)
    # per entry of `arg_kinds`: the arguments that may leave a callee's default in force, a falsy
    # literal or a guardable parameter handed on (analyzer/default_guards.argument_sources)
    arg_sources: tuple[tuple[tuple[str, str], ...], ...] = ()
    # indices into `calls` of the calls made only where the code does not run once the program is
    # warm (a false module constant, after a cache hit's return, an `@lru_cache` body): not followed
    cold_calls: tuple[int, ...] = ()
    # a method with no body of its own (`raise NotImplementedError`, `...`, `pass`, or
    # `@abstractmethod`): what runs on an object declared of its class is a subclass's override
    is_abstract: bool = False
    # parameters the function uses as tensors (`x.ndim`, `torch.exp(t)`) or passes on to one that
    # does: anything else passed there fails, so what a caller passes is a tensor (delegated_use.py)
    tensor_params: tuple[str, ...] = ()
    # "<position>:<parameter>" of the parameter naming a method the function dispatches to by
    # name (`getattr(plugin, event)(...)`, analyzer/hooks.py); "" for none
    dispatches: str = ""


def merged_variants(first: Unit, second: Unit) -> Unit:
    """One unit for two definitions of a function under the same name in one file (the branches
    of an `if` or `try`): it calls and holds what either does; parameters and returns are the
    first's."""
    offset = len(first.calls)
    return replace(
        first, calls=first.calls + second.calls, hits=first.hits + second.hits,
        scalar_args=first.scalar_args + second.scalar_args, arg_kinds=first.arg_kinds + second.arg_kinds,
        injects=first.injects + second.injects, replays=first.replays or second.replays,
        call_lines=_padded(first.call_lines, len(first.calls), 0) + _padded(second.call_lines, len(second.calls), 0),
        arg_sources=_padded(first.arg_sources, len(first.arg_kinds), ()) + _padded(second.arg_sources, len(second.arg_kinds), ()),
        cold_calls=first.cold_calls + tuple(i + offset for i in second.cold_calls))


def _padded(entries: tuple, count: int, blank) -> tuple:
    """`entries`, one per call (or argument list) of a unit, or blanks where it has none."""
    return entries if len(entries) == count else (blank,) * count


@dataclass(frozen=True)
class RegionRef:
    """A capture API applied to something defined elsewhere: make_graphed_callables(model, ...)."""

    kind: RegionKind
    confidence: Confidence
    targets: tuple[CallRef, ...]
    class_key: str | None  # for "self" targets
    line: int


@dataclass(frozen=True)
class ClassInfo:
    key: str
    bases: tuple[str, ...]  # dotted, through import aliases
    # attribute name → classes of the module(s) it holds (from `self.x = Cls(...)` in methods)
    attr_classes: tuple[tuple[str, tuple[str, ...]], ...]
    # Python-number attributes reassigned outside __init__ (`self.pos += T`): they change per step
    varying: tuple[str, ...] = ()
    # attributes set to a number literal in the class: per step if code elsewhere sets them in a
    # loop (FileFacts.outside_sets)
    numbers: tuple[str, ...] = ()
    # (attribute, slot) for attributes that hold a tensor ("T": a dataclass field `probs:
    # torch.Tensor`, `self.x = torch.zeros(...)`) or what a project call returns ("@pid":
    # `self.sigmas = make_sigmas(...)`), as in Unit.returns: code in other files reading them
    # on an instance asks for them (analyzer/returns.py)
    attr_slots: tuple[tuple[str, str], ...] = ()
    # attributes kept from a constructor parameter that declares nothing and changed in place
    # outside __init__ (`self.h = h`, `self.h *= factor`): per step where every constructor call
    # passes a number (callgraph.attr_is_varying)
    advanced: tuple[str, ...] = ()
    # attributes bound to what a project call returns (`self.caches = lm.make_caches(2)`, or a
    # comprehension of such calls): the project decides their classes, a method name never does
    # (analyzer/untyped_calls.py)
    made: tuple[str, ...] = ()


@dataclass(frozen=True)
class FileFacts:
    path: str
    module: str
    units: tuple[Unit, ...]
    classes: tuple[ClassInfo, ...]
    region_refs: tuple[RegionRef, ...]
    aliases: tuple[tuple[str, str], ...]  # module-level imports, for re-exports
    noqa: tuple[tuple[int, tuple[str, ...] | None], ...]  # line → codes (None: every code)
    errors: tuple[Diagnostic, ...] = ()  # GS000: the file could not be analysed
    always: tuple[Hit, ...] = ()  # configuration hazards, reported whether or not reachable
    # pending ids (project calls defined elsewhere) whose return kind a rule asked about: if the
    # project finds they return tensors, this file is walked again with those kinds
    wanted: tuple[str, ...] = ()
    # (class, attribute) set on an instance inside a loop by code outside the class
    # (`session.temperature = t` for each fallback temperature)
    outside_sets: tuple[tuple[str, str], ...] = ()
    # param-group keys other than "lr" this file rewrites between steps (`x["momentum"] =
    # float(np.interp(...))` in a warm-up): a read of them in an optimizer step is per step
    # where any file writes them (Hit condition (GROUP_KEY, key))
    group_keys: tuple[str, ...] = ()
    # where this file changes an optimizer's learning rate between steps: the unit keys of
    # functions writing `group["lr"]` per step (a warm-up), "" for a learning-rate scheduler built
    # (torch's, or a subclass); a torch optimizer's step reads the rate (Hit condition (SCHEDULED_LR,))
    lr_changers: tuple[str, ...] = ()
    # "holder.field" of a field advanced through a held object with `+= <number>` (`self.state.
    # iteration += 1` in an engine's loop): a read `engine.state.iteration` whose holder's class is
    # not known where it is read is per step where any file advances it (Hit condition (HELD_COUNTER, key))
    held_counters: tuple[str, ...] = ()
    # (reading unit, class, attribute): `self.scheduler.sigmas` read where `self.scheduler` holds
    # an instance of that class (a class of the project, as this file names it)
    attr_reads: tuple[tuple[str, str, str], ...] = ()
    # the `# noqa: CODES` comments as written (analyzer/noqa.py), for GS001 (unused noqa)
    noqa_directives: tuple[NoqaDirective, ...] = ()
    # what a traced run saw in this file's unchanged functions (analyzer/run_facts.py); set after
    # the walk, never cached with it
    observed: tuple[Observed, ...] = ()
