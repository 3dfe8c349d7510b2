"""`graphsafe trace`: run a script or a callable under the tracer and print what it found.

    graphsafe trace train.py [--region PATTERN ...] [--all] [--steps N] [--format text|json] [-- ARGS]
    graphsafe trace pkg.module:train_step --args pkg.module:make_inputs [--steps N]

A script runs unmodified (runpy, with sys.argv set); a profile hook turns the tracer on when a
region function is entered and off when it returns. Regions: `@graphsafe.region`, a
`# graphsafe: region` comment on the `def` line, `--region` patterns, or `--all`.

This module is imported when the `graphsafe` parser is built, so it must not import torch at
import time: the tracer is imported inside `run_trace`.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib
import importlib.util
import inspect
import json
import linecache
import os
import re
import runpy
import sys
import time
import traceback
from contextlib import contextmanager, nullcontext, redirect_stdout
from types import CodeType, FrameType
from typing import Any, Callable

from graphsafe.runtime.trace_report import Site, StackFrame, TraceReport, merge_with_static

__all__ = ["add_trace_arguments", "run_trace", "merge_with_static", "main"]

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
DEFAULT_SCRIPT_STEPS = 10  # traced calls per region; later calls run untraced
DEFAULT_CALLABLE_STEPS = 3  # two calls at least, or nothing can drift
REGION_COMMENT = re.compile(r"#.*\bgraphsafe:\s*region\b")


class UsageError(Exception):
    """A bad command line or target: a message for the user, exit code 2."""


# --- arguments ----------------------------------------------------------------------------------


def _add_options(parser: argparse.ArgumentParser, defaults: bool = True) -> None:
    suppress = {} if defaults else {"default": argparse.SUPPRESS}
    parser.add_argument("--region", action="append", metavar="PATTERN", **({"default": []} if defaults else suppress),
                        help="trace functions whose qualified name (`Class.method`, `outer.inner`, or "
                             "`path/file.py::Class.method`) matches this fnmatch pattern; repeatable")
    parser.add_argument("--all", action="store_true", **({"default": False} if defaults else suppress),
                        help="trace every function defined in the script's directory (outermost calls)")
    parser.add_argument("--steps", type=int, metavar="N", **({"default": None} if defaults else suppress),
                        help=f"traced calls: per region for a script (default {DEFAULT_SCRIPT_STEPS}), "
                             f"runs of a callable (default {DEFAULT_CALLABLE_STEPS})")
    parser.add_argument("--args", metavar="MODULE:FACTORY", **({"default": None} if defaults else suppress),
                        help="for a callable target: a factory returning (args, kwargs) or an args tuple; "
                             "one taking a `step` argument is called before every step")
    parser.add_argument("--format", choices=("text", "json"), **({"default": "text"} if defaults else suppress),
                        help="output format (json: a list of findings on stdout)")
    parser.add_argument("--static", action="store_true", **({"default": False} if defaults else suppress),
                        help="also run `graphsafe check` on the traced files and show which hazards were seen "
                             "at run time and statically, only statically, or only at run time")
    parser.add_argument("--save-facts", nargs="?", const="", metavar="PATH",
                        **({"default": None} if defaults else suppress),
                        help="save what the traced steps saw (kinds of parameters and attributes, numbers that "
                             "changed between steps) for `check`, `fix` and the editor (default PATH: "
                             "<project root>/.graphsafe/facts.json)")


class _CommandAction(argparse.Action):
    """Takes `TARGET [options] [-- script args]`: options may come before or after the target."""

    def __call__(self, parser, namespace, values, option_string=None):
        values = list(values)
        if not values and str(getattr(namespace, "save_facts", "")).endswith(".py"):
            # `trace --save-facts train.py`: the optional PATH took the target
            values, namespace.save_facts = [namespace.save_facts], ""
        if not values:
            parser.error("missing TARGET: a script (path/to/script.py) or module:function")
        target, rest = values[0], values[1:]
        options, script_args = (rest[: rest.index("--")], rest[rest.index("--") + 1 :]) if "--" in rest else (rest, [])
        inner = argparse.ArgumentParser(prog=parser.prog, add_help=False)
        inner.error = parser.error  # one usage message, one exit code (2)
        _add_options(inner, defaults=False)
        parsed, unknown = inner.parse_known_args(options)
        if unknown:
            parser.error(f"unrecognized arguments: {' '.join(unknown)} (put the script's own arguments after `--`)")
        for name, value in vars(parsed).items():
            if name == "region":
                value = list(getattr(namespace, "region", None) or []) + value
            setattr(namespace, name, value)
        namespace.target = target
        namespace.script_args = script_args


def add_trace_arguments(parser: argparse.ArgumentParser) -> None:
    """Add `graphsafe trace`'s arguments to `parser` (a subcommand parser)."""
    parser.usage = ("%(prog)s path/to/script.py [--region PATTERN ...] [--all] [--steps N] [--format text|json] "
                    "[-- script args]\n       %(prog)s module:function [--args module:factory] [--steps N] "
                    "[--format text|json]")
    _add_options(parser)
    # dest must not be `command`: graphsafe's own parser keeps the subcommand's name there.
    parser.add_argument("trace_command", nargs=argparse.REMAINDER, action=_CommandAction, metavar="TARGET ...",
                        help="path/to/script.py [options] [-- script args], or module:function "
                             "(also path/to/file.py:function)")


