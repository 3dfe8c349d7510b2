"""One pass over one file: units, calls, region roots and hazard hits → FileFacts.

The walker visits each node once, keeps the kinds of local names in source order, and hands
each node to the rules that asked for its type (`visit_Call`, `visit_If`, ...). Rules see the
walker through its `Context` methods: `kind`, `resolve`, `report`, `is_store`.
"""

from __future__ import annotations

import builtins
import contextlib
import itertools
import sys
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Iterator, Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState

from graphsafe.analyzer import argument_calls, branch_joins, data_sizes, dataclass_inits, default_guards, delegated_use, docstring_types, generators, hooks, host_batches, host_draws, host_resident, loop_counters, narrowing, per_step, records, run_facts, step_loops, tensor_use, untyped_calls, tensorness as T
from graphsafe.analyzer.class_values import CLASS_SLOT, NEW_PID, class_choices, class_valued_names, names_holding_classes
from graphsafe.analyzer.containers import MODULE_DICTS, entry_key, module_dict_entries
from graphsafe.analyzer.inherited import inherited_attr
from graphsafe.analyzer.facts import (COUNTER, GROUP_KEY, HELD_COUNTER, LOOP, CallRef, ClassInfo, FileFacts, RegionMark, RegionRef,
                                      Unit, any_of, merged_variants)
from graphsafe.analyzer.names import TABLE_SUFFIX, ImportTable, bound_names, dotted
from graphsafe.analyzer.nodes import children, descendants, node_types
from graphsafe.analyzer.noqa import noqa_directives, noqa_lines
from graphsafe.analyzer.positions import node_ranges, statement_lines
from graphsafe.analyzer.returns import OBJECT_PID, ARG_PID, FIELD_PID, RETURNED_FIELD_PID, summarize_returns
from graphsafe.analyzer.pids import EITHER, ELEMENT, FUNCTION_SLOT, USES_PID, either
from graphsafe.lines import ending_of, line_starts, split_lines, with_newline
from graphsafe.model import Applicability, Confidence, Diagnostic, Edit, Fix, Hit, Position, RegionKind
from graphsafe.rewriters.edits import WholeLines
from graphsafe.rules.base import Rule
from graphsafe.rules.internal_error import InternalError

GRAPH_CONTEXTS = frozenset({"torch.cuda.graph", "torch.cuda.graphs.graph"})
GRAPHED_CALLABLES = {
    "torch.cuda.make_graphed_callables": RegionKind.GRAPHED_CALLABLE,
    "torch.cuda.graphs.make_graphed_callables": RegionKind.GRAPHED_CALLABLE,
    "transformer_engine.pytorch.make_graphed_callables": RegionKind.TE_GRAPHED_CALLABLE,
    "transformer_engine.pytorch.graph.make_graphed_callables": RegionKind.TE_GRAPHED_CALLABLE,
}
COMPILE = frozenset({"torch.compile"})
REGION_DECORATORS = frozenset({"graphsafe.region", "graphsafe.api.region"})
REGION_COMMENT = "graphsafe: region"
CONTAINER_MODULES = frozenset({"torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.ModuleDict"})
# Wrappers whose call runs the wrapped module's forward: `DDP(self.moco)(x)` is `self.moco(x)`
MODULE_WRAPPERS = frozenset({
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
})
SCALAR_BUILTINS = frozenset(
    "len int float bool str repr isinstance issubclass hasattr callable id hash type range format ord chr".split()
)

_LITERALS = frozenset({cst.Integer, cst.Float, cst.SimpleString})

# Builtins whose number result carries their arguments' per-step variation.
_NUMBER_BUILTINS = frozenset("min max abs round float int".split())
# a function alias of an attribute that stands for what a call returns (`self.grid = self._make(h)`)
RETURNED_MARK = "="
# a function alias of an attribute bound to a method of another object
# (`self.loss_and_grads = loss.loss_and_grads`): "<mark><kind>:<target>" of its CallRef
REF_MARK = "~"
# numpy array methods that keep an array of draws one (`astype`) or give one of its numbers
_ARRAY_METHODS = frozenset(("astype", "item", "sum", "mean", "max", "min"))
# return annotations that name no object class (skipped without resolving them)
_PLAIN_RETURNS = frozenset("None int float bool str bytes Tensor".split())
# libraries whose functions given a number build tensors or host values other rules judge
_NOT_PROGRAM_MODULES = frozenset("torch numpy triton transformer_engine apex".split())

_DEVICE_MOVES = frozenset("to cuda cpu pin_memory".split())  # methods that may change a tensor's device

_children = children  # fast field-based traversal (see analyzer/nodes.py)
# `type(x) in` these instead of isinstance with libcst's abstract classes (ABCMeta is slow)
_COMPOUND_STATEMENTS = node_types(cst.BaseCompoundStatement) - {cst.FunctionDef, cst.ClassDef}
_SUITES = node_types(cst.BaseSuite)
_STATEMENTS = node_types(cst.BaseStatement)
_VISITS: dict[type, tuple[tuple[type, str], ...]] = {}
# the rules' call filters → (callee name, last part of its resolved name, matched prefixes,
# matched keywords) → the indices of the visit_Call handlers such a call is handed to (see
# _call_handlers_for); bounded by the names and keywords that calls spell
_CALL_SELECTIONS: dict[tuple, dict[tuple, tuple[int, ...]]] = {}


def _visits(rule: type) -> tuple[tuple[type, str], ...]:
    """(node type, method name) of a rule's `visit_<Node>` methods; scanned once per class
    (dir() on every rule costs ~0.6 ms per file, a tenth of an editor's small-file analysis)."""
    found = _VISITS.get(rule)
    if found is None:
        found = _VISITS[rule] = tuple((getattr(cst, a[6:]), a) for a in dir(rule) if a.startswith("visit_"))
    return found


@dataclass(frozen=True)
class ScalarSource:
    """A Python scalar that may change between steps: a number parameter or a varying attribute."""

    label: str  # "parameter `lr`", "attribute `self.pos`"
    # Decided project-wide: (class, attr) for an attribute of a class in another file;
    # ("param", function key, name) for a number parameter: per-step where its function is a
    # region root, or where a caller passes it a per-step value (callgraph.param_is_varying).
    condition: tuple[str, ...] | None = None
    host_draw: bool = False  # computed from a host draw (`np.random.beta(a, a)`), which GS502 reports
    device_read: bool = False  # read from the device (`int(t)`), which GS101/GS105 report; branches on it GS201
    # an array of host draws (`np.random.rand(n)`): not a number itself (as tensor data it is
    # GS402's), but each element is (`lam = lam_batch[i]`)
    array: bool = False


@dataclass(frozen=True)
class Place:
    """Where a rule was when it saw something, to report there later (`ctx.here()`)."""

    units: tuple
    statement: object


@dataclass
class _FixSpec:
    title: str
    replacements: list[tuple[cst.CSTNode, str]]  # none: the fix is withheld, `reason` says why
    applicability: Applicability
    reason: str = ""


@dataclass
class _PendingHit:
    rule: type[Rule]
    node: cst.CSTNode
    message: str
    fix: _FixSpec | None
    root_only: bool = False
    condition: tuple[str, ...] | None = None
    guard: tuple[str, ...] = ()  # Hit.guard


@dataclass
class _UnitBuilder:
    key: str
    display: str
    class_key: str | None
    node: cst.CSTNode
    is_function: bool
    # ordered set of calls → the statement of the first (its line is the call site a chain shows)
    calls: dict[CallRef, cst.CSTNode | None] = field(default_factory=dict)
    # calls every one of whose sites runs only before the program is warm (default_guards.NEVER)
    cold_calls: dict[CallRef, bool] = field(default_factory=dict)
    hits: list[_PendingHit] = field(default_factory=list)
    marks: list[tuple[RegionKind, Confidence]] = field(default_factory=list)
    returns: list[tuple[str, ...]] = field(default_factory=list)  # one summary per `return`
    generator: bool = False
    declared_returns: tuple[str, ...] = ()  # from a return annotation; wins over `return`s
    params: tuple[str, ...] = ()  # positional parameter names, without self
    required_tail: int = 0  # how many of the last of them have no default (none with `*args`)
    # calls passing per-step Python numbers: (callee, ((slot, source condition), ...))
    scalar_args: list[tuple[CallRef, tuple[tuple[str, tuple[str, ...]], ...]]] = field(default_factory=list)
    arg_kinds: list[tuple[CallRef, tuple[tuple[str, str], ...]]] = field(default_factory=list)  # per call site
    arg_sources: list[tuple[tuple[str, str], ...]] = field(default_factory=list)  # Unit.arg_sources
    replays: bool = False
    injects: list[tuple[str, str]] = field(default_factory=list)  # (parameter, injected class)
    step_loop: bool = False  # a loop region's body (step_loops.py): a region, not a capture block
    tensor_params: list[str] = field(default_factory=list)  # Unit.tensor_params
    dispatches: str = ""  # Unit.dispatches


@dataclass
class _Scope:
    """Per-function state: local kinds, imports, nested defs, the class `self` belongs to."""

    imports: ImportTable
    env: dict[str, T.Kind]
    local_defs: dict[str, str]  # name → unit key of a def nested in this function
    class_key: str | None
    self_name: str | None
    qual: str  # display prefix for nested defs
    units: list[_UnitBuilder]  # the units collecting what this code does (innermost last)
    is_function: bool = False
    params: dict[str, T.Kind] = field(default_factory=dict)  # the function's parameters as declared
    number_params: set[str] = field(default_factory=set)  # parameters declared as Python numbers
    # parameters declared as nothing (no annotation, no default): numbers where callers pass them
    open_params: set[str] = field(default_factory=set)
    # local name → where its Python-scalar value comes from (for per-step scalar rules)
    tainted: dict[str, "ScalarSource"] = field(default_factory=dict)
    reassigned: set[str] = field(default_factory=set)  # names rebound in the body
    # local name → pending id: its value came from a project call whose return kind is unknown here
    pending: dict[str, str] = field(default_factory=dict)
    loop_derived: set[str] = field(default_factory=set)  # locals computed from a loop variable
    # local name → how it takes a new number on each pass of an enclosing loop (loop_counters.py)
    counters: dict[str, str] = field(default_factory=dict)
    # locals holding a list of Python numbers by its shape (`times = [i / n for i in range(n)]`):
    # a loop over one counts with its elements (loop_counters.number_list)
    number_lists: set[str] = field(default_factory=set)
    # local name → the `functools.partial(target, ...)` call it holds: calling it calls `target`
    partials: dict[str, cst.Call] = field(default_factory=dict)
    host_names: set[str] = field(default_factory=set)  # locals bound to `t.cpu()` and the like
    # locals holding CPU tensors built here or Python int lists, with why (host_resident.py)
    host_held: dict[str, tuple[str, str]] = field(default_factory=dict)
    # local name → (why its length, or its value as a size, depends on tensor data, is it a size)
    data_sized: dict[str, tuple[str, bool]] = field(default_factory=dict)
    # local name → why it holds a list of numbers read from the device (`x1l, x2l = t.tolist()`)
    read_lists: dict[str, str] = field(default_factory=dict)
    # locals and parameters holding integer tensors (`idx = torch.arange(n)`, `i: LongTensor`)
    int_names: set[str] = field(default_factory=set)
    # local name → the parameter whose tensor it views (`value = value[0]`): same device
    param_views: dict[str, str] = field(default_factory=dict)
    # loop variable → the attribute chain it iterates, where the elements' kind is unknown here
    # (`for block in self.module.model.blocks`: classes defined in other files); also a local
    # bound to such a chain of self (`controller = self.controller`: _note_attribute_alias)
    loop_sources: dict[str, cst.Attribute] = field(default_factory=dict)
    # parameters whose falsy default turns code off, never rebound (default_guards.py)
    guardable: dict[str, object] = field(default_factory=dict)
    # local name → the project functions it was bound to (`func = _multi_tensor_adam`), any branch
    function_aliases: dict[str, list[str]] = field(default_factory=dict)
    # loops marked as regions whose body is being walked, innermost last (step_loops.py)
    step_loops: list["step_loops.StepLoop"] = field(default_factory=list)
    # locals bound to `[]` and given only tensors since (`kls.append(kl)`): lists of tensors
    filled_lists: set[str] = field(default_factory=set)


