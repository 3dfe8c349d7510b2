"""The `graphsafe` command line: parse arguments, call the engine, format. No rule logic here.

This module must never import torch: `check`, `fix` and `lsp` run where torch is absent.
Run-time subcommands import their torch-side modules lazily.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from graphsafe import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR, EXIT_NO_REGION = 0, 1, 2, 3


class UsageError(Exception):
    pass


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphsafe",
        description="Find and fix what breaks CUDA-graph capture in PyTorch code.",
    )
    parser.add_argument("--version", action="version", version=f"graphsafe {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="report capture hazards reachable from capture regions")
    check.add_argument("paths", nargs="*", type=str, help="files or directories (default: .); `-` reads stdin")
    check.add_argument("--select", action="append", default=[], metavar="CODES",
                       help="only these codes or prefixes, comma-separated (e.g. GS1,GS201)")
    check.add_argument("--ignore", action="append", default=[], metavar="CODES", help="skip these codes or prefixes")
    check.add_argument("--region", action="append", default=[], metavar="PATTERN",
                       help="treat matching functions as capture regions: fnmatch on `Class.method` or "
                            "`path/file.py::Class.method`; `*` audits every function")
    check.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")
    check.add_argument("--no-cache", action="store_true", help="do not read or write .graphsafe_cache/")
    check.add_argument("--cache-dir", type=Path, help="cache location (default: <project root>/.graphsafe_cache)")
    check.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: all cores)")
    check.add_argument("--stdin-filename", metavar="PATH", help="the path of the buffer read from stdin (`-`)")
    check.add_argument("--config", type=Path, help="pyproject.toml to read [tool.graphsafe] from")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when hazards are found")
    check.add_argument("--extend-exclude", action="append", default=[], metavar="PATTERN")
    check.add_argument("--quiet", "-q", action="store_true", help="print diagnostics only, no summary")
    check.add_argument("--show-regions", action="store_true", help="list the capture regions found, then the diagnostics")

    fix = sub.add_parser("fix", help="apply the fixes of reachable hazards (safe ones unless --unsafe-fixes)")
    fix.add_argument("paths", nargs="*", type=str, help="files or directories (default: .); `-` reads stdin")
    fix.add_argument("--diff", action="store_true", help="print a unified diff and change nothing")
    fix.add_argument("--unsafe-fixes", action="store_true", help="also apply fixes that may change behaviour")
    for flag in ("--select", "--ignore", "--region", "--extend-exclude"):
        fix.add_argument(flag, action="append", default=[])
    fix.add_argument("--no-cache", action="store_true")
    fix.add_argument("--cache-dir", type=Path)
    fix.add_argument("--jobs", "-j", type=int, default=None)
    fix.add_argument("--stdin-filename", metavar="PATH", help="fix the buffer read from stdin (`-`), print the result")
    fix.add_argument("--config", type=Path)
    fix.add_argument("--quiet", "-q", action="store_true")

    lsp = sub.add_parser("lsp", help="run the language server (LSP over stdio) for editors; needs the `lsp` extra")
    lsp.add_argument("--stdio", action="store_true", help="accepted for editor clients; stdio is the only transport")
    lsp.add_argument("--log-level", choices=("error", "warning", "info", "debug"), default="warning",
                     help="what the server logs to stderr (default: warning)")

    rule = sub.add_parser("rule", help="show a rule's documentation")
    rule.add_argument("code", help="rule code or name, e.g. GS101 or item-sync")
    sub.add_parser("rules", help="list all rules")

    # The run-time subcommands' options are defined by their own modules; load them only when
    # one of them runs (they cost ~45 ms of start-up that `check` in an editor should not pay).
    trace = sub.add_parser("trace", help="run a step and report the hazards it hits at run time (needs torch)")
    capture = sub.add_parser("capture", help="trial-capture a step in a fresh process: capture, replay, compare "
                                             "with eager, time (needs torch and a GPU)")
    if command == "trace":
        from graphsafe.runtime.trace_cli import add_trace_arguments  # imports no torch

        add_trace_arguments(trace)
    elif command == "capture":
        from graphsafe.runtime.capture_cli import add_capture_arguments  # imports no torch

        add_capture_arguments(capture)
    return parser


def _split_codes(values: list[str]) -> list[str]:
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


def _load_settings(args, paths: list[Path]):
    from graphsafe.config import find_config, load_settings

    config_file = args.config
    if config_file is None:
        start = paths[0] if paths else Path.cwd()
        config_file = find_config(start if start.exists() else Path.cwd())
    elif not config_file.is_file():
        raise UsageError(f"config file not found: {config_file}")
    settings = load_settings(config_file)  # ConfigError (exit 2) on anything wrong in it, as on the command line
    return settings.with_cli(
        select=_split_codes(args.select),
        ignore=_split_codes(args.ignore),
        regions=args.region,
        extend_exclude=args.extend_exclude,
    )


def _validate_options(args) -> None:
    """What `check` and `fix` share: known rule codes, a positive number of jobs."""
    from graphsafe.rules import unknown_codes

    unknown = unknown_codes(_split_codes(args.select) + _split_codes(args.ignore))
    if unknown:
        raise UsageError(f"unknown rule code or prefix: {', '.join(unknown)} (see `graphsafe rules`)")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")


def _progress_printer():
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        if total < 100:
            return
        end = "\n" if done == total else ""
        sys.stderr.write(f"\rgraphsafe: analysed {done}/{total} files{end}")
        sys.stderr.flush()

    return show


def run_check(args) -> int:
    from graphsafe.analyzer.engine import check_paths, check_source
    from graphsafe.report.formats import FORMATTERS, format_text

    _validate_options(args)
    raw_paths = args.paths or ["."]
    if "-" in raw_paths:
        if raw_paths != ["-"]:
            raise UsageError("`-` (stdin) cannot be combined with other paths")
        filename = args.stdin_filename or "<stdin>"
        settings = _load_settings(args, [Path(filename)])
        source = sys.stdin.buffer.read()
        from graphsafe.analyzer.parsing import decode

        try:
            text = decode(source)
        except (UnicodeDecodeError, SyntaxError) as error:
            raise UsageError(f"stdin is not valid source text: {error}") from None
        result = check_source(text, filename, settings)
    else:
        if args.stdin_filename:
            raise UsageError("--stdin-filename needs `-` as the path")
        paths = [Path(p) for p in raw_paths]
        for p in paths:
            if not p.exists() and not p.is_symlink():
                raise UsageError(f"path does not exist: {p}")
        settings = _load_settings(args, paths)
        result = check_paths(
            paths, settings, jobs=args.jobs, use_cache=not args.no_cache, cache_dir=args.cache_dir,
            progress=_progress_printer(),
        )
    whole_run = "-" not in raw_paths  # a buffer from an editor may be reached from other files
    if whole_run:
        _refuse_unmatched_regions(args, settings, result, raw_paths)
    out = sys.stdout
    if args.show_regions and args.format == "text":
        from graphsafe.analyzer.region_hints import def_line

        for region in result.regions:
            line = region.line or def_line(region.path, region.display)  # a pattern names a def the analysis did not place
            out.write(f"region {region.display} ({region.kind.value}, {region.confidence.value}) at {region.path}:{line}\n")
        if not result.regions:
            out.write("no capture regions found\n")
    no_region = whole_run and not result.regions
    if args.format == "text":
        text = format_text(result.diagnostics)
        if no_region and not result.diagnostics:
            text = "No capture region found: nothing was checked for capture hazards.\n"
        if args.quiet:
            text = "".join(line + "\n" for line in text.splitlines() if not line.startswith(("Found ", "[*] ", "All checks")))
        out.write(text)
    else:
        out.write(FORMATTERS[args.format](result.diagnostics))
    if no_region:
        _explain_no_region(result, settings)
    if result.diagnostics and not args.exit_zero:
        return EXIT_FINDINGS
    if no_region and not args.exit_zero:
        return EXIT_NO_REGION
    return EXIT_CLEAN


def _refuse_unmatched_regions(args, settings, result, raw_paths: list[str]) -> None:
    """A `--region` pattern that names no function is a typo, not a pass; so is a config
    pattern when the whole project is checked (a subset of files may hold none of its regions,
    which is then only said)."""
    from graphsafe.analyzer.region_hints import unmatched

    whole_project = any(Path(p).resolve() == settings.root.resolve() for p in raw_paths)
    missing = unmatched(tuple(settings.regions), result.facts, settings.root)
    for pattern, close in missing.items():
        hint = f"; closest: {', '.join(close)}" if close else ""
        if pattern in args.region:
            raise UsageError(f"--region pattern `{pattern}` matches no function in the files checked{hint}")
        message = f"[tool.graphsafe] regions pattern `{pattern}` matches no function in the files checked{hint}"
        if whole_project:
            raise UsageError(message)
        sys.stderr.write(f"graphsafe: warning: {message}\n")


def _explain_no_region(result, settings) -> None:
    from graphsafe.analyzer.region_hints import step_candidates

    lines = [
        f"graphsafe: no capture region found in the {result.files} file(s) checked, so no code is reachable from one "
        "and only region-independent settings were checked.",
        "  Mark the step you capture: `# graphsafe: region` on its `def` line, `@graphsafe.region`, "
        "`--region 'Class.method'` or `regions = [...]` under [tool.graphsafe]; "
        "`--region '*'` audits every function.",
    ]
    candidates = step_candidates(result.facts, settings.root)
    if candidates:
        lines.append("  Functions that look like a step: " + "; ".join(candidates))
    sys.stderr.write("\n".join(lines) + "\n")


def run_fix(args) -> int:
    from graphsafe.fixer import diff_bytes, fix_buffer, fix_paths
    from graphsafe.report.formats import format_text

    _validate_options(args)
    raw_paths = args.paths or ["."]
    if "-" in raw_paths:
        if raw_paths != ["-"]:
            raise UsageError("`-` (stdin) cannot be combined with other paths")
        filename = args.stdin_filename or "<stdin>"
        settings = _load_settings(args, [Path(filename)])
        try:
            outcome, fixed = fix_buffer(sys.stdin.buffer.read(), filename, settings, args.unsafe_fixes)
        except (UnicodeDecodeError, SyntaxError) as error:
            raise UsageError(f"stdin is not valid source text: {error}") from None
        if args.diff:
            _write_bytes(diff_bytes(outcome) if outcome.error is None else b"")
        else:
            _write_bytes(fixed)
        if outcome.error:
            sys.stderr.write(f"graphsafe: {filename}: {outcome.error}\n")
        would_change = args.diff and outcome.fixed != outcome.original  # as `--diff` on paths: 1 when it would fix
        return EXIT_FINDINGS if outcome.remaining or outcome.error or would_change else EXIT_CLEAN
    if args.stdin_filename:
        raise UsageError("--stdin-filename needs `-` as the path")
    paths = [Path(p) for p in raw_paths]
    for p in paths:
        if not p.exists() and not p.is_symlink():
            raise UsageError(f"path does not exist: {p}")
    settings = _load_settings(args, paths)
    result = fix_paths(paths, settings, unsafe=args.unsafe_fixes, write=not args.diff, jobs=args.jobs,
                       use_cache=not args.no_cache, cache_dir=args.cache_dir)
    fixed = sum(len(o.applied) for o in result.outcomes if o.error is None)
    for outcome in result.outcomes:
        if outcome.error:
            sys.stderr.write(f"graphsafe: {outcome.path}: {outcome.error}\n")
        elif args.diff and outcome.fixed != outcome.original:
            _write_bytes(diff_bytes(outcome))
    if args.diff:
        if not args.quiet:
            sys.stderr.write(f"Would fix {fixed} hazard{'s' if fixed != 1 else ''}.\n")
        return EXIT_FINDINGS if fixed else EXIT_CLEAN
    if not args.quiet:
        text = format_text(result.remaining)
        if result.remaining:
            sys.stdout.write("".join(l + "\n" for l in text.splitlines() if not l.startswith(("Found ", "[*] "))))
        total = fixed + len(result.remaining)
        sys.stdout.write(f"Found {total} error{'s' if total != 1 else ''} ({fixed} fixed, {len(result.remaining)} remaining).\n")
    return EXIT_FINDINGS if result.remaining else EXIT_CLEAN


def _write_bytes(data: bytes) -> None:
    """A patch or a fixed buffer in the file's own encoding (and name bytes), as patch tools read it."""
    sys.stdout.flush()  # after what was written as text
    binary = getattr(sys.stdout, "buffer", None)
    if binary is None:  # a text-only stream put in place of stdout by an embedding program
        sys.stdout.write(data.decode("utf-8", "surrogateescape"))
        return
    binary.write(data)
    binary.flush()