# --- entry point --------------------------------------------------------------------------------


def run_trace(args: argparse.Namespace) -> int:
    """Run `graphsafe trace` with parsed arguments; returns the exit code (0 clean, 1 findings, 2 error)."""
    try:
        target = _check_arguments(args)
        try:
            import torch  # noqa: F401  (the only place the CLI needs it)
        except ImportError:
            raise UsageError("`graphsafe trace` needs torch: install it (pip install 'graphsafe[runtime]')") from None
        if target == "script":
            outcome = _trace_script(args)
        else:
            outcome = _trace_callable(args)
    except UsageError as error:
        sys.stderr.write(f"graphsafe trace: error: {error}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("graphsafe trace: interrupted\n")
        return EXIT_ERROR
    except Exception as error:  # never a traceback to the user, unless asked for
        if os.environ.get("GRAPHSAFE_DEBUG"):
            traceback.print_exc()
        sys.stderr.write(f"graphsafe trace: internal error: {type(error).__name__}: {error}\n"
                         "Please report it; set GRAPHSAFE_DEBUG=1 for the traceback.\n")
        return EXIT_ERROR
    if args.save_facts is not None:
        _save_facts(args, outcome)
    code = _print_outcome(outcome, args.format, static=_static_views(args, outcome) if args.static else None)
    return code


def _save_facts(args: argparse.Namespace, outcome: "_Outcome") -> None:
    from pathlib import Path

    from graphsafe.runtime.facts_writer import project_root, save

    root = project_root()
    path = Path(args.save_facts) if args.save_facts else None
    traced = outcome.facts is not None and outcome.report.steps > 0
    problem = "nothing was traced" if not traced else save(outcome.facts, outcome.report.findings, path, root)
    if problem is not None:
        sys.stderr.write(f"graphsafe trace: facts not saved: {problem}\n")
    else:
        shown = _display(str(path.absolute() if path is not None else root / ".graphsafe" / "facts.json"))
        sys.stderr.write(f"graphsafe trace: facts saved to {shown}\n")


def _static_views(args: argparse.Namespace, outcome: "_Outcome") -> tuple[list[dict], list[dict] | None]:
    """`graphsafe check` alone, and with this run's facts (None when no facts were recorded)."""
    import tempfile
    from pathlib import Path

    from graphsafe.runtime.facts_writer import FactsRecorder, project_root, save

    with tempfile.TemporaryDirectory(prefix="graphsafe-facts-") as folder:
        # both runs name a facts file: an earlier .graphsafe/facts.json must not count as "static alone"
        alone, with_facts = Path(folder) / "none.json", Path(folder) / "run.json"
        root = project_root()
        if save(FactsRecorder(lambda _: True), [], alone, root) is not None:
            return _static_diagnostics(args, outcome, None), None
        static = _static_diagnostics(args, outcome, alone)
        if outcome.facts is None or save(outcome.facts, outcome.report.findings, with_facts, root) is not None:
            return static, None
        return static, _static_diagnostics(args, outcome, with_facts)


def _static_diagnostics(args: argparse.Namespace, outcome: "_Outcome", facts_file=None) -> list[dict]:
    """`graphsafe check` over the script's folder and every traced file, as JSON dicts."""
    from pathlib import Path

    from graphsafe.analyzer.engine import check_paths
    from graphsafe.config import Settings
    from graphsafe.report.formats import to_json_objects

    paths = {Path(f.filename).resolve() for f in outcome.report.findings if os.path.isfile(f.filename)}
    target = getattr(args, "target", "")
    if target.endswith(".py"):
        paths.add(Path(target).resolve().parent)
    regions = tuple(args.region) + (("*",) if args.all else ())
    result = check_paths(sorted(paths), Settings(regions=regions, facts_file=facts_file), use_cache=False)
    return to_json_objects(result.diagnostics)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="graphsafe trace",
                                     description="Run a step and report the capture hazards it hits at run time.")
    add_trace_arguments(parser)
    return run_trace(parser.parse_args(argv))