class FileWalker:
    """Analyse one parsed module. Rules are instantiated once per walker."""

    # Rule.words and Rule.calls skip handlers that would do nothing; tests turn this off to
    # check that the skipping is invisible (tests/test_call_filter.py).
    prefilter = True

    def __init__(self, path: str, module: str, is_package: bool, rules: Iterable[type[Rule]],
                 renames: dict[str, str] | None = None, external: dict[str, T.Kind] | None = None) -> None:
        self.path = path
        # pending id → kind of what a project function defined elsewhere returns (second pass)
        self.external = external or {}
        self.wanted: set[str] = set()  # pending ids whose kind would change what a rule reports
        self._probed: list[str] = []  # pending ids the running rule handler asked about
        self._asked_later: list[str] = []  # ... and those it asked only in a what-if run
        self._speculating: set[str] | None = None  # ids taken to be tensors in a what-if run
        self._captured: list | None = None  # reports of a what-if run (not kept)
        self._report_log: list[tuple[str, int]] = []  # every report, to compare a what-if run with
        self._pending: dict[int, str] = {}  # id(call node) → pending id
        self._following: set[str] = set()  # partials whose target _call_refs is looking up
        # functions whose walk failed (an error of ours): (def node, display name, error), GS002
        self.failures: list[tuple[cst.FunctionDef, str, Exception]] = []
        # a RecursionError propagates (to be walked again with a deeper stack) instead of being a GS002
        self.reraise_recursion = False
        self.module = module
        self.is_package = is_package
        self.renames = renames or {}
        self.rules = [r() for r in rules]
        # filled by run(), once the source says which rules have nothing to do (Rule.words)
        self.handlers: dict[type, list[Callable]] = {}  # node type → handlers (calls: see _visit_call)
        self.end_hooks: list[Callable] = []
        self._call_handlers: tuple[Callable, ...] = ()
        self._call_filters: tuple = ()  # each call handler's Rule.calls
        self._call_prefixes: tuple[str, ...] = ()  # every prefix of those filters
        self._call_keywords: frozenset[str] = frozenset()  # every keyword of those filters
        self._call_selections: dict[tuple, tuple[int, ...]] = {}  # shared by walkers of the same rules
        self._calls_seen: dict[tuple, tuple[Callable, ...]] = {}  # callee key → the handlers it gets
        self.units: list[_UnitBuilder] = []
        self.always: list[_PendingHit] = []  # hits reported regardless of regions
        self.region_refs: list[tuple[RegionKind, Confidence, tuple[CallRef, ...], str | None, cst.CSTNode]] = []
        self.classes: dict[str, ClassInfo] = {}
        self.class_attr_kinds: dict[str, dict[str, T.Kind]] = {}
        self.varying_attrs: dict[str, set[str]] = {}  # class key → number attributes changed per step
        self.step_writes: dict[str, dict[str, per_step.StepWrite]] = {}  # class key → attr → where a step changes it
        self.grown_attrs: dict[str, dict[str, str]] = {}  # class key → container attr → the method growing it
        self.module_defs: dict[str, str] = {}
        self.class_tables: dict[str, tuple[str, ...]] = {}  # module-level tables of classes (`SOLVERS`)
        self.module_class_values: dict[str, tuple[str, ...]] = {}  # module-level names holding classes
        # (class key, attribute) → classes the class stores there (`self.buffer_class = ReplayBuffer`)
        self.held_classes: dict[tuple[str, str], set[str]] = {}
        # (class key, method) → (position, parameter) of a method that calls `getattr(self, parameter)(...)`
        self.dispatchers: dict[tuple[str, str], tuple[int, str]] = {}
        # (class key, attribute) → the kind of each entry of the nn.ModuleDict it holds (containers.py)
        self.module_entries: dict[tuple[str, str], dict[str, T.Kind]] = {}
        # class key → {attribute: pid}: `new:` for `self.attn = impl_cls()` (class_values.py),
        # `arg:` for `self.layers = nn.ModuleList(layers)` (what the callers pass)
        self.made_from_params: dict[str, dict[str, str]] = {}
        self.dataclass_inits: list[tuple[str, tuple[str, ...]]] = []  # (class key, fields) of each `@dataclass`
        # (class key, attribute) → every project or torch class an assignment puts there
        self.attr_objects: dict[tuple[str, str], dict[str, None]] = {}
        self.attr_replaced: set[tuple[str, str]] = set()  # ... and those another assignment replaces
        self._prepass_def: cst.FunctionDef | None = None  # the method the class pre-pass reads
        self._class_value_memo: dict[int, dict[str, tuple[str, ...]]] = {}  # id(def) → class_values()
        self.loop_names: list[set[str]] = []  # names bound by the enclosing `for` loops
        self.while_depth = 0  # enclosing `while` loops (they bind no names)
        self.registrars: tuple[str, ...] = ()  # methods that register a buffer named by their argument
        self.globals: dict[str, T.Kind] = {}
        # function key → the per-step number it returns (same file, defined before its callers)
        self.scalar_returns: dict[str, ScalarSource] = {}
        self.host_results: dict[str, bool] = {}  # function key → every `return` gives host values only
        self.number_attrs: dict[str, set[str]] = {}  # class key → attributes set to number literals
        # class key → attributes kept from a plain constructor parameter, changed in place later
        self.advanced_attrs: dict[str, set[str]] = {}
        self.number_list_attrs: dict[str, set[str]] = {}  # class key → attributes only set to lists of numbers
        self.varying_entries: dict[str, set[tuple[str, str]]] = {}  # class key → (dict attribute, key) set per step
        self.outside_sets: set[tuple[str, str]] = set()  # see FileFacts.outside_sets
        self.group_keys: set[str] = set()  # see FileFacts.group_keys
        self.lr_changers: set[str] = set()  # see FileFacts.lr_changers
        # class key → the hooks a `saved_tensors_hooks` subclass hands its base (they run in `with`)
        self.saved_tensor_hooks: dict[str, dict[CallRef, None]] = {}
        self._schedules_lr = False  # the file mentions `lr_scheduler` (set by run)
        self.held_counters: set[str] = set()  # see FileFacts.held_counters
        self.attr_reads: set[tuple[str, str, str]] = set()  # see FileFacts.attr_reads
        self.properties: set[str] = set()
        self.number_functions: frozenset[str] = frozenset()  # module functions annotated `-> float`
        self.object_functions: dict[str, T.Kind] = {}  # ... annotated `-> nn.Module`, `-> Policy`
        self._def_nodes: dict[str, cst.FunctionDef] = {}  # unit key → def, for functions and methods
        self.device_attrs: dict[str, set[str]] = {}  # class → attributes of unknown kind set by `.to(device)`
        self._number_shaped: dict[str, bool] = {}  # memo of _number_shaped_def
        self.tensor_results: set[str] = set()  # function keys with a `return` of a tensor
        self.number_methods: dict[str, frozenset[str]] = {}  # class key → its methods annotated `-> float`
        self.dict_methods: dict[str, frozenset[str]] = {}  # class key → methods `-> dict[str, Tensor]`
        self.stores: set[int] = set()
        self.reported: set[tuple[str, int]] = set()
        # id(statement) → (function key, parameters a call must pass for it to run): default_guards.py
        self._default_guards: dict[int, tuple[str, ...]] = {}
        self.scope: _Scope | None = None
        self._kinds: dict[int, T.Kind] = {}
        self._resolved: dict[int, str | None] = {}
        self._file_state: dict = {}
        self.cst_module: cst.Module | None = None
        self.statement: cst.CSTNode | None = None  # innermost statement being walked
        self.block_sizes: dict[int, int] = {}  # id(statement) → statements in its block
        self.block_owners: dict[int, cst.CSTNode | None] = {}  # id(statement) → the statement whose block holds it
        self.block_places: dict[int, tuple[Sequence[cst.CSTNode], int]] = {}  # id(statement) → (its block, index)
        self.indents: list[str] = []  # indentation of the blocks being walked
        self.statement_indents: dict[int, tuple[str, ...]] = {}
        self.anchors: dict[int, cst.CSTNode | None] = {}  # target node → its statement
        self._special: dict[type, Callable] = _SPECIAL  # + attribute reads where the file has properties
        # module-level name or `class.attr` → the project function it holds (`functools.partial(f)`)
        self.function_aliases: dict[str, tuple[str, ...]] = {}
        # module-level literal tables of functions: `CENTER_FUNCTIONS = {"mean": center_mean}`
        self.function_tables: dict[str, tuple[str, ...]] = {}
        self.torch_aliases: dict[str, str] = {}  # "Class.attr" → the torch function the attribute holds
        self._property_names: frozenset[str] = frozenset()
        self._foreign_based: frozenset[str] = frozenset()
        self._class_methods: set[str] = set()  # `class key.method` of the classes of this file

    # ------------------------------------------------------------------ Context for rules
    def kind(self, expr: cst.BaseExpression, note: bool = True) -> T.Kind:
        """The kind of `expr` as rules see it. When it is unknown only because it comes from a
        project function defined elsewhere, the call is noted: the project pass re-walks this
        file if that function is found to return tensors (see analyzer/returns.py).

        `note=False` for a handler that never reports (bookkeeping for `end_module` or a fix):
        noting would only run it again as a what-if, which can add nothing (only reports made
        by the handler itself count there), at the cost of copying its rule's state."""
        kind = self._kind(expr)
        if kind.tag == "unknown" and (self._pending or self.scope.pending):
            pid = self._depends_on(expr)
            if pid is not None:
                if self._speculating is not None:
                    if pid not in self._speculating:
                        self._asked_later.append(pid)
                        return kind
                    # Taken to be a mask: `ious <= thresh` on such a value is one, and so may be
                    # the value itself (`keep = keep_mask(pad)` then `h[keep]`); only GS108 tells
                    # masks from other tensors, and resolving the call decides what it returns.
                    return T.BOOL_TENSOR
                if note:
                    self._probed.append(pid)
        return kind

    def _kind(self, expr: cst.BaseExpression) -> T.Kind:
        key = id(expr)
        known = self._kinds.get(key)
        if known is None:
            known = self._infer(expr)
            self._kinds[key] = known
        return known

    def resolve(self, expr: cst.BaseExpression) -> str | None:
        """Dotted name through imports (`th.cuda.synchronize` → `torch.cuda.synchronize`).

        Memoised per node: every rule that looks at a call asks about the same callee."""
        key = id(expr)
        cache = self._resolved
        if key in cache:
            return cache[key]
        name = self.scope.imports.resolve(expr)
        if self.torch_aliases and type(expr) is cst.Attribute and self.is_self(expr.value):
            name = self.torch_aliases.get(f"{self.scope.class_key}.{expr.attr.value}", name)  # `self.all_reduce_fn`
        cache[key] = name
        return name

    def is_store(self, node: cst.CSTNode) -> bool:
        return id(node) in self.stores

    def first_report(self, code: str, node: cst.CSTNode) -> bool:
        """True the first time a rule reports a node (rules may see a node from two parents)."""
        key = (code, id(node))
        if key in self.reported:
            return False
        self.reported.add(key)
        return True

    def report(
        self,
        rule: Rule,
        node: cst.CSTNode,
        fix: "tuple[str, list[tuple[cst.CSTNode, str]], Applicability] | Callable[[], object] | None" = None,
        root_only: bool = False,
        always: bool = False,
        condition: tuple[str, ...] | None = None,
        at: "Place | None" = None,
        **fields: str,
    ) -> None:
        """Report `node` for `rule`. `fix` is (title, [(node, replacement code)], applicability);
        `root_only` keeps the hit only where this function is itself a region root; `always`
        reports it whether or not the code is reachable from a region (configuration checks:
        they fire where the capture is set up). `fix` may be a callable returning the fix: it is
        then built only for a report that is kept (not in a what-if run, not for a duplicate)."""
        if self._captured is not None:
            self._captured.append((rule.code, id(node)))
            return
        self._report_log.append((rule.code, id(node)))
        if not self.first_report(rule.code, node):
            return
        if callable(fix):
            fix = fix()
        spec = _FixSpec(fix[0], fix[1], fix[2], fix[3] if len(fix) > 3 else "") if fix else None
        statement = at.statement if at is not None else self.statement
        self.anchors.setdefault(id(node), statement)
        for replaced, _ in spec.replacements if spec else ():
            if isinstance(replaced, WholeLines):
                replaced = replaced.statement
            for n in replaced if isinstance(replaced, tuple) else (replaced,):
                self.anchors.setdefault(id(n), statement if not isinstance(n, cst.BaseStatement) else n)
        message = rule.format_message(**fields)
        if self.external and self.scope is not None:  # a re-walk: a kind a traced run settled says so
            message += run_facts.mentioned_observed(node, self.function_key, self.external)
        guard = () if always else self._default_guards.get(id(statement), ())
        hit = _PendingHit(type(rule), node, message, spec, root_only, condition, guard)
        if always:
            self.always.append(hit)
            return
        units = at.units if at is not None else self.scope.units
        for unit in units:
            unit.hits.append(hit)

    def host_condition(self, expr: cst.BaseExpression) -> tuple[str, ...] | None:
        """For a sync on `expr` (`value.tolist()`): when `expr` is a view of a parameter, the
        condition that keeps the report only where some caller may pass a device tensor (a
        caller passing `t.cpu()` makes the read a host read, no sync)."""
        # ops on a tensor keep its device: `value[0]`, `value.sum()` read the same memory's side
        while type(expr) is cst.Subscript or (type(expr) is cst.Call and type(expr.func) is cst.Attribute
                                               and expr.func.attr.value not in _DEVICE_MOVES):
            expr = expr.value if type(expr) is cst.Subscript else expr.func.value
        if type(expr) is not cst.Name or self.scope is None:
            return None
        param = self.scope.param_views.get(expr.value)
        function = self.function_key
        return ("host-param", function, param) if param is not None and function else None

    def in_what_if(self, rule: Rule, node: cst.CSTNode) -> bool:
        """True in a what-if run (see _what_if_tensors), noting that `rule` would report `node`:
        a rule that defers its reports to `end_module` asks this before deferring one."""
        if self._captured is None:
            return False
        self._captured.append((rule.code, id(node)))
        return True

    @property
    def params(self) -> dict[str, T.Kind]:
        """The current function's parameters (without self) and their declared kinds."""
        return self.scope.params if self.scope is not None else {}

    @property
    def class_key(self) -> str | None:
        return self.scope.class_key if self.scope is not None else None

    @property
    def self_name(self) -> str | None:
        return self.scope.self_name if self.scope is not None else None

    def is_self(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Name) and self.scope is not None and expr.value == self.scope.self_name

    def enclosing_block_size(self, statement: cst.CSTNode) -> int:
        """How many statements share the block `statement` is in (1: removing it empties it)."""
        return self.block_sizes.get(id(statement), 0)

    def statements_after(self, statement: cst.CSTNode) -> Sequence[cst.CSTNode]:
        """The statements that follow `statement` in its block."""
        block, index = self.block_places.get(id(statement), ((), 0))
        return block[index + 1:]

    @contextlib.contextmanager
    def looking_ahead(self):
        """For a handler that asks kinds of code the walk has not reached yet (a guard clause's
        rest of the block): those kinds are inferred before the names they read are bound, so
        they are forgotten afterwards rather than kept for the walk to reuse there."""
        kinds = self._kinds
        known = len(kinds)
        try:
            yield
        finally:
            for key in list(itertools.islice(kinds, known, None)):
                del kinds[key]

    def enclosing_statement(self, statement: cst.CSTNode) -> cst.CSTNode | None:
        """The compound statement (`if`, `for`, `def`, ...) whose block holds `statement`."""
        return self.block_owners.get(id(statement))

    def file_state(self, factory: Callable):
        """Per-file state shared by several rules (one instance per `factory` per file)."""
        found = self._file_state.get(factory)
        if found is None:
            found = self._file_state[factory] = factory()
        return found

    def want_kind(self, expr: cst.BaseExpression) -> None:
        """For a handler that decides in `end_module`, where a what-if run sees no report: the
        kind of `expr` matters, so if it hangs on a project call, resolve that call project-wide
        (and walk this file again if it returns tensors)."""
        if self._speculating is None and self._kind(expr).tag == "unknown":
            pid = self._depends_on(expr)
            if pid is not None:
                self.wanted.add(pid)

    def note_attribute_read(self, node: cst.Attribute) -> None:
        """Record `obj.attr` read here when `obj` holds an instance of a known class
        (`self.scheduler.sigmas`): code in another file may rebind that attribute."""
        kind = self._kind(node.value)
        if kind.tag == "object" and kind.refs:
            unit, attr = self.unit_key, node.attr.value
            self.attr_reads.update((unit, ref, attr) for ref in kind.refs)

    def here(self) -> Place:
        """The current place, for a report made later (e.g. from `end_module`)."""
        return Place(tuple(self.scope.units), self.statement)

    def data_size_reason(self, expr: cst.BaseExpression, tensor: bool = False) -> str | None:
        """Why `expr` is a size that depends on tensor data (`n` with `n = x.shape[0]` after `x =
        x[mask]`), or with `tensor`, a tensor whose length does (see analyzer/data_sizes.py)."""
        scope = self.scope
        if scope is None or not scope.is_function:
            return None
        find = data_sizes.sized_reason if tensor else data_sizes.size_reason
        return find(expr, scope.data_sized, self._kind, self.resolve, self.code_for)

    def note_loop_sizes(self, body: cst.CSTNode) -> None:
        """A loop's body rebinding a name to a data-sized tensor: its test and next pass see it so."""
        if self.scope is not None and self.scope.is_function:
            with self.looking_ahead():
                data_sizes.loop_carried(self.scope.data_sized, body, self._kind, self.resolve, self.code_for)

    def is_loop_variable(self, name: str) -> bool:
        """Is `name` bound by a `for` loop enclosing the code being walked?"""
        return any(name in names for names in self.loop_names)

    def in_capture_block(self) -> bool:
        """Inside a `torch.cuda.graph` block or a capture_begin/capture_end segment."""
        for unit in self.scope.units:  # a loop, not any(): asked at every call by several rules
            if not unit.is_function and unit.marks and not unit.step_loop:
                return True
        return False

    @property
    def function_key(self) -> str | None:
        """The unit key of the innermost enclosing function (None at module level)."""
        for unit in reversed(self.scope.units):
            if unit.is_function:
                return unit.key
        return None

    @property
    def unit_key(self) -> str:
        """The key of the innermost unit: a capture block inside a function has its own."""
        return self.scope.units[-1].key

    @property
    def function_node(self) -> cst.FunctionDef | None:
        """The innermost enclosing `def` (None at module level)."""
        for unit in reversed(self.scope.units):
            if unit.is_function:
                return unit.node
        return None

    def _is_shape(self, expr: cst.BaseExpression) -> bool:
        """A tuple literal, `torch.Size(...)`, or a tensor's `.shape` (nothing a number or tensor
        is added to)."""
        tp = type(expr)
        if tp is cst.Tuple:
            return True
        if tp is cst.Call:
            return self.resolve(expr.func) == "torch.Size"
        return tp is cst.Attribute and expr.attr.value == "shape" and self._kind(expr.value).is_tensor

    def sole_sequence_literal(self, expr: cst.BaseExpression) -> cst.Tuple | cst.List | None:
        """The tuple or list literal `expr` is, or that the local it names is bound to once in
        this function (`shape = (len(splits), n)`); else None."""
        if type(expr) in (cst.Tuple, cst.List):
            return expr
        function = self.function_node
        if type(expr) is not cst.Name or function is None or expr.value in self.scope.params:
            return None
        values = _local_values(function.body).get(expr.value, ())
        return values[0] if len(values) == 1 and type(values[0]) in (cst.Tuple, cst.List) else None

    @property
    def function_name(self) -> str | None:
        for unit in reversed(self.scope.units):
            if unit.is_function:
                return unit.display.rpartition(".")[2]
        return None

    def scalar_source(self, expr: cst.BaseExpression) -> ScalarSource | None:
        """Where `expr`'s value comes from if it is a Python scalar that may change per step."""
        scope = self.scope
        tp = type(expr)  # `type is`, not isinstance: libcst classes check through ABCMeta (slow)
        if tp is cst.Name:
            name = expr.value
            if name in scope.tainted:
                return scope.tainted[name]
            if scope.step_loops:
                step = next((s for s in reversed(scope.step_loops) if name in s.counters), None)
                if step is not None and name in scope.counters:
                    return ScalarSource(f"`{name}`, {scope.counters[name]}, a new number on every pass of the "
                                        f"loop region `{step.header}`", step.condition)
            if name in scope.number_params and name not in scope.reassigned:
                return ScalarSource(f"parameter `{name}`", ("param", self.function_key or "", name))
            if name in scope.open_params and name not in scope.reassigned and not scope.env.get(name, T.UNKNOWN).is_tensor:
                # `def denoise(self, x, guidance)` called with `self.guidance`: per step where a
                # caller passes a per-step number (whether or not this function is a region root)
                return ScalarSource(f"parameter `{name}` (a number its callers pass per step)",
                                    ("param", self.function_key or "", name, "callers"))
            read = scope.data_sized.get(name) if scope.is_function else None
            if read is not None and read[1] and data_sizes.read_from_device(read[0]):
                # `ptr = int(self.bank_ptr)`: the step's own value, frozen where it enters device work
                return ScalarSource(f"`{name}`, a number read from the device ({read[0]})", device_read=True)
            return None
        if tp is cst.Attribute:
            attr = expr.attr.value
            if self.is_self(expr.value) and scope.class_key:
                if attr in self.varying_attrs.get(scope.class_key, ()):
                    write = self.step_writes.get(scope.class_key, {}).get(attr)
                    where = f" ({write.describe(scope.class_key.rpartition('.')[2])})" if write else ""
                    return ScalarSource(f"attribute `self.{attr}`{where}")
                if (attr in self.number_attrs.get(scope.class_key, ())  # set per step elsewhere?
                        or f"{run_facts.OBSERVED_ATTR}{scope.class_key}:{attr}" in self.external):  # or seen to
                    return ScalarSource(f"attribute `self.{attr}`", (scope.class_key, attr))
                key = f"{scope.class_key}.{attr}"
                if key in self.properties:  # `d = self.current_decay`: what the property returns
                    return self.scalar_returns.get(key)
                if inherited_attr(scope.class_key, attr, self):
                    # `self.progress_remaining` of a base class in another file that updates it
                    # between steps: decided project-wide (callgraph.attr_is_varying follows bases)
                    return ScalarSource(f"attribute `self.{attr}`", (scope.class_key, attr))
                return None
            base = self._kind(expr.value)
            if base.tag == "object":
                for ref in base.refs:
                    if ref in self.varying_attrs:
                        if attr in self.varying_attrs[ref]:
                            return ScalarSource(f"attribute `{attr}` of {ref.rpartition('.')[2]}")
                        if f"{ref}.{attr}" in self.properties:  # `self.sched.lr`: the class is walked
                            found = self.scalar_returns.get(f"{ref}.{attr}")  # first or later in the file
                            return found or ScalarSource(f"attribute `{attr}` of {ref.rpartition('.')[2]}", (ref, attr))
                        if attr in self.number_attrs.get(ref, ()) or attr in self.advanced_attrs.get(ref, ()):
                            # a number field of a class of this file (`self.state.beta` of a
                            # dataclass): per step where code outside the class sets it in a loop;
                            # `pid.h` with `self.h *= factor` in a method: where callers give numbers
                            return ScalarSource(f"attribute `{attr}` of {ref.rpartition('.')[2]}", (ref, attr))
                    elif not ref.startswith("torch."):
                        return ScalarSource(f"attribute `{attr}` of {ref.rpartition('.')[2]}", (ref, attr))
            elif base.tag == "unknown" and type(expr.value) is cst.Attribute and self.is_self(expr.value.value):
                held = self._attr_pids.get(scope.class_key or "", {}).get(expr.value.attr.value)
                if held and held.startswith(ARG_PID):  # `self.trainer.step`, `self.trainer = trainer`:
                    # a counter of what the constructor's callers pass, decided project-wide
                    return ScalarSource(f"attribute `self.{expr.value.attr.value}.{attr}`", ("@" + held, attr))
            if base.tag == "unknown" and type(expr.value) is cst.Attribute:
                # `engine.state.iteration` where the holder's class is not known here: per step where
                # some method advances that field of a held object (`self.state.iteration += 1`)
                holder = expr.value.attr.value
                owner = f"{expr.value.value.value}." if type(expr.value.value) is cst.Name else ""
                return ScalarSource(f"attribute `{owner}{holder}.{attr}` (advanced with `+=` between steps)",
                                    (HELD_COUNTER, f"{holder}.{attr}"))
            return None
        if tp is cst.BinaryOperation:
            return self._surest_source((expr.left, expr.right))
        if tp is cst.Subscript:
            # `group["lr"]` of an optimizer's param groups, `state["step"]` its step advances
            label = per_step.scheduled_entry(expr, self.function_node) or per_step.advanced_entry(expr, self.function_node)
            if label is not None:
                return ScalarSource(label)
            group_key = per_step.scheduled_group_key(expr, self.function_node)
            if group_key is not None:  # `group["momentum"]`: per step where the project rewrites it
                return ScalarSource(f'param-group entry `{expr.value.value if type(expr.value) is cst.Name else "param_group"}'
                                    f'["{group_key}"]` (rewritten between steps)', (GROUP_KEY, group_key))
            picked = self._host_pick_source(expr)
            if picked is not None:
                return picked
            if type(expr.value) is cst.Name and expr.value.value in scope.read_lists and scope.is_function:
                # `y1l[0]` of `x1l, y1l = boxes.tolist()`: the step's own value, frozen where it selects
                # (one label per read: its every element is one value to keep on the device)
                return ScalarSource(f"a number read from the device ({scope.read_lists[expr.value.value]})",
                                    device_read=True)
            if len(expr.slice) == 1 and type(expr.slice[0].slice) is cst.Index:
                drawn = self.scalar_source(expr.value)  # `lam = lam_batch[i]` of an array of draws
                if drawn is not None and drawn.array:
                    return replace(drawn, label=f"an element of {drawn.label}", array=False)
            if scope.class_key not in self.varying_entries:
                return None
            entry = _self_entry(expr, scope.self_name)
            if entry is not None and entry in self.varying_entries[scope.class_key]:
                return ScalarSource(f"entry `self.{entry[0]}[{entry[1]!r}]`")
            return None
        if (tp is cst.Call and type(expr.func) is cst.Name and expr.func.value == "len" and len(expr.args) == 1
                and scope.class_key and not scope.imports.is_imported("len")):
            held = expr.args[0].value  # `len(self.prev_f)` of a history a method grows
            if type(held) is cst.Attribute and self.is_self(held.value):
                grown = self.grown_attrs.get(scope.class_key, {}).get(held.attr.value)
                if grown is not None:
                    owner = scope.class_key.rpartition(".")[2]
                    return ScalarSource(f"`len(self.{held.attr.value})` (grown in `{owner}.{grown}` every step)")
        if (tp is cst.Call and type(expr.func) is cst.Name and expr.func.value in _NUMBER_BUILTINS
                and not scope.imports.is_imported(expr.func.value)):
            # `decay = min(cap, (1 + self.step) / (10 + self.step))`
            return self._surest_source([arg.value for arg in expr.args])
        if tp is cst.Call:
            return self._call_scalar_source(expr)
        if tp is cst.IfExp:
            return self._surest_source((expr.body, expr.orelse))
        if tp is cst.List or tp is cst.Tuple:
            return self._surest_source([element.value for element in expr.elements])
        if tp is cst.UnaryOperation and type(expr.operator) is not cst.Not:
            return self.scalar_source(expr.expression)
        return None

    def _note_read_list(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`x1l, x2l = torch.stack([x1, x2]).tolist()`: each name holds numbers read from the device."""
        reason = data_sizes.read_list(value, self._kind, self.code_for)
        names = [e.value for e in target.elements] if type(target) in (cst.Tuple, cst.List) else [target]
        for name in names:
            if type(name) is cst.Name:
                if reason is not None:
                    self.scope.read_lists[name.value] = reason
                else:
                    self.scope.read_lists.pop(name.value, None)

    def _none_defaults(self) -> frozenset[str]:
        """Parameters of the function being walked whose default is None (`count=None`)."""
        function = self.function_node
        if function is None:
            return frozenset()
        params = function.params
        return frozenset(p.name.value for p in (*params.params, *params.kwonly_params)
                         if p.default is not None and type(p.default) is cst.Name and p.default.value == "None")

    def _host_pick_source(self, expr: cst.Subscript) -> ScalarSource | None:
        """`self.alphas[t]` of a Python list of numbers indexed by a per-step number: a number
        that changes with the index (the index itself is reported where it selects; this carries
        the number on to where it enters device work, `torch.full_like(x, a)`)."""
        if len(expr.slice) != 1 or type(expr.slice[0].slice) is not cst.Index:
            return None
        index = expr.slice[0].slice.value
        if type(index) not in (cst.Name, cst.BinaryOperation, cst.UnaryOperation):
            return None  # `self.table["lr"]`, `xs[0]`: cheap answer first
        source = self.scalar_source(index)
        if source is None:
            return None
        table = expr.value
        if (type(table) is cst.Attribute and self.is_self(table.value)
                and table.attr.value in self.number_list_attrs.get(self.scope.class_key or "", ())):
            return source  # `self.alphas[t]` of a table the class keeps as a Python list
        return source if self._kind(table).tag == T.SCALAR.tag else None

    def _flag_source(self, expr: cst.BaseExpression) -> ScalarSource | None:
        """A host comparison of a per-step number (`self.updates % k == 0`): a flag that flips
        with it. Identity tests (`x is None`) and tensor comparisons are not."""
        if type(expr) is not cst.Comparison or any(type(c.operator) in (cst.Is, cst.IsNot) for c in expr.comparisons):
            return None
        if self._kind(expr).is_tensor:
            return None
        return self._surest_source([expr.left, *(c.comparator for c in expr.comparisons)])

    def _surest_source(self, operands) -> ScalarSource | None:
        """The first operand's source that varies for certain, else the first conditional one:
        in `self.cfg.w * min(1.0, self.step / n)` a config number of a class defined elsewhere
        (varying only if the project says so) must not hide the counter beside it. Fields of
        objects, each varying only if the project says so, count each on its own:
        `self.length / self.sched.step_size` varies where either does (facts.any_of)."""
        conditional = None
        fields: list[ScalarSource] = []
        for operand in operands:
            source = self.scalar_source(operand)
            if source is not None:
                if not source.condition:
                    return source
                if _source_rank(source) == _FIELD_RANK:
                    fields.append(source)
                if conditional is None or _source_rank(source) < _source_rank(conditional):
                    # `new_lr = self.cfg.lr * lr_scale`: a number parameter the callers fill
                    # decides before a field of a settings object of another class; in a loop
                    # region, `start_temperature * (step / n)`: the loop's counter before both
                    conditional = source
        if conditional is not None and _source_rank(conditional) == _FIELD_RANK and len(
                {s.condition for s in fields}) > 1:
            return replace(conditional, label=" or ".join(dict.fromkeys(s.label for s in fields)),
                           condition=any_of([s.condition for s in fields]))
        return conditional

    def _draws_later(self, callee: str) -> bool:
        """Is `callee` a function of this file, not walked yet, annotated `-> float`, whose body
        draws a number on the host (`np.random.beta`, `random.random()`)?"""
        node = self._def_nodes.get(callee)
        if node is None or any(u.key == callee for u in self.units) or not _annotated_float(node):
            return False
        calls = [n for n in descendants(node.body) if type(n) is cst.Call]
        # (resolved through the module's imports: the walk's own memo is for the code walked)
        return any(host_draws.draws_a_number(self._module_imports.resolve(c.func), c) for c in calls)

    def _call_scalar_source(self, call: cst.Call) -> ScalarSource | None:
        """`math.exp(-self.step / tau)` carries its arguments' variation; `self.weight()` the
        variation of what that method (defined earlier in this file) returns."""
        func = call.func
        name = self.resolve(func) or ""
        if name.startswith("math."):
            return self._surest_source([arg.value for arg in call.args])
        if host_draws.is_host_draw(name):  # `lam = np.random.beta(a, a)`: a new number on every step
            number = host_draws.draws_a_number(name, call, self._none_defaults())
            # (`random.sample(...)`, `np.random.rand(8)`: a sequence of draws, not a number)
            return ScalarSource(f"`{self.code_for(call)}` (a host draw, new on every step)", host_draw=True,
                                array=not number)
        if name.startswith("numpy.") and call.args:
            # `np.clip(cy - h // 2, 0, img_h)`, `np.where(draws < p, lam_mix, lam)`: host math that
            # carries its arguments' variation (an array of draws stays one)
            found = self._surest_source([arg.value for arg in call.args])
            if found is not None and found.host_draw:
                return found
            return None
        if type(func) is cst.Attribute and func.attr.value in _ARRAY_METHODS:
            found = self.scalar_source(func.value)  # `lam_mix.astype(np.float32)`
            if found is not None and found.array:
                return found if func.attr.value == "astype" else replace(found, array=False)
        callee = self._same_file_callee(func)
        if callee is None:
            if type(func) is cst.Attribute:
                if type(func.value) is cst.Name and self.scope.imports.is_imported(func.value.value):
                    return self._imported_helper_source(call)  # `schedules.position_lr(it, cfg)`
                return self._schedule_method_source(call, func.value)
            if type(func) is cst.Name and func.value in self.scope.env:
                return self._held_callable_source(call, func)  # `f = lambda t: ...; f(self.step)`
            return self._imported_helper_source(call)
        if type(func) is cst.Attribute and callee not in self._def_nodes:
            return self._held_callable_source(call, func)  # `self.lr_fn = lambda s: ...` in __init__
        if isinstance(func, cst.Name) and func.value in self.number_functions:
            for arg in call.args:  # `get_lr(self.iter_num, cfg)` with `def get_lr(...) -> float`
                found = self.scalar_source(arg.value)
                # an attribute's variation only: which parameters a result depends on is the
                # function's business (`_get_softmax_dim(name, ndim, stacklevel)`)
                if found is not None and not (found.condition and found.condition[0] == "param"):
                    return found
        found = self.scalar_returns.get(callee)
        if found is None and callee not in self.scalar_returns and self._draws_later(callee):
            # `mixing = _gen_mixing_coef(alpha)` with the helper drawing `np.random.beta` defined
            # further down the file (not walked yet): a new number on every step
            return ScalarSource(f"`{self.code_for(call)}` (a host draw, new on every step)", host_draw=True)
        if (found is None or found.condition) and (self.host_results.get(callee) or (
                callee not in self.tensor_results and self._number_shaped_def(callee))):
            # `lr, wd = self.schedule(self.step)`, a method walked earlier that returns host values,
            # or one whose returns are number arithmetic (`return self.base * 0.99 ** t`), walked
            # or not, that gave no tensor; given a tensor, what it computes may be device work.
            # A counter it is given varies for certain, unlike a setting it reads (`self.base`)
            if not any(self._kind(arg.value).is_tensor for arg in call.args):
                found = self._certain_arg_source(call) or found
        if found is None and _annotated_float(self._def_nodes.get(callee)):
            # `temp = self.teacher_temp(epoch)` with `def teacher_temp(self, epoch) -> float`:
            # a float computed on the host from this function's number parameter varies where
            # that parameter does (its callers decide). Only `-> float`: an `-> int` helper
            # given a parameter is most often a dimension (`self._dim(ndim)`).
            if not any(self._kind(arg.value).is_tensor for arg in call.args):
                return self._surest_source([arg.value for arg in call.args])
        return found

    def _number_shaped_def(self, key: str) -> bool:
        """Does the function of this file with unit key `key` return number arithmetic only?"""
        if key not in self._number_shaped:
            node = self._def_nodes.get(key)
            self._number_shaped[key] = node is not None and _returns_number_arithmetic(node)
        return self._number_shaped[key]

    def _imported_helper_source(self, call: cst.Call) -> ScalarSource | None:
        """`lr_at(self.step, cfg.lr)` with `lr_at` imported from another module of the program:
        what it computes from a number that varies for certain is fixed at capture like the
        number itself. A counter of this class varies for certain; a number parameter of this
        function (`position_lr(iteration, cfg)` in `def update_lr(self, iteration: int)`) varies
        where its callers pass it a per-step value, decided project-wide like the parameter itself.
        Not given a tensor: then the helper may be device work."""
        func = call.func
        name = func.value.value if type(func) is cst.Attribute and type(func.value) is cst.Name else getattr(func, "value", None)
        if type(name) is not str or not call.args or not self.scope.imports.is_imported(name):
            return None
        head = (self.resolve(func) or "").partition(".")[0]
        if not head or head in _NOT_PROGRAM_MODULES or head in sys.stdlib_module_names:
            return None
        found = self._certain_arg_source(call)
        if found is not None or not all(self._host_value(arg.value) for arg in call.args):
            return found  # an argument that may be a tensor: the helper may be device work
        for arg in call.args:
            source = self.scalar_source(arg.value)
            if source is not None and source.condition and source.condition[0] == "param":
                return source
        return None

    def _host_value(self, expr: cst.BaseExpression) -> bool:
        """A value known not to be a tensor: a number, a setting, a program object."""
        tag = self._kind(expr).tag
        if tag in ("scalar", "config", "object"):
            return True
        # `self.cfg` of unknown kind names a setting more often than a tensor; a call's or an
        # index's result of unknown kind (`self.net(x)[:, -1]`) may well be one
        return (tag == "unknown" and type(expr) in (cst.Name, cst.Attribute)) or self.scalar_source(expr) is not None

    def _schedule_method_source(self, call: cst.Call, held: cst.BaseExpression) -> ScalarSource | None:
        """`self.sched.value(self.updates)`: a method of a program object (a schedule) `held` in
        `self.sched` given a number that varies for certain computes, on the host, a value fixed
        at capture like it; so does calling the object (`self.sched(self.updates)`)."""
        if not call.args:
            return None
        if not self._held_object(held):
            return None
        return self._certain_arg_source(call)

    def _held_object(self, held: cst.BaseExpression) -> bool:
        """Does `held` hold an object of a program class (not torch's)? An attribute a method
        rebinds from a number to one (`self.clip = clip` in `__init__`, `self.clip =
        Schedule(self.clip)` in a setup method) counts by the classes it is given."""
        receiver = self._kind(held)
        refs = receiver.refs if receiver.tag == "object" else ()
        if not refs and receiver.tag in ("scalar", "unknown") and type(held) is cst.Attribute and self.is_self(held.value):
            refs = tuple(self.attr_objects.get((self.scope.class_key or "", held.attr.value), ()))
        return bool(refs) and not any(r.startswith("torch.") for r in refs)

    def _held_callable_source(self, call: cst.Call, func: cst.BaseExpression) -> ScalarSource | None:
        """A callable held in a local or an attribute (a lambda, a `partial`, an inherited
        method) given a number that varies for certain and no tensor: what it computes on the
        host is fixed at capture. Not a module (calling one is device work on tensors); a
        schedule object of the program (`self.clip_range(self.progress)`, its `__call__`) is
        asked like its methods (`_schedule_method_source`)."""
        if any(self._kind(arg.value).is_tensor for arg in call.args):
            return None  # given a tensor: device work (a module's forward)
        if type(func) is not cst.Name and self._held_object(func):
            return self._schedule_method_source(call, func)
        if not call.args or self._kind(func).tag in ("object", "modules", "tensor", "bool-tensor"):
            return None
        return self._certain_arg_source(call)

    def _certain_arg_source(self, call: cst.Call) -> ScalarSource | None:
        """The source of the first argument that varies for certain (not a parameter's), else of
        the first that is a number attribute of an object whose class the project decides about
        (`lr_at(self.state.step)` where another class advances `step` each step) when no
        argument may be a tensor (given one, the call may be device work)."""
        held = None
        for arg in call.args:
            found = self.scalar_source(arg.value)
            if found is not None:
                if not found.condition:
                    return found
                if held is None and len(found.condition) == 2:  # (class, attribute)
                    held = found
        if held is not None and not all(self._host_value(arg.value) for arg in call.args):
            return None
        return held

    def _same_file_callee(self, func: cst.BaseExpression) -> str | None:
        """The unit key of `self.method` / a function of this module, for what it returns."""
        scope = self.scope
        if isinstance(func, cst.Attribute) and self.is_self(func.value) and scope.class_key:
            return f"{scope.class_key}.{func.attr.value}"
        if isinstance(func, cst.Name) and func.value in self.module_defs and func.value not in scope.env:
            return self.module_defs[func.value]
        return None

    def is_number_param(self, name: str) -> bool:
        """A parameter of the current function declared a number (`lr: float`, `t=0`), not rebound."""
        scope = self.scope
        return scope is not None and name in scope.number_params and name not in scope.reassigned

    def local_kind(self, name: str) -> T.Kind | None:
        """The kind bound to a local name so far in this function, if any."""
        return self.scope.env.get(name) if self.scope is not None else None

    def code_for(self, node: cst.CSTNode, at: cst.CSTNode | None = None) -> str:
        """Source for `node` as it would be written where `at` (default: `node`, else the current
        statement) stands: lines inside a multi-line call keep the block's indentation."""
        assert self.cst_module is not None
        statement = self.anchors.get(id(at if at is not None else node))
        if statement is None and at is not None and id(at) in self.statement_indents:
            statement = at
        if statement is None:
            statement = self.statement
        state = CodegenState(default_indent=self.cst_module.default_indent, default_newline=self.cst_module.default_newline)
        state.indent_tokens.extend(self.statement_indents.get(id(statement), ()))
        node._codegen(state)
        return "".join(state.tokens)

    # ------------------------------------------------------------------ inference
    def _infer(self, expr: cst.BaseExpression) -> T.Kind:
        scope = self.scope
        assert scope is not None
        tp = type(expr)
        if tp is cst.Name:
            name = expr.value
            if name in ("True", "False", "None"):
                return T.SCALAR
            if name in scope.env:
                found = scope.env[name]
                if found.tag == "unknown" and name in scope.pending and self.external:
                    pid = scope.pending[name]
                    return self.external.get(pid) or self.external.get(pid + OBJECT_PID, found)
                return found
            if name in self.globals:
                return self.globals[name]
            if scope.imports.is_imported(name) or name in self.module_defs or name in scope.local_defs:
                return T.SCALAR
            return T.UNKNOWN
        if tp is cst.Dict or tp is cst.DictComp:
            # `{name: AverageMeter(name) for name in names}`: `self.meters["loss"].record(...)`
            # runs AverageMeter.record (the kind of an nn.ModuleDict of those classes)
            if tp is cst.DictComp:
                values = [expr.value]
            elif all(type(e) is cst.DictElement for e in expr.elements):
                values = [e.value for e in expr.elements]
            elif all(type(e) is cst.DictElement or self._kind(e.value) == T.TENSOR_DICT for e in expr.elements):
                # `{**a, **b}` of tensor dicts (plus tensor entries): still a dict of tensors
                values = [e.value for e in expr.elements if type(e) is cst.DictElement]
                if all(self._kind(v).is_tensor for v in values):
                    return T.TENSOR_DICT
                values = []
            else:
                values = []  # `{**other}`: what it holds is unknown
            kinds = [self._kind(v) for v in values]
            if kinds and all(k.tag == "object" and k.refs for k in kinds):
                return T.module_set(*dict.fromkeys(r for k in kinds for r in k.refs))
            if kinds and all(k.is_tensor for k in kinds):
                # `{"mase": mase, "smape": ratio.mean()}`, `{k: torch.ones(()) for k in weights}`
                return T.TENSOR_DICT
            return T.SCALAR
        if tp in (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                  cst.FormattedString, cst.Lambda, cst.Set, cst.SetComp):
            return T.SCALAR
        if tp in (cst.List, cst.Tuple):
            # `(*self.caches, *self.draft_caches)`: a starred element adds what iterating it gives
            elements = [self._element_kind(e.value) if type(e) is cst.StarredElement else self._kind(e.value)
                        for e in expr.elements]
            if elements and all(k.tag == "object" for k in elements):
                # `[MaxLength(n), EosToken(id)]`: iterating and calling it runs their __call__
                return T.module_set(*dict.fromkeys(r for k in elements for r in k.refs))
            if not any(k.is_tensor for k in elements):
                return T.SCALAR
            return T.TENSOR_TUPLE if all(k.is_tensor for k in elements) else T.MIXED_TUPLE
        if tp in (cst.ListComp, cst.GeneratorExp):
            if self._maps_tensors(expr):
                return T.TENSOR_TUPLE  # `[t.to(dev) for t in batch]` over tensors
            made = self._comprehension_elements(expr)
            if made is not None:
                return made
            if tp is cst.ListComp and type(expr.elt) is cst.Call:
                # `[make_queue(d) for d in dilations]`: iterating it gives those objects
                element = self._kind(expr.elt)
                if element.tag == "object" and element.refs:
                    return T.module_set(*element.refs)
            return T.UNKNOWN  # elements unknown: iterating it must not invent tensors
        if tp is cst.Attribute:
            return self._infer_attribute(expr)
        if tp is cst.Subscript:
            base = self._kind(expr.value)
            if base.is_tensor:  # indexing keeps the dtype: `xc[i]` of a mask is a mask
                return T.BOOL_TENSOR if base.is_bool_tensor else T.TENSOR
            if base.tag == "tensor-tuple":
                single = len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index)
                return T.TENSOR if single else T.TENSOR_TUPLE
            if base == T.CONFIG:
                return T.CONFIG
            if base == T.TENSOR_DICT:
                return T.TENSOR  # `metrics["mase"]`
            if base.tag == "modules":
                if len(expr.slice) == 1 and type(expr.slice[0].slice) is cst.Slice:
                    return base  # `self.layers[:n_active]`: a slice of a ModuleList is one
                key = entry_key(expr.slice[0].slice) if len(expr.slice) == 1 else None
                entry = self._module_entry(expr.value, key) if key is not None else None
                if entry is not None:
                    return entry  # `self.transformer["h"]`
                return T.instance_of(*base.refs)
            if base.not_tensor and base.tag == "scalar":
                return T.SCALAR
            if self.external:
                pid = self._depends_on(expr)
                if pid is not None and pid in self.external:
                    found = self.external[pid]
                    return T.TENSOR if found == T.TENSOR_DICT else found  # `metrics["mase"]`
            return T.UNKNOWN
        if tp is cst.Call:
            kind = self._infer_call(expr)
            if kind.tag == "unknown":
                pid = self._call_pid(expr)
                if pid is not None:
                    self._pending[id(expr)] = pid
                    found = self.external.get(pid)
                    if found is not None and found.is_tensor:
                        if found.is_bool_tensor and tensor_use.given_only_numbers(expr, self._kind):
                            return kind  # `any_nan(1.0)`: a number-or-tensor check on a number
                        return tensor_use.returned_by(found, dotted(expr.func))
                    return found or self.external.get(pid + OBJECT_PID, kind)
            return kind
        if tp is cst.BinaryOperation:
            left, right = self._kind(expr.left), self._kind(expr.right)
            if isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
                if left.is_bool_tensor or right.is_bool_tensor:
                    return T.BOOL_TENSOR
            if left.is_tensor or right.is_tensor:
                if isinstance(expr.operator, cst.Modulo) and isinstance(expr.left, (cst.SimpleString, cst.FormattedString)):
                    return T.SCALAR
                return T.TENSOR
            if left.not_tensor and right.not_tensor:
                return T.SCALAR
            if type(expr.operator) is cst.Add and (self._is_shape(expr.left) or self._is_shape(expr.right)):
                return T.SCALAR  # `torch.Size(s) + x.shape`: a shape joined to another, a tuple
            return T.UNKNOWN
        if tp is cst.UnaryOperation:
            if isinstance(expr.operator, cst.Not):
                return T.SCALAR
            kind = self._kind(expr.expression)
            if type(expr.operator) is cst.BitInvert and kind.is_tensor:
                # `keep = ~pad`: `~` on a tensor inverts a mask (see GS108), on an integer
                # tensor (`~torch.arange(n)`) it is a bitwise not
                return T.TENSOR if self.is_integer_tensor(expr.expression) else T.BOOL_TENSOR
            return kind
        if tp is cst.Comparison:
            ops = [c.operator for c in expr.comparisons]
            if all(isinstance(op, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for op in ops):
                return T.SCALAR
            kinds = [self._kind(expr.left)] + [self._kind(c.comparator) for c in expr.comparisons]
            if any(k.is_tensor for k in kinds):
                return T.BOOL_TENSOR
            if all(k.not_tensor for k in kinds):
                return T.SCALAR
            return T.UNKNOWN
        if tp is cst.BooleanOperation:
            left, right = self._kind(expr.left), self._kind(expr.right)
            if left.is_tensor or right.is_tensor:
                return T.TENSOR
            return T.SCALAR if left.not_tensor and right.not_tensor else T.UNKNOWN
        if tp is cst.IfExp:
            # `m.reshape(-1) if m is not None else None` is a tensor wherever it is used as one
            if _is_none_literal(expr.orelse):
                return self._kind(expr.body)
            if _is_none_literal(expr.body):
                return self._kind(expr.orelse)
            body, orelse = self._kind(expr.body), self._kind(expr.orelse)
            defaulted = _none_default(expr)
            if defaulted is not None:
                # `Sampler(x) if sampler is None else sampler`: an object given in place of the
                # default is taken to be one like it (its methods are the calls that may run)
                default, given = (body, orelse) if defaulted is expr.body else (orelse, body)
                if given.tag == "unknown" and default.tag in ("object", "modules"):
                    return default
            return T.merge(body, orelse)
        if tp is cst.NamedExpr:
            return self._kind(expr.value)
        return T.UNKNOWN

    def _comprehension_elements(self, comp) -> T.Kind | None:
        """What a comprehension collects where its element says so whatever the loop variable
        holds: `[b.clone() for b in batch]` tensors, `[torch.zeros(n) for n in sizes]` tensors,
        `[t.tolist() for t in batch]` host values. (The element's kind is not asked otherwise: a
        loop variable may shadow an outer name whose kind is another.)"""
        element = comp.elt
        if type(element) is not cst.Call:
            return None
        func = element.func
        if type(func) is cst.Attribute:
            # `t.clone()`, or a chain ending in one: `t.to(self.device).clone()`
            root = func.value
            while type(root) is cst.Call and type(root.func) is cst.Attribute:
                root = root.func.value
            targets = {n.value for n in bound_names(comp.for_in.target)}
            if type(root) is cst.Name and root.value in targets:
                if func.attr.value in T.TENSOR_ONLY_METHODS:
                    return T.TENSOR_TUPLE
                return T.SCALAR if func.attr.value in T.TENSOR_NON_TENSOR_METHODS else None
        if (self.resolve(func) or "").startswith("torch.") and self._kind(element).is_tensor:
            return T.TENSOR_TUPLE
        return None

    def _maps_tensors(self, comp) -> bool:
        """`[t.to(dev) for t in batch]` over a tuple of tensors (see _mapped_iterable)."""
        iterable = _mapped_iterable(comp)
        return iterable is not None and self._kind(iterable) != T.MIXED_TUPLE and self._element_kind(iterable).is_tensor

    def _infer_attribute(self, expr: cst.Attribute) -> T.Kind:
        attr = expr.attr.value
        if attr in T.TENSOR_NON_TENSOR_ATTRS or attr == "training":
            return T.SCALAR
        scope = self.scope
        assert scope is not None
        if self.module_entries and type(expr.value) is cst.Attribute:
            entry = self._module_entry(expr.value, attr)  # `self.transformer.h`
            if entry is not None:
                return entry
        if isinstance(expr.value, cst.Name) and expr.value.value == scope.self_name and scope.class_key:
            kind = self._self_attr_kind(scope.class_key, attr)
            if kind is not None:
                return kind
            if attr in self._property_names and self._owns_property(scope.class_key, attr):
                pid = f"self:{attr}@{scope.class_key}"  # what the property returns, like `self.norm()`
                self._pending[id(expr)] = pid
                return self.external.get(pid, T.UNKNOWN)
        if T.looks_like_config(expr):
            return T.CONFIG
        base = self._kind(expr.value)
        if T.is_distribution(base):
            return T.TENSOR if attr in T.DISTRIBUTION_TENSOR_ATTRS else T.UNKNOWN
        if base.tag == "object":
            if attr in self._property_names:
                ref = self._property_ref(expr)
                if ref is not None:  # `self.stats.big`: what the property returns
                    pid = f"{ref.kind}:{ref.target}"
                    self._pending[id(expr)] = pid
                    return self.external.get(pid, T.UNKNOWN)
            kinds = [self.class_attr_kinds[r].get(attr) for r in base.refs if r in self.class_attr_kinds]
            kinds = [k for k in kinds if k is not None]
            if kinds:
                merged = kinds[0]
                for k in kinds[1:]:
                    merged = T.merge(merged, k)
                kept = records.kept_argument(base.refs, attr, self._attr_pids, ARG_PID) if merged.tag == "unknown" else None
                if kept is not None:  # `info.turning` with `self.turning = turning` in __init__
                    self._pending[id(expr)] = kept
                    return self.external.get(kept, merged)
                return merged
            if base.refs and not any(r in self.class_attr_kinds or r.startswith("torch.") for r in base.refs):
                # `self.scheduler.sigmas`, `batch.probs`: a field of a class defined in another
                # file, resolved project-wide (analyzer/returns.py) when a rule asks
                pid = f"{FIELD_PID}{'|'.join(base.refs)}:{attr}"
                if pid in self.external:
                    return self.external[pid]
                self._pending[id(expr)] = pid
        elif base.tag == "unknown" and (self._pending or scope.pending):
            # `terms.kl_per_dim` with `terms = elbo(...)` and `def elbo(...) -> ELBOTerms` elsewhere
            made = self._depends_on(expr.value)
            if (made is not None and not made.startswith((FIELD_PID, RETURNED_FIELD_PID)) and "#" not in made
                    and EITHER not in made and (not made.startswith(ARG_PID) or type(expr.value) is cst.Name)):
                # (also `strategy.loss` of a parameter: the classes of what its callers pass)
                pid = f"{RETURNED_FIELD_PID}{attr}|{made}"
                if pid in self.external:
                    return self.external[pid]
                self._pending[id(expr)] = pid
        if base.is_tensor:
            return T.TENSOR if attr in T.TENSOR_TENSOR_ATTRS else T.UNKNOWN
        name = self.resolve(expr)
        if name is not None and name.startswith("torch.") and not name.startswith("torch.Tensor"):
            return T.SCALAR  # torch.float16, torch.cuda, ...: constants and modules
        return T.UNKNOWN

    def _what_if_tensors(self, handler: Callable, node: cst.CSTNode, pids: set[str], reported: set) -> None:
        """Run a rule handler again as if the values from `pids` were tensors. Only if it then
        reports something are the ids worth resolving project-wide (and this file worth a second
        walk): most questions (`if not ctx.kind(v).is_tensor: return`) change nothing. The rule's
        own containers are restored afterwards, and nothing it reports here is kept.

        A question the handler asks only once the first answers are tensors (`table[mask] =
        row * 2.0`: the mask matters only for a tensor value) gets a second run with both."""
        rule = getattr(handler, "__self__", None)
        for _ in range(2):
            saved = _save_state(rule) if rule is not None else []
            self._speculating, self._captured, self._asked_later = pids, [], []
            try:
                handler(node, self)
                if any(r not in reported for r in self._captured):  # it would report something new
                    self.wanted.update(pids)
                    return
                later = set(self._asked_later) - pids
            finally:
                self._speculating, self._captured = None, None
                for owner, key, value in saved:
                    setattr(owner, key, value)
            if not later:
                return
            pids = pids | later

    def _call_pid(self, call: cst.Call) -> str | None:
        """A pending id for a call to a project function or method (resolved project-wide):
        `global:pkg.mod.f`, `method:pkg.mod.Model::__call__`, `self:encode@pkg.mod.Cls`."""
        # a method taken by its name alone (`h.cumprod(-2)` on an unknown `h`) says nothing of the result
        refs = [r for r in self._call_refs(call.func) if r.kind != "untyped"]
        if not refs:
            return None
        pid = ";".join(f"{r.kind}:{r.target}" for r in refs)
        if any(r.kind in ("self", "super") for r in refs):
            pid += f"@{self.scope.class_key}"
        return pid

    def _depends_on(self, expr: cst.BaseExpression) -> str | None:
        """The pending id an unknown kind hangs on: a project call, a name bound from one,
        an element of its tuple result, a method call or arithmetic on such a value."""
        tp = type(expr)
        if tp is cst.Name:
            return self.scope.pending.get(expr.value)
        if tp is cst.Call:
            self._kind(expr)
            pid = self._pending.get(id(expr))
            if pid is None and isinstance(expr.func, cst.Attribute):
                return self._depends_on(expr.func.value)  # `out_lens.sum()`
            return pid
        if tp is cst.Subscript:
            base = self._depends_on(expr.value)
            if base is not None and "#" not in base and EITHER not in base and len(expr.slice) == 1:
                index = expr.slice[0].slice
                if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
                    return f"{base}#{index.value.evaluated_value}"
            return base
        if tp is cst.Attribute:  # a field of an object of a class defined in another file
            self._kind(expr)
            return self._pending.get(id(expr))
        if tp is cst.BinaryOperation:  # `kinetic(r) + pe`: a tensor if either is one
            return either(self._depends_on(expr.left), self._depends_on(expr.right))
        if tp is cst.UnaryOperation and not isinstance(expr.operator, cst.Not):
            return self._depends_on(expr.expression)
        if tp is cst.Comparison:  # `value > 0`
            return either(self._depends_on(expr.left), *(self._depends_on(c.comparator) for c in expr.comparisons))
        if tp is cst.BooleanOperation:
            return self._depends_on(expr.left) or self._depends_on(expr.right)
        return None

    def _return_slot(self, expr: cst.BaseExpression) -> str:
        """One returned value, summarised for other files: T tensor, B bool tensor, L tuple of
        tensors, S not a tensor, @pid whatever that project call returns, ? unknown."""
        kind = self._kind(expr)
        if kind.is_bool_tensor:
            return "B"
        if kind.is_tensor:
            return "T"
        if kind.tag == "tensor-tuple":
            return "L"
        if kind == T.TENSOR_DICT:
            return "D"
        if kind.tag == "object" and kind.refs and not any(r.startswith("torch.") for r in kind.refs):
            return "O:" + "|".join(kind.refs)  # `return model, optimizer` from a factory
        function = self._function_held(expr)
        if function is not None:
            return FUNCTION_SLOT + function  # `train(..., scheduler=_lr_adjuster)`: calling it runs that function
        if kind.not_tensor:
            return "S"
        pid = self._depends_on(expr)
        return f"@{pid}" if pid is not None else "?"

    def _function_held(self, expr: cst.BaseExpression) -> str | None:
        """The function a bare name stands for here (a nested or module `def`, an imported
        function, a local bound to one), as a dotted key the call graph resolves; else None.
        Classes are left out: their instances are followed by kind. `self.train_step`, a method
        of this class defined here, stands for that method (a bound method handed on)."""
        if type(expr) is cst.Attribute and self.is_self(expr.value) and self.scope.class_key:
            key = f"{self.scope.class_key}.{expr.attr.value}"
            node = self._def_nodes.get(key)
            if node is None or any(type(d.decorator) is cst.Name and d.decorator.value == "property"
                                   for d in node.decorators):
                return None  # `self.lr` of a property is the value it returns
            return key
        if type(expr) is not cst.Name:
            return None
        name, scope = expr.value, self.scope
        if name in scope.local_defs and name not in scope.env:
            return scope.local_defs[name]
        if name in scope.function_aliases:  # `scheduler = warmup_step` (or another, in a branch)
            return "|".join(dict.fromkeys(scope.function_aliases[name]))
        if name in scope.env or name in scope.params or name in self.globals:
            return None
        if name in self.module_defs:
            key = self.module_defs[name]
            return key if key in self._def_nodes else None
        if scope.imports.is_imported(name) and not name[:1].isupper():
            return scope.imports.resolve_dotted(name)
        return None

    def _tensor_arithmetic(self, expr: cst.BaseExpression) -> bool:
        """Is `expr` arithmetic with a tensor operand (`photo + w_at(self.step) * smooth`)? Its
        result is a tensor: the number inside is reported where it meets the tensor, and a
        call of the function returning it is not a per-step number."""
        if self._kind(expr).is_tensor:
            return True
        tp = type(expr)
        if tp is cst.BinaryOperation:
            return self._tensor_arithmetic(expr.left) or self._tensor_arithmetic(expr.right)
        if tp is cst.UnaryOperation:
            return self._tensor_arithmetic(expr.expression)
        return False

    def _visit_return(self, node: cst.Return) -> None:
        if node.value is not None:
            self._visit(node.value)
        unit = next((u for u in reversed(self.scope.units) if u.is_function), None)
        if unit is None:
            return
        value = node.value
        if value is not None:
            # `return self.base * math.exp(-self.step / tau)`: a call to it gives a per-step number
            # (parameter-derived values depend on each caller's arguments: not kept)
            # `return self.updates % k == 0`: a flag that flips with the counter (`if self.should_eval:`)
            source = self.scalar_source(value) or self._flag_source(value)
            if (source is not None and not (source.condition and source.condition[0] == "param")
                    and not self._tensor_arithmetic(value)):
                self.scalar_returns.setdefault(unit.key, source)
        # does every `return` give host values only (`return lr / (i + 1), wd * i`)?
        parts = value.elements if type(value) is cst.Tuple else (() if value is None else (value,))
        kinds = [self._kind(getattr(p, "value", p)) for p in parts]
        self.host_results[unit.key] = self.host_results.get(unit.key, True) and all(k.not_tensor for k in kinds)
        if any(k.is_tensor or k.tag == "tensor-tuple" for k in kinds):
            self.tensor_results.add(unit.key)
        fixed = self._declared_tuple_slots(unit.node)
        declared = None if fixed is not None else self._declared_object_slot(unit.node)
        if fixed is not None and value is not None:
            # `-> tuple[Student, Teacher]`: element i's class from the annotation, the rest from
            # the returned tuple itself (`self.student, self.teacher = build(cfg)` follows both)
            values = value.elements if type(value) is cst.Tuple and len(value.elements) == len(fixed) else ()
            if any(isinstance(e, cst.StarredElement) for e in values):
                values = ()
            unit.returns.append(("tuple", *(
                slot or (self._return_slot(values[i].value) if values else "?") for i, slot in enumerate(fixed))))
            return
        if value is not None and tensor_use.returns_for_numbers(node, unit.node, self.resolve):
            return  # `if isinstance(x, Number): return x != x`: what callers passing tensors get is the rest
        if declared is None and value is not None:
            declared = self._object_slot(value)  # `return RingQueue(...)` without an annotation
        if declared is not None and value is not None:
            unit.returns.append((declared,))  # `-> list[KVCache]`: the annotation names the class
        elif value is None:
            unit.returns.append(("S",))
        elif isinstance(value, cst.Tuple) and not any(isinstance(e, cst.StarredElement) for e in value.elements):
            unit.returns.append(("tuple", *(self._return_slot(e.value) for e in value.elements)))
        else:
            unit.returns.append((self._return_slot(value),))

    def _declared_object_slot(self, node: cst.CSTNode) -> str | None:
        """`O:cls` / `M:cls` for a function annotated to return a project object (or a list of
        them): the return summary other files' call graphs follow."""
        returns = getattr(node, "returns", None)
        if returns is None:
            return None
        kind = self._annotation_kind(returns.annotation)
        if kind.tag not in ("object", "modules") or not kind.refs or any(r.startswith("torch.") for r in kind.refs):
            return None
        return ("O:" if kind.tag == "object" else "M:") + "|".join(kind.refs)

    def _declared_tuple_slots(self, node: cst.CSTNode) -> tuple[str, ...] | None:
        """For `-> tuple[A, B]` (a fixed length, no `...`): `O:cls` per element that names a
        project class, "" for the others; None for any other annotation."""
        returns = getattr(node, "returns", None)
        annotation = returns.annotation if returns is not None else None
        if type(annotation) is not cst.Subscript or len(annotation.slice) < 2:
            return None
        if (self.scope.imports.resolve(annotation.value) or "").rpartition(".")[2] not in ("tuple", "Tuple"):
            return None
        slots = []
        for element in annotation.slice:
            if not isinstance(element.slice, cst.Index) or type(element.slice.value) is cst.Ellipsis:
                return None
            kind = self._annotation_kind(element.slice.value)
            own = kind.tag == "object" and kind.refs and not any(r.startswith("torch.") for r in kind.refs)
            slots.append("O:" + "|".join(kind.refs) if own else "")
        return tuple(slots)

    def _object_slot(self, value: cst.BaseExpression) -> str | None:
        """`O:cls` for a returned instance of a class that is not torch's (`return Ring(n)`, or
        `model = Net(cfg); ...; return model` in a factory)."""
        if type(value) is not cst.Call and type(value) is not cst.Name:
            return None
        kind = self._kind(value)
        if kind.tag != "object" or not kind.refs or any(r.startswith("torch.") for r in kind.refs):
            return None
        return "O:" + "|".join(kind.refs)

    def _visit_yield(self, node) -> None:
        unit = next((u for u in reversed(self.scope.units) if u.is_function), None)
        if unit is not None:
            unit.generator = True  # calling it gives a generator, whatever it yields
        for child in _children(node):
            self._visit(child)

    def _annotation_kind(self, annotation: cst.BaseExpression) -> T.Kind:
        kind = T.annotation_kind(annotation, self.scope.imports.resolve)
        if kind.tag in ("object", "modules"):
            return T.Kind(kind.tag, tuple(self._qualify(r) for r in kind.refs))
        return kind

    def _self_attr_kind(self, class_key: str, attr: str) -> T.Kind | None:
        return self.class_attr_kinds.get(class_key, {}).get(attr)

    def _infer_call(self, call: cst.Call) -> T.Kind:
        scope = self.scope
        assert scope is not None
        func = call.func
        if isinstance(func, cst.Name):
            name = func.value
            if name == "dict" and call.args and name not in scope.env and not scope.imports.is_imported(name):
                made = self._dict_call_kind(call)  # `dict(mase=m, smape=s)`, `dict(zip(names, [t1, t2]))`
                if made is not None:
                    return made
            if name in SCALAR_BUILTINS and not scope.imports.is_imported(name) and name not in scope.env:
                return T.SCALAR
            if (name in ("max", "min") and call.args and not any(a.star or a.keyword for a in call.args)
                    and not scope.imports.is_imported(name) and name not in scope.env and name not in self.module_defs):
                # the builtin gives one of the values it compares: a tensor when all are
                values = [a.value for a in call.args]
                kinds = [self._element_kind(values[0])] if len(values) == 1 else [self._kind(v) for v in values]
                if all(k.is_tensor for k in kinds):
                    return T.TENSOR
                if len(values) > 1 and all(k == T.SCALAR for k in kinds):
                    return T.SCALAR  # `max(lr, 1e-6)`: one of the numbers
            if (name in ("abs", "round") and len(call.args) == 1 and not call.args[0].star and not call.args[0].keyword
                    and not scope.imports.is_imported(name) and name not in scope.env and name not in self.module_defs
                    and self._kind(call.args[0].value) == T.SCALAR):
                return T.SCALAR  # `abs(h_init)` of a number
            if (name in ("tuple", "list") and len(call.args) == 1 and not call.args[0].star
                    and name not in scope.env and not scope.imports.is_imported(name)
                    and self._kind(call.args[0].value).tag == "tensor-tuple"):
                return T.TENSOR_TUPLE  # `tuple(t.to(dev) for t in batch)`
            local = scope.env.get(name) or self.globals.get(name)
            if local is not None and local.tag in ("object", "modules"):
                return self._call_instance_kind(local)
            if (local is None or local.tag in ("unknown", "scalar")) and name in self.class_values():
                return T.instance_of(*self.class_values()[name])  # `cls(d)` with `cls = Fast if f else Slow`
            if name in self.module_class_values and name not in scope.env and name not in scope.local_defs:
                return T.instance_of(*self.module_class_values[name])  # `BlockFactory()` of the module
            if (name in self.number_functions and local is None and name not in scope.local_defs
                    and not scope.imports.is_imported(name)):
                return T.SCALAR  # `lr_at(it)` with `def lr_at(it) -> float` in this module
            if (name in self.object_functions and local is None and name not in scope.local_defs
                    and not scope.imports.is_imported(name)):
                return self.object_functions[name]  # `mlp(d, h)` with `def mlp(...) -> nn.Module`
        if (type(func) is cst.Subscript and type(func.value) is cst.Name and func.value.value in self.class_tables
                and func.value.value not in scope.env):
            return T.instance_of(*self.class_tables[func.value.value])  # `SOLVERS[method](...)`
        if type(func) in (cst.Call, cst.IfExp, cst.Subscript):
            # `partial(MuSGD, m=m)(params)`, `(A if f else B)(d)`, `{"a": A, "b": B}[name](d)`
            classes = self.classes_made_by(func)
            if classes:
                return T.instance_of(*classes)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if (scope.class_key and isinstance(func.value, cst.Name) and func.value.value == scope.self_name
                    and (scope.class_key, method) in self.held_classes):
                # `self.replay_buffer_class(...)` where the class sets `self.replay_buffer_class = ReplayBuffer`
                return T.instance_of(*sorted(self.held_classes[(scope.class_key, method)]))
            if (scope.class_key and method in self.number_methods.get(scope.class_key, ())
                    and isinstance(func.value, cst.Name) and func.value.value == scope.self_name):
                return T.SCALAR  # `self.lr_at(it)` with `def lr_at(self, it) -> float`
            if (scope.class_key and method in self.dict_methods.get(scope.class_key, ())
                    and isinstance(func.value, cst.Name) and func.value.value == scope.self_name):
                return T.TENSOR_DICT  # `batch = self.build_batch()` with `-> dict[str, torch.Tensor]`
            if method in ("forward", "__call__") and _is_super_call(func.value) and self._torch_module_base():
                return T.TENSOR  # `super().forward(x)` in a subclass of nn.Linear, nn.Conv2d, ...
            if method == "nonzero" and T.as_tuple(call):
                return T.TENSOR_TUPLE  # `m.nonzero(as_tuple=True)`, whatever `m` is
            receiver = self._kind(func.value)
            if method in ("pop", "get") and len(call.args) == 1 and receiver == T.TENSOR_DICT:
                return T.TENSOR  # `self.static.pop("temperatures")`
            if T.is_distribution(receiver):
                if method.startswith("_") or method in T.DISTRIBUTION_NON_TENSOR_METHODS:
                    return T.UNKNOWN
                return T.TENSOR
            if receiver.tag in ("object", "modules"):
                return receiver if method in T.MODULE_SELF_METHODS else T.UNKNOWN
            if receiver.is_tensor:
                if method.startswith("_"):
                    return T.UNKNOWN  # __tensor_flatten__, _values(): not plain tensor ops
                if method in T.TENSOR_NON_TENSOR_METHODS:
                    return T.SCALAR
                if method in ("unique", "unique_consecutive"):  # `x.unique().tolist()`: one tensor
                    return T.unique_kind(call, positional_limit=1)
                if method in T.TENSOR_TUPLE_METHODS or (method in ("max", "min") and call.args
                                                        and not self._elementwise_extreme(call, 0)):
                    return T.TENSOR_TUPLE
                if method in T.BOOL_RESULT_METHODS:
                    return T.BOOL_TENSOR
                if receiver.is_bool_tensor and method in T.SHAPE_METHODS:
                    return T.BOOL_TENSOR  # mask.reshape(-1) is still a mask
                return T.TENSOR
            if receiver.tag == "stream-or-event" or method in T.PYTHON_NUMBER_METHODS:
                return T.SCALAR  # `(int(n) - 1).bit_length()`: methods only Python numbers have
            name = self.resolve(func)
            if name is not None:
                kind = self._named_call_kind(name, call)
                if kind is not None:
                    return kind
            if receiver == T.UNKNOWN:
                if method in T.TENSOR_NON_TENSOR_METHODS:
                    return T.SCALAR
                if method in T.BOOL_ONLY_METHODS:
                    return T.BOOL_TENSOR
                if method in T.TENSOR_ONLY_METHODS:
                    return T.TENSOR
                if method in tensor_use.RESULT_METHODS:  # `norm(d).abs()`: no numpy array has `.abs()`
                    return tensor_use.method_result(call, self.code_for(call))
            if isinstance(func.value, cst.Name) and func.value.value == scope.self_name and scope.class_key:
                kind = self._self_attr_kind(scope.class_key, method)
                if kind is not None and kind.tag in ("object", "modules"):
                    return self._call_instance_kind(kind)
            return T.UNKNOWN
        name = self.resolve(func)
        if name is not None:
            kind = self._named_call_kind(name, call)
            if kind is not None:
                return kind
        callee = self._kind(func)  # e.g. nn.Linear(2, 2)(x)
        if callee.tag in ("object", "modules"):
            return self._call_instance_kind(callee)
        return T.UNKNOWN

    def _dict_call_kind(self, call: cst.Call) -> T.Kind | None:
        """`dict(mase=m, smape=s)`, `dict(zip(names, [t1, t2]))`, `dict(other, extra=t)`,
        `dict(**other)`: a dict of tensors when every value it gets is one (a tensor dict's
        values, keyword values, or the second sequence `zip` pairs with the keys); a dict of
        plain values when they all surely are not (`dict(zip(names, [1, 2]))`); else None."""
        kinds = []
        for arg in call.args:
            kind = self._kind(arg.value)
            if arg.keyword is not None or kind == T.TENSOR_DICT:
                kinds.append(T.TENSOR if kind == T.TENSOR_DICT else kind)
            elif (arg is call.args[0] and not arg.star and type(arg.value) is cst.Call
                  and self.resolve(arg.value.func) == "zip" and len(arg.value.args) == 2
                  and not any(a.star or a.keyword for a in arg.value.args)):
                values = self._kind(arg.value.args[1].value)
                kinds.append(T.TENSOR if values.tag == "tensor-tuple" and values != T.MIXED_TUPLE else values)
            else:
                return None
        if all(k.is_tensor for k in kinds):
            return T.TENSOR_DICT
        return T.SCALAR if all(k.tag == "scalar" for k in kinds) else None

    def _named_call_kind(self, name: str, call: cst.Call) -> T.Kind | None:
        if name == "collections.defaultdict" and call.args:
            # `defaultdict(lambda: torch.zeros(()))`: every value read from it is a tensor;
            # `defaultdict(int)`, `defaultdict(lambda: 0.0)`: numbers
            made = call.args[0].value
            if type(made) is cst.Lambda and not made.params.params:
                return T.TENSOR_DICT if self._kind(made.body).is_tensor else T.SCALAR
            if type(made) is cst.Name and made.value in ("int", "float", "bool", "str", "list", "dict", "set"):
                return T.SCALAR
        if name in ("torch.nn.ParameterDict", "torch.nn.modules.container.ParameterDict"):
            return T.TENSOR_DICT  # its values are parameters
        if name in ("copy.deepcopy", "copy.copy") and call.args:
            return self._kind(call.args[0].value)  # a copy of a module is a module of that class
        if ((name in GRAPHED_CALLABLES or name in COMPILE) and call.args and call.args[0].keyword is None
                and not call.args[0].star):
            # given one module (not a tuple of callables), make_graphed_callables returns that
            # module with its forward graphed, torch.compile a wrapper that runs its forward:
            # `self.m = make_graphed_callables(self.m, ...)` keeps `self.m`'s class, so its
            # calls still reach the module's forward
            kind = self._kind(call.args[0].value)
            if kind.tag == "object" and kind.refs:
                return kind
        if name.startswith("torch."):
            if name in MODULE_WRAPPERS:
                wrapped = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "module"), None)
                kind = self._kind(wrapped) if wrapped is not None else T.UNKNOWN
                if kind.tag == "object" and kind.refs:
                    return kind  # its calls, and the call graph, go to the wrapped module's forward
            if name in CONTAINER_MODULES:
                return T.module_set(*self._module_classes_in(call))
            if name in ("torch.max", "torch.min") and self._elementwise_extreme(call, 1):
                return T.TENSOR
            return T.torch_call_kind(name, call)
        if name.startswith("numpy.") and name.rpartition(".")[2][:1].islower():
            return T.SCALAR  # `np.argmin(shape)`: an array or number on the host, never a tensor
        tail = name.rpartition(".")[2].lstrip("_")  # `_TreeInfo(...)`: a private class
        if tail[:1].isupper() and not self._names_value(name) and name not in records.MAKERS:  # makes a class
            qualified = self._qualify(name)
            return T.instance_of(qualified)
        return None

    def _elementwise_extreme(self, call: cst.Call, other_position: int) -> bool:
        """`torch.max(a, b)` / `a.max(b)` with `b` a tensor: the elementwise maximum, one
        tensor (with a dim, `torch.max(a, 1)`, it is a (values, indices) pair)."""
        positional = [a for a in call.args if a.keyword is None and not a.star]
        other = positional[other_position] if len(positional) > other_position else next(
            (a for a in call.args if a.keyword is not None and a.keyword.value == "other"), None)
        return other is not None and self._kind(other.value).is_tensor

    def _torch_module_base(self) -> bool:
        """The class being walked derives first from a torch module with a forward of its own
        (`class Layer(nn.Linear)`), not from `nn.Module` or a container."""
        info = self.classes.get(self.scope.class_key) if self.scope.class_key else None
        if info is None or not info.bases:
            return False
        base = info.bases[0]
        return base.startswith("torch.nn.") and base.rpartition(".")[2] not in _NO_FORWARD_MODULES

    def _call_instance_kind(self, kind: T.Kind) -> T.Kind:
        # Calling a torch module (nn.Linear, ...) gives a tensor; a project module: unknown.
        if kind.refs and all(r.startswith("torch.nn.") for r in kind.refs):
            return T.TENSOR
        return T.UNKNOWN

    def _class_tables(self, body, imports: ImportTable) -> dict[str, tuple[str, ...]]:
        """Module-level tables of classes: `SOLVERS = {"dopri5": Dopri5Solver, "rk4": RK4}` (or a
        list or tuple of them), from which code builds the class a setting names
        (`SOLVERS[method](...)`): that call makes an instance of any of them."""
        tables: dict[str, tuple[str, ...]] = {}
        for name, entries in _literal_tables(body):
            names = [imports.resolve(v) for v in entries]
            if all(n and n.rpartition(".")[2][:1].isupper() for n in names):
                tables[name] = tuple(dict.fromkeys(self._qualify(n) for n in names))
        return tables

    def _function_tables(self, body) -> dict[str, tuple[str, ...]]:
        """Module-level tables of functions (`CENTER_FUNCTIONS = {"mean": center_mean}`, or a
        list or tuple of them): a function picked from one by a setting may be any entry."""
        tables: dict[str, tuple[str, ...]] = {}
        for name, entries in _literal_tables(body):
            found = [self._module_function(e) for e in entries]
            if all(found):
                tables[name] = tuple(dict.fromkeys(t for f in found for t in f))
        return tables

    def _class_named(self, expr: cst.BaseExpression) -> str | None:
        """`ReplayBuffer`, `buffers.ReplayBuffer`: the key of the class an expression names (not
        calls), by the capitalised convention, imported or defined in this module; else None."""
        if type(expr) not in (cst.Name, cst.Attribute):
            return None
        name = self.resolve(expr)
        head = (dotted(expr) or "").partition(".")[0]
        last = name.rpartition(".")[2].lstrip("_") if name else ""  # `_TreeInfo`: a private class
        if not last[:1].isupper() or last.isupper():
            return None  # `CONSTANT`s are not classes
        scope = self.scope
        if scope is not None and (scope.imports.is_imported(head) or head in self.module_defs):
            return self._qualify(name)
        return None

    def classes_made_by(self, expr: cst.BaseExpression) -> tuple[str, ...]:
        """The classes calling `expr` may construct (class_values.py): a class, a `partial` of
        one, a conditional between them, an entry of a literal table of them, a local holding one."""
        scope = self.scope
        known = {n: c for n, c in self.module_class_values.items() if scope is None or n not in scope.env}
        if scope is not None and scope.is_function:
            known.update(self.class_values())
        return class_choices(expr, self._class_named, self._partial_target, known)

    def _names_value(self, name: str) -> bool:
        """`self.D(x)`, `gan.G(z)`: a capitalised attribute of a value (a discriminator, a
        generator), not a class: calling it runs its forward rather than constructing one."""
        head, dot, _ = name.partition(".")
        scope = self.scope
        if not dot or scope is None or scope.imports.is_imported(head):
            return False
        return head == scope.self_name or head in scope.env

    def _qualify(self, name: str) -> str:
        """A name as written in this module → its project-wide dotted key."""
        head = name.partition(".")[0]
        if head in self.module_defs and not self.scope_imports_has(head):
            return f"{self.module}.{name}" if self.module else name
        return name

    def _qualify_base(self, name: str) -> str:
        """A base class as written → its dotted key; a bare name from nowhere in sight (a star
        import's: `from .update_type import *`) is looked up in this module's namespace."""
        qualified = self._qualify(name)
        if ("." not in qualified and self.module and not hasattr(builtins, qualified)
                and not self.scope_imports_has(qualified)):
            return f"{self.module}.{qualified}"
        return qualified

    def scope_imports_has(self, head: str) -> bool:
        return self.scope is not None and self.scope.imports.is_imported(head)

    def _module_classes_in(self, call: cst.Call) -> list[str]:
        """Classes constructed inside nn.ModuleList([...]) / nn.Sequential(...)."""
        found: list[str] = []
        stack: list[cst.CSTNode] = [a.value for a in call.args]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Call):
                kind = self._kind(node)
                if kind.tag == "object":
                    found.extend(kind.refs)
                    continue
                if kind.tag == "modules":
                    found.extend(kind.refs)
                    continue
                if kind.tag == "unknown" and id(node) in self._pending:
                    # `make_block(d)` defined in another file: ask the project which class it
                    # returns (the file is walked again with it)
                    self.wanted.add(self._pending[id(node)] + OBJECT_PID)
            stack.extend(_children(node))
        return found

    # ------------------------------------------------------------------ binding
    def _bind(self, target: cst.BaseExpression, kind: T.Kind, value: cst.BaseExpression | None = None,
              pid: str | None = None) -> None:
        scope = self.scope
        assert scope is not None
        if value is not None and scope.is_function:
            data_sizes.record(scope.data_sized, target, value, self._kind, self.resolve, self.code_for,
                              type(self.enclosing_statement(self.statement)) is cst.FunctionDef)
            if scope.read_lists or type(value) is cst.Call:
                self._note_read_list(target, value)
        if isinstance(target, cst.Name):
            if kind.tag == "unknown" and target.value in self._use_receivers:
                kind = self._kind_from_use(target.value, kind)
            elif kind.is_tensor and not kind.why and value is not None:
                kind = tensor_use.with_reason(kind, value, self._kind)  # `diff = t[1:] > t[:-1]`: why `t` is
            if kind == T.UNKNOWN and pid is None and value is not None and (self._pending or scope.pending):
                pid = self._depends_on(value)
            if pid is not None and kind == T.UNKNOWN:
                scope.pending[target.value] = pid
            else:
                scope.pending.pop(target.value, None)
            if kind == T.UNKNOWN and T.CONVENTIONAL_TENSOR_NAME.match(target.value):
                kind = T.TENSOR
            scope.env[target.value] = kind
            scope.reassigned.add(target.value)
            if type(value) is cst.List and not value.elements:
                scope.filled_lists.add(target.value)
            else:
                scope.filled_lists.discard(target.value)
            source = None
            if value is not None and not kind.is_tensor:  # `do_eval = self.updates % k == 0` too
                source = self.scalar_source(value) or self._flag_source(value)
            host_resident.record(scope.host_held, target.value, value, self)
            if value is not None and T.is_host_copy(value, self.resolve):
                scope.host_names.add(target.value)
            else:
                scope.host_names.discard(target.value)
            if value is not None and kind.is_tensor and self.is_integer_tensor(value):
                scope.int_names.add(target.value)
            else:
                scope.int_names.discard(target.value)
            view_of = self._viewed_param(value) if value is not None else None
            if view_of is not None:
                scope.param_views[target.value] = view_of
            else:
                scope.param_views.pop(target.value, None)
            if self.loop_names and value is not None and not kind.is_tensor and self._mentions_loop_name(value):
                scope.loop_derived.add(target.value)  # `clip = base * (1 - it / n)`: varies per iteration
            else:
                scope.loop_derived.discard(target.value)
            if scope.is_function and value is not None and not kind.is_tensor and loop_counters.number_list(
                    value, scope.number_lists, self.resolve):
                scope.number_lists.add(target.value)
            elif scope.number_lists:
                scope.number_lists.discard(target.value)
            if scope.counters:  # `pos = step + 1`: a counter too
                how = loop_counters.derived(target.value, value, scope.counters) if (
                    value is not None and not kind.is_tensor) else None
                if how is not None:
                    scope.counters[target.value] = how
                else:
                    scope.counters.pop(target.value, None)
            if source is not None:
                scope.tainted[target.value] = source
            else:
                scope.tainted.pop(target.value, None)
        elif isinstance(target, (cst.Tuple, cst.List)):
            values = None
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(target.elements):
                values = [e.value for e in value.elements]
            whole = self._depends_on(value) if values is None and value is not None and kind.tag == "unknown" else None
            split = (whole is not None and isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                     and value.func.attr.value in T.TENSOR_TUPLE_METHODS and id(value) not in self._pending)
            for i, element in enumerate(target.elements):
                if values is not None:
                    self._bind(element.value, self._kind(values[i]), values[i])
                elif kind.tag == "tensor-tuple":
                    self._bind(element.value, T.TENSOR)
                elif split:
                    # `a, b = out.chunk(2)` with `out` from a project call: tensors if `out` is one
                    self._bind(element.value, T.UNKNOWN, pid=whole)
                elif whole is not None and "#" not in whole:
                    # `log_probs, lens = model(x)`: element i of what a project function returns
                    element_pid = f"{whole}#{i}"
                    found = self.external.get(element_pid) or self.external.get(element_pid + OBJECT_PID, T.UNKNOWN)
                    self._bind(element.value, found, pid=element_pid)
                else:
                    self._bind(element.value, T.UNKNOWN)
            if values is None and value is not None and not kind.is_tensor and kind.tag != "tensor-tuple":
                # `lr, wd = self.schedule(self.step)`: each element carries the call's variation
                source = self.scalar_source(value)
                if source is not None:
                    names = [element.value for element in target.elements]
                    for name in names:
                        if type(name) in (cst.Tuple, cst.List):  # `(yl, yh, xl, xh), lam = cutmix_box(...)`
                            names.extend(inner.value for inner in name.elements)
                        elif type(name) is cst.Name and not scope.env.get(name.value, T.UNKNOWN).is_tensor:
                            scope.tainted[name.value] = source
            if value is not None:
                host_resident.record_unpacked(scope.host_held, target, value)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, T.UNKNOWN)

    # ------------------------------------------------------------------ walking
    def run(self, module: cst.Module, source: str) -> FileFacts:
        self.cst_module = module
        self.source = source
        self._schedules_lr = "lr_scheduler" in source
        self._tensor_receivers: frozenset[str] | None = None  # names a `name.detach(`-like call uses
        self._use_receivers = tensor_use.receivers(source)  # names some call may use as a tensor
        self._module_constants = default_guards.module_constants(module)  # `_debug = False`: guards
        self._module_predicates = default_guards.module_predicates(module)  # `def exists(v): ...`
        self._delegated: dict[int, dict[str, delegated_use.Delegated]] | None = None  # see analyzer/delegated_use.py
        self._statement_lines: list[dict[int, int]] = []  # statement_lines of this module, once asked for
        self._uses: dict[tuple[int, bool], dict[str, cst.CSTNode]] = {}  # (id of a def, params?) → names used as tensors
        self._none_only_attrs: set[tuple[int, str]] = set()  # (id of a class's kinds, attribute) bound to None only
        # (id of a class's kinds, attribute) annotated `dict[str, Tensor]`: the declaration holds
        self._declared_dicts: set[tuple[int, str]] = set()
        # (id of a class's kinds, attribute) bound to `{}`: a dict of tensors if only tensors are
        # stored in it (`self.norm_ema[k] = torch.ones(())`); None once something else is
        self._empty_dicts: dict[tuple[int, str], bool | None] = {}
        self._attr_pids: dict[str, dict[str, str | None]] = {}  # class key → attribute → the project call it holds
        self._made_attrs: dict[str, set[str]] = {}  # class key → attributes bound to project calls' results
        # constructor parameters annotated with a class (`controller: Controller`) of the method
        # being read, and the attributes keeping one (class key → attribute → its argument id)
        self._declared_params: dict[str, str] = {}
        self._declared_attr_pids: dict[str, dict[str, str]] = {}
        self._records: list[tuple[str, cst.ClassDef, cst.CSTNode]] = []  # namedtuple classes (records.py)
        self._install_handlers(source)
        imports = ImportTable(self.module, self.is_package, renames=self.renames)
        self._collect_module_level(module, imports)
        self._module_imports = imports
        module_unit = _UnitBuilder(f"{self.module}.<module>", "<module>", None, module, False)
        self.units.append(module_unit)
        self.units.extend(records.constructor_unit(key, record, made, _UnitBuilder) for key, record, made in self._records)
        self.scope = _Scope(imports, self.globals, {}, None, None, "", [module_unit])
        self._walk_statements(module.body)
        for hook in self.end_hooks:
            hook(self)
        # the lines only matter where a line can carry a noqa comment (noqa_lines' own test)
        lines = split_lines(source) if "noqa" in source or "NOQA" in source else []
        return self._finish(imports, lines)

    def _install_handlers(self, source: str) -> None:
        """Each rule's `visit_<Node>` methods, by node type, in rule order; none for a rule whose
        `words` the file never mentions (it would return at once from each). `visit_Call`
        handlers are kept apart: each call gets only those whose `Rule.calls` it matches."""
        prefilter = self.prefilter
        self.handlers = {}
        active = [r for r in self.rules if not (prefilter and r.words) or any(w in source for w in r.words)]
        self.end_hooks = [rule.end_module for rule in active if hasattr(rule, "end_module")]
        calls: list[tuple[Rule, Callable]] = []
        for rule in active:
            for node_type, attr in _visits(type(rule)):
                if node_type is cst.Call:
                    calls.append((rule, getattr(rule, attr)))
                else:
                    self.handlers.setdefault(node_type, []).append(getattr(rule, attr))
        self._call_handlers = tuple(handler for _, handler in calls)
        filters = tuple(type(rule).calls if prefilter else None for rule, _ in calls)
        self._call_filters = filters
        self._call_selections = _CALL_SELECTIONS.setdefault(filters, {})
        self._call_prefixes = tuple(sorted({p for f in filters if f is not None for p in f.prefixes}))
        self._call_keywords = frozenset(k for f in filters if f is not None for k in f.keywords)

    def _collect_module_level(self, module: cst.Module, imports: ImportTable) -> None:
        """Imports, top-level defs and classes (with their attribute kinds) before walking."""
        pending_classes: list[tuple[cst.ClassDef, str]] = []
        self._scan_module_level(module.body, "", imports, pending_classes)
        number_functions = self.number_functions = _number_functions(module.body)
        if "register_buffer" in self.source:  # the scan reads every method: only where it can find one
            self.registrars = _buffer_registrars(node for node, _ in pending_classes)
        self.scope = _Scope(imports, self.globals, {}, None, None, "", [])
        self.object_functions = self._object_functions(module.body)
        self.class_tables = self._class_tables(module.body, imports)
        self.function_tables = self._function_tables(module.body)
        # `BlockFactory = partial(Block, dim=2)`, `Impl = Fast if FLAG else Slow` at module level
        self.module_class_values = names_holding_classes(_local_values(module), self._class_named, self._partial_target)
        for node, key in pending_classes:
            # `class Naive(SGDUpdate[TExp, TIn, TOut])`: a generic base is its class
            bases = tuple(b for b in (imports.resolve(arg.value.value if type(arg.value) is cst.Subscript else arg.value)
                                      for arg in node.bases) if b)
            bases = tuple(self._qualify_base(b) for b in bases)
            if any(b.startswith(per_step.LR_SCHEDULERS) for b in bases):
                self.lr_changers.add("")  # a learning-rate scheduler of the program's own
            number_methods = self.number_methods[key] = _number_functions(node.body.body)
            self.dict_methods[key] = self._tensor_dict_functions(node.body.body)
            attrs = self._class_attr_kinds(node, key, imports)
            # the fields of the `__init__` a `@dataclass` generates (None: not one)
            fields = dataclass_inits.init_fields(node, imports.resolve) if "dataclass" in self.source and not node.bases else None
            declared = _dataclass_declared(fields, attrs) if fields else ()
            self.class_attr_kinds[key] = attrs
            attr_classes = tuple(
                (name, kind.refs if kind.tag in ("object", "modules") and kind.refs
                 else tuple(self.attr_objects.get((key, name), ())))  # merged with something unknown
                for name, kind in attrs.items()
                if kind.tag in ("object", "modules") and kind.refs
                or (key, name) in self.attr_objects and (key, name) not in self.attr_replaced
            ) + tuple(  # `transformer.h`: one step of an attribute path for other files (containers.py)
                (f"{name}.{entry}", kind.refs) for (owner, name), entries in self.module_entries.items() if owner == key
                for entry, kind in entries.items() if kind.tag in ("object", "modules") and kind.refs) + declared
            for stmt in node.body.body:
                if type(stmt) is cst.FunctionDef:
                    self._class_methods.add(f"{key}.{stmt.name.value}")
                if isinstance(stmt, cst.FunctionDef) and any(
                        isinstance(d.decorator, cst.Name) and d.decorator.value == "property" for d in stmt.decorators):
                    self.properties.add(f"{key}.{stmt.name.value}")
            varying, numbers, entries, advanced = _varying_number_attrs(node, number_functions, number_methods)
            self.advanced_attrs[key] = advanced
            # what the class's step-like methods advance or recompute (per_step.py), for the label
            self.step_writes[key] = {attr: write for attr, write in per_step.step_written_attrs(
                node, lambda v, params, me: _is_number_expression(v, params, number_functions, number_methods, me)
            ).items() if attr not in varying}
            varying |= self.step_writes[key].keys()
            self.varying_attrs[key] = varying
            self.grown_attrs[key] = per_step.grown_containers(node)
            if entries:
                self.varying_entries[key] = entries
            self.number_attrs[key] = numbers
            self.number_list_attrs[key] = loop_counters.number_list_attrs(node, imports.resolve)
            if "getattr(" in self.source:
                self.dispatchers.update({(key, name): found for name, found in hooks.dispatching_methods(node).items()})
            pids = self._attr_pids.get(key, {})
            slots = tuple(sorted((name, "T" if kind.is_tensor else f"@{pids[name]}") for name, kind in attrs.items()
                                 if kind.is_tensor or (kind.tag == "unknown" and pids.get(name))))
            slots += tuple((name, f"@{pid}") for name, pid in self.made_from_params.get(key, {}).items())
            slots += tuple((name, f"@{pid}") for name, pid in self._declared_attr_pids.get(key, {}).items()
                           if attrs.get(name, T.UNKNOWN).tag == "object")
            if fields is not None:
                slots += self._dataclass_init_slots(fields, key, attrs, slots)
            if "@property" in self.source:
                attr_classes, slots = _with_property_aliases(node, attr_classes, slots)
            self.classes[key] = ClassInfo(key, bases, attr_classes, tuple(sorted(varying)), tuple(sorted(numbers)), slots,
                                          advanced=tuple(sorted(advanced)),
                                          made=tuple(sorted(self._made_attrs.get(key, ()))))
        # classes with a project base class in another file, whose properties this file cannot see
        self._foreign_based = frozenset(
            key for key, info in self.classes.items()
            if any(not b.startswith("torch.") and b not in self.classes and "." in b for b in info.bases))
        if self.properties or self._foreign_based:  # reading `self.norm` runs the `norm` property
            self._property_names = frozenset(p.rpartition(".")[2] for p in self.properties)
            self._special = {**_SPECIAL, cst.Attribute: FileWalker._visit_attribute}
        self.scope = None
        # The pre-pass resolved names with the module's imports only; a method's own imports
        # (`import torch` inside it) must decide them in the walk proper.
        self._resolved = {}

    def _dataclass_init_slots(self, fields: tuple[tuple[str, cst.BaseExpression], ...], key: str,
                              attrs: dict[str, T.Kind], slots: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        """A `@dataclass`'s generated `__init__` (a unit with its fields as parameters, so that
        its call sites are read) and, for each field that may hold an object, the slot saying
        it holds what the constructor's callers pass (`CallbackContainer(callbacks)`)."""
        self.dataclass_inits.append((key, tuple(name for name, _ in fields)))
        known = {name for name, _ in slots}
        return tuple((name, f"@{ARG_PID}{key}.__init__:{name}") for name, annotation in fields
                     if name not in known and not dataclass_inits.plain_value(annotation)
                     and not attrs.get(name, T.UNKNOWN).is_tensor)

    def _tensor_dict_functions(self, statements) -> frozenset[str]:
        """Methods annotated to return a dict of tensors (`-> dict[str, torch.Tensor]`): known in
        the first walk, before the project resolves what a call returns."""
        found = set()
        for stmt in statements:
            if (type(stmt) is cst.FunctionDef and stmt.returns is not None
                    and type(stmt.returns.annotation) is cst.Subscript
                    and self._annotation_kind(stmt.returns.annotation) == T.TENSOR_DICT):
                found.add(stmt.name.value)
        return frozenset(found)

    def _object_functions(self, statements) -> dict[str, T.Kind]:
        """Module-level builders annotated to return a module or another object (`def mlp(...)
        -> nn.Module`): `self.q = mlp(...).to(device)` holds one, and a branch that hands it to
        a function records device work."""
        found = {}
        for stmt in statements:
            if type(stmt) is not cst.FunctionDef or stmt.returns is None:
                continue
            annotation = stmt.returns.annotation
            if type(annotation) is cst.Name and annotation.value in _PLAIN_RETURNS:
                continue  # the common answers, without resolving them
            kind = self._annotation_kind(annotation)
            if kind.tag in ("object", "modules") and kind.refs:
                found[stmt.name.value] = kind
        return found

    def _scan_module_level(self, statements, prefix: str, imports: ImportTable,
                           pending_classes: list[tuple[cst.ClassDef, str]]) -> None:
        """Imports, defs and classes of a module body (through top-level `if`/`try`).

        A method, not a nested function: a recursive closure is a reference cycle that would
        keep the walker, and through it the whole syntax tree, alive until the next collection."""
        for stmt in statements:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)) and not prefix:
                        imports.add(small)
                    record = records.record_class(small, imports.resolve)
                    if record is not None:  # `Info = namedtuple("Info", [...])`: the class it stands for
                        key = f"{self.module}.{prefix}{record.name.value}"
                        if not prefix:
                            self.module_defs[record.name.value] = key
                        pending_classes.append((record, key))
                        self._records.append((key, record, small))
            elif isinstance(stmt, cst.FunctionDef):
                self._def_nodes[f"{self.module}.{prefix}{stmt.name.value}"] = stmt
                if not prefix:
                    self.module_defs[stmt.name.value] = f"{self.module}.{stmt.name.value}"
            elif isinstance(stmt, cst.ClassDef):
                key = f"{self.module}.{prefix}{stmt.name.value}"
                if not prefix:
                    self.module_defs[stmt.name.value] = key
                pending_classes.append((stmt, key))
                self._scan_module_level(stmt.body.body, f"{prefix}{stmt.name.value}.", imports, pending_classes)
            elif isinstance(stmt, (cst.If, cst.Try)) and not prefix:
                self._scan_module_level(stmt.body.body, prefix, imports, pending_classes)
                for handler in getattr(stmt, "handlers", ()):
                    self._scan_module_level(handler.body.body, prefix, imports, pending_classes)
                orelse = stmt.orelse
                while orelse is not None:
                    self._scan_module_level(orelse.body.body, prefix, imports, pending_classes)
                    orelse = getattr(orelse, "orelse", None)

    def _class_attr_kinds(self, node: cst.ClassDef, key: str, imports: ImportTable) -> dict[str, T.Kind]:
        """Kinds of `self.x` from assignments and register_buffer calls in the class's methods."""
        kinds: dict[str, T.Kind] = {}
        declared: dict[str, T.Kind] = {}  # class-body annotations naming a class (no value)
        for stmt in node.body.body:
            if isinstance(stmt, cst.SimpleStatementLine):  # dataclass fields: `finished: torch.Tensor`
                for small in stmt.body:
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                        kind = self._annotation_kind(small.annotation.annotation)
                        if kind.tag == "object" and kind.refs:
                            if small.value is None:  # `actor: Actor`: what the methods bind there
                                declared[small.target.value] = kind
                        elif kind.is_tensor or kind.not_tensor:
                            kinds[small.target.value] = kind
                continue
            if not isinstance(stmt, cst.FunctionDef) or not stmt.params.params:
                continue
            self_name = stmt.params.params[0].name.value
            self._prepass_def = stmt
            self.scope = _Scope(imports, {}, {}, key, self_name, "", [])
            self.class_attr_kinds[key] = kinds
            self._kinds = {}
            for param in list(stmt.params.params[1:]) + list(stmt.params.kwonly_params):
                pid = f"{ARG_PID}{key}.{stmt.name.value}:{param.name.value}"
                if param.annotation is not None:  # `self.scheduler = scheduler` with `scheduler: DDIM`
                    kind = self.scope.env[param.name.value] = self._annotation_kind(param.annotation.annotation)
                    if kind.tag == "object" and kind.refs:
                        # `controller: Controller` may be given a subclass (`Solver(PID())`): the
                        # attribute keeps the declared class and what the callers pass
                        self._declared_params[param.name.value] = pid
                else:  # `self.matcher = matcher`: what the constructor's callers pass (ClassInfo.attr_slots)
                    self.scope.pending[param.name.value] = pid
            narrowed = narrowing.in_body(stmt.body, self._annotation_kind) if "isinstance" in self.source else {}
            for n in _statements_in(stmt.body):
                if isinstance(n, cst.SimpleStatementLine):
                    narrow = narrowed.get(id(n))
                    if narrow is not None and self.scope.env.get(narrow[0]) is not None:
                        narrow = None  # a name of known kind keeps it
                    if narrow is not None:  # `if isinstance(loss, ELBO): self.f = loss.f`
                        self.scope.env[narrow[0]] = narrow[1]
                    for small in n.body:
                        self._note_self_assignment(small, self_name, kinds)
                    if narrow is not None:
                        del self.scope.env[narrow[0]]
            self._declared_params = {}
        self._kinds = {}
        self._prepass_def = None
        for name, kind in declared.items():  # the declaration names the class where the binding cannot
            if kinds.get(name) is None or kinds[name].tag == "unknown":
                kinds[name] = kind
        return kinds

    def class_values(self) -> dict[str, tuple[str, ...]]:
        """Names of the function being read that hold a class (class_values.py)."""
        node = self.function_node if self.scope.units else self._prepass_def
        if node is None:
            return {}
        found = self._class_value_memo.get(id(node))
        if found is None:
            found = self._class_value_memo[id(node)] = class_valued_names(
                node, _local_values(node.body), self._class_named, self._partial_target, self.module_class_values)
        return found

    def _note_self_assignment(self, small: cst.BaseSmallStatement, self_name: str, kinds: dict[str, T.Kind]) -> None:
        """`self.x = value`, `x = value` (a local used later), `self.register_buffer("x", t)`."""
        scope = self.scope
        if isinstance(small, cst.Assign):
            kind = None
            for t in small.targets:
                target = t.target
                if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == self_name:
                    held = self.classes_made_by(small.value)
                    if held and scope.class_key:  # `self.buffer_class = ReplayBuffer` (or a partial of one)
                        self.held_classes.setdefault((scope.class_key, target.attr.value), set()).update(held)
                    kind = kind or self._kind(small.value)
                    made = small.value  # what a project call made, or what a comprehension collects
                    if type(made) is cst.ListComp:
                        made = made.elt
                    elif type(made) is cst.DictComp:
                        made = made.value
                    if id(made) in self._pending and self._kind(made).tag == "unknown":
                        # `self.caches = target.make_caches(...)` (or `[make_queue(d) for d in ...]`)
                        # defined in another file: ask the project which class of object it
                        # returns (for the calls made on it)
                        self.wanted.add(self._pending[id(made)] + OBJECT_PID)
                        if scope.class_key:
                            self._made_attrs.setdefault(scope.class_key, set()).add(target.attr.value)
                    name = target.attr.value
                    if kind.tag == "unknown" and scope.class_key and self._placed_on_device(small.value, scope.class_key):
                        self.device_attrs.setdefault(scope.class_key, set()).add(name)
                    if kind.tag == "unknown" and scope.class_key:  # what a project call returns, for other files
                        pid = self._depends_on(small.value)
                        if pid is None and type(small.value) is cst.IfExp:
                            # `self.matcher = matcher if matcher is not None else Default()`: what
                            # the callers pass (the default is what __init__ builds)
                            pid = self._depends_on(small.value.body) or self._depends_on(small.value.orelse)
                            pid = pid if pid and pid.startswith(ARG_PID) else None
                        pids = self._attr_pids.setdefault(scope.class_key, {})
                        pids[name] = pid if pids.get(name, pid) == pid else None  # two different calls: unknown
                    if type(small.value) is cst.Name and small.value.value in self._declared_params and scope.class_key:
                        self._declared_attr_pids.setdefault(scope.class_key, {})[name] = self._declared_params[small.value.value]
                    default = _none_default(small.value) if type(small.value) is cst.IfExp else None
                    if default is not None and kind.tag == "object" and scope.class_key:
                        # `self.matcher = matcher if matcher is not None else Default()`: the
                        # default's class, and what the callers pass
                        pid = self._depends_on(small.value.body if default is small.value.orelse else small.value.orelse)
                        if pid and pid.startswith(ARG_PID):
                            self._declared_attr_pids.setdefault(scope.class_key, {})[name] = pid
                    self._merge_attribute(kinds, name, kind, small.value)
                    if kind.tag == "modules" and type(small.value) is cst.Call and scope.class_key:
                        self._note_module_entries(scope.class_key, name, small.value)
                    pending = self._param_call(small.value)
                    if pending is not None and scope.class_key:  # `self.attn = impl_cls()`
                        self.made_from_params.setdefault(scope.class_key, {})[name] = NEW_PID + pending[len(ARG_PID):]
                    pending = self._wrapped_param(small.value) if kind.tag == "modules" and not kind.refs else None
                    if pending is not None and scope.class_key:  # `self.layers = nn.ModuleList(layers)`
                        self.made_from_params.setdefault(scope.class_key, {})[name] = pending
                elif isinstance(target, cst.Name):
                    scope.env[target.value] = kind = kind or self._kind(small.value)
                elif (type(target) is cst.Subscript and type(target.value) is cst.Attribute
                        and type(target.value.value) is cst.Name and target.value.value.value == self_name):
                    self._note_dict_store(kinds, target.value.attr.value, small.value)
                elif (isinstance(target, cst.Tuple) and type(small.value) is cst.Call
                        and self._kind(small.value).tag == "unknown" and id(small.value) in self._pending):
                    # `self.model, self.opt = build(cfg)` from a factory: element i's class
                    pid = self._pending[id(small.value)]
                    for i, element in enumerate(target.elements):
                        attr = element.value
                        if (type(attr) is cst.Attribute and type(attr.value) is cst.Name and attr.value.value == self_name
                                and "#" not in pid):
                            self.wanted.add(f"{pid}#{i}{OBJECT_PID}")
                            found = self.external.get(f"{pid}#{i}{OBJECT_PID}")
                            if found is not None:
                                self._merge_attribute(kinds, attr.attr.value, found, small.value)
                elif (isinstance(target, cst.Tuple) and not isinstance(small.value, cst.Tuple)
                        and self._kind(small.value) == T.TENSOR_TUPLE):
                    # `self.static_x, self.static_y = (t.to(dev).clone() for t in batch)`
                    for element in target.elements:
                        attr = element.value
                        if (type(element) is not cst.StarredElement and type(attr) is cst.Attribute
                                and type(attr.value) is cst.Name and attr.value.value == self_name):
                            self._merge_attribute(kinds, attr.attr.value, T.TENSOR, small.value)
                elif (isinstance(target, cst.Tuple) and isinstance(small.value, cst.Tuple)
                        and len(target.elements) == len(small.value.elements)):
                    # `self.model, self.cfg = model, cfg`: element by element
                    for element, value in zip(target.elements, small.value.elements):
                        if isinstance(element, cst.StarredElement) or isinstance(value, cst.StarredElement):
                            break
                        pair = cst.Assign(targets=[cst.AssignTarget(element.value)], value=value.value)
                        self._note_self_assignment(pair, self_name, kinds)
        elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Attribute):
            target = small.target
            if isinstance(target.value, cst.Name) and target.value.value == self_name:
                # `self.fabric: LocalFabric | None = None`: the annotation says what it will hold
                value_is_none = isinstance(small.value, cst.Name) and small.value.value == "None"
                declared = self._annotation_kind(small.annotation.annotation) if value_is_none else None
                kind = declared if declared is not None and declared.tag == "object" else self._kind(small.value)
                name = target.attr.value
                declared = self._annotation_kind(small.annotation.annotation)
                if declared == T.TENSOR_DICT or declared.tag == "modules" and declared.refs and type(small.value) is cst.Dict:
                    # `self.static: dict[str, torch.Tensor] = {}`: later `self.static =
                    # self.build_batch()` (kind unknown here) fills what was declared; likewise
                    # `self.variants: dict[str, LoraVariant] = {}` holds such objects
                    kinds[name] = declared
                    self._declared_dicts.add((id(kinds), name))
                    return
                self._merge_attribute(kinds, name, kind, small.value)
        elif isinstance(small, cst.Assert):
            held = narrowing.asserted_tensor_attribute(small.test, self_name, self.resolve)
            if held is not None and kinds.get(held, T.UNKNOWN).tag == "unknown":
                kinds[held] = T.TENSOR  # `assert isinstance(self.total, Tensor)`: the author says so
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            registrars = ("register_buffer", "register_parameter", *self.registrars)
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in registrars and call.args:
                first = call.args[0].value
                if isinstance(first, cst.SimpleString) and isinstance(first.evaluated_value, str):
                    kinds[first.evaluated_value] = T.TENSOR
            elif isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_state" and call.args:
                # a torchmetrics Metric's `self.add_state("total", default=torch.tensor(0))`: a tensor
                # state when its default is one (a list default stays a list)
                first = call.args[0].value
                default = next((a.value for a in call.args[1:] if a.keyword is None or a.keyword.value == "default"), None)
                if (isinstance(first, cst.SimpleString) and isinstance(first.evaluated_value, str)
                        and default is not None and self._kind(default).is_tensor):
                    kinds.setdefault(first.evaluated_value, T.TENSOR)
            owner = call.func.value if isinstance(call.func, cst.Attribute) else None
            if (isinstance(owner, cst.Attribute) and isinstance(owner.value, cst.Name)
                    and owner.value.value == self_name and call.func.attr.value in ("append", "extend", "insert")
                    and kinds.get(owner.attr.value, T.UNKNOWN).tag == "modules"):
                # `self.stages = nn.ModuleList()` then `self.stages.append(nn.Sequential(Block(...)))`:
                # the container holds what is appended, and calling its elements runs their forward
                added = self._module_classes_in(call)
                if added:
                    had = kinds[owner.attr.value].refs
                    kinds[owner.attr.value] = T.module_set(*dict.fromkeys((*had, *added)))

    def _param_call(self, value: cst.BaseExpression) -> str | None:
        """The pending id of the parameter `value` calls (`impl_cls(d)`), if it calls one."""
        if type(value) is not cst.Call or type(value.func) is not cst.Name:
            return None
        pid = self.scope.pending.get(value.func.value)
        return pid if pid is not None and pid.startswith(ARG_PID) else None

    def _wrapped_param(self, value: cst.BaseExpression) -> str | None:
        """The pending id of the parameter a container wraps (`nn.ModuleList(layers)`,
        `nn.Sequential(*layers)`): it holds what the callers pass."""
        if type(value) is not cst.Call or len(value.args) != 1 or value.args[0].keyword is not None:
            return None
        arg = value.args[0].value
        if type(arg) is not cst.Name or self.resolve(value.func) not in CONTAINER_MODULES:
            return None
        pid = self.scope.pending.get(arg.value)
        return pid if pid is not None and pid.startswith(ARG_PID) else None

    def _note_module_entries(self, class_key: str, name: str, call: cst.Call) -> None:
        """`self.transformer = nn.ModuleDict(dict(h=..., ln_f=...))`: each entry's kind."""
        entries = module_dict_entries(call) if self.resolve(call.func) in MODULE_DICTS else None
        if entries is not None:
            self.module_entries[(class_key, name)] = {key: self._kind(value) for key, value in entries}

    def _module_entry(self, holder: cst.BaseExpression, key: str) -> T.Kind | None:
        """The kind of entry `key` of the ModuleDict `holder` reads (`self.transformer`,
        `self.model.transformer`), where its class builds it in this file."""
        if type(holder) is not cst.Attribute:
            return None
        owner = holder.value
        if self.is_self(owner) and self.scope.class_key:
            classes: tuple[str, ...] = (self.scope.class_key,)
        else:
            kind = self._kind(owner)
            classes = kind.refs if kind.tag == "object" else ()
        found = [self.module_entries.get((c, holder.attr.value), {}).get(key) for c in classes]
        if not found or any(k is None for k in found):
            return None
        merged = found[0]
        for k in found[1:]:
            merged = T.merge(merged, k)
        return merged

    def _placed_on_device(self, value: cst.BaseExpression, class_key: str) -> bool:
        """`build_q(...).to(device)`, `.cuda()`, or `copy.deepcopy(self.q)` of such an attribute:
        a module or tensor made elsewhere (its kind unknown here) that lives on the device."""
        if type(value) is not cst.Call:
            return False
        func = value.func
        if type(func) is cst.Attribute and func.attr.value in ("to", "cuda"):
            return True
        if value.args and self.resolve(func) in ("copy.deepcopy", "copy.copy"):
            return self.placed_on_device(value.args[0].value, class_key)
        return False

    def placed_on_device(self, expr: cst.BaseExpression, class_key: str | None = None) -> bool:
        """Is `expr` an attribute of self set to a value placed on the device (see above)?"""
        class_key = class_key or (self.scope.class_key if self.scope is not None else None)
        return (type(expr) is cst.Attribute and class_key is not None and self.is_self(expr.value)
                and expr.attr.value in self.device_attrs.get(class_key, ()))

    def _note_dict_store(self, kinds: dict[str, T.Kind], name: str, value: cst.BaseExpression) -> None:
        """`self.norm_ema = {}` then `self.norm_ema[k] = torch.ones(())`: a dict that only ever
        receives tensors is a dict of tensors (reading `self.norm_ema[k]` gives one)."""
        key = (id(kinds), name)
        if self._empty_dicts.get(key, None) is None:
            return  # not bound to `{}`, or something else was stored
        kind = self._kind(value)
        had = kinds.get(name, T.SCALAR)
        if kind.is_tensor and had.tag != "modules":
            kinds[name] = T.TENSOR_DICT
        elif kind.tag == "object" and kind.refs and had != T.TENSOR_DICT:
            # `self.schemes[k] = WelfordCovariance()`: a dict of those objects, whose methods
            # its values run (`for k, s in self.schemes.items(): s.update(z)`)
            kinds[name] = T.module_set(*dict.fromkeys((*had.refs, *kind.refs)))
        else:
            self._empty_dicts[key] = None
            kinds[name] = T.SCALAR

    def _merge_attribute(self, kinds: dict[str, T.Kind], name: str, kind: T.Kind, value: cst.BaseExpression) -> None:
        """An attribute's kind over its assignments. `self.static = None` beside `self.static =
        [t.to(dev) for t in batch]` leaves it a tuple of tensors (a dict of tensors likewise): a None is never spread into a
        call or iterated, so it must not hide what the tuple holds. Likewise beside a tensor
        (`self.static_x = None` in `__init__`, a tensor in `capture`): a tensor wherever it is
        used as one, as `Tensor | None` annotations are; an object likewise (`KVCache | None`)."""
        none_only = self._none_only_attrs
        key = (id(kinds), name)
        if self.scope is not None and self.scope.class_key:
            owner = (self.scope.class_key, name)
            if kind.tag in ("object", "modules") and kind.refs:
                # for the call graph: an object a class keeps, even where another assignment of the
                # attribute is unknown here (`self.buffer = load_from_pkl(path)`: likely one of those)
                self.attr_objects.setdefault(owner, {}).update(dict.fromkeys(kind.refs))
            elif self._replaces_kept_object(value, name):
                self.attr_replaced.add(owner)
        if key in self._declared_dicts:
            return
        is_none = _is_none_literal(value)
        if type(value) is cst.Dict and not value.elements:
            if name not in kinds:
                self._empty_dicts[key] = True
                kinds[name] = kind
                return
            if key in self._empty_dicts:
                return  # `self.cache = {}` again (a reset) keeps what the stores make it
        self._empty_dicts.pop(key, None)
        if name not in kinds:
            kinds[name] = kind
            if is_none:
                none_only.add(key)
            return
        held = kinds[name]
        if is_none and (held.tag in ("tensor-tuple", "object", "modules") or held.is_tensor or held == T.TENSOR_DICT):
            return
        if key in none_only and not is_none:
            none_only.discard(key)
            if kind.tag in ("tensor-tuple", "object", "modules") or kind.is_tensor or kind == T.TENSOR_DICT:
                # `self.static_x = None` then a tensor: a tensor wherever it is used as one;
                # `self.rel_pos = None` then `Alibi(...)`: that object wherever it is called
                kinds[name] = kind
                return
        kinds[name] = T.merge(kinds[name], kind)

    def _replaces_kept_object(self, value: cst.BaseExpression, name: str) -> bool:
        """An assignment that puts something else in the attribute, not an unknown copy of the
        same kind of object: a wrapper of the attribute itself (`self.dec = wrap(self.dec, ...)`,
        `wrap((self.dec,), ...)`: what it returns is the wrapper's), or the result of a function
        torch makes (`torch.compile(torch.sin)`); a project function's (`load(path)`) may be one."""
        if type(value) is not cst.Call:
            return False
        if (self.resolve(value.func) or "").startswith(("torch.", "functools.")):
            return True
        wanted = f"{self.scope.self_name or 'self'}.{name}"
        stack: list[cst.CSTNode] = list(value.args)
        while stack:
            node = stack.pop()
            if type(node) is cst.Attribute and dotted(node) == wanted:
                return True
            stack.extend(children(node))
        return False

    def _walk_statements(self, statements) -> None:
        """Walk a statement list, opening a capture unit between capture_begin and capture_end."""
        segment: _UnitBuilder | None = None
        outer_statement = self.statement
        for index, stmt in enumerate(statements):
            self.block_sizes[id(stmt)] = len(statements)
            self.block_places[id(stmt)] = (statements, index)
            self.block_owners[id(stmt)] = outer_statement
            self.statement_indents[id(stmt)] = tuple(self.indents)
            if type(stmt) in _STATEMENTS:
                self.statement = stmt
            call = _expression_call(stmt)
            attr = call.func.attr.value if call is not None and isinstance(call.func, cst.Attribute) else None
            if attr == "capture_end" and segment is not None:
                self.scope.units.remove(segment)
                segment = None
            self._visit(stmt)
            if attr == "capture_begin" and segment is None:
                segment = self._open_block_unit(call, "capture", "capture_begin block", RegionKind.CAPTURE_BEGIN)
        if segment is not None:
            self.scope.units.remove(segment)
        self.statement = outer_statement

    def _open_block_unit(self, node: cst.CSTNode, tag: str, label: str, kind: RegionKind) -> _UnitBuilder:
        scope = self.scope
        assert scope is not None
        outer = scope.units[-1]
        index = sum(1 for u in self.units if u.key.startswith(outer.key + ".<"))
        unit = _UnitBuilder(f"{outer.key}.<{tag}#{index + 1}>", label, scope.class_key, node, False)
        unit.marks.append((kind, Confidence.CERTAIN))
        unit.display = f"{label} in {outer.display}"
        self.units.append(unit)
        scope.units.append(unit)
        self.anchors[id(node)] = self.statement
        return unit

    def _run_handlers(self, handlers, node: cst.CSTNode) -> None:
        """Each rule's handler on `node`; a handler that asked about kinds the project may know
        (`probed`) gets a what-if run for them."""
        probed, log = self._probed, self._report_log
        for handler in handlers:
            mark = len(log)
            handler(node, self)
            if probed:
                asked = set(probed)
                probed.clear()
                if not asked <= self.wanted:
                    self._what_if_tensors(handler, node, asked, set(log[mark:]))

    def _visit(self, node: cst.CSTNode) -> None:
        tp = type(node)
        handlers = self.handlers.get(tp)
        if handlers:
            self._run_handlers(handlers, node)
        method = self._special.get(tp)
        if method is not None:
            method(self, node)
            return
        for child in _children(node):
            self._visit(child)

    # --- special nodes
    def _visit_if(self, node: cst.If) -> None:
        """An `if` without `else`: kinds where its body's path and the path around it join
        (analyzer/branch_joins.py)."""
        scope = self.scope
        if scope is None or not scope.is_function:
            for child in _children(node):
                self._visit(child)
            return
        if node.orelse is not None:
            self._visit_if_else(node)
            return
        self._visit(node.test)
        before = {name: (kind, scope.pending.get(name)) for name, kind in scope.env.items()}
        tainted = dict(scope.tainted)
        narrow = self._narrowing(node.test)
        if narrow is not None and not narrow[2]:
            self._narrow_while(narrow, node.body)  # `if isinstance(loss, ELBO):`
        else:
            self._visit(node.body)
        leaves = branch_joins.leaves(node)
        self._set_tainted(branch_joins.joined_sources([(tainted, False), (dict(scope.tainted), leaves)]))
        for name, kind in list(scope.env.items()):
            if name in before and kind is not before[name][0]:
                found = before[name] if leaves else branch_joins.joined(name, before[name], (kind, scope.pending.get(name)))
                if found is not None:
                    scope.env[name] = found[0]
                    if found[1] is not None:
                        scope.pending[name] = found[1]
                    else:
                        scope.pending.pop(name, None)
        if narrow is not None and narrow[2] and leaves:  # `if not isinstance(optim, PyroOptim): raise ...`
            scope.env[narrow[0]] = narrow[1]

    def _narrowing(self, test: cst.BaseExpression) -> tuple[str, T.Kind, bool] | None:
        """An `isinstance` test narrowing a name of no known kind (analyzer/narrowing.py)."""
        found = narrowing.narrowed(test, self._annotation_kind)
        if found is None:
            return None
        kind = self.scope.env.get(found[0])
        return found if kind is None or kind.tag == "unknown" else None

    def _narrow_while(self, narrow: tuple[str, T.Kind, bool], body: cst.CSTNode) -> None:
        """Walk `body` with the narrowed name holding its objects, then give it back its kind."""
        scope, name = self.scope, narrow[0]
        had = scope.env.get(name)
        scope.env[name] = narrow[1]
        self._visit(body)
        if scope.env.get(name) is narrow[1]:
            if had is None:
                del scope.env[name]
            else:
                scope.env[name] = had

    def _visit_if_else(self, node: cst.If) -> None:
        """`if`/`else` (`elif`): each branch starts from the per-step sources before the `if`, and
        after it a name has the sources of any branch that reaches the join (branch_joins.py)."""
        scope = self.scope
        self._visit(node.test)
        tainted = dict(scope.tainted)
        narrow = self._narrowing(node.test)
        if narrow is not None and not narrow[2]:
            self._narrow_while(narrow, node.body)
        else:
            self._visit(node.body)
        through_body = dict(scope.tainted), branch_joins.leaves(node)
        self._set_tainted(tainted)
        if narrow is not None and narrow[2]:
            self._narrow_while(narrow, node.orelse)
        else:
            self._visit(node.orelse)
        orelse_leaves = type(node.orelse) is cst.Else and branch_joins.leaves(node.orelse)
        self._set_tainted(branch_joins.joined_sources([through_body, (dict(scope.tainted), orelse_leaves)]))

    def _set_tainted(self, sources: dict) -> None:
        self.scope.tainted.clear()
        self.scope.tainted.update(sources)

    def _visit_function(self, node: cst.FunctionDef) -> None:
        outer = self.scope
        assert outer is not None
        if tensor_use.is_overload_stub(node, self.resolve):
            return  # `@overload def f(x: Tensor) -> Tensor: ...`: the def below it is the function
        qual = f"{outer.qual}{node.name.value}"
        key = f"{self.module}.{qual}"
        if outer.is_function:
            outer.local_defs[node.name.value] = key
        unit = _UnitBuilder(key, qual, outer.class_key, node, True)
        self.units.append(unit)
        self.anchors[id(node.name)] = node
        for decorator in node.decorators:
            self._visit(decorator.decorator)
            mark = self._decorator_region(decorator.decorator)
            if mark is not None:
                unit.marks.append(mark)
            elif type(decorator.decorator) in (cst.Name, cst.Attribute):
                # `@decorator_knowngood` of the project: a call of the function runs the wrapper
                # the decorator returns (`_fn`), whose own work comes first
                for ref in self._call_refs(decorator.decorator):
                    if ref.kind == "global" and not ref.target.startswith(_LIBRARY_DECORATORS):
                        unit.calls.setdefault(CallRef("returned", f"global:{ref.target}"), decorator)
        if _has_region_comment(node):
            unit.marks.append((RegionKind.COMMENT, Confidence.CERTAIN))
        params = node.params
        env: dict[str, T.Kind] = {}
        if outer.is_function:  # a closure reads the enclosing function's declared parameters
            # (`def update(engine, batch)` inside `supervised_training_step(model: nn.Module,
            # optimizer: Optimizer, ...)`), where that function never rebinds them
            env.update((name, kind) for name, kind in outer.params.items()
                       if kind != T.UNKNOWN and name not in outer.reassigned)
        self_name = None
        inner = _Scope(outer.imports.child(), env, dict(outer.local_defs), outer.class_key, None, qual + ".", [unit], True)
        self.scope = inner
        all_params = list(params.posonly_params) + list(params.params)
        if outer.is_function:
            # a closure in a method (`def pack(activation)` in `__init__`) reads the method's
            # `self`, unless a parameter of its own shadows it; its first parameter is no `self`
            if outer.self_name and all(p.name.value != outer.self_name for p in all_params):
                inner.self_name = outer.self_name
        elif outer.class_key and all_params and not _is_staticmethod(node):
            self_name = all_params[0].name.value
            inner.self_name = self_name
        unit.params = tuple(p.name.value for p in all_params if p.name.value != self_name)
        if "getattr(" in self.source:
            unit.dispatches = hooks.dispatching_function(node, inner.self_name, inner.imports.is_imported)
        inner.guardable = default_guards.guardable_defaults(node, self_name)
        for statement, needed in default_guards.guarded_statements(node, self_name, inner.guardable,
                                                                        self._module_constants,
                                                                        self._module_predicates).items():
            self._default_guards[statement] = (key, *needed)
        if not isinstance(params.star_arg, cst.Param):  # no `*args`
            # how many of the last positional parameters have no default (see _scalar_arg_slots)
            unit.required_tail = next((i for i, p in enumerate(reversed(all_params)) if p.default is not None
                                       or p.name.value == self_name), len(all_params))
        documented = docstring_types.declared_types(node, {
            p.name.value for p in (*all_params, *params.kwonly_params)
            if p.annotation is None and p.name.value != self_name}) if type(node) is cst.FunctionDef else {}
        for param in all_params + list(params.kwonly_params):
            if param.name.value == self_name:
                continue
            declared_in_docstring = param.name.value in documented
            if declared_in_docstring:  # `global_step (int): ...` in the docstring
                param = param.with_changes(annotation=cst.Annotation(documented[param.name.value]))
            kind = T.UNKNOWN
            if param.annotation is not None:
                kind = self._annotation_kind(param.annotation.annotation)
                if declared_in_docstring and kind == T.SCALAR and not (
                        type(param.annotation.annotation) is cst.Name and param.annotation.annotation.value == "int"):
                    kind = T.UNKNOWN  # a documented `float` is often a 0-d tensor (`accept_prob.item()`)
                if kind == T.TENSOR and T.MASK_NAME.match(param.name.value):
                    kind = T.BOOL_TENSOR
                elif kind == T.TENSOR and self.resolve(param.annotation.annotation) in T.INT_ANNOTATIONS:
                    inner.int_names.add(param.name.value)  # `ids: torch.LongTensor`
            elif param.default is not None and isinstance(param.default, (cst.Integer, cst.Float)):
                kind = T.SCALAR
            env[param.name.value] = kind
            inner.params[param.name.value] = kind
            inner.param_views[param.name.value] = param.name.value
            if kind == T.UNKNOWN:  # its kind may come from what every caller passes (returns.py)
                inner.pending[param.name.value] = f"{ARG_PID}{key}:{param.name.value}"
            if _declares_number(param) and not T.SIZE_NAME.match(param.name.value):
                inner.number_params.add(param.name.value)
            elif (param.annotation is None and param.default is None) or _declares_number(param) or _admits_number(param):
                # a number named like a size (`step_size`, `num_steps`) is a setting unless a caller
                # passes it a per-step value (`verlet(z, self.step_size)`): per_step.py's sources
                inner.open_params.add(param.name.value)
            if param.default is not None:
                self.scope = outer
                self._visit(param.default)
                self.scope = inner
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                env[star.name.value] = T.UNKNOWN
        self._params_used_as_tensors(node.body, inner)
        if node.returns is not None:  # `-> torch.Tensor` says what callers elsewhere get
            declared = self._annotation_kind(node.returns.annotation)
            if declared.is_tensor or declared.tag == "tensor-tuple" or declared == T.TENSOR_DICT:
                unit.declared_returns = ("B" if declared.is_bool_tensor else "T" if declared.is_tensor
                                         else "D" if declared == T.TENSOR_DICT else "L",)
        saved_kinds = self._kinds
        self._kinds = {}
        saved = self._walk_state()
        try:
            self._walk_block(node.body)
        except Exception as error:  # our bug (a RecursionError...): this function only goes unanalysed
            if isinstance(error, MemoryError) or (isinstance(error, RecursionError) and self.reraise_recursion):
                raise
            self._restore_walk_state(saved)
            self.failures.append((node, unit.display, error))
        finally:
            self._kinds = saved_kinds
            self.scope = outer

    def _walk_state(self) -> tuple:
        """The walk's position outside a function body, to go on from after a failure in it."""
        return self.statement, len(self.loop_names), self.while_depth, len(self.indents)

    def _restore_walk_state(self, state: tuple) -> None:
        self.statement, loops, self.while_depth, indents = state
        del self.loop_names[loops:]
        del self.indents[indents:]

    def _params_used_as_tensors(self, body: cst.BaseSuite, scope: _Scope) -> None:
        """Unannotated parameters the function itself uses as tensors (`labels.bool()`,
        `delta.exp()`, `torch.isfinite(dt)`, `F.mse_loss(values, zs)`: see analyzer/tensor_use.py)
        are tensors in all of it, before that use too, as if annotated: `if labels.sum() == 0`
        above `labels.bool()` is a tensor branch."""
        unit = scope.units[-1]
        for name, kind in scope.params.items():
            if kind.tag == "unknown" and name in self._use_receivers:
                found = self._kind_from_use(name, kind, param=True)
                if found is not kind:
                    scope.env[name] = scope.params[name] = found
                    scope.pending.pop(name, None)
                    unit.tensor_params.append(name)
        delegated = self._delegated_params()
        for name, kind in scope.params.items():
            passed = delegated.get(name) if kind.tag == "unknown" else None
            if passed is not None:  # passed on to a function that uses it (or its elements) as a tensor
                tag = T.TENSOR_TUPLE.tag if passed.elements else T.TENSOR.tag
                scope.env[name] = scope.params[name] = T.Kind(tag, why=passed.reason)
                scope.pending.pop(name, None)
                if not passed.elements:
                    unit.tensor_params.append(name)

    def _delegated_params(self) -> dict[str, delegated_use.Delegated]:
        """The enclosing function's parameters that delegated_use.py finds to be tensors."""
        function = self.function_node
        if function is None:
            return {}
        if self._delegated is None:
            self._delegated = delegated_use.delegated_tensors(
                self.cst_module, self.resolve, self.cst_module.code_for_node,
                (self._module_imports.resolve, self._module_imports.is_imported, self._outside_uses))
        return self._delegated.get(id(function), {})

    def _outside_uses(self, target: str, slot: int | str) -> bool:
        """Does function `target` of another file use the parameter at `slot` as a tensor? Asked
        of the project (a pending id); known on the walk that is given the answer."""
        pid = f"{USES_PID}{target}:{slot}"
        self.wanted.add(pid)
        found = self.external.get(pid)
        return found is not None and found.is_tensor

    def _kind_from_use(self, name: str, kind: T.Kind, param: bool = False) -> T.Kind:
        """`kind` (unknown), or a tensor with its reason where the enclosing function uses `name`
        as one (a local: by a tensor method only)."""
        function = self.function_node
        if function is None:
            return kind
        key = (id(function), param)
        uses = self._uses.get(key)
        if uses is None:
            uses = self._uses[key] = tensor_use.used_as_tensors(
                function.body, self._use_receivers, self.resolve, methods_only=not param)
        use = uses.get(name)
        return kind if use is None else tensor_use.tensor_from_use(name, self.code_for(use))

    def _visit_class(self, node: cst.ClassDef) -> None:
        outer = self.scope
        assert outer is not None
        for decorator in node.decorators:
            self._visit(decorator.decorator)
        qual = f"{outer.qual}{node.name.value}"
        key = f"{self.module}.{qual}"
        inner = _Scope(outer.imports, {}, dict(outer.local_defs), key, None, qual + ".", outer.units)
        self.scope = inner
        self._walk_block(node.body)
        self.scope = outer

    def _visit_assign(self, node: cst.Assign) -> None:
        if type(node.value) is not cst.Integer and self.scope.is_function and "param_groups" in self.source:
            keys = list(per_step.written_group_keys(node, self.function_node))
            if keys and self._group_write_per_step(node):
                self.group_keys.update(keys)
                if "lr" in keys:
                    self.lr_changers.add(self.function_key or "")
        self._visit(node.value)
        kind = self._kind(node.value)
        for target in node.targets:
            target_expr = target.target
            if (isinstance(target_expr, cst.Attribute) and not self.is_self(target_expr.value)
                    and type(node.value) not in _LITERALS
                    # `session.temperature = t` in a loop (`for` or `while game.winner() is
                    # None`), or an update from the old value (`m.p = max(floor, m.p * decay)`)
                    and (self.loop_names or self.while_depth or _mentions_expr(node.value, target_expr))):
                self._note_outside_set(target_expr)
            self._visit_target(target.target)
            self._bind(target.target, kind, node.value)
            partial = self._partial_target(node.value)  # once: both records below use it
            if type(target.target) is cst.Name:
                if partial is not None:
                    self.scope.partials[target.target.value] = self._flat_partial(node.value, partial)
                else:
                    self.scope.partials.pop(target.target.value, None)
            self._note_function_alias(target.target, partial or node.value)
            if partial is None:
                self._note_returned_function(target.target, node.value)
            self._note_torch_alias(target.target, node.value)
            self._note_attribute_alias(target.target, node.value)

    def _note_attribute_alias(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`controller = self.controller` (also `a, b = self.a, self.b`): the local's calls are
        the attribute's, whose classes the call graph finds through the path (a class passed to
        the constructor, built in another file); any other binding ends the alias."""
        if type(target) in (cst.Tuple, cst.List) and type(value) in (cst.Tuple, cst.List) \
                and len(target.elements) == len(value.elements):
            for element, item in zip(target.elements, value.elements):
                self._note_attribute_alias(element.value, item.value)
            return
        for name in bound_names(target):
            self.scope.loop_sources.pop(name.value, None)
        if type(target) is cst.Name and type(value) is cst.Attribute and self._kind(value).tag in ("unknown", "object"):
            root = value
            while type(root) is cst.Attribute:
                root = root.value
            if type(root) is cst.Name and root.value == self.scope.self_name:
                self.scope.loop_sources[target.value] = value

    def _group_write_per_step(self, node: cst.Assign) -> bool:
        """Is a param-group write (`x["momentum"] = v`) repeated with new values between steps?
        Where it runs in a loop besides the one over the param groups (a warm-up in the batch
        loop), in a `step` method (a scheduler's, called every step), or writes a per-step
        number (a parameter callers fill, a counter); not a setup function writing a setting
        once (`group["weight_decay"] = weight_decay` after building the optimizer)."""
        groups = {t.target.value.value for t in node.targets
                  if type(t.target) is cst.Subscript and type(t.target.value) is cst.Name}
        if self.while_depth or any(not (names & groups) for names in self.loop_names):
            return True
        function = self.function_node
        if function is not None and function.name.value == "step":
            return True
        source = self.scalar_source(node.value)
        # a counter, a varying attribute; or a parameter its callers fill (`set_momentum(opt, m)`);
        # not a field of a settings object that might vary (`self.cfg.momentum`)
        return source is not None and (not source.condition or source.condition[0] == "param")

    def _partial_target(self, value: cst.BaseExpression) -> cst.BaseExpression | None:
        """`functools.partial(self.update, bc_weight=w)` → `self.update`."""
        if type(value) is not cst.Call or not value.args:
            return None
        func = value.func  # the cheap look first: this runs for every call
        if not ((type(func) is cst.Name and func.value == "partial")
                or (type(func) is cst.Attribute and func.attr.value == "partial")):
            return None
        if (not value.args[0].star and value.args[0].keyword is None
                and self.resolve(value.func) == "functools.partial"):
            return value.args[0].value
        return None

    def _flat_partial(self, call: cst.Call, target: cst.BaseExpression) -> cst.Call:
        """`h = partial(h, 2)` where `h` holds `partial(g, 1)` already: `partial(g, 1, 2)`, as
        functools itself flattens it. Recorded as `partial(h, 2)`, calling `h` would follow `h`
        forever."""
        if type(target) is not cst.Name or target.value not in self.scope.partials:
            return call
        inner = self.scope.partials[target.value]
        return call.with_changes(args=(*inner.args, *call.args[1:]))

    def _note_torch_alias(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`self.all_reduce_fn = distributed.all_reduce if use_ddp else noop`: calling the attribute
        may run that torch function, and rules judge the call as one (`resolve`)."""
        if type(target) is not cst.Attribute or not self.is_self(target.value) or not self.scope.class_key:
            return
        options = (value.body, value.orelse) if type(value) is cst.IfExp else (value,)
        held = [name for option in options if type(option) in (cst.Name, cst.Attribute)
                for name in [self.scope.imports.resolve(option)] if name and name.startswith("torch.")]
        if held:
            self.torch_aliases[f"{self.scope.class_key}.{target.attr.value}"] = held[0]

    def _note_function_alias(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`self.reduce = functools.partial(masked_mean, dim=1)` or `loss_fn = masked_mse`:
        calling the name (or attribute) later runs that project function. `value` is the
        assigned value, or the function a `partial` wraps; a conditional names either function
        (`self.sample_fn = distributed_sample if ddp else local_sample`), a literal table any of
        its entries (`self.center_fn = CENTER_FUNCTIONS[mode]`), a parameter its default
        (`self.gumbel_sample = gumbel_sample` with `gumbel_sample=gumbel_sample` in the def)."""
        targets = self._function_targets(value)
        if not targets:
            if type(target) is cst.Attribute and self.is_self(target.value) and self.scope.class_key:
                bound = self._bound_method_refs(value)
                if bound:  # `self.loss_and_grads = loss.loss_and_grads`
                    self._add_attribute_alias(target.attr.value, tuple(f"{REF_MARK}{r.kind}:{r.target}" for r in bound))
            return
        if type(target) is cst.Name and not self.scope.is_function:
            self.function_aliases[target.value] = targets
        elif type(target) is cst.Name:  # `func = _multi_tensor_adam` (else `_single_tensor_adam`), then `func(...)`
            self.scope.function_aliases.setdefault(target.value, []).extend(targets)
        elif type(target) is cst.Attribute and self.is_self(target.value) and self.scope.class_key:
            self._add_attribute_alias(target.attr.value, targets)

    def _bound_method_refs(self, value: cst.BaseExpression) -> list[CallRef]:
        """`loss.loss_and_grads`, a method bound to a parameter or local: the method of its
        object's classes, or, of no known class, by the method's name (analyzer/untyped_calls.py)."""
        if type(value) is not cst.Attribute or type(value.value) is not cst.Name or self.is_self(value.value):
            return []
        head, method = value.value.value, value.attr.value
        if self.scope_imports_has(head) or head in self.module_defs:
            return []
        kind = self._kind(value.value)
        if kind.tag == "object" and kind.refs:
            return [CallRef("method", f"{ref}::{method}") for ref in kind.refs]
        return untyped_calls.refs(method, self.module) if kind.tag == "unknown" else []

    def _add_attribute_alias(self, attr: str, targets: tuple[str, ...]) -> None:
        """`self.<attr>` may hold these functions too (each binding of it adds its own)."""
        key = f"{self.scope.class_key}.{attr}"
        self.function_aliases[key] = tuple(dict.fromkeys((*self.function_aliases.get(key, ()), *targets)))

    def _note_returned_function(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`self.grid = self._grid_from_step(h)` (or a module function's result): calling the
        attribute runs whatever function that call returns, decided project-wide (CallRef kind
        "returned"); kept beside the attribute's other bindings (a lambda, a parameter)."""
        if not (type(value) is cst.Call and type(target) is cst.Attribute and self.is_self(target.value)
                and self.scope.class_key):
            return
        refs = self._call_refs(value.func)
        if len(refs) == 1 and refs[0].kind in ("self", "global") and not refs[0].target.startswith("torch."):
            self._add_attribute_alias(target.attr.value, (f"{RETURNED_MARK}{refs[0].kind}:{refs[0].target}",))

    def _function_targets(self, value: cst.BaseExpression, depth: int = 0) -> tuple[str, ...]:
        """The project functions `value` names (see _note_function_alias); () for anything else."""
        tp = type(value)
        if tp is cst.IfExp and depth < 4:
            return (*self._function_targets(value.body, depth + 1), *self._function_targets(value.orelse, depth + 1))
        if tp is cst.Subscript or tp is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value == "get":
            table = value.value if tp is cst.Subscript else value.func.value
            if type(table) is not cst.Name or table.value in self.scope.env:
                return ()
            if table.value in self.function_tables:
                return self.function_tables[table.value]
            if self.scope_imports_has(table.value):  # a table of another file: the call graph looks it up
                return (self.scope.imports.resolve_dotted(table.value) + TABLE_SUFFIX,)
            return ()
        if tp is cst.Attribute:  # `centers.center_mean` of an imported module
            name = dotted(value)
            if name is None or not self.scope_imports_has(name.partition(".")[0]) or _names_class(name):
                return ()
            return (self.scope.imports.resolve_dotted(name),)
        if tp is not cst.Name:
            return ()
        scope = self.scope
        if scope.is_function and value.value in scope.params and value.value not in scope.reassigned:
            default = self._param_default(value.value)
            return self._module_function(default) if default is not None else ()
        if value.value in scope.local_defs and value.value not in scope.env:
            return (scope.local_defs[value.value],)  # `unpack = unpack_streams if s else unpack_one`, nested defs
        if value.value not in self.module_defs and not self.scope_imports_has(value.value):
            return ()
        refs = [r for r in self._call_refs(value) if r.kind == "global"]
        if len(refs) != 1 or _names_class(self.module_defs.get(value.value, "")):
            return ()  # a class: its instances are followed by kind
        return (refs[0].target,)

    def _param_default(self, name: str) -> cst.BaseExpression | None:
        """The default of parameter `name` of the function being walked, if it has one."""
        node = self.function_node
        if node is None:
            return None
        for param in (*node.params.params, *node.params.kwonly_params):
            if param.name.value == name:
                return param.default
        return None

    def _module_function(self, expr: cst.BaseExpression) -> tuple[str, ...]:
        """A module-level name of a project function (a default is evaluated at module level,
        where the parameter that shadows it does not exist yet)."""
        if type(expr) is not cst.Name:
            return ()
        name = expr.value
        key = self.module_defs.get(name) or (self.scope.imports.resolve_dotted(name) if self.scope_imports_has(name) else None)
        return () if key is None or _names_class(key) else (key,)

    def _visit_annassign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._visit(node.value)
        kind = self._annotation_kind(node.annotation.annotation)
        if kind == T.UNKNOWN and node.value is not None:
            kind = self._kind(node.value)
        self._visit_target(node.target)
        self._bind(node.target, kind)

    def _note_outside_set(self, target: cst.Attribute) -> None:
        base = self._kind(target.value)
        if base.tag == "object":
            self.outside_sets.update((ref, target.attr.value) for ref in base.refs)

    def _visit_augassign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Attribute) and not self.is_self(node.target.value):
            self._note_outside_set(node.target)  # `m.global_step += 1`: a counter kept from outside
            if type(node.target.value) is cst.Attribute and type(node.value) in (cst.Integer, cst.Float):
                self.held_counters.add(f"{node.target.value.attr.value}.{node.target.attr.value}")
        self._visit(node.value)
        self._visit(node.target)  # `x[m] += 1` reads x[m]: not a pure store
        if type(node.target) is cst.Name and self.scope.is_function:  # `mask_count += n` of a number read from data
            data_sizes.record_added(self.scope.data_sized, node.target, node.value, self._kind, self.resolve, self.code_for)
        if type(node.target) is cst.Name and isinstance(node.operator, _ARITHMETIC_AUG):
            # `running_loss = 0` before the loop, `running_loss += loss` in it: a tensor from then on
            value = self._kind(node.value)
            if value.is_tensor and self._kind(node.target).tag in ("scalar", "unknown"):
                self._bind(node.target, T.TENSOR if not value.is_bool_tensor else value)

    def _visit_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._visit_target(element.value)
            return
        self.stores.add(id(target))
        self._visit(target)

    def _element_kind(self, iterable: cst.BaseExpression) -> T.Kind:
        """The kind of the elements one gets by iterating `iterable`."""
        kind = self._kind(iterable)
        if kind.tag == "modules":
            return T.instance_of(*kind.refs)
        if kind.is_bool_tensor:
            return T.BOOL_TENSOR  # rows of a mask are masks
        if kind.is_tensor or kind.tag == "tensor-tuple":
            return T.TENSOR
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "range":
            return T.SCALAR
        if (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)
                and iterable.func.attr.value in ("parameters", "buffers")
                and self._kind(iterable.func.value).tag in ("object", "modules")):
            return T.TENSOR  # `for p in model.parameters()`: a module's tensors
        return T.UNKNOWN

    def _bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """`for a, b in zip(xs, ys)` / `for i, m in enumerate(self.layers)` bind per position;
        `for k, v in metrics.items()` / `for v in metrics.values()` over a dict of tensors, or
        over a dict of modules (`for name, head in self.heads.items()`: each value is a head)."""
        if (type(iterable) is cst.Call and type(iterable.func) is cst.Attribute and not iterable.args
                and iterable.func.attr.value in ("items", "values")):
            kind = self._kind(iterable.func.value)
            value = T.TENSOR if kind == T.TENSOR_DICT else T.instance_of(*kind.refs) if (
                kind.tag == "modules" and kind.refs) else None
            if value is not None:
                if iterable.func.attr.value == "values":
                    self._bind(target, value)
                    return
                if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
                    self._bind(target.elements[0].value, T.SCALAR)
                    self._bind(target.elements[1].value, value)
                    return
        if self._bind_named_tensor(target, iterable):
            return
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and isinstance(target, (cst.Tuple, cst.List)):
            name, args = iterable.func.value, [a.value for a in iterable.args if a.keyword is None]
            elements = [e.value for e in target.elements]
            if name == "zip" and len(args) == len(elements):
                for element, arg in zip(elements, args):
                    self._bind_element(element, arg)
                    self._note_loop_source(element, arg)  # `for layer, q in zip(self.model.layers, ...)`
                return
            if name == "enumerate" and args and len(elements) == 2:
                self._bind(elements[0], T.SCALAR)
                if isinstance(elements[1], (cst.Tuple, cst.List)):  # `for i, (x, m) in enumerate(zip(xs, ms))`
                    self._bind_loop_target(elements[1], args[0])
                    return
                self._bind_element(elements[1], args[0])
                self._note_loop_source(elements[1], args[0])
                return
        self._bind_element(target, iterable)
        self._note_loop_source(target, iterable)

    def _bind_element(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """Bind a loop variable to the kind of `iterable`'s elements. Where the iterable's kind
        hangs on a project call or a parameter (`for s, m in zip(samples, batch_mask)`), the
        element waits on the same pending id: a rule asking about `m` has that id resolved, and
        the walk again sees the elements of what it resolves to."""
        kind = self._element_kind(iterable)
        if type(target) in (cst.Tuple, cst.List) and kind.tag == "object" and self._kind(iterable).tag == "modules":
            # `for norm, block in self.layers` over ModuleLists of modules: each part is one of them
            for name in bound_names(target):
                self._bind(name, kind)
            return
        self._bind(target, kind)
        if kind == T.UNKNOWN and type(target) is cst.Name and self._kind(iterable) == T.UNKNOWN:
            pid = self._depends_on(iterable)
            if pid is not None and EITHER not in pid and not pid.endswith((ELEMENT, OBJECT_PID)):
                self.scope.pending[target.value] = pid + ELEMENT

    def _bind_named_tensor(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> bool:
        """`for name, p in model.named_parameters()` (or `named_buffers()`, also inside
        `enumerate(...)`): a name and one of the module's tensors."""
        if (type(iterable) is cst.Call and type(iterable.func) is cst.Name and iterable.func.value == "enumerate"
                and iterable.args and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2):
            if not self._bind_named_tensor(target.elements[1].value, iterable.args[0].value):
                return False
            self._bind(target.elements[0].value, T.SCALAR)
            return True
        if not (isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2
                and type(iterable) is cst.Call and type(iterable.func) is cst.Attribute
                and iterable.func.attr.value in ("named_parameters", "named_buffers")
                and self._kind(iterable.func.value).tag in ("object", "modules")):
            return False
        self._bind(target.elements[0].value, T.SCALAR)
        self._bind(target.elements[1].value, T.TENSOR)
        return True

    def bind_comprehension(self, comp: cst.BaseExpression) -> None:
        """Bind a one-loop comprehension's names now, as the walk does when it gets there: for a
        rule judging the element first (`if any((g != g).any() for g in grads):`)."""
        for_in = getattr(comp, "for_in", None)
        if for_in is not None and for_in.inner_for_in is None and not for_in.ifs:
            self._bind_loop_target(for_in.target, for_in.iter)

    def _note_loop_source(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            kind = self._kind(iterable) if isinstance(iterable, cst.Attribute) else None
            if kind is not None and (kind.tag == "unknown" or kind.tag == "modules" and not kind.refs):
                self.scope.loop_sources[target.value] = iterable  # (`nn.ModuleList(layers)` of a parameter)
            else:
                self.scope.loop_sources.pop(target.value, None)

    def _loader_batch(self, name: cst.Name) -> bool:
        """Does `name` hold a data loader's batch (typed so by _type_loader_batch)?"""
        found = self.scope.host_held.get(name.value)  # (the typed kind carries the loader's reason)
        return found is not None and self.scope.env.get(name.value, T.UNKNOWN).why == found[1]

    def _type_loader_batch(self, target: cst.BaseExpression, body: cst.BaseSuite) -> None:
        """`for x, y in loader`: each part of a data loader's batch is a tensor; `for batch in
        loader` with `batch["labels"]` read in the body: a dict of tensors (the default collate
        makes one of a dataset's dicts). What the analysis already knows is kept."""
        held = self.scope.host_held
        env = self.scope.env
        for name in bound_names(target):
            found = held.get(name.value)
            if found is None or found[0] != host_resident.TENSOR or env.get(name.value, T.UNKNOWN).tag != "unknown":
                continue
            if type(target) is not cst.Name:
                env[name.value] = T.Kind(T.TENSOR.tag, why=found[1])
            elif _keyed_by_string(body, name.value):
                env[name.value] = T.Kind(T.TENSOR_DICT.tag, why=found[1])

    def _visit_for(self, node: cst.For) -> None:
        self._visit(node.iter)
        self._visit_target(node.target)
        self._bind_loop_target(node.target, node.iter)
        batch, _ = host_resident.batch_target(self.scope.host_held, node.target, node.iter)
        host_resident.record_loop(self.scope.host_held, node.target, node.iter)
        if batch is not None:
            self._type_loader_batch(batch, node.body)
        self.loop_names.append({n.value for n in bound_names(node.target)})
        self.note_loop_sizes(node.body)
        counted = self._enter_counters(node)
        step = self._open_step_loop(node, counted)
        try:
            self._walk_block(node.body)
        finally:
            self.loop_names.pop()
            self._leave_counters(counted)
            self._close_step_loop(step)
        if node.orelse is not None:
            self._walk_block(node.orelse.body)

    def _open_step_loop(self, node: cst.For | cst.While, counted: dict) -> "step_loops.StepLoop | None":
        """A loop marked as a region (`for ...:  # graphsafe: region`): its body becomes a block
        unit, and its counters and carried names per-step values there (step_loops.py)."""
        scope = self.scope
        if scope is None or not step_loops.is_region_loop(node):
            return None
        found = {} if scope.is_function else loop_counters.loop_counters(node, scope.number_lists, self.resolve)
        found.update({name: f"an element of `{self.code_for(node.iter)}`" for name in step_loops.listed_numbers(node)})
        for name, how in found.items():  # a script's loop (module level) counts here, not in _enter_counters
            if name not in scope.counters:
                scope.counters[name] = how
                counted.setdefault(name, None)
        unit = self._open_block_unit(node, "loop", "loop region", RegionKind.COMMENT)
        unit.step_loop = True
        around = self.function_node if scope.is_function else self.cst_module
        carried = step_loops.carried_names(around, node)
        step = step_loops.StepLoop(unit.key, step_loops.header(node, self.code_for), frozenset(counted), carried,
                                   step_loops.shared_names(around, node))
        scope.step_loops.append(step)
        return step

    def _close_step_loop(self, step: "step_loops.StepLoop | None") -> None:
        if step is not None:
            self.scope.step_loops.remove(step)
            self.scope.units[:] = [u for u in self.scope.units if u.key != step.key]

    def step_loop_sharing(self, name: str) -> "step_loops.StepLoop | None":
        """The innermost open loop region whose passes all use the one object `name` was bound to
        before the loop (step_loops.shared_names)."""
        return next((s for s in reversed(self.scope.step_loops) if name in s.shared), None) if self.scope else None

    def step_loop_carrying(self, name: str) -> "step_loops.StepLoop | None":
        """The innermost open loop region whose next pass reads `name` as this pass leaves it."""
        return next((s for s in reversed(self.scope.step_loops) if name in s.carried), None) if self.scope else None

    def _enter_counters(self, node: cst.For | cst.While) -> dict[str, str | None]:
        """The loop's counters become per-pass numbers of its body; returns what they were."""
        scope = self.scope
        if scope is None or not scope.is_function:
            return {}
        lists = scope.number_lists
        kept = self.number_list_attrs.get(scope.class_key or "", ()) if scope.self_name else ()
        if kept:  # `for t in self.timesteps` of a table the class keeps as a Python list
            lists = lists | {f"{scope.self_name}.{attr}" for attr in kept}
        found = loop_counters.loop_counters(node, lists, self.resolve)
        before = {name: scope.counters.get(name) for name in found}
        scope.counters.update(found)
        return before

    def _leave_counters(self, before: dict[str, str | None]) -> None:
        """After the loop a counter holds its last value: the same on every call again."""
        for name, was in before.items():
            if was is None:
                self.scope.counters.pop(name, None)
            else:
                self.scope.counters[name] = was

    def _visit_while(self, node: cst.While) -> None:
        self._visit(node.test)
        self.while_depth += 1
        counted = self._enter_counters(node)
        step = self._open_step_loop(node, counted)
        try:
            self._walk_block(node.body)
        finally:
            self.while_depth -= 1
            self._leave_counters(counted)
            self._close_step_loop(step)
        if node.orelse is not None:
            self._walk_block(node.orelse.body)

    def _visit_with(self, node: cst.With) -> None:
        block = None
        for item in node.items:
            self._visit(item.item)
            if isinstance(item.item, cst.Call) and self.resolve(item.item.func) in GRAPH_CONTEXTS:
                block = item
            self._enter_exit_refs(item.item)
            if item.asname is not None:
                self._visit_target(item.asname.name)
                self._bind(item.asname.name, self._kind(item.item))
        unit = None
        if block is not None:
            unit = self._open_block_unit(block.item, "graph", "torch.cuda.graph block", RegionKind.GRAPH_BLOCK)
        self._walk_block(node.body)
        if unit is not None:
            self.scope.units.remove(unit)

    def _enter_exit_refs(self, manager: cst.BaseExpression) -> None:
        """`with Timer():` / `with self.timer:` on a project class runs its `__enter__` and
        `__exit__` around the block."""
        kind = self._kind(manager)
        if kind.tag != "object" or not kind.refs:
            if kind.tag == "unknown" and type(manager) is cst.Attribute:
                # `with self.offload_ctx:` holding what a helper of another file made: the call
                # graph follows the attribute to its classes (ClassInfo.attr_classes)
                for method in ("__enter__", "__exit__"):
                    for ref in self._attr_path_refs(manager, method):
                        for unit in self.scope.units:
                            self._add_call(unit, ref)
            return
        for ref in kind.refs:
            if not ref.startswith("torch."):
                for method in ("__enter__", "__exit__"):
                    for unit in self.scope.units:
                        self._add_call(unit, CallRef("method", f"{ref}::{method}"))

    def _add_call(self, unit: _UnitBuilder, ref: CallRef) -> None:
        unit.calls.setdefault(ref, self.statement)
        cold = any(g.startswith(default_guards.NEVER) for g in self._default_guards.get(id(self.statement), ())[1:])
        unit.cold_calls[ref] = unit.cold_calls.get(ref, True) and cold

    def _visit_block(self, node: cst.BaseSuite) -> None:
        self._walk_block(node)

    def _walk_block(self, suite: cst.BaseSuite) -> None:
        """Walk a suite, keeping track of the indentation its statements are written at."""
        if isinstance(suite, cst.IndentedBlock):
            self.indents.append(suite.indent if suite.indent is not None else self.cst_module.default_indent)
            try:
                self._walk_statements(suite.body)
            finally:
                self.indents.pop()
        else:
            self._walk_statements(suite.body)

    def _visit_import(self, node) -> None:
        self.scope.imports.add(node)

    def _call_handlers_for(self, node: cst.Call) -> tuple[Callable, ...]:
        """The `visit_Call` handlers `node` can matter to (see rules.base.Callees), in rule
        order. The callee's resolved name is asked here, before any handler, as
        every rule that resolves it would (memoised): the same answer at the same point."""
        func = node.func
        tp = type(func)
        name = func.attr.value if tp is cst.Attribute else func.value if tp is cst.Name else None
        resolved = self.resolve(func)
        keywords = ()
        if self._call_keywords and node.args:
            wanted = self._call_keywords
            keywords = tuple(a.keyword.value for a in node.args if a.keyword is not None and a.keyword.value in wanted)
        if resolved is None:
            key = (name, None, (), keywords)
        else:
            prefixes = self._call_prefixes
            if prefixes and resolved.startswith(prefixes):
                prefixes = tuple(p for p in prefixes if resolved.startswith(p))
            else:
                prefixes = ()
            key = (name, resolved.rpartition(".")[2], prefixes, keywords)
        found = self._calls_seen.get(key)
        if found is None:
            indices = self._call_selections.get(key)
            if indices is None:
                indices = self._call_selections[key] = tuple(
                    i for i, callees in enumerate(self._call_filters) if callees is None or callees.match_parts(*key)
                )
            found = self._calls_seen[key] = tuple(self._call_handlers[i] for i in indices)
        return found

    def _visit_call(self, node: cst.Call) -> None:
        handlers = self._call_handlers_for(node) if self._call_handlers else ()
        if handlers:  # as in _visit: rules first, then the walker's own bookkeeping
            self._run_handlers(handlers, node)
        refs = self._call_refs(node.func)
        if self.dispatchers and type(node.func) is cst.Attribute:
            refs = [*refs, *self._dispatched_hooks(node)]
        if node.args:
            refs = [*refs, *self._hooks_given(node)]
            if refs and any(type(a.value) is cst.SimpleString for a in node.args):
                refs = [*refs, *self._named_hook_refs(node, refs)]
        for ref in (*refs, *self._refs_run_on_arguments(node)):
            for unit in self.scope.units:
                self._add_call(unit, ref)
        if type(node.func) is cst.Attribute and node.func.attr.value == "replay" and not node.args:
            for unit in self.scope.units:
                unit.replays = True
        if type(node.func) is cst.Name and node.func.value == "setattr" and len(node.args) == 3:
            self._note_injection(node)
        if (self.scope.filled_lists and type(node.func) is cst.Attribute and type(node.func.value) is cst.Name
                and node.func.value.value in self.scope.filled_lists):
            self._note_list_fill(node)
        if self._schedules_lr and (self.resolve(node.func) or "").startswith(per_step.LR_SCHEDULERS):
            self.lr_changers.add("")  # `LambdaLR(opt, ...)`: the program changes the rate between steps
        target = self._partial_target(node)
        if target is not None:
            # the arguments `functools.partial(f, ...)` binds are arguments of the later calls of f
            self._note_arguments(cst.Call(func=target, args=node.args[1:]), self._call_refs(target))
        elif refs and not (type(node.func) is cst.Name and node.func.value in self.scope.partials
                           and any(a.keyword is None for a in self.scope.partials[node.func.value].args[1:])):
            self._note_arguments(node, refs)  # (positions after a partial's bound ones are not kept)
        self._region_ref(node)
        self._visit(node.func)
        for arg in node.args:
            self._visit(arg.value)

    def _note_list_fill(self, node: cst.Call) -> None:
        """`kls = []` then `kls.append(kl)` with tensors only: a list of tensors (`torch.tensor(kls)`
        reads each one, `max(kls)` compares them); anything else put in (an extension's elements
        are not looked at) keeps it a plain list. Objects of known classes put in
        (`callbacks.append(self.history)`) make a list whose iteration gives them, whatever else
        an extension adds (`callbacks.extend(custom_callbacks)`): calls on its items reach theirs."""
        scope = self.scope
        name, method = node.func.value.value, node.func.attr.value
        if method not in ("append", "insert", "extend"):
            return
        args = [a for a in node.args if a.keyword is None and not a.star]
        held = scope.env.get(name, T.UNKNOWN)
        item = self._kind(args[-1].value) if args and method != "extend" else T.UNKNOWN
        if item.tag == "object" and item.refs and (held.tag == "modules" or held == T.SCALAR):
            scope.env[name] = T.module_set(*dict.fromkeys((*held.refs, *item.refs)))
            return
        if held.tag == "modules":  # an extension, or an item of unknown class, beside known ones
            return
        if method == "extend" or not args or not item.is_tensor:
            scope.filled_lists.discard(name)
            scope.env[name] = T.SCALAR
        else:
            scope.env[name] = T.TENSOR_TUPLE

    def _dispatched_hooks(self, node: cst.Call) -> list[CallRef]:
        """`self.notify("on_batch_begin", ...)` where `notify` calls `getattr(self, name)(...)`:
        the call runs `self.on_batch_begin` (analyzer/hooks.py), and where it calls that method of
        each of its callbacks (`getattr(cb, name)(...)`), every project class's `on_batch_begin`.
        The dispatching method is looked up on the class and its bases in this file."""
        scope = self.scope
        func = node.func
        if not (type(func.value) is cst.Name and func.value.value == scope.self_name and scope.class_key):
            return []
        found = None
        classes = [scope.class_key]
        for key in classes:
            found = self.dispatchers.get((key, func.attr.value))
            if found is not None:
                break
            info = self.classes.get(key)
            classes.extend(b for b in (info.bases if info else ()) if b in self.classes and b not in classes)
        if found is None:
            return []
        position, parameter, where = found
        name = hooks.named_hook(node, position, parameter)
        if not name:
            return []
        return [*([CallRef("self", name)] if where != "items" else []),
                *([CallRef("hook", name)] if where != "self" else [])]

    def _named_hook_refs(self, node: cst.Call, refs: list[CallRef]) -> list[CallRef]:
        """`trigger_plugins(self, "after_training_iteration")`: where the function called
        dispatches by the name given in that slot (Unit.dispatches, decided by the call graph),
        the call runs that method of the project's classes (CallRef kind "named")."""
        return [CallRef("named", f"{ref.kind}|{ref.target}|{slot}|{name}")
                for slot, name in hooks.literal_names(node)
                for ref in refs if ref.kind in ("global", "self", "method", "attrs")]

    def _hooks_given(self, node: cst.Call) -> list[CallRef]:
        """Functions a call is given that run inside the step, called here: `h.register_hook(fn)`,
        `m.register_forward_hook(fn)` (in the step's backward, in the module's forward) and
        `torch.autograd.graph.saved_tensors_hooks(pack, unpack)` (in the forward and backward of
        its `with` block). In a subclass's `__init__`, `super().__init__(pack, unpack)`: the hooks
        run inside each `with` of its instances (a synthetic `__enter__` calls them, see facts())."""
        func = node.func
        if type(func) is cst.Attribute and func.attr.value in _HOOK_REGISTRARS:
            return self._call_refs(node.args[0].value)
        if "saved_tensors_hooks" not in self.source:
            return []
        hooks_class = "torch.autograd.graph.saved_tensors_hooks"
        scope = self.scope
        info = self.classes.get(scope.class_key) if scope.class_key else None
        inherited = (type(func) is cst.Attribute and func.attr.value == "__init__" and type(func.value) is cst.Call
                     and type(func.value.func) is cst.Name and func.value.func.value == "super"
                     and info is not None and hooks_class in info.bases)  # (bases: dotted through imports)
        if not inherited and self.resolve(func) != hooks_class:
            return []
        refs = [ref for arg in node.args[:2] if arg.keyword is None or arg.keyword.value.endswith("_hook")
                for ref in self._call_refs(arg.value)]
        if inherited:
            self.saved_tensor_hooks.setdefault(scope.class_key, {}).update(dict.fromkeys(refs))
            return []
        return refs

    def _refs_run_on_arguments(self, node: cst.Call) -> list[CallRef]:
        """`scaler.step(self.optimizer)`: the library method runs `self.optimizer.step()`
        (argument_calls.py). Not argument slots of the call: the argument is the receiver."""
        if type(node.func) is not cst.Attribute or node.func.attr.value not in argument_calls.METHODS or not node.args:
            return []
        receiver = self._kind(node.func.value)
        if receiver.tag != "object" or not receiver.refs:
            return []
        run = argument_calls.method_run_on_argument(node, receiver.refs)
        if run is None:
            return []
        argument, method = run
        return self._call_refs(cst.Attribute(value=argument, attr=cst.Name(method)))

    def _note_arguments(self, node: cst.Call, refs: list[CallRef]) -> None:
        """The kinds, and the per-step numbers, a call passes to its callees' parameters."""
        if refs and node.args:
            slots = self._arg_kind_slots(node)
            sources = default_guards.argument_sources(node, self.scope.guardable, self.function_key,
                                                      lambda value: self._kind(value).is_tensor)
            for ref in refs:
                for unit in self.scope.units:
                    unit.arg_kinds.append((ref, slots))
                    unit.arg_sources.append(sources)
        if refs and node.args and self.scope.is_function and any(self._may_vary(a.value) for a in node.args):
            slots = self._scalar_arg_slots(node)
            if slots:
                for ref in refs:
                    for unit in self.scope.units:
                        unit.scalar_args.append((ref, slots))

    def _visit_attribute(self, node: cst.Attribute) -> None:
        ref = None
        if node.attr.value in self._property_names:
            ref = self._property_ref(node)
        elif self._foreign_based:
            ref = self._foreign_property_ref(node)
        if ref is not None:
            for unit in self.scope.units:
                self._add_call(unit, ref)
        for child in _children(node):
            self._visit(child)

    def _property_ref(self, node: cst.Attribute) -> CallRef | None:
        """`self.norm` / `self.head.norm` where `norm` is a `@property` of that class (or of a
        base class in this file): reading it runs the property's body."""
        attr, scope = node.attr.value, self.scope
        if type(node.value) is cst.Name and node.value.value == scope.self_name and scope.class_key:
            return CallRef("self", attr) if self._owns_property(scope.class_key, attr) else None
        kind = self._kind(node.value)
        if kind.tag == "object":
            for ref in kind.refs:
                if self._owns_property(ref, attr):
                    return CallRef("method", f"{ref}::{attr}")
        return None

    def _foreign_property_ref(self, node: cst.Attribute) -> CallRef | None:
        """`self.norm` in a class whose base class lives in another file, where `norm` is
        neither an attribute the class sets nor one of its methods: maybe the base's property
        (the call graph keeps the edge only if it is one)."""
        scope = self.scope
        key = scope.class_key
        if (type(node.value) is not cst.Name or node.value.value != scope.self_name
                or not inherited_attr(key, node.attr.value, self)):
            return None
        return CallRef("prop", node.attr.value)

    def _owns_property(self, class_key: str, attr: str, depth: int = 0) -> bool:
        if f"{class_key}.{attr}" in self.properties:
            return True
        info = self.classes.get(class_key)
        return info is not None and depth < 8 and any(self._owns_property(b, attr, depth + 1) for b in info.bases)

    def _note_injection(self, node: cst.Call) -> None:
        """`setattr(module, child_name, LoRALinear(child, ...))` for `module` in
        `model.named_modules()` of a parameter `model`: the project class now sits in the
        module tree of what callers pass as `model` (the call graph adds it to that forward)."""
        injected = self._kind(node.args[2].value)
        function = self.function_node
        if injected.tag != "object" or not injected.refs or function is None:
            return
        param = _module_tree_param(function, node.args[0].value, set(self.scope.params))
        if param is not None:
            for unit in self.scope.units:
                unit.injects.extend((param, ref) for ref in injected.refs)

    def _visit_comprehension(self, node: cst.CompFor) -> None:
        self._visit(node.iter)
        self._bind_loop_target(node.target, node.iter)
        for cond in node.ifs:
            self._visit(cond)
        if node.inner_for_in is not None:
            self._visit(node.inner_for_in)

    def _visit_listcomp(self, node) -> None:
        # The loop binds its names before the element expression reads them.
        self._visit(node.for_in)
        if isinstance(node, cst.DictComp):
            self._visit(node.key)
            self._visit(node.value)
        else:
            self._visit(node.elt)

    # --- calls and regions
    def call_refs(self, func: cst.BaseExpression) -> list[CallRef]:
        """What a call of `func` here runs, as the project resolves it (for rules)."""
        return self._call_refs(func) if self.scope is not None else []

    def _call_refs(self, func: cst.BaseExpression) -> list[CallRef]:
        scope = self.scope
        assert scope is not None
        if isinstance(func, cst.Name):
            name = func.value
            if name in scope.partials and name not in self._following:
                # `step = functools.partial(self.update, w=w)` then `step(x)`. In `f = partial(f,
                # w=w)` the inner `f` is the function defined before: look it up past the partial.
                self._following.add(name)
                try:
                    return self._call_refs(scope.partials[name].args[0].value)
                finally:
                    self._following.discard(name)
            if (name in self._following and name + "=" not in self._following and scope.is_function
                    and self.function_node is not None):
                # `f = scale` then `f = partial(f, k=v)`: past the partials, what `f` held first
                self._following.add(name + "=")
                try:
                    return [r for value in _local_values(self.function_node.body).get(name, ())
                            if type(value) is not cst.Call for r in self._call_refs(value)]
                finally:
                    self._following.discard(name + "=")
            if name in scope.local_defs:
                return [CallRef("global", scope.local_defs[name])]
            if name == scope.self_name and scope.class_key:  # `mean, log_std = self(obs)`
                return [CallRef("method", f"{scope.class_key}::__call__")]
            kind = scope.env.get(name) or self.globals.get(name)
            if (kind is None or kind.tag in ("unknown", "scalar")) and name in self.class_values():
                return [CallRef("global", c) for c in self.class_values()[name]]  # a constructor
            if name in self.module_class_values and name not in scope.env and name not in scope.local_defs:
                return [CallRef("global", c) for c in self.module_class_values[name]]  # `BlockFactory()`
            if self._generic_param(name, kind):
                return [CallRef("param", f"{self.function_key}::{name}::__call__")]
            if name in scope.loop_sources and (kind is None or not kind.refs):
                # `for layer in self.layers: x = layer(x)` with `self.layers` passed to the
                # constructor or built in another file: the call graph follows the path
                return self._attr_path_refs(func)
            if kind is not None and kind.tag in ("object", "modules"):
                return [CallRef("method", f"{ref}::__call__") for ref in kind.refs]
            if scope.imports.is_imported(name):
                return [CallRef("global", scope.imports.resolve_dotted(name))]
            if name in self.module_defs:
                return [CallRef("global", self.module_defs[name])]
            if name in self.function_aliases and name not in scope.env:
                return [CallRef("global", target) for target in self.function_aliases[name]]
            if name in scope.function_aliases:  # every function the local was bound to (its branches)
                return [CallRef("global", target) for target in dict.fromkeys(scope.function_aliases[name])]
            pid = scope.pending.get(name) if kind is None or kind.tag == "unknown" else None
            if pid is not None and not pid.startswith(ARG_PID):
                # `model = build_model(cfg)` (or `model, opt = build(cfg)`) then `model(x)`: ask
                # which class the factory returns
                self.wanted.add(pid + OBJECT_PID)
            return []
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            base = func.value
            if isinstance(base, cst.Name) and base.value == scope.self_name and scope.class_key:
                alias = self.function_aliases.get(f"{scope.class_key}.{method}") if self.function_aliases else None
                if alias is not None:  # `self.reduce(x)` with `self.reduce = functools.partial(f, ...)`
                    return [CallRef("self", method), *(
                        CallRef("returned", target[len(RETURNED_MARK):]) if target.startswith(RETURNED_MARK)
                        else CallRef(*target[len(REF_MARK):].split(":", 1)) if target.startswith(REF_MARK)
                        else CallRef("global", target) for target in alias)]
                held = self.held_classes.get((scope.class_key, method))
                if held:  # `self.opt_cls(params)` with `self.opt_cls = partial(MuSGD, ...)`: a constructor
                    return [CallRef("self", method), *(CallRef("global", c) for c in sorted(held))]
                return [CallRef("self", method)]
            if isinstance(base, cst.Call) and isinstance(base.func, cst.Name) and base.func.value == "super":
                return [CallRef("super", method)] if scope.class_key else []
            kind = self._kind(base)
            # `model.generate(x)` on `model: nn.Module` (not `h.sum()` on an unknown `h`, whose
            # kind its callers decide: see returns.py)
            if isinstance(base, cst.Name) and kind.tag == "object" and self._generic_param(base.value, kind):
                return [CallRef("param", f"{self.function_key}::{base.value}::{method}")]
            if kind.tag in ("object", "modules") and kind.refs:
                refs = [CallRef("method", f"{ref}::{method}") for ref in kind.refs]
                if kind.tag == "object" and (type(base) is cst.Attribute and self.is_self(base.value)
                                             or type(base) is cst.Name and base.value in scope.loop_sources):
                    # `self.controller.adapt(x)` with `controller: Controller` in the constructor:
                    # also the classes of what its callers pass (a subclass, `Solver(PID())`)
                    refs += [r for r in self._attr_path_refs(base, method) if r not in refs]
                return refs
            if (kind.tag == "scalar" and type(base) is cst.Attribute and self.is_self(base.value)
                    and (scope.class_key, base.attr.value) in self.attr_objects):
                # `self.ema = None` in __init__, `self.ema = ModelEMA(model)` later: the object's methods
                return self._attr_path_refs(base, method)
            if kind.tag == "scalar" and type(base) is cst.Attribute and untyped_calls.not_a_value_method(method):
                # `self.state.device.tensor_to_device(t)`: no Python value has the method, so the
                # attribute (taken for a `torch.device` by its name) holds an object
                return self._attr_path_refs(base, method) or untyped_calls.refs(method, self.module)
            name = dotted(func)
            if name is None:
                return []
            head = name.partition(".")[0]
            if scope.imports.is_imported(head):
                return [CallRef("global", scope.imports.resolve_dotted(name))]
            if head in self.module_defs and head not in scope.env:
                return [CallRef("global", f"{self.module}.{name}")]
            if kind.tag == "unknown" and head != scope.self_name:
                pid = scope.pending.get(head) if type(base) is cst.Name else None
                if pid is not None and not pid.startswith(ARG_PID):
                    # `q = make_queue(n)` then `q.push_pop(x)`: ask which class the factory returns
                    self.wanted.add(pid + OBJECT_PID)
                # `layer.incremental(x)` for `layer` in `self.model.layers`, a class in another file;
                # `memory.sample_batch(n)` on an object of no known class: by the method's name
                # (not on what a project call returns: the project decides its class)
                made = pid is not None and not pid.startswith(ARG_PID)
                return self._attr_path_refs(base, method) or ([] if made else untyped_calls.refs(method, self.module))
            if kind.tag == "unknown" and type(base) is cst.Attribute:
                # `self.model.crf.viterbi_decode(x)`: a method of a submodule of a submodule, each
                # class in another file; the call graph follows the path through attr_classes
                return self._attr_path_refs(base, method) or untyped_calls.refs(method, self.module)
        if (type(func) is cst.Subscript and type(func.value) is cst.Name and func.value.value in self.class_tables
                and func.value.value not in scope.env):
            return [CallRef("global", c) for c in self.class_tables[func.value.value]]  # `SOLVERS[method](...)`
        picked = self._function_targets(func) if type(func) is cst.Subscript else ()
        if picked:  # `CENTER_FUNCTIONS[mode](x)`
            return [CallRef("global", target) for target in picked]
        if type(func) is cst.IfExp:  # `(self.fast if f else self.slow)(x)`: either
            return [*self._call_refs(func.body), *self._call_refs(func.orelse)]
        if type(func) is cst.Call:
            target = self._partial_target(func)  # `partial(MuSGD, m=m)(params)`: what it wraps
            if target is not None:
                return self._call_refs(target)
            kind = self._kind(func)  # `Attention(dim)(x)`: the new object is called at once
            return [CallRef("method", f"{ref}::__call__") for ref in kind.refs] if kind.tag == "object" else []
        if type(func) is cst.Subscript and type(func.value) in (cst.Dict, cst.List, cst.Tuple):
            # `{"a": A, "b": B}[name](d)`: any entry of the literal table
            return [CallRef("global", c) for c in self.classes_made_by(func)]
        if type(func) is cst.Subscript:  # `self.layers[i](x)`, `self.heads[name](x)`, `self.blocks[:k](x)`
            kind = self._kind(func)
            if kind.tag in ("object", "modules") and kind.refs:
                return [CallRef("method", f"{ref}::__call__") for ref in kind.refs]
            if not kind.refs and type(func.value) is cst.Attribute:
                return self._attr_path_refs(func.value)  # `self.layers` passed to the constructor
        return []

    def _generic_param(self, name: str, kind: T.Kind | None) -> bool:
        """A parameter given a model by its callers: unannotated, or annotated with a torch base
        class (`model: nn.Module`); the call graph resolves calls on it through the classes of
        the objects its call sites pass (CallRef kind "param")."""
        scope = self.scope
        if not scope.is_function or name not in scope.params or name in scope.reassigned:
            return False
        if kind is None or kind.tag == "unknown":
            return True
        return kind.tag == "object" and all(r.startswith("torch.nn.") for r in kind.refs)

    def _may_vary(self, value: cst.BaseExpression) -> bool:
        """A cheap pre-check before `scalar_source`: literals and plain untainted names never vary."""
        tp = type(value)
        if tp in _LITERALS:
            return False
        if tp is cst.Name:
            name, scope = value.value, self.scope
            return (name in scope.tainted or name in scope.number_params or name in scope.loop_derived
                    or name in scope.open_params or name in scope.counters or any(name in s for s in self.loop_names))
        return True

    def _arg_kind_slots(self, call: cst.Call) -> tuple[tuple[str, str], ...]:
        """The kind of each argument of a project call (see Unit.arg_kinds); H: a tensor in
        host memory (`t.cpu()`, or a local bound to one)."""
        found = []
        position = 0
        for arg in call.args:
            if arg.star == "*" and type(arg.value) in (cst.Tuple, cst.List) and not any(
                    type(e) is cst.StarredElement for e in arg.value.elements):
                for element in arg.value.elements:  # `f(*(x, mask))`: positions are known
                    found.append((str(position), self._return_slot(element.value)))
                    position += 1
                continue
            if arg.star == "**":
                # `f(**batch, lr=lr)` with `batch` a dict of tensors: every parameter no other
                # argument names gets a tensor ("**" slot); later keywords still count
                slot = self._return_slot(arg.value)
                found.append(("**", slot) if slot == "D" or slot.startswith("@") else ("*", "?"))
                continue
            if arg.star:
                # `f(*batch)`: every later position gets an element of `batch` ("*<first>" slot)
                slot = self._star_slot(arg.value) if arg.star == "*" else "?"
                found.append((f"*{position}", slot) if slot != "?" else ("*", "?"))
                break
            kind = self._kind(arg.value)
            held = self._class_named(arg.value) if kind.tag in ("unknown", "scalar") else None
            if generators.is_generator(kind) and generators.unregistered(arg.value, self.source):
                slot = generators.GENERATOR_SLOT  # `helper(x, generator=self.gen)` (analyzer/generators.py)
            elif kind.tag in ("object", "modules") and kind.refs and not all(r.startswith("torch.") for r in kind.refs):
                slot = "O:" + "|".join(kind.refs)  # an instance of a project class (a model passed along)
            elif kind.tag == "unknown" and self.is_self(arg.value) and self.scope.class_key and self.scope.is_function:
                slot = "O:" + self.scope.class_key  # `trigger_plugins(self, event)`: the instance itself
            elif held is not None and not held.startswith("torch."):
                slot = CLASS_SLOT + held  # `Model(impl_cls=SlowAttention)`: a class (class_values.py)
            else:
                slot = self._return_slot(arg.value)
            if slot != "S" and not slot.startswith("O:") and self.is_host_tensor(arg.value):
                slot = "H"  # `t.cpu()` is a tensor even where `t`'s kind is unknown here
            elif (slot in ("?", "D", "T") or slot.startswith("@")) and type(arg.value) is cst.Name and (
                    self.host_origin(arg.value) is not None and (slot not in ("D", "T") or self._loader_batch(arg.value))):
                slot = host_batches.HOST_BATCH_SLOT  # `batch_to_device(batch, d)` with a data loader's batch
            if arg.keyword is None:
                found.append((str(position), slot))
                position += 1
            else:
                found.append((arg.keyword.value, slot))
        return tuple(found)

    def _star_slot(self, value: cst.BaseExpression) -> str:
        """What `*value` spreads over a call's positions: L (tensors), @pid (the elements of what
        that project call returns, resolved project-wide), ? unknown."""
        kind = self._kind(value)
        if kind == T.TENSOR_TUPLE:
            return "L"
        if kind == T.SCALAR:
            return "S"  # `*[t.tolist() for t in batch]`: host values (a site that says so)
        if kind.tag == "unknown":
            if type(value) in (cst.ListComp, cst.GeneratorExp):
                value = _mapped_iterable(value)  # `*(t.to(dev) for t in sample())`: what it maps over
                if value is None:
                    return "?"
                if self._element_kind(value).not_tensor:
                    return "S"  # `*(t for t in range(2))`: numbers
            pid = self._depends_on(value)
            if pid is not None and not pid.endswith(ELEMENT):  # an element's elements: not followed
                return f"@{pid}"
        return "?"

    def is_integer_tensor(self, expr: cst.BaseExpression) -> bool:
        """`torch.arange(n)`, `x.argmax(-1)`, `x.long()`, or a local bound to one so far."""
        if type(expr) is cst.Name:
            return expr.value in self.scope.int_names
        return T.is_integer_tensor(expr, self.resolve)

    def is_host_tensor(self, expr: cst.BaseExpression) -> bool:
        """`t.cpu()`, `t.to("cpu")`, or a local of this function bound to one so far."""
        if type(expr) is cst.Name:
            return expr.value in self.scope.host_names
        return T.is_host_copy(expr, self.resolve)

    def host_origin(self, expr: cst.BaseExpression) -> str | None:
        """Why `expr` is a CPU tensor made in this function (`torch.arange(w)` without a device,
        or a local bound to one), else None (host_resident.py)."""
        return host_resident.origin(expr, self, self.scope.host_held)

    def host_index(self, expr: cst.BaseExpression) -> str | None:
        """Why `expr` as an index is host memory (a CPU tensor, a local list of ints), else None."""
        return host_resident.host_index(expr, self, self.scope.host_held)

    def _viewed_param(self, value: cst.BaseExpression) -> str | None:
        """The parameter `value` is (a view of): `value`, `value[0]`, `value.flatten()`."""
        while True:
            tp = type(value)
            if tp is cst.Name:
                name = value.value
                scope = self.scope
                if name in scope.param_views:
                    return scope.param_views[name]
                return name if name in scope.params and name not in scope.reassigned else None
            if tp is cst.Subscript:
                value = value.value
            elif tp is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value in T.SHAPE_METHODS:
                value = value.func.value
            else:
                return None

    def _scalar_arg_slots(self, call: cst.Call) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Arguments that are per-step Python numbers here: (position or keyword, condition)."""
        found: list[tuple[str, tuple[str, ...]]] = []
        position: int | None = 0
        trailing: list[cst.Arg] = []  # positional arguments after a `*args`
        for arg in call.args:
            if arg.star:
                position = None  # after `*args`/`**kw` positions are unknown; keywords still name their slot
                continue
            if arg.keyword is None and position is None:
                trailing.append(arg)
                continue
            slot = arg.keyword.value if arg.keyword is not None else str(position)
            if arg.keyword is None:
                position += 1
            self._note_scalar_arg(arg.value, slot, found)
        if trailing and not any(a.keyword is not None or a.star == "**" for a in call.args):
            # `self.update(*self.static, bc_weight)`: a positional argument after `*args` counts
            # from the end ("-1": the last positional parameter). The project pass maps it where
            # the callee's trailing parameters are all required (then the call fills each one);
            # keywords could fill them instead, so only in a call that passes none.
            for back, arg in enumerate(reversed(trailing), start=1):
                self._note_scalar_arg(arg.value, f"-{back}", found)
        return tuple(found)

    def _note_scalar_arg(self, value: cst.BaseExpression, slot: str, found: list) -> None:
        if self._kind(value).is_tensor:
            return
        source = self.scalar_source(value)
        if source is not None and not source.device_read:  # a read is reported where it is read
            found.append((slot, source.condition or ()))
            if source.condition and source.condition[0] == GROUP_KEY:
                return  # `eps=group["eps"]` in `for group in self.param_groups`: a loop over groups, not steps
        counter = loop_counters.counter_in(value, self.scope.counters) if source is None else None
        if counter is not None:
            # `self.search_step(x, step)` in `for step in range(n)`: a number, new on each call,
            # whatever the callee declares (per step where this loop drives the steps)
            found.append((slot, (LOOP, COUNTER, counter)))
        elif (source is None or source.condition) and (self.loop_names or self.scope.loop_derived) \
                and self._mentions_loop_name(value) and not self._picked_by_loop_key(value):
            # `train_step(x, lr_at(it))` in the eager loop that drives the steps
            found.append((slot, (LOOP,)))

    def _picked_by_loop_key(self, expr: cst.BaseExpression) -> bool:
        """`log_densities[name]` in `for name, site in self._factors.items()`: an element picked
        by a loop's key (a tensor as often as a number), not a number computed from the loop
        variable; picked by a counter (`lrs[i]` in `for i in range(n)`) it still is one."""
        if type(expr) is not cst.Subscript or len(expr.slice) != 1 or type(expr.slice[0].slice) is not cst.Index:
            return False
        key = expr.slice[0].slice.value
        return (type(key) is cst.Name and key.value not in self.scope.counters
                and not self._mentions_loop_name(expr.value))

    def _mentions_loop_name(self, expr: cst.BaseExpression) -> bool:
        names = set().union(*self.loop_names, self.scope.loop_derived)
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Name) and node.value in names:
                return True
            if isinstance(node, cst.Attribute):
                stack.append(node.value)
            elif isinstance(node, (cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.Arg, cst.Subscript,
                                   cst.SubscriptElement, cst.Index)):
                stack.extend(_children(node))
        return False

    def _region_ref(self, call: cst.Call) -> None:
        name = self.resolve(call.func)
        if name is None or (name not in GRAPHED_CALLABLES and name not in COMPILE):
            return  # the common case, decided before looking at the arguments
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if not positional:
            return
        if name in GRAPHED_CALLABLES:
            kind = GRAPHED_CALLABLES[name]
        elif name in COMPILE and _is_reduce_overhead(call):
            kind = RegionKind.COMPILE_REDUCE_OVERHEAD
        else:
            return
        first = positional[0].value
        elements = [e.value for e in first.elements] if isinstance(first, (cst.Tuple, cst.List)) else [first]
        targets: list[CallRef] = []
        for element in elements:
            targets.extend(self._callable_refs(element))
        if targets:
            self.anchors[id(call)] = self.statement
            self.region_refs.append((kind, Confidence.LIKELY, tuple(targets), self.scope.class_key, call))

    def _callable_refs(self, expr: cst.BaseExpression) -> list[CallRef]:
        """What calling `expr` runs: a function, or a module instance's forward."""
        kind = self._kind(expr)
        if kind.tag in ("object", "modules") and kind.refs:
            return [CallRef("method", f"{ref}::__call__") for ref in kind.refs]
        scope = self.scope
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == scope.self_name:
            return [CallRef("self", expr.attr.value)]
        if isinstance(expr, cst.Attribute) and expr.attr.value == "forward":
            return [CallRef(r.kind, r.target.replace("::__call__", "::forward")) for r in self._callable_refs(expr.value)]
        found = self._call_refs(expr)
        if not found and kind.tag == "unknown":
            found = self._attr_path_refs(expr)
        return found

    def _attr_path_refs(self, expr: cst.BaseExpression, method: str = "__call__") -> list[CallRef]:
        """`self.module.model.blocks` (or a loop variable over it) where `self.module` is an
        instance of a class from another file: the call graph follows the path through each
        class's attributes (ClassInfo.attr_classes) to the classes whose `method` runs."""
        if isinstance(expr, cst.Name) and expr.value in self.scope.loop_sources:
            expr = self.scope.loop_sources[expr.value]
        path: list[str] = []
        while isinstance(expr, cst.Attribute):
            path.append(expr.attr.value)
            expr = expr.value
            kind = self._kind(expr)
            if kind.tag in ("object", "modules") and kind.refs:
                chain = ".".join(reversed(path))
                return [CallRef("attrs", f"{ref}::{chain}::{method}") for ref in kind.refs]
            if isinstance(expr, cst.Name) and expr.value == self.scope.self_name and self.scope.class_key:
                chain = ".".join(reversed(path))
                return [CallRef("attrs", f"{self.scope.class_key}::{chain}::{method}")]
        return []

    def _decorator_region(self, decorator: cst.BaseExpression) -> tuple[RegionKind, Confidence] | None:
        target = decorator.func if isinstance(decorator, cst.Call) else decorator
        name = self.resolve(target)
        if name in REGION_DECORATORS:
            return (RegionKind.DECORATOR, Confidence.CERTAIN)
        if name in COMPILE and isinstance(decorator, cst.Call) and _is_reduce_overhead(decorator):
            return (RegionKind.COMPILE_REDUCE_OVERHEAD, Confidence.CERTAIN)
        return None

    # ------------------------------------------------------------------ results
    def _with_varying_properties(self, info: ClassInfo) -> ClassInfo:
        """A property returning a per-step number of its own class (`lr` over `self.it`) varies
        like an attribute, for code that reads it on an instance (`self.sched.lr`) elsewhere."""
        found = tuple(
            sorted(name for name in (p.rpartition(".")[2] for p in self.properties if p.rpartition(".")[0] == info.key)
                   if (source := self.scalar_returns.get(f"{info.key}.{name}")) is not None and not source.condition)
        )
        if not found:
            return info
        return replace(info, varying=tuple(sorted(set(info.varying) | set(found))))

    def _merged_variants(self, units: list[Unit]) -> list[Unit]:
        """Definitions of one name in the branches of an `if` or `try` (`if FLAG: def
        forward_one(...)` / `else: def forward_one(...)`): one unit holding what either does.
        An unconditional redefinition is left as it is."""
        if len({u.key for u in units}) == len(units):
            return units
        kept: list[Unit] = []
        variants: dict[str, int] = {}
        for unit, builder in zip(units, self.units):
            branch = builder.is_function and type(self.enclosing_statement(builder.node)) in (cst.If, cst.Try)
            if branch and unit.key in variants:
                kept[variants[unit.key]] = merged_variants(kept[variants[unit.key]], unit)
                continue
            if branch:
                variants[unit.key] = len(kept)
            kept.append(unit)
        return kept

    def _finish(self, imports: ImportTable, source_lines: list[str]) -> FileFacts:
        nodes: list[cst.CSTNode] = []
        for unit in self.units:
            if not unit.is_function and unit.marks:
                nodes.append(unit.node)
            elif unit.marks:
                nodes.append(unit.node.name)
            for hit in unit.hits:
                nodes.append(hit.node)
                if hit.fix:
                    nodes.extend(_fix_nodes(hit.fix))
        for hit in self.always:
            nodes.append(hit.node)
            if hit.fix:
                nodes.extend(_fix_nodes(hit.fix))
        nodes.extend(ref[4] for ref in self.region_refs)
        nodes.extend(function.name for function, _, _ in self.failures)
        indents = self.statement_indents

        def indent_of(statement) -> str | None:
            found = indents.get(id(statement))
            return None if found is None else "".join(found)

        ranges = node_ranges(self.cst_module, self.source, [(n, self.anchors.get(id(n))) for n in nodes], indent_of,
                             lambda statement: self.block_owners.get(id(statement)), self._lines_of_statements)

        def line_of(node) -> int:
            r = ranges.get(id(node))
            return r[0].line if r else 0

        built_hits: dict[int, Hit] = {}
        failed = ", ".join(f"`{name}`" for _, name, _ in self.failures)
        withheld = f"graphsafe failed to analyse {failed} in this file (GS002)"
        # Rewriters write "\n"; a file with other breaks gets, at each edit, its line's own break.
        starts = line_starts(self.source) if "\r" in self.source else None

        def own_newlines(edit: Edit) -> Edit:
            newline = ending_of(self.source, starts, edit.start.line) or self.cst_module.default_newline
            return Edit(edit.start, edit.end, with_newline(edit.content, newline))

        def build(pending: _PendingHit) -> Hit:
            hit = built_hits.get(id(pending))
            if hit is None:
                start, end = ranges.get(id(pending.node), (Position(0, 0), Position(0, 0)))
                fix = None
                if pending.fix is not None:
                    edits = tuple(e for e in (_edit(ranges, n, text) for n, text in pending.fix.replacements) if e)
                    if starts is not None:
                        edits = tuple(map(own_newlines, edits))
                    if self.failures:  # a rewrite may hinge on the failed function's unseen uses
                        fix = Fix(pending.fix.title, (), pending.fix.applicability, withheld)
                    elif len(edits) == len(pending.fix.replacements):
                        fix = Fix(pending.fix.title, edits, pending.fix.applicability, pending.fix.reason)
                hit = Hit(pending.rule.code, pending.message, start, end, fix, pending.root_only, pending.condition,
                          pending.guard)
                built_hits[id(pending)] = hit
            return hit

        units: list[Unit] = []
        # first lines of the statements holding calls, for the call sites of chains: one `ast`
        # parse (~7 % of a cold walk), where libcst positions would cost twice the parse
        statement_line = self._lines_of_statements() if any(u.calls for u in self.units) else {}
        for unit in self.units:
            hits = [build(pending) for pending in unit.hits]
            line = line_of(unit.node.name) if unit.is_function and unit.marks else line_of(unit.node)
            display = unit.display
            if not unit.is_function and unit.marks:
                display = f"{display} (line {line})"
            marks = tuple(RegionMark(kind, conf, line) for kind, conf in unit.marks)
            returns = unit.declared_returns or (() if unit.generator else summarize_returns(unit.returns))
            units.append(Unit(unit.key, display, unit.class_key, line, tuple(unit.calls), tuple(hits), marks,
                              unit.is_function, returns, unit.params, tuple(unit.scalar_args),
                              tuple(unit.arg_kinds), unit.replays, tuple(unit.injects), unit.required_tail,
                              unit.key in self.properties,
                              tuple(statement_line.get(id(statement), 0) for statement in unit.calls.values()),
                              tuple(unit.arg_sources),
                              tuple(i for i, ref in enumerate(unit.calls) if unit.cold_calls.get(ref)),
                              unit.is_function and unit.class_key is not None and _abstract(unit.node),
                              tuple(unit.tensor_params), unit.dispatches))
        units = self._merged_variants(units)
        for key, hooks in self.saved_tensor_hooks.items():  # `with Offload():` runs the hooks it was given
            if not any(u.key == f"{key}.__enter__" for u in units):
                units.append(Unit(f"{key}.__enter__", f"{key.rpartition('.')[2]}.__enter__", key, 0, tuple(hooks), (), (),
                                  True))
        for key, fields in self.dataclass_inits:  # the `__init__` each `@dataclass` generates
            units.append(Unit(f"{key}.__init__", f"{key.rpartition('.')[2]}.__init__", key, 0, (), (), (), True,
                              params=fields))
        refs = tuple(
            RegionRef(kind, conf, targets, class_key, line_of(node))
            for kind, conf, targets, class_key, node in self.region_refs
        )
        return FileFacts(
            path=self.path,
            module=self.module,
            units=tuple(units),
            classes=tuple(self._with_varying_properties(info) for info in self.classes.values()),
            region_refs=refs,
            aliases=tuple(sorted({**imports.aliases, **{name + TABLE_SUFFIX: "|".join(entries)
                                                        for name, entries in self.function_tables.items()}}.items())),
            noqa=noqa_lines(source_lines),
            noqa_directives=noqa_directives(source_lines),
            always=tuple(build(pending) for pending in self.always),
            wanted=tuple(sorted(self.wanted)),
            outside_sets=tuple(sorted(self.outside_sets)),
            group_keys=tuple(sorted(self.group_keys)),
            lr_changers=tuple(sorted(self.lr_changers)),
            held_counters=tuple(sorted(self.held_counters)),
            attr_reads=tuple(sorted(self.attr_reads)),
            errors=tuple(self._failure_diagnostic(name, error, line_of(function.name))
                         for function, name, error in self.failures),
        )

    def _lines_of_statements(self) -> dict[int, int]:
        """statement_lines of this file, parsed once for positions and call lines ({} if ast cannot)."""
        if not self._statement_lines:
            self._statement_lines.append(statement_lines(self.cst_module, self.source) or {})
        return self._statement_lines[0]

    def _failure_diagnostic(self, name: str, error: Exception, line: int) -> Diagnostic:
        detail = f": {error}" if str(error) and not isinstance(error, RecursionError) else ""
        message = InternalError.format_message(
            detail=f"internal error while analysing `{name}` ({type(error).__name__}{detail}); "
                   "its hazards may be missing, the file's other functions were analysed")
        start = Position(max(line, 1), 0)
        return Diagnostic(InternalError.code, message, self.path, start, start)


def _fix_nodes(fix: _FixSpec):
    for replaced, _ in fix.replacements:
        if isinstance(replaced, WholeLines):
            yield replaced.statement
        else:
            yield from replaced if isinstance(replaced, tuple) else (replaced,)


def _edit(ranges, replaced, text: str) -> Edit | None:
    """An edit over one node, from the start of one node to the end of another, or over the
    whole lines of a statement."""
    if isinstance(replaced, WholeLines):
        r = ranges.get(id(replaced.statement))
        return None if r is None else Edit(Position(r[0].line, 0), r[1], text)
    first, last = replaced if isinstance(replaced, tuple) else (replaced, replaced)
    if id(first) not in ranges or id(last) not in ranges:
        return None
    return Edit(ranges[id(first)][0], ranges[id(last)][1], text)


_ARITHMETIC_AUG = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign)


def _source_rank(source: ScalarSource) -> int:
    """Which of two conditional sources of one value decides it (lower first): a loop region's
    counter varies on every pass; a number parameter varies where its callers say; a field of
    another class where the project says."""
    kind = source.condition[0] if source.condition else ""
    return 0 if kind == step_loops.STEP_LOOP else 1 if kind == "param" else _FIELD_RANK


_FIELD_RANK = 2  # _source_rank of a field of an object (or any other project-wide condition)


def _mapped_iterable(comp) -> cst.BaseExpression | None:
    """What `[t.to(dev) for t in batch]` / `(t.clone() for t in xs)` maps over: one loop whose
    element is the loop variable or a method called on it that gives a tensor back."""
    loop = comp.for_in
    if loop.inner_for_in is not None or loop.ifs or type(loop.target) is not cst.Name:
        return None
    element = comp.elt
    if type(element) is cst.Call and type(element.func) is cst.Attribute:
        method = element.func.attr.value
        if method.startswith("_") or method in T.TENSOR_NON_TENSOR_METHODS or method in T.TENSOR_TUPLE_METHODS:
            return None
        element = element.func.value
    if type(element) is not cst.Name or element.value != loop.target.value:
        return None
    return loop.iter


# Registering a hook: the function given runs later, in the forward or backward of what it is on.
_HOOK_REGISTRARS = frozenset((
    "register_hook", "register_post_accumulate_grad_hook", "register_forward_hook", "register_forward_pre_hook",
    "register_full_backward_hook", "register_full_backward_pre_hook", "register_backward_hook"))


def _abstract(node: cst.CSTNode) -> bool:
    """A method with no body of its own: `@abstractmethod`, or a body of `raise
    NotImplementedError` or `...` (beside a docstring). Not `pass`: a base's hook that does
    nothing is what runs where no subclass overrides it."""
    if type(node) is not cst.FunctionDef:
        return False
    if any((dotted(d.decorator) or "").rpartition(".")[2] == "abstractmethod" for d in node.decorators):
        return True
    if type(node.body) is cst.SimpleStatementSuite:  # `def forward(self, x): ...`
        smalls = list(node.body.body)
    else:
        lines = [s for s in node.body.body if type(s) is cst.SimpleStatementLine]
        if len(lines) != len(node.body.body):
            return False
        smalls = [small for line in lines for small in line.body]
    smalls = [s for s in smalls if not (type(s) is cst.Expr and type(s.value) in (cst.SimpleString, cst.ConcatenatedString))]
    if len(smalls) != 1:
        return False
    small = smalls[0]
    if type(small) is cst.Expr and type(small.value) is cst.Ellipsis:
        return True
    raised = small.exc if type(small) is cst.Raise else None
    if type(raised) is cst.Call:
        raised = raised.func
    return type(raised) is cst.Name and raised.value == "NotImplementedError"


def _is_none_literal(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _none_default(expr: cst.IfExp) -> cst.BaseExpression | None:
    """The default of `D if p is None else p` (or `p if p is not None else D`): D, else None."""
    test = expr.test
    if type(test) is not cst.Comparison or len(test.comparisons) != 1 or not _is_none_literal(
            test.comparisons[0].comparator):
        return None
    operator = type(test.comparisons[0].operator)
    if operator is cst.Is:  # `D if p is None else p`
        given, default = expr.orelse, expr.body
    elif operator is cst.IsNot:  # `p if p is not None else D`
        given, default = expr.body, expr.orelse
    else:
        return None
    return default if given.deep_equals(test.left) else None


def _declares_number(param: cst.Param, optional: bool = True) -> bool:
    """`lr: float`, `t: int`, `temperature=1.0`: a parameter meant to be a Python number (with
    `optional`, also `thresh: float | None`, `step: Optional[int] = None`: where it is None,
    default_guards keeps what runs then apart)."""
    if param.annotation is not None:
        annotation = param.annotation.annotation
        if optional:
            annotation = _without_none(annotation)
        return isinstance(annotation, cst.Name) and annotation.value in ("int", "float")
    default = param.default
    if isinstance(default, cst.UnaryOperation):
        default = default.expression
    return isinstance(default, (cst.Integer, cst.Float))


def _admits_number(param: cst.Param) -> bool:
    """`lr: Union[float, Tensor]`, `scale: float | torch.Tensor`: a number or something else, as
    the callers decide (what they pass per step makes it a per-step number)."""
    if param.annotation is None:
        return False
    annotation = param.annotation.annotation
    if isinstance(annotation, cst.Subscript):
        if _subscript_head(annotation) != "Union":
            return False
        members = [e.slice.value for e in annotation.slice if isinstance(e.slice, cst.Index)]
    else:
        members = []
        while isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
            members.append(annotation.right)
            annotation = annotation.left
        members.append(annotation)
    return len(members) > 1 and any(isinstance(m, cst.Name) and m.value in ("int", "float") for m in members)


def _subscript_head(annotation: cst.Subscript) -> str | None:
    """`Union` of `Union[...]` or `typing.Union[...]`."""
    head = annotation.value
    return head.attr.value if isinstance(head, cst.Attribute) else getattr(head, "value", None)


def _without_none(annotation: cst.BaseExpression) -> cst.BaseExpression:
    """`X` of `X | None`, `None | X`, `Optional[X]` (the annotation itself otherwise)."""
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        for side, other in ((annotation.left, annotation.right), (annotation.right, annotation.left)):
            if isinstance(other, cst.Name) and other.value == "None":
                return side
    if (isinstance(annotation, cst.Subscript) and len(annotation.slice) == 1
            and isinstance(annotation.slice[0].slice, cst.Index)
            and _subscript_head(annotation) == "Optional"):
        return annotation.slice[0].slice.value
    return annotation


def _varying_number_attrs(node: cst.ClassDef, number_functions: frozenset[str] = frozenset(),
                          number_methods: frozenset[str] = frozenset()) -> tuple[set[str], set[str]]:
    """Attributes set to a number in the class, then changed outside __init__ (`self.pos += T`);
    and attributes set from a config value (`self.ent_coef = cfg.ent_coef`) that a method
    outside __init__ updates with arithmetic (`self.ent_coef *= decay`) or sets to another
    number (`self.beta = cfg.beta * min(1.0, step / warmup)`, `self.lr = cosine(step, ...)`
    with `def cosine(...) -> float` or a method `def lr_at(self, it) -> float`, `self.thresh =
    thresh` with `thresh: float | None`).
    Also gives the attributes set to a number literal, the dict entries set per step, and the
    attributes kept from a constructor parameter that declares nothing and changed in place
    outside __init__ (`self.h = h`, then `self.h *= factor`): per step where every constructor
    call passes a number (decided project-wide, callgraph.attr_is_varying)."""
    numbers: set[str] = set()
    changed: set[str] = set()
    from_config: set[str] = set()
    computed: set[str] = set()  # numbers computed in __init__ from number parameters
    entries: set[tuple[str, str]] = set()  # dict entries of an attribute set per step (`self.hp["lr"]`)
    number_entries: set[tuple[str, str]] = set()  # ... and those a dict display starts as numbers
    updated: set[str] = set()  # augmented assignments outside __init__, or new numbers
    kept: set[str] = set()  # `self.h = h` in __init__ from a parameter that declares nothing
    augmented: set[str] = set()  # `self.h *= factor` outside __init__
    rebound: list = []  # (attr or dict entry, value, number params, self name, locals) outside __init__
    for stmt in node.body.body:
        if type(stmt) is cst.SimpleStatementLine:  # a field `temperature: float = 1.0` (a dataclass)
            for small in stmt.body:
                if type(small) is cst.AnnAssign and type(small.target) is cst.Name and _declares_number(
                        cst.Param(cst.Name("field"), annotation=small.annotation, default=small.value)):
                    numbers.add(small.target.value)
            continue
        if not isinstance(stmt, cst.FunctionDef) or not stmt.params.params:
            continue
        self_name = stmt.params.params[0].name.value
        in_init = stmt.name.value == "__init__"
        number_params = {p.name.value for p in stmt.params.params if _declares_number(p, optional=True)}
        config_params = {p.name.value for p in stmt.params.params if _declares_config(p)}
        plain_params = {p.name.value for p in stmt.params.params[1:] if p.annotation is None and p.default is None}
        in_loops: set[int] | None = None  # statements of the method inside a `for`/`while` body
        local_values: dict | None = None  # local name → values assigned to it in the method
        for line in _statements_in(stmt.body):
            if not isinstance(line, cst.SimpleStatementLine):
                continue
            for small in line.body:
                if not in_init and type(small) is cst.Assign and type(small.value) is cst.Call:
                    # `self.temp, self.beta = self.sched.pair(self.updates)`: each from one call
                    for element in (small.targets[0].target.elements
                                    if type(small.targets[0].target) in (cst.Tuple, cst.List) else ()):
                        if (type(element.value) is cst.Attribute and type(element.value.value) is cst.Name
                                and element.value.value.value == self_name):
                            if local_values is None:
                                local_values = _local_values(stmt.body)
                            rebound.append((element.value.attr.value, small.value, number_params, self_name, local_values))
                if isinstance(small, cst.AugAssign):
                    target = small.target
                    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == self_name:
                        changed.add(target.attr.value)
                        if not in_init:
                            updated.add(target.attr.value)
                            augmented.add(target.attr.value)
                    elif not in_init and (entry := _self_entry(target, self_name)) is not None:
                        entries.add(entry)  # `self.hp["lr"] *= decay`
                elif isinstance(small, cst.Assign):
                    for target, value in _assigned_pairs(small):
                        entry = None if in_init else _self_entry(target, self_name)
                        if entry is not None:
                            # `self.hp["lr"] = lr_at(i)` on each pass of a loop: the entry follows the steps
                            if in_loops is None:
                                in_loops = _loop_names_by_statement(stmt.body)
                            names = in_loops.get(id(line))
                            if names is not None and _computed_per_pass(value, names):
                                entries.add(entry)
                            elif type(value) in (cst.Call, cst.Name, cst.IfExp):
                                if local_values is None:
                                    local_values = _local_values(stmt.body)
                                rebound.append((entry, value, number_params, self_name, local_values))
                            continue
                        if (type(target) is cst.Attribute and type(target.value) is cst.Name
                                and target.value.value == self_name and type(value) is cst.Dict):
                            # `self.hp = {"lr": cfg.lr}`: entries that start as numbers or settings
                            for element in value.elements:
                                if (type(element) is cst.DictElement and type(element.key) is cst.SimpleString
                                        and isinstance(element.key.evaluated_value, str)
                                        and (type(element.value) in (cst.Integer, cst.Float)
                                             or _is_setting(element.value, number_params, config_params))):
                                    number_entries.add((target.attr.value, element.key.evaluated_value))
                        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == self_name:
                            value = value.expression if isinstance(value, cst.UnaryOperation) else value
                            if isinstance(value, (cst.Integer, cst.Float)):
                                numbers.add(target.attr.value)
                            elif not in_init:
                                changed.add(target.attr.value)
                                if _is_number_expression(value, number_params, number_functions, number_methods, self_name):
                                    updated.add(target.attr.value)
                                else:
                                    # rebound on every pass of a loop with a value the pass computes
                                    # (`self.guidance = guidance_at(i, n)` per sampling step,
                                    # `self.loss_scale = scaler.update(...)` per batch): a setting the
                                    # class started from a config number now follows the steps
                                    if in_loops is None:
                                        in_loops = _loop_names_by_statement(stmt.body)
                                    names = in_loops.get(id(line))
                                    if names is not None and _computed_per_pass(value, names):
                                        updated.add(target.attr.value)
                                    elif type(value) in (cst.Call, cst.Name, cst.IfExp):
                                        if local_values is None:
                                            local_values = _local_values(stmt.body)
                                        rebound.append((target.attr.value, value, number_params, self_name, local_values))
                            elif _is_setting(value, number_params, config_params):
                                from_config.add(target.attr.value)
                            elif type(value) is cst.Name and value.value in plain_params:
                                kept.add(target.attr.value)
                            elif _is_number_expression(value, number_params, number_functions, number_methods, self_name):
                                computed.add(target.attr.value)  # `self.scaling = alpha / r` in __init__
    # what code outside the class may set per step (`m.teacher_forcing_p = ...`): any number it starts as
    settable = numbers | from_config | computed
    varying = (numbers & changed) | (from_config & updated)
    # `self.exploration = self.schedule.value(self.served)`, `self.forget = decay_at(self.served,
    # base)` between replays: a setting recomputed from a counter (or a number parameter) follows
    # the steps, whatever the helper is (another module's function, a schedule object's method)
    grown = True
    while grown:
        grown = False
        for attr, value, number_params, self_name, local_values in rebound:
            if type(attr) is tuple:  # `self.hp["lr"] = lr_at(self.updates)`: a dict entry
                if attr not in entries and _per_step_value(value, varying, number_params, self_name, local_values, set()):
                    entries.add(attr)
            elif (attr not in varying and attr in settable
                    and _per_step_value(value, varying, number_params, self_name, local_values, set())):
                varying.add(attr)
                grown = True
    return varying, settable, entries & number_entries, (kept & augmented) - varying


def _names_class(key: str) -> bool:
    """`pkg.mod.Block`: a dotted name whose last part is capitalised names a class (by convention)."""
    return key.rpartition(".")[2][:1].isupper()


def _literal_tables(body) -> Iterator[tuple[str, list[cst.BaseExpression]]]:
    """`NAME = {"a": A, "b": B}` (or a list or tuple) at module level: the name and its values,
    where every element is a plain entry (no `**spread`, no `*starred`)."""
    for stmt in body:
        if type(stmt) is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            if (type(small) is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name
                    and type(small.value) in (cst.Dict, cst.List, cst.Tuple) and small.value.elements):
                entries = [e.value for e in small.value.elements if type(e) in (cst.DictElement, cst.Element)]
                if len(entries) == len(small.value.elements):
                    yield small.targets[0].target.value, entries


def _local_values(body: cst.BaseSuite) -> dict[str, list[cst.BaseExpression]]:
    """The values a method assigns to each plain local name (`step = self.served`)."""
    found: dict[str, list[cst.BaseExpression]] = {}
    for line in _statements_in(body):
        if type(line) is cst.SimpleStatementLine:
            for small in line.body:
                if type(small) is cst.Assign:
                    for target in small.targets:
                        if type(target.target) is cst.Name:
                            found.setdefault(target.target.value, []).append(small.value)
    return found


def _per_step_value(value: cst.BaseExpression, varying: set[str], number_params, self_name: str,
                    local_values: dict, seen: set[str]) -> bool:
    """Is a rebound setting's value what a helper gives a per-step number (`sched.value(self.served)`),
    directly, through a local (`t = decay_at(step, base)`) or in either arm of a pick?"""
    tp = type(value)
    if tp is cst.Call:
        return any(_mentions_step(arg.value, varying, number_params, self_name, local_values, seen)
                   for arg in value.args)
    if tp is cst.IfExp:
        return any(_per_step_value(v, varying, number_params, self_name, local_values, seen)
                   for v in (value.body, value.orelse))
    if tp is cst.Name and value.value in local_values and value.value not in seen:
        seen.add(value.value)
        return any(_per_step_value(v, varying, number_params, self_name, local_values, seen)
                   for v in local_values[value.value])
    return False


def _mentions_step(expr: cst.BaseExpression, varying: set[str], number_params, self_name: str,
                   local_values: dict, seen: set[str]) -> bool:
    """Does `expr` read a per-step number: a varying attribute of self (`self.served`, also in
    `self.served + 1`), a number parameter of the method, or a local assigned one?"""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        tp = type(node)
        if tp is cst.Attribute:
            if type(node.value) is cst.Name and node.value.value == self_name and node.attr.value in varying:
                return True
            continue  # `self.cfg.base`: a field of a setting, not a step
        if tp is cst.Name:
            if node.value in number_params:
                return True
            if node.value in local_values and node.value not in seen:
                seen.add(node.value)
                stack.extend(local_values[node.value])
            continue
        stack.extend(_children(node))
    return False


def _mentions_expr(expr: cst.CSTNode, wanted: cst.BaseExpression) -> bool:
    """Does `expr` contain a node equal to `wanted` (`m.p` in `max(f, m.p * d)`)?"""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if type(node) is type(wanted) and node.deep_equals(wanted):
            return True
        stack.extend(_children(node))
    return False


def _assigned_pairs(assign: cst.Assign) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(target, value) pairs of an assignment; `self.lo, self.hi = -c, 0.0` element by element."""
    pairs = []
    for t in assign.targets:
        target, value = t.target, assign.value
        if (type(target) is cst.Tuple and type(value) is cst.Tuple and len(target.elements) == len(value.elements)
                and not any(type(e) is cst.StarredElement for e in (*target.elements, *value.elements))):
            pairs.extend((e.value, v.value) for e, v in zip(target.elements, value.elements))
        else:
            pairs.append((target, value))
    return pairs


def _dataclass_declared(fields: tuple[tuple[str, cst.BaseExpression], ...], attrs: dict[str, T.Kind]
                        ) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """A `@dataclass` field annotated with a class (`callbacks: List[Callback]`) holds what the
    constructor's callers pass, maybe a subclass: its kind is left unknown, so that calls on it
    ask the project (ClassInfo.attr_slots); the declared classes are returned, kept beside."""
    declared = []
    for name, _ in fields:
        kind = attrs.get(name)
        if kind is not None and kind.tag in ("object", "modules") and kind.refs:
            declared.append((name, kind.refs))
            attrs[name] = T.UNKNOWN
    return tuple(declared)


def _self_entry(target: cst.BaseExpression, self_name: str) -> tuple[str, str] | None:
    """`self.hp["lr"]` → ("hp", "lr"): an entry of a dict attribute under a literal key."""
    if (type(target) is cst.Subscript and type(target.value) is cst.Attribute and type(target.value.value) is cst.Name
            and target.value.value.value == self_name and len(target.slice) == 1
            and type(target.slice[0].slice) is cst.Index and type(target.slice[0].slice.value) is cst.SimpleString):
        key = target.slice[0].slice.value.evaluated_value
        return (target.value.attr.value, key) if isinstance(key, str) else None
    return None


def _declares_config(param: cst.Param) -> bool:
    """`gen: GenerationConfig`, `args: TrainArgs`: a parameter whose fields are settings."""
    if param.annotation is None:
        return False
    name = dotted(param.annotation.annotation) or ""
    last = name.rpartition(".")[2].lower()
    return last.endswith(("config", "cfg", "args", "options", "settings", "hparams"))


def _is_setting(value: cst.BaseExpression, number_params, config_params) -> bool:
    """The value an attribute starts from that a schedule may later replace: a config field
    (`cfg.guidance_start`, `gen.temperature` with `gen: GenerationConfig`) or a number
    parameter (`self.scale = init_scale` with `init_scale: float`)."""
    if isinstance(value, cst.Name):
        return value.value in number_params
    if (type(value) is cst.Subscript and len(value.slice) == 1 and type(value.slice[0].slice) is cst.Index
            and type(value.slice[0].slice.value) is cst.Integer):
        value = value.value  # `opts.temperatures[0]`: the first of a config's values is a setting too
    if not isinstance(value, cst.Attribute):
        return False
    if T.looks_like_config(value):
        return True
    return isinstance(value.value, cst.Name) and value.value.value in config_params


def _loop_names_by_statement(body: cst.BaseSuite) -> dict[int, set[str]]:
    """id of each statement of a function body that runs inside a `for`/`while` loop → the
    names that loop (or an enclosing one) binds: its targets and the names assigned in it."""
    found: dict[int, set[str]] = {}
    for stmt in _statements_in(body):
        if type(stmt) not in (cst.For, cst.While):
            continue
        names = set(found.get(id(stmt), ()))
        if type(stmt) is cst.For:
            names.update(n.value for n in bound_names(stmt.target))
        inner = list(_statements_in(stmt.body))
        for line in inner:
            if type(line) is cst.SimpleStatementLine:
                for small in line.body:
                    targets = [t.target for t in small.targets] if type(small) is cst.Assign else (
                        [small.target] if type(small) in (cst.AugAssign, cst.AnnAssign) else [])
                    for target in targets:
                        names.update(n.value for n in bound_names(target))
        for line in inner:
            found.setdefault(id(line), set()).update(names)
    return found


def _computed_per_pass(value: cst.BaseExpression, loop_names: set[str]) -> bool:
    """Does `value` call something or read a name the loop binds (not a fixed `cfg.other`)?"""
    stack: list[cst.CSTNode] = [value]
    while stack:
        node = stack.pop()
        if type(node) is cst.Call or (type(node) is cst.Name and node.value in loop_names):
            return True
        if type(node) is cst.Attribute:
            stack.append(node.value)  # `cfg.x`: the field name is no variable
            continue
        stack.extend(children(node))
    return False


# decorators of libraries whose wrappers the call graph does not look into
_LIBRARY_DECORATORS = ("torch.", "functools.", "typing.", "abc.", "dataclasses.", "contextlib.", "builtins.")


def _annotated_float(function: cst.FunctionDef | None) -> bool:
    """Is `function` annotated to return a `float`?"""
    returns = function.returns if function is not None else None
    return returns is not None and type(returns.annotation) is cst.Name and returns.annotation.value == "float"


def _property_returns(stmt: cst.FunctionDef) -> str | None:
    """`@property def matcher(self): return self._matcher`: the attribute it hands out."""
    body = [line for line in stmt.body.body if not (
        type(line) is cst.SimpleStatementLine and len(line.body) == 1 and type(line.body[0]) is cst.Expr
        and isinstance(line.body[0].value, cst.SimpleString))]  # past a docstring
    if not (len(body) == 1 and type(body[0]) is cst.SimpleStatementLine and len(body[0].body) == 1):
        return None
    ret = body[0].body[0]
    params = stmt.params.params
    if not (type(ret) is cst.Return and type(ret.value) is cst.Attribute and params
            and type(ret.value.value) is cst.Name and ret.value.value.value == params[0].name.value):
        return None
    return ret.value.attr.value


def _with_property_aliases(node: cst.ClassDef, attr_classes: tuple, slots: tuple) -> tuple[tuple, tuple]:
    """A property that returns an attribute holds what that attribute holds: `self.matcher(x)`
    calls the object kept in `self._matcher` (built in `__init__` or given to the constructor)."""
    classes, kept = dict(attr_classes), dict(slots)
    for stmt in node.body.body:
        if type(stmt) is cst.FunctionDef and stmt.name.value not in classes and any(
                type(d.decorator) is cst.Name and d.decorator.value == "property" for d in stmt.decorators):
            source = _property_returns(stmt)
            if source in classes:
                attr_classes += ((stmt.name.value, classes[source]),)
            elif kept.get(source, "").startswith("@" + ARG_PID) and stmt.name.value not in kept:
                slots = tuple(sorted(slots + ((stmt.name.value, kept[source]),)))
    return attr_classes, slots


def _number_functions(statements) -> frozenset[str]:
    """Module-level functions annotated to return a Python number (`def lr_at(it) -> float`)."""
    found = set()
    for stmt in statements:
        if isinstance(stmt, cst.FunctionDef) and stmt.returns is not None:
            annotation = stmt.returns.annotation
            if isinstance(annotation, cst.Name) and annotation.value in ("int", "float"):
                found.add(stmt.name.value)
    return frozenset(found)


def _is_number_expression(value: cst.BaseExpression, number_params, number_functions,
                          number_methods: frozenset[str] = frozenset(), self_name: str | None = None) -> bool:
    """A value that is a Python number by its shape: a number parameter of the method,
    arithmetic on a number literal or on one of those, or a call of a number-returning
    function (`min`/`max`/`float`/…, `math.*`, a module function annotated `-> float`, a
    method of the class annotated so: `self.lr_at(it)`)."""
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    if isinstance(value, (cst.Integer, cst.Float)):
        return True
    if isinstance(value, cst.Name):
        return value.value in number_params
    if isinstance(value, cst.BinaryOperation):
        return any(_is_number_expression(side, number_params, number_functions, number_methods, self_name)
                   or (type(side) is cst.Attribute and T.looks_like_config(side))  # `cfg.t0 + frac * span`
                   for side in (value.left, value.right))
    if isinstance(value, cst.Call):
        func = value.func
        if isinstance(func, cst.Name):
            return func.value in _NUMBER_BUILTINS or func.value in number_functions
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == self_name:
            return func.attr.value in number_methods
        return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "math"
    return False


def _returns_number_arithmetic(function: cst.FunctionDef) -> bool:
    """Does every `return` of `function` give number arithmetic (`self.base * 0.99 ** t`,
    `min(1.0, t / self.warmup)`, a local assigned such values)? Read from the syntax alone,
    for a function the walk has not reached yet."""
    returns: list[cst.Return] = []
    assigned: dict[str, list[cst.BaseExpression]] = {}
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        tp = type(node)
        if tp is cst.FunctionDef or tp is cst.ClassDef or tp is cst.Lambda:
            continue  # a nested scope's returns are its own
        if tp is cst.Return:
            returns.append(node)
        elif tp is cst.Assign:
            for target in node.targets:
                if type(target.target) is cst.Name:
                    assigned.setdefault(target.target.value, []).append(node.value)
                else:  # unpacked or stored elsewhere: not known to be arithmetic
                    for name in bound_names(target.target):
                        assigned.setdefault(name.value, []).append(target.target)
        elif tp is cst.AugAssign and type(node.target) is cst.Name:
            assigned.setdefault(node.target.value, []).append(node.value)
        elif tp is cst.For:  # a loop target: anything
            for name in bound_names(node.target):
                assigned.setdefault(name.value, []).append(node.target)
        stack.extend(_children(node))
    return bool(returns) and all(r.value is not None and _number_arithmetic(r.value, assigned, frozenset())
                                 for r in returns)


def _number_arithmetic(expr: cst.BaseExpression, assigned: dict, seen: frozenset) -> bool:
    tp = type(expr)
    if tp is cst.Integer or tp is cst.Float:
        return True
    if tp is cst.Name:  # a parameter, or a local assigned number arithmetic only
        if expr.value in seen:
            return True
        if expr.value in ("True", "False", "None"):
            return False
        values = assigned.get(expr.value)
        return values is None or all(_number_arithmetic(v, assigned, seen | {expr.value}) for v in values)
    if tp is cst.Attribute:
        return type(expr.value) is cst.Name  # `self.base`, `cfg.lr`
    if tp is cst.BinaryOperation:
        return _number_arithmetic(expr.left, assigned, seen) and _number_arithmetic(expr.right, assigned, seen)
    if tp is cst.UnaryOperation:
        return type(expr.operator) is not cst.Not and _number_arithmetic(expr.expression, assigned, seen)
    if tp is cst.IfExp:
        return _number_arithmetic(expr.body, assigned, seen) and _number_arithmetic(expr.orelse, assigned, seen)
    if tp is cst.Call and expr.args and not any(a.star or a.keyword for a in expr.args):
        func = expr.func
        if (type(func) is cst.Name and func.value in _NUMBER_BUILTINS) or (
                type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "math"):
            return all(_number_arithmetic(a.value, assigned, seen) for a in expr.args)
    return False


def _buffer_registrars(classes) -> tuple[str, ...]:
    """Methods of this file's classes that register a buffer under the name they are given
    (torchmetrics' `add_state(name, default)` → `self.register_buffer(name, ...)`), so that
    `self.add_state("total", t)` makes `self.total` a tensor like `register_buffer` does."""
    found = []
    for node in classes:
        for stmt in node.body.body:
            if not isinstance(stmt, cst.FunctionDef) or len(stmt.params.params) < 2:
                continue
            self_name, first = stmt.params.params[0].name.value, stmt.params.params[1].name.value
            for n in _statements_in(stmt.body):
                call = _expression_call(n) if isinstance(n, cst.SimpleStatementLine) else None
                func = call.func if call is not None else None
                if (isinstance(func, cst.Attribute) and func.attr.value == "register_buffer"
                        and isinstance(func.value, cst.Name) and func.value.value == self_name
                        and call.args and isinstance(call.args[0].value, cst.Name)
                        and call.args[0].value.value == first):
                    found.append(stmt.name.value)
                    break
    return tuple(found)


def _statements_in(block: cst.BaseSuite):
    """Every statement in a block, through nested compound statements but not nested defs."""
    stack = list(reversed(block.body))
    while stack:
        stmt = stack.pop()
        yield stmt
        if type(stmt) not in _COMPOUND_STATEMENTS:  # simple statements, defs and classes
            continue
        parts = [stmt]
        while parts:
            part = parts.pop()
            body = getattr(part, "body", None)
            if type(body) in _SUITES:
                stack.extend(reversed(body.body))
            for name in ("orelse", "finalbody"):
                extra = getattr(part, name, None)
                if extra is not None:
                    parts.append(extra)
            for handler in getattr(part, "handlers", ()):
                parts.append(handler)


def _expression_call(stmt: cst.CSTNode) -> cst.Call | None:
    if type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1:
        expr = stmt.body[0]
        if type(expr) is cst.Expr and type(expr.value) is cst.Call:
            return expr.value
    return None


def _is_reduce_overhead(call: cst.Call) -> bool:
    for arg in call.args:
        if arg.keyword is None:
            continue
        key = arg.keyword.value
        if key == "mode" and isinstance(arg.value, cst.SimpleString):
            if arg.value.evaluated_value in ("reduce-overhead", "max-autotune"):
                return True
        if key == "options" and isinstance(arg.value, cst.Dict):
            for element in arg.value.elements:
                if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
                    if element.key.evaluated_value == "triton.cudagraphs":
                        return isinstance(element.value, cst.Name) and element.value.value == "True"
    return False


def _has_region_comment(node: cst.FunctionDef) -> bool:
    body = node.body
    comment = None
    if isinstance(body, cst.IndentedBlock):
        comment = body.header.comment
    elif isinstance(body, cst.SimpleStatementSuite):
        comment = body.trailing_whitespace.comment
    if comment is not None and REGION_COMMENT in comment.value:
        return True
    for line in list(node.leading_lines[-1:]) + list(node.lines_after_decorators[-1:]):
        if line.comment is not None and REGION_COMMENT in line.comment.value:
            return True
    return False


def _is_staticmethod(node: cst.FunctionDef) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in node.decorators)


def _no_children(walker: FileWalker, node: cst.CSTNode) -> None:
    """Leaves (names, literals, pass): no child holds code, so no traversal to set up."""


# node types whose code fields only hold text (tests/test_nodes.py checks it)
LEAF_TYPES = (cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.FormattedStringText,
              cst.Ellipsis, cst.Pass, cst.Break, cst.Continue)

_SPECIAL: dict[type, Callable] = {
    **{leaf: _no_children for leaf in LEAF_TYPES},
    # `raise ValueError(f"... {t.max().item()}")`: the message is built only when the step fails
    # anyway (eagerly too), so what it reads is no capture hazard (measured on real packages:
    # range checks' messages were most of the flagged look-alikes in them)
    cst.Raise: _no_children,
    cst.FunctionDef: FileWalker._visit_function,
    cst.Return: FileWalker._visit_return,
    cst.Yield: FileWalker._visit_yield,
    cst.ClassDef: FileWalker._visit_class,
    cst.Assign: FileWalker._visit_assign,
    cst.AnnAssign: FileWalker._visit_annassign,
    cst.AugAssign: FileWalker._visit_augassign,
    cst.For: FileWalker._visit_for,
    cst.If: FileWalker._visit_if,
    cst.While: FileWalker._visit_while,
    cst.With: FileWalker._visit_with,
    cst.IndentedBlock: FileWalker._visit_block,
    cst.SimpleStatementSuite: FileWalker._visit_block,
    cst.Import: FileWalker._visit_import,
    cst.ImportFrom: FileWalker._visit_import,
    cst.Call: FileWalker._visit_call,
    cst.CompFor: FileWalker._visit_comprehension,
    cst.ListComp: FileWalker._visit_listcomp,
    cst.SetComp: FileWalker._visit_listcomp,
    cst.GeneratorExp: FileWalker._visit_listcomp,
    cst.DictComp: FileWalker._visit_listcomp,
}


_CONTAINERS = (list, set, dict)
# torch module classes whose forward is not a tensor op of their own
_NO_FORWARD_MODULES = frozenset("Module ModuleList ModuleDict ParameterList ParameterDict".split())


def _is_super_call(expr: cst.BaseExpression) -> bool:
    return type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value == "super"


def _save_state(rule) -> list[tuple[object, str, object]]:
    """A rule's per-file state, copied so that a what-if run can be undone: its containers, and
    the containers held by its state objects (e.g. a dataclass of bindings filled during the
    walk), one level down; elements are shared (they are nodes and ids, never mutated)."""
    saved: list[tuple[object, str, object]] = []
    for key, value in vars(rule).items():
        if isinstance(value, _CONTAINERS):
            saved.append((rule, key, _copy_containers(value)))
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            saved.extend((value, k, _copy_containers(v)) for k, v in vars(value).items() if isinstance(v, _CONTAINERS))
    return saved


def _holds_containers(elements) -> bool:
    """Is any element a list, set or dict (or a subclass)? By distinct types: set(map(type, ...))
    runs in C, where isinstance per element costs ~60 ns each."""
    return any(issubclass(tp, _CONTAINERS) for tp in set(map(type, elements)))


def _copy_containers(value, depth: int = 0):
    """Containers copied down to their non-container elements (a dict of lists: both levels);
    a level without nested containers is copied in one C call. (This runs before every what-if
    run: the nested test looks at the elements' distinct types, and plain elements are not
    passed to a call.)"""
    if isinstance(value, dict):
        if depth < 3 and _holds_containers(value.values()):
            deeper = depth + 1
            return {k: _copy_containers(v, deeper) if isinstance(v, _CONTAINERS) else v for k, v in value.items()}
        return value.copy()
    if isinstance(value, list):
        if depth < 3 and _holds_containers(value):
            deeper = depth + 1
            return [_copy_containers(v, deeper) if isinstance(v, _CONTAINERS) else v for v in value]
        return value.copy()
    if isinstance(value, set):
        return value.copy()
    return value


_TREE_METHODS = frozenset({"named_modules", "modules", "named_children", "children"})


def _module_tree_param(function: cst.FunctionDef, expr: cst.BaseExpression, params: set[str], depth: int = 0) -> str | None:
    """The parameter whose module tree `expr` walks: `module` bound by `for _, module in
    list(model.named_modules())` (through nested loops: `for n, c in module.named_children()`)."""
    if not isinstance(expr, cst.Name) or depth > 3:
        return None
    if expr.value in params and depth:
        return expr.value
    for node in _loops(function.body):
        if not any(n.value == expr.value for n in bound_names(node.target)):
            continue
        source = node.iter
        if isinstance(source, cst.Call) and isinstance(source.func, cst.Name) and source.func.value == "list" and source.args:
            source = source.args[0].value  # `list(model.named_modules())`: mutated while walked
        if (isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute)
                and source.func.attr.value in _TREE_METHODS):
            return _module_tree_param(function, source.func.value, params, depth + 1)
    return None


def _keyed_by_string(body: cst.CSTNode, name: str) -> bool:
    """Does `body` read `name["key"]` (a string literal key)?"""
    return any(type(node) is cst.Subscript and type(node.value) is cst.Name and node.value.value == name
               and per_step.entry_key(node) is not None for node in descendants(body))


def _loops(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.For):
            yield current
        if not isinstance(current, (cst.FunctionDef, cst.ClassDef)):
            stack.extend(children(current))