def run_rule(args) -> int:
    from graphsafe.rules import lookup

    rule = lookup(args.code)
    if rule is None:
        raise UsageError(f"unknown rule: {args.code} (see `graphsafe rules`)")
    from graphsafe.docs import rule_markdown

    sys.stdout.write(rule_markdown(rule))
    return EXIT_CLEAN


def run_rules(args) -> int:
    from graphsafe.rules import ALL_RULES

    for rule in ALL_RULES:
        sys.stdout.write(f"{rule.code}  {rule.name:<26} {rule.severity().value:<8} {rule.summary}\n")
    return EXIT_CLEAN


def run_lsp(args) -> int:
    try:
        from graphsafe.lsp.server import main as lsp_main
    except ImportError as error:
        raise UsageError(f"`graphsafe lsp` needs pygls and lsprotocol: pip install 'graphsafe[lsp]' ({error})") from None
    return lsp_main(["--log-level", args.log_level])


COMMANDS = {"check": run_check, "fix": run_fix, "lsp": run_lsp, "rule": run_rule, "rules": run_rules}


def _print_undecodable_names_as_their_bytes() -> None:
    """A file name that is not valid UTF-8 reaches us as surrogate escapes (PEP 383); print
    its own bytes rather than fail on it (a strict stream, e.g. PYTHONIOENCODING=utf-8)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="surrogateescape")
        except (AttributeError, ValueError, OSError):
            pass  # replaced by something that is not a text stream: leave it as it is


def main(argv: list[str] | None = None) -> int:
    _print_undecodable_names_as_their_bytes()
    words = list(sys.argv[1:] if argv is None else argv)
    parser = _parser(next((w for w in words if not w.startswith("-")), None))
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_ERROR
    try:
        if args.command == "trace":
            from graphsafe.runtime.trace_cli import run_trace  # imports torch only when run

            return run_trace(args)
        if args.command == "capture":
            from graphsafe.runtime.capture_cli import run_capture  # torch is imported in the worker only

            return run_capture(args)
        return COMMANDS[args.command](args)
    except UsageError as error:
        sys.stderr.write(f"graphsafe: error: {error}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("graphsafe: interrupted\n")
        return EXIT_ERROR
    except BrokenPipeError:  # `graphsafe check . | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return EXIT_ERROR
    except Exception as error:  # never a traceback to the user, unless asked for
        from graphsafe.config import ConfigError

        if isinstance(error, ConfigError):
            sys.stderr.write(f"graphsafe: error: {error}\n")
            return EXIT_ERROR
        if os.environ.get("GRAPHSAFE_DEBUG"):
            traceback.print_exc()
        sys.stderr.write(
            f"graphsafe: internal error: {type(error).__name__}: {error}\n"
            "Please report it; set GRAPHSAFE_DEBUG=1 for the traceback.\n"
        )
        return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