class _Outcome:
    def __init__(self, report: TraceReport, error: str | None = None, note: str | None = None, facts=None) -> None:
        self.report = report
        self.facts = facts  # the FactsRecorder, with --save-facts
        self.error = error  # the traced code raised: findings are partial
        self.note = note  # something the user should know that is not an error


def _print_outcome(outcome: _Outcome, output_format: str, static: tuple[list[dict], list[dict] | None] | None = None) -> int:
    report = outcome.report
    if outcome.note:
        sys.stderr.write(f"graphsafe trace: {outcome.note}\n")
    if report.steps == 0 and outcome.error is None:
        sys.stderr.write("graphsafe trace: error: no region was called. Mark the step with @graphsafe.region or a "
                         "`# graphsafe: region` comment on its def line, or pass --region PATTERN or --all.\n")
        return EXIT_ERROR
    merged = merge_with_static(report.findings, static[0], facts_diagnostics=static[1]) if static is not None else None
    if output_format == "json":
        data = report.to_json() if merged is None else {"findings": report.to_json(), "merged": merged}
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(report.to_text())
        if merged is not None:
            sys.stdout.write(_merged_text(merged))
    if outcome.error is not None:
        sys.stderr.write(f"graphsafe trace: error: {outcome.error}; the findings above are the ones seen until then\n")
        return EXIT_ERROR
    return EXIT_FINDINGS if report.findings else EXIT_CLEAN


def _merged_text(merged: dict) -> str:
    lines = ["", "Run time vs static analysis (graphsafe check on the same files):"]
    titles = {"both": "seen at run time and statically", "static only": "static only (not hit by these steps)",
              "runtime only": "run time only (not seen statically)"}
    for status, title in titles.items():
        entries = merged.get(status, [])
        lines.append(f"  {title}: {len(entries)}")
        for entry in entries:
            shown = os.path.relpath(entry["filename"]) if os.path.isabs(entry["filename"]) else entry["filename"]
            by = {"static alone": " (static alone)", "facts": " (static, with this run's facts)"}.get(entry.get("static_by"), "")
            lines.append(f"    {shown}:{entry['row']}: {entry['code']}{by}")
    if "by facts" in merged:
        lines.append(f"  seen statically only with this run's facts (`graphsafe trace --save-facts`): {merged['by facts']}")
    return "\n".join(lines) + "\n"


def _check_arguments(args: argparse.Namespace) -> str:
    target = getattr(args, "target", None)
    if not target:
        raise UsageError("missing TARGET: a script (path/to/script.py) or module:function")
    if args.steps is not None and args.steps < 1:
        raise UsageError(f"--steps must be at least 1, got {args.steps}")
    if target.endswith(".py"):
        if not os.path.isfile(target):
            raise UsageError(f"no such script: {target}")
        if args.args:
            raise UsageError("--args is for a module:function target; a script makes its own inputs")
        return "script"
    if ":" not in target:
        raise UsageError(f"cannot trace {target!r}: give a script (path/to/script.py) or module:function")
    if args.region or args.all:
        raise UsageError("--region and --all select functions in a script; a module:function target is the region")
    if args.script_args:
        raise UsageError("arguments after `--` are for a script target")
    return "callable"


