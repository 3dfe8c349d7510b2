"""On-disk cache of per-file facts, keyed by content hash, graphsafe version and rule set.

Facts do not depend on settings (select/ignore/regions/noqa are applied later), so one entry
serves every configuration. Entries are written atomically; a corrupt entry is a miss.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path

from graphsafe import __version__

# Bump when the facts' shape or the analysis changes without a version bump (development).
CACHE_SCHEMA = "89"  # 89: ClassInfo.made (attributes bound to project calls' results: no method-name guesses on them, nor on locals a project call made), untyped refs do not decide a capture; 88: an abstract method no code constructs a subclass of runs every override (at most 8); 87: batches drawn by next(loader) are host memory; 86: untyped calls count one interface's implementations once (at most 8 in all), methods no Python value has called on an attribute read as a value, indexes from `list(...)`, enumerate counts and entries of lists of int lists (host_resident), torchmetrics tensor states and asserted tensor attributes; 85: isinstance narrowing (analyzer/narrowing.py), attributes bound to methods of other objects (REF_MARK), methods only subclasses define run the constructed subclasses' overrides; 84: calls on objects of no known class followed by a distinctive method name (CallRef "untyped", analyzer/untyped_calls.py), attributes bound to such methods; 83: a function a project decorator wraps calls the wrapper it returns; 82: a local bound to one of nested defs (a conditional) aliases them; 81: a `-> float` helper defined further down that draws on the host gives a per-step number; 80: host-effect helpers leave out reports behind a default guard; 79: Unit.dispatches hands on arguments (what the dispatched method gets), `self` passed is an object of its class, attributes of parameters asked of what callers pass (rfield of arg ids), uses: only of imported modules; 78: quoted annotations (forward references) read as the annotation they hold; 77: Unit.dispatches (functions dispatching to a method named by a parameter), CallRef "named"; 76: generic bases (`Base[T]`) are their classes; 75: host-effect helper conditions carry the rule code, reports at the statement; 74: host-effect helpers (GS501/GS503 at a bare call of a project function whose own work is host bookkeeping, analyzer/host_effect_helpers.py); 73: a shape joined to another (`torch.Size(s) + x.shape`) is a tuple; 72: Unit.tensor_params (parameters used as tensors), USES_PID (a parameter, or its element, passed to a function of another file that uses it as a tensor), elements passed on; 71: methods only Python numbers have (`.bit_length()`) return numbers; 70: a bound method of this class handed on (`step_fn=self.train_step`) is an "F:" slot naming the method; 69: `with self.ctx:` on an attribute of unknown kind follows the attribute path to its classes' __enter__/__exit__; 68: hooks registered in a step (`h.register_hook(fn)`, `m.register_forward_hook(fn)`) run in it; 67: Unit.is_abstract (objects declared of an abstract class run its subclasses' overrides), dicts annotated with object values, saved-tensor hooks run in the `with` of their context (synthetic `__enter__`); 66: parameter types declared in docstrings (analyzer/docstring_types.py), objects kept in attributes set to None first, modules unpacked from module lists, modules made and called at once; 65: `D if p is None else p` holds the default's object kind; 64: hooks a trainer calls on each of its callbacks by name (CallRef "hook"); 63: jaxtyping and torchtyping shape annotations declare tensors (Bool ones masks); 62: attributes kept from constructor parameters annotated with a class also hold what callers pass (attr slots), locals bound to self attributes call their classes, optimizer-state entries written from their last values (GS302); 61: parameters annotated a number or something else (`Union[float, Tensor]`) are per step where callers pass per-step numbers, `nonzero(as_tuple=True)` is a tuple, optimizer-state counters held in CPU tensors (GS302), masks read by their names (GS108); 60: attributes bound to a call's result call what it returns (CallRef "returned"), beside their other bindings; 59: definitions of one name in the branches of an if/try merged into one unit; 58: ClassInfo.advanced (fields kept from a constructor parameter, changed in place: per step where callers pass numbers), attributes holding what a factory method returns (F:), abs/round/max/min of numbers are numbers; 57: functions chosen into attributes (conditionals, literal tables of this or another file, parameter defaults, what constructors are given), loop variables wait on an element id (#*), `.cpu()` copies are host memory (GS201 asserts and GS104 on them silent, GS104 not in assert messages); 56: loop variables over pending values wait on their ids, what-if runs ask twice; 55: GS401 on `.data =` of a read tensor and on buffers registered again where read; 54: elements of lists read with `.tolist()` select as device reads; 53: elements of arrays of host draws, numpy math on draws, nested tuple targets of per-step returns; 52: the `__init__` a `@dataclass` generates (fields hold what callers pass); 51: local lists filled with objects of known classes; 50: star imports kept as re-exports (`from ._2d import *`); 49: lists filled only with tensors (`kls.append(kl)`) are lists of tensors; 48: any-of conditions (arithmetic on two fields each decided project-wide), torch.autograd.grad tuples; 47: FileFacts.lr_changers (a torch optimizer's step reads a scheduled learning rate, GS301); 46: loader batches typed (unpacked parts tensors, string-keyed batches dicts of tensors), GS302 loop counters not fed by computed values, GS402 CPU tensors of constants; 45: counters in param groups and optimizer state (loop variables over held state, `.get(k, 0) + 1`); 44: hooks called by name (`self.notify("on_batch_begin")`, analyzer/hooks.py); 43: loop regions carry only names a pass may read before binding them (GS401 carried tensors), GS503 on items of container subclasses; 42: class-body annotations naming a class (`actor: Actor`) type the attribute, numpy calls are host values, indexing a mask gives a mask, GS111 (distribution validation); 41: "F:" argument and return slots (functions handed around as values: `scheduler = cosine_lr(...)`, then `scheduler(step)`), progress-bar loops count, loop counters decide before parameters, `sigmas[i].log()` elements as tensors, StepLoop.shared (GS503 in loop regions), LR scheduler steps (GS302), numbers read from the device as data sizes (GS201) and selecting (GS301), autograd Function .apply, torch functions held by attributes (resolve), "HB" slots (loader batches handed to moving helpers); 40: namedtuple record classes (analyzer/records.py), fields kept from constructor arguments, `O:` returns joined with a delegated call, recursion feeding a field back (returns.py); 39: Optional number parameters declare numbers; 38: host draws as per-step numbers, local function aliases, if/else joins of per-step sources; 37: loop regions (`for ...:  # graphsafe: region`, analyzer/step_loops.py); 36: host-move helpers (CPU-tested moves of a parameter, analyzer/cpu_tested.py, host_move_helpers.py); 35: "G" argument slots (a torch.Generator passed, analyzer/generators.py); 34: Unit.cold_calls, module constants and cache hits as guards; 33: Hit.guard, Unit.arg_sources (default-guarded code, analyzer/default_guards.py); 32: loop counters from loops over computed number lists, number tables kept by a class (sinks18); 31: classes through partials, literal tables and class attributes (partial18); 30: loop counters passed as arguments (Unit.scalar_args conditions ("loop", "counter", how)), lengths of grown containers; 29: FileFacts.held_counters (fields advanced through a held object); 28: FileFacts.group_keys (param-group keys rewritten per step); 27: 26 with main's 25 (merge of robust-group); 26: Unit.call_lines (call sites of chains); 25 (robust-group): GS002 (a function whose analysis failed), flattened partials; 25 (main): FileFacts.noqa_directives (GS001); 24: Fix.reason (why unsafe, or why withheld); 23: dicts of tensors from defaultdict/dict(zip)/spreads/ParameterDict, integer tensors for ~ (probe14b); 22: property aliases of kept objects, dicts of modules iterated (probe14a); 21: host-indexed rows moved to the GPU, autocast reaching a capture method, per-step flags, one self-concat set (retire13b); 20: objects given to a constructor and kept (`self.m = m`), classes built in a call's arguments (retire13); 19: recomputed settings given a counter, ModuleList slices, ~t masks, dict comprehensions of tensors (retire12, retire12b); 18: dict-of-tensor spreads, per-operand scalar sources (retire11, retire11b); 17: attribute-path calls, capitalised values, look-ahead without caching, imported helpers given parameters, host attributes (retire10, retire10b); 16: per-element tuple annotations, named_parameters, float helpers (retire9) with 15; 15: "D" return slots (dicts of tensors, retire9b); 14: Unit.is_property, "prop" call refs, function aliases (probe9); 13: Unit.required_tail (arguments after `*args`); 12: Unit.injects (module surgery by setattr), outside updates, set 7 analysis changes; 10: ClassInfo.attr_slots, FileFacts.attr_reads; 9: object returns, spread argument slots ("*N"), parameters used as tensors; 8: "attrs" call refs, varying attributes set to new numbers; 7: argument kinds per call site, `replays`; 6: return summaries, wanted ids, re-walks keyed by external kinds


def rules_fingerprint() -> str:
    """The rule set and the code that computes facts: an edited analyzer or rule (a checkout, a
    reinstall of the same version) never reads facts an older one wrote."""
    from graphsafe.rules import ALL_RULES

    h = hashlib.blake2b(",".join(r.code for r in ALL_RULES).encode(), digest_size=6)
    package = Path(__file__).resolve().parents[1]
    for folder in ("analyzer", "rules", "rewriters"):
        for source in sorted((package / folder).rglob("*.py")):
            try:
                h.update(source.read_bytes())
            except OSError:
                h.update(source.name.encode())
    return h.hexdigest()


class FactsCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory / f"v{__version__}-{CACHE_SCHEMA}-{rules_fingerprint()}"
        self.enabled = True

    @staticmethod
    def key(path: str, module: str, content: bytes) -> str:
        h = hashlib.blake2b(digest_size=16)
        h.update(path.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
        h.update(module.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
        h.update(content)
        return h.hexdigest()

    def _file(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.pickle"

    def get(self, key: str):
        if not self.enabled:
            return None
        try:
            with open(self._file(key), "rb") as handle:
                return pickle.load(handle)
        except FileNotFoundError:
            return None
        except Exception:  # a truncated or foreign entry is a miss, never an error
            return None

    def put(self, key: str, facts) -> None:
        if not self.enabled:
            return
        target = self._file(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(facts, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, target)
        except OSError:
            self.enabled = False  # read-only tree: run without a cache rather than fail
        tag = self.directory.parent / "CACHEDIR.TAG"
        if self.enabled and not tag.exists():
            try:
                tag.write_text("Signature: 8a477f597d28d172789f06886806bc55\n# graphsafe cache\n")
                (self.directory.parent / ".gitignore").write_text("*\n")
            except OSError:
                pass