# --- a callable with inputs from a factory ------------------------------------------------------


def _trace_callable(args: argparse.Namespace) -> _Outcome:
    from graphsafe.runtime.tracer import StepTracer, step_inputs

    fn = _load_object(args.target, "function")
    factory = _load_object(args.args, "factory") if args.args else None
    per_step = factory is not None and _takes_step(factory)
    steps = args.steps or DEFAULT_CALLABLE_STEPS
    stepper = StepTracer(fn)
    facts = _facts_recorder(args, stepper.tracer)
    error = None
    with _stdout_for(args.format):
        try:
            shared = step_inputs(factory()) if factory is not None and not per_step else ((), {})
            for step in range(steps):
                call_args, call_kwargs = step_inputs(factory(step)) if per_step else shared
                with observing_calls(facts):
                    stepper.step(call_args, call_kwargs)
        except Exception as raised:
            error = _describe_exception(raised, stepper.tracer.is_library_file)
    return _Outcome(stepper.report(), error, facts=facts)


def _facts_recorder(args: argparse.Namespace, tracer):
    if args.save_facts is None and not args.static:
        return None
    from graphsafe.runtime.facts_writer import FactsRecorder

    return FactsRecorder(tracer.is_library_file)


@contextmanager
def observing_calls(facts):
    """A callable's step: every user function it calls is looked at as it is entered."""
    if facts is None:
        yield
        return
    facts.begin_step()
    previous = sys.getprofile()

    def hook(frame, event, arg):
        if event == "call":
            facts.observe(frame)
        if previous is not None:
            previous(frame, event, arg)

    sys.setprofile(hook)
    try:
        yield
    finally:
        sys.setprofile(previous)


def _load_object(spec: str, what: str) -> Callable:
    module_name, _, attribute = spec.rpartition(":")
    if not module_name or not attribute:
        raise UsageError(f"expected module:{what} or path/to/file.py:{what}, got {spec!r}")
    module = _import_target(module_name)
    obj: Any = module
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"{module_name!r} has no {attribute!r}") from None
    if not callable(obj):
        raise UsageError(f"{spec!r} is not callable")
    return obj


def _import_target(name: str):
    try:
        if name.endswith(".py") or os.sep in name or "/" in name:
            return _import_file(name)
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())  # like `python -m`: modules of the working directory
        return importlib.import_module(name)
    except UsageError:
        raise
    except Exception as error:
        raise UsageError(f"cannot import {name!r}: {type(error).__name__}: {error}") from None


def _import_file(path: str):
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path}")
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)  # its sibling imports work as when run as a script
    name = os.path.splitext(os.path.basename(path))[0]
    if name in sys.modules:
        name = f"_graphsafe_target_{name}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickle look modules up by name
    spec.loader.exec_module(module)
    return module


def _takes_step(factory: Callable) -> bool:
    """A factory with a `step` parameter or one required positional one is called every step."""
    try:
        parameters = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.name == "step" for p in parameters):
        return True
    required = [p for p in parameters if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(required) == 1


# --- a script with region functions -------------------------------------------------------------


class RegionSelector:
    """Decides once per code object whether a function is a region to trace."""

    def __init__(self, patterns: list[str], trace_all: bool, script: str, is_library: Callable[[str], bool]) -> None:
        self.patterns = list(patterns)
        self.trace_all = trace_all
        self.script_dir = os.path.realpath(os.path.dirname(os.path.abspath(script))) + os.sep
        self.decorated: set[CodeType] = set()  # filled by the patched `graphsafe.region`
        self._is_library = is_library

    def __call__(self, code: CodeType) -> bool:
        if code.co_name.startswith("<"):  # module bodies, lambdas, comprehensions
            return False
        if code in self.decorated:
            return True
        filename = code.co_filename
        if self._is_library(filename):
            return False
        if self.trace_all and self._in_script_dir(filename):
            return True
        if self.patterns and _matches(self.patterns, qualified_name(code), filename):
            return True
        return has_region_comment(code)

    def _in_script_dir(self, filename: str) -> bool:
        path = os.path.realpath(filename)
        parts = path.split(os.sep)
        return path.startswith(self.script_dir) and "site-packages" not in parts and "dist-packages" not in parts

    def register(self, fn: Any) -> None:
        code = getattr(inspect.unwrap(fn), "__code__", None) if callable(fn) else None
        if code is not None:
            self.decorated.add(code)


def qualified_name(code: CodeType) -> str:
    """`Class.method`, `outer.inner` (without `<locals>`)."""
    return getattr(code, "co_qualname", code.co_name).replace("<locals>.", "")


def _matches(patterns: list[str], name: str, filename: str) -> bool:
    for pattern in patterns:
        if "::" in pattern:
            file_pattern, _, name_pattern = pattern.partition("::")
            rel = os.path.relpath(filename).replace(os.sep, "/")
            if not (fnmatch.fnmatch(rel, file_pattern) or rel.endswith(file_pattern.lstrip("./"))):
                continue
            if fnmatch.fnmatchcase(name, name_pattern):
                return True
        elif fnmatch.fnmatchcase(name, pattern):
            return True
    return False


def has_region_comment(code: CodeType) -> bool:
    """`# graphsafe: region` on the def line (to the colon of a multi-line def), or on the line
    right above it."""
    first = code.co_firstlineno
    line_no = first
    while line_no < first + 50:  # past decorators to the def line
        text = linecache.getline(code.co_filename, line_no)
        if not text:
            return False
        if text.lstrip().startswith(("def ", "async def ")):
            break
        line_no += 1
    else:
        return False
    above = linecache.getline(code.co_filename, line_no - 1).strip()
    if above.startswith("#") and REGION_COMMENT.search(above):
        return True
    for offset in range(20):
        text = linecache.getline(code.co_filename, line_no + offset)
        if REGION_COMMENT.search(text):
            return True
        code_part = text.split("#", 1)[0].rstrip()
        if not text or code_part.endswith(":"):
            return False
    return False


class RegionHook:
    """A `sys.setprofile` hook: on entry of an outermost region call, compare its inputs with
    its last call and turn the tracer on; off again when that frame returns (also when it
    raises: the profiler sees that return too). Regions called inside it are traced as part of it."""

    def __init__(self, tracer, is_region: Callable[[CodeType], bool], max_calls: int, facts=None) -> None:
        from graphsafe.runtime.tracer import InputWatcher, def_line

        self._tracer = tracer
        self._is_region = is_region
        self._max_calls = max_calls
        self._cache: dict[CodeType, bool] = {}
        self._watchers: dict[CodeType, Any] = {}
        self._new_watcher = lambda code: InputWatcher(_definition_site(code, def_line(code)))
        self._active: FrameType | None = None
        self._started = 0.0
        self.steps = 0
        self.seconds = 0.0
        self.error: BaseException | None = None  # the hook's own failure: tracing stopped
        self.facts = facts  # a FactsRecorder (--save-facts): looks at every user call inside a region

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            region = self._cache.get(code)
            if region is None:
                region = self._cache[code] = self._safely(self._is_region, code) or False
            if region and self._active is None:
                self._safely(self._enter, frame)
            elif self._active is not None and self.facts is not None:
                self.facts.observe(frame)
        elif event == "return" and frame is self._active:
            self._safely(self.leave)

    def _safely(self, fn: Callable, *args: Any) -> Any:
        # An exception escaping a profile hook unhooks it and lands in the user's code.
        if self.error is not None:
            return None
        try:
            return fn(*args)
        except Exception as error:
            self.error = error
            self._cache.clear()
            self._is_region = lambda code: False
            return None

    def _enter(self, frame: FrameType) -> None:
        if self._active is not None:
            return  # a region called inside a traced one is part of it: its inputs are not static inputs
        code = frame.f_code
        watcher = self._watchers.get(code)
        if watcher is None:
            watcher = self._watchers[code] = self._new_watcher(code)
        if watcher.calls >= self._max_calls:
            return
        named, owner = frame_inputs(frame)
        watcher.observe(self._tracer.recorder, named, owner)
        if self.facts is not None:
            self.facts.begin_step()
            self.facts.observe(frame)
        self._started = time.perf_counter()
        self._tracer.activate(stop_frame=frame.f_back)
        self._active = frame
        self.steps += 1

    def leave(self) -> None:
        if self._active is None:
            return
        self._active = None
        self.seconds += time.perf_counter() - self._started
        self._tracer.deactivate()

    def regions(self) -> dict[str, int]:
        return {watcher.site.function: watcher.calls for watcher in self._watchers.values() if watcher.calls}


def _definition_site(code: CodeType, line: int) -> Site:
    name = qualified_name(code)
    return Site(code.co_filename, line, 1, name, (StackFrame(code.co_filename, line, name),))


_CO_VARARGS, _CO_VARKEYWORDS = inspect.CO_VARARGS, inspect.CO_VARKEYWORDS


def frame_inputs(frame: FrameType) -> tuple[list[tuple[str, Any]], tuple[str, Any] | None]:
    """The arguments a function was called with, read from its frame at entry; `self` apart."""
    code = frame.f_code
    values = frame.f_locals
    count = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:count])
    star = code.co_varnames[count] if code.co_flags & _CO_VARARGS else None
    count += star is not None
    double_star = code.co_varnames[count] if code.co_flags & _CO_VARKEYWORDS else None
    owner = None
    if names and names[0] == "self" and "self" in values:
        owner = ("self", values["self"])
        names = names[1:]
    named = [(name, values[name]) for name in names if name in values]
    if star is not None:
        named.extend((f"{star}[{i}]", v) for i, v in enumerate(values.get(star, ())))
    if double_star is not None:
        named.extend(values.get(double_star, {}).items())
    return named, owner


def _trace_script(args: argparse.Namespace) -> _Outcome:
    import graphsafe
    from graphsafe.runtime.tracer import Tracer

    path = os.path.abspath(args.target)
    tracer = Tracer()
    selector = RegionSelector(args.region, args.all, path, tracer.is_library_file)
    facts = _facts_recorder(args, tracer)
    hook = RegionHook(tracer, selector, args.steps or DEFAULT_SCRIPT_STEPS, facts)
    original_region = graphsafe.region

    def region(fn):  # the script's `@graphsafe.region` also tells the hook
        selector.register(fn)
        return original_region(fn)

    error = note = None
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [args.target, *args.script_args]
    sys.path.insert(0, os.path.dirname(path))
    graphsafe.region = region
    try:
        with _stdout_for(args.format):
            previous_profile = sys.getprofile()
            sys.setprofile(hook)
            try:
                runpy.run_path(path, run_name="__main__")
            finally:
                sys.setprofile(previous_profile)
                hook.leave()
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            note = f"the script exited with status {exit_.code}"
    except Exception as raised:
        error = _describe_exception(raised, tracer.is_library_file)
    finally:
        graphsafe.region = original_region
        sys.argv, sys.path[:] = saved_argv, saved_path
    if hook.error is not None:
        raise hook.error
    report = TraceReport(tracer.recorder.findings(), hook.steps, hook.seconds, None, hook.regions())
    return _Outcome(report, error, note, facts)


def _stdout_for(output_format: str):
    """JSON goes to stdout alone: the traced code's prints go to stderr meanwhile."""
    return redirect_stdout(sys.stderr) if output_format == "json" else nullcontext()


def _describe_exception(error: BaseException, is_library: Callable[[str], bool]) -> str:
    """`ValueError: message (at file.py:12)`, at the innermost user frame."""
    where = ""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if not is_library(frame.filename):
            where = f" (at {_display(frame.filename)}:{frame.lineno})"
            break
    return f"the traced code raised {type(error).__name__}: {error}{where}"


def _display(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


if __name__ == "__main__":
    sys.exit(main())
