"""The `graphsafe` command line: parse arguments, call the engine, format. No rule logic here.

This module must never import torch: `check`, `fix` and `lsp` run where torch is absent.
Run-time subcommands import their torch-side modules lazily.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from dataclasses import replace
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
    _rule_selection(check)
    _file_selection(check)
    _fix_options(check)
    check.add_argument("--fix", action="store_true", help="apply fixes (safe ones; unsafe too with --unsafe-fixes), "
                                                          "then report what is left")
    check.add_argument("--diff", action="store_true", help="print the fixes as a unified diff and change nothing "
                                                           "(exit 1 when there is one)")
    check.add_argument("--show-fixes", action="store_true", help="with --fix: list what was fixed, per file and code")
    check.add_argument("--exit-non-zero-on-fix", action="store_true",
                       help="with --fix: exit 1 when anything was fixed, even if nothing is left")
    check.add_argument("--add-noqa", action="store_true",
                       help="add `# noqa: CODE` to every line with a diagnostic (keeping the codes already there)")
    check.add_argument("--output-format", "--format", dest="output_format", choices=OUTPUT_CHOICES, default=None,
                       metavar="FORMAT", help="full (default: a source snippet under each diagnostic), concise (one "
                                              "line each; `text` is its old name), json, json-lines, junit, gitlab, "
                                              "sarif, github")
    check.add_argument("--statistics", action="store_true", help="count the diagnostics per code instead of listing them")
    check.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                       help="colour the text output (default: auto, on a terminal unless NO_COLOR is set)")
    check.add_argument("--show-files", action="store_true", help="list the files that would be checked, and exit")
    check.add_argument("--show-settings", action="store_true", help="print the resolved settings, and exit")
    check.add_argument("--watch", "-w", action="store_true", help="check again whenever a checked file changes")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when hazards are found")
    check.add_argument("--quiet", "-q", action="store_true", help="print diagnostics only, no summary")
    check.add_argument("--show-regions", action="store_true", help="list the capture regions found, then the diagnostics")

    fix = sub.add_parser("fix", help="apply the fixes of reachable hazards (safe ones unless --unsafe-fixes)")
    fix.add_argument("paths", nargs="*", type=str, help="files or directories (default: .); `-` reads stdin")
    fix.add_argument("--diff", action="store_true", help="print a unified diff and change nothing")
    _rule_selection(fix)
    _file_selection(fix)
    _fix_options(fix)
    fix.add_argument("--quiet", "-q", action="store_true", help="print no summary")

    graph = sub.add_parser("graph", help="make one region capturable: split its host work out, fix the rest, "
                                         "say what still blocks capture and how to wire it to graphed()")
    graph.add_argument("paths", nargs="*", type=str, help="files or directories (default: .)")
    graph.add_argument("--diff", action="store_true", help="print a unified diff and change nothing")
    graph.add_argument("--json", action="store_true", help="the summary as JSON (stderr with --diff)")
    _rule_selection(graph)
    _file_selection(graph)
    graph.set_defaults(fixable=[], unfixable=[])

    lsp = sub.add_parser("lsp", help="run the language server (LSP over stdio) for editors; needs the `lsp` extra")
    lsp.add_argument("--stdio", action="store_true", help="accepted for editor clients; stdio is the only transport")
    lsp.add_argument("--log-level", choices=("error", "warning", "info", "debug"), default="warning",
                     help="what the server logs to stderr (default: warning)")

    rule = sub.add_parser("rule", help="show a rule's documentation (or every rule's, with --all)")
    rule.add_argument("code", nargs="?", help="rule code or name, e.g. GS101 or item-sync")
    rule.add_argument("--all", action="store_true", help="every rule's documentation")
    rule.add_argument("--output-format", choices=("text", "json"), default="text")
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


OUTPUT_CHOICES = ("full", "concise", "text", "json", "json-lines", "junit", "gitlab", "sarif", "github")


def _rule_selection(command: argparse.ArgumentParser) -> None:
    """Which rules, regions and configuration: the options `check` and `fix` share."""
    command.add_argument("--select", action="append", default=[], metavar="CODES",
                         help="only these codes or prefixes, comma-separated (e.g. GS1,GS201; ALL: every rule); "
                              "replaces the config's select")
    command.add_argument("--extend-select", action="append", default=[], metavar="CODES",
                         help="these codes or prefixes as well (e.g. GS001, off by default)")
    command.add_argument("--ignore", action="append", default=[], metavar="CODES",
                         help="skip these codes or prefixes, comma-separated (added to the config's ignore)")
    command.add_argument("--region", action="append", default=[], metavar="PATTERN",
                         help="treat matching functions as capture regions: fnmatch on `Class.method` or "
                              "`path/file.py::Class.method`; `*` audits every function (and fixes nothing)")
    command.add_argument("--config", type=Path, metavar="PYPROJECT",
                         help="the pyproject.toml to read [tool.graphsafe] from (default: the nearest one with it)")
    command.add_argument("--facts", type=Path, metavar="FILE",
                         help="run-time facts written by `graphsafe trace --save-facts` (default: "
                              "<project root>/.graphsafe/facts.json when there is one)")


def _file_selection(command: argparse.ArgumentParser) -> None:
    """Which files, with what cache and how many workers."""
    command.add_argument("--exclude", action="append", default=[], metavar="PATTERNS",
                         help="exclude these patterns, comma-separated, instead of the default ones (.venv, build, "
                              "...) and the config's")
    command.add_argument("--extend-exclude", action="append", default=[], metavar="PATTERNS",
                         help="exclude these patterns as well, comma-separated")
    command.add_argument("--force-exclude", action=argparse.BooleanOptionalAction, default=None,
                         help="apply the excludes to paths named on the command line too (for pre-commit)")
    command.add_argument("--respect-gitignore", action=argparse.BooleanOptionalAction, default=None,
                         help="skip files .gitignore ignores (default: on)")
    command.add_argument("--follow-libraries", action=argparse.BooleanOptionalAction, default=None,
                         help="follow calls from a region into installed libraries (site-packages) and report their "
                              "hazards at the calling line (default: on)")
    command.add_argument("--no-cache", action="store_true", help="do not read or write .graphsafe_cache/")
    command.add_argument("--cache-dir", type=Path, help="cache location (default: <project root>/.graphsafe_cache)")
    command.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: all cores)")
    command.add_argument("--stdin-filename", metavar="PATH", help="the path of the buffer read from stdin (`-`)")


def _fix_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--unsafe-fixes", action="store_true",
                         help="also apply (check: also offer) fixes that may change behaviour")
    command.add_argument("--fixable", action="append", default=[], metavar="CODES",
                         help="only these codes or prefixes get fixes (default: ALL)")
    command.add_argument("--unfixable", action="append", default=[], metavar="CODES",
                         help="these codes or prefixes get no fixes")


def _split_codes(values: list[str]) -> list[str]:
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


def paths_to_read(raw_paths: list[str], args) -> list[Path]:
    """The command line's paths (not stdin); a missing one, or --stdin-filename without `-`, is a usage error."""
    if args.stdin_filename:
        raise UsageError("--stdin-filename needs `-` as the path")
    paths = [Path(p) for p in raw_paths]
    for p in paths:
        if not p.exists() and not p.is_symlink():
            raise UsageError(f"path does not exist: {p}")
    return paths


def load_cli_settings(args, paths: list[Path]):
    from graphsafe.config import find_config, load_settings

    config_file = args.config
    if config_file is None:
        start = paths[0] if paths else Path.cwd()
        config_file = find_config(start if start.exists() else Path.cwd())
    elif not config_file.is_file():
        raise UsageError(f"config file not found: {config_file}")
    settings = load_settings(config_file)  # ConfigError (exit 2) on anything wrong in it, as on the command line
    if getattr(args, "facts", None) is not None:
        settings = replace(settings, facts_file=args.facts)
    return settings.with_cli(
        select=_split_codes(args.select),
        extend_select=_split_codes(args.extend_select),
        ignore=_split_codes(args.ignore),
        fixable=_split_codes(args.fixable),
        unfixable=_split_codes(args.unfixable),
        regions=args.region,
        exclude=_split_codes(args.exclude),
        extend_exclude=_split_codes(args.extend_exclude),
        force_exclude=args.force_exclude,
        respect_gitignore=args.respect_gitignore,
        follow_libraries=getattr(args, "follow_libraries", None),
    )


def validate_options(args) -> None:
    """What `check` and `fix` share: known rule codes, a positive number of jobs."""
    from graphsafe.rules import unknown_codes

    given = [args.select, args.extend_select, args.ignore, args.fixable, args.unfixable]
    unknown = unknown_codes([code for values in given for code in _split_codes(values)])
    if unknown:
        raise UsageError(f"unknown rule code or prefix: {', '.join(unknown)} (see `graphsafe rules`)")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")


def progress_printer():
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
    from graphsafe.cli_check import run_check as check

    return check(args)


def run_fix(args) -> int:
    from graphsafe.fixer import diff_bytes, fix_buffer, fix_paths
    from graphsafe.report.formats import format_text

    validate_options(args)
    raw_paths = args.paths or ["."]
    if "-" in raw_paths:
        if raw_paths != ["-"]:
            raise UsageError("`-` (stdin) cannot be combined with other paths")
        filename = args.stdin_filename or "<stdin>"
        settings = load_cli_settings(args, [Path(filename)])
        from graphsafe.analyzer.reading import read_stdin

        source = read_stdin()
        if isinstance(source, str):
            raise UsageError(source)
        try:
            outcome, fixed = fix_buffer(source, filename, settings, args.unsafe_fixes)
        except (UnicodeDecodeError, SyntaxError) as error:
            raise UsageError(f"stdin is not valid source text: {error}") from None
        if args.diff:
            write_bytes(diff_bytes(outcome) if outcome.error is None else b"")
        else:
            write_bytes(fixed)
        for message in outcome.messages():
            sys.stderr.write(f"graphsafe: {filename}: {message}\n")
        would_change = args.diff and outcome.fixed != outcome.original  # as `--diff` on paths: 1 when it would fix
        return EXIT_FINDINGS if outcome.remaining or outcome.error or would_change else EXIT_CLEAN
    paths = paths_to_read(raw_paths, args)
    settings = load_cli_settings(args, paths)
    result = fix_paths(paths, settings, unsafe=args.unsafe_fixes, write=not args.diff, jobs=args.jobs,
                       use_cache=not args.no_cache, cache_dir=args.cache_dir)
    if args.diff:
        return EXIT_FINDINGS if print_diffs(result, args.quiet) else EXIT_CLEAN
    fixed = len(result.applied)
    for outcome in result.outcomes:
        for message in outcome.messages():
            sys.stderr.write(f"graphsafe: {outcome.path}: {message}\n")
    if not args.quiet:
        text = format_text(result.remaining)
        if result.remaining:
            sys.stdout.write("".join(l + "\n" for l in text.splitlines() if not l.startswith(("Found ", "[*] "))))
        total = fixed + len(result.remaining)
        sys.stdout.write(f"Found {total} error{'s' if total != 1 else ''} ({fixed} fixed, {len(result.remaining)} remaining).\n")
    return EXIT_FINDINGS if result.remaining else EXIT_CLEAN


def print_diffs(result, quiet: bool) -> int:
    """`--diff`: each file's patch to stdout, errors and `Would fix N hazards.` to stderr; how
    many fixes the patches hold."""
    from graphsafe.fixer import diff_bytes

    for outcome in result.outcomes:
        for message in outcome.messages():
            sys.stderr.write(f"graphsafe: {outcome.path}: {message}\n")
        if outcome.error is None and outcome.fixed != outcome.original:
            write_bytes(diff_bytes(outcome))
    fixed = len(result.applied)
    if not quiet:
        sys.stderr.write(f"Would fix {fixed} hazard{'s' if fixed != 1 else ''}.\n")
    return fixed


def write_bytes(data: bytes) -> None:
    """A patch or a fixed buffer in the file's own encoding (and name bytes), as patch tools read it."""
    sys.stdout.flush()  # after what was written as text
    binary = getattr(sys.stdout, "buffer", None)
    if binary is None:  # a text-only stream put in place of stdout by an embedding program
        sys.stdout.write(data.decode("utf-8", "surrogateescape"))
        return
    binary.write(data)
    binary.flush()


def run_rule(args) -> int:
    """One rule's documentation, or with `--all` every rule's (ruff's `rule --all`); as text
    (markdown) or as ruff's JSON fields."""
    from graphsafe.rules import ALL_RULES, lookup

    if args.all == bool(args.code):
        raise UsageError("give a rule code or name, or --all" if not args.all else "give a rule code or --all, not both")
    if args.all:
        rules = list(ALL_RULES)
    else:
        rule = lookup(args.code)
        if rule is None:
            raise UsageError(f"unknown rule: {args.code} (see `graphsafe rules`)")
        rules = [rule]
    from graphsafe.docs import rule_json, rule_markdown

    if args.output_format == "json":
        import json

        data = [rule_json(r) for r in rules]
        sys.stdout.write(json.dumps(data if args.all else data[0], indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write("\n".join(rule_markdown(r) for r in rules))
    return EXIT_CLEAN


def run_rules(args) -> int:
    """Every rule, one a line, in aligned columns: code, name, severity, summary."""
    from graphsafe.rules import ALL_RULES

    name_width = max(len(rule.name) for rule in ALL_RULES)
    severity_width = max(len(rule.severity().value) for rule in ALL_RULES)
    for rule in ALL_RULES:
        sys.stdout.write(f"{rule.code}  {rule.name:<{name_width}}  {rule.severity().value:<{severity_width}}  "
                         f"{rule.summary}\n")
    return EXIT_CLEAN


def run_lsp(args) -> int:
    try:
        from graphsafe.lsp.server import main as lsp_main
    except ImportError as error:
        raise UsageError(f"`graphsafe lsp` needs pygls and lsprotocol: pip install 'graphsafe[lsp]' ({error})") from None
    return lsp_main(["--log-level", args.log_level])


def run_graph(args) -> int:
    from graphsafe.graph_command import GraphError, run_graph as graph

    validate_options(args)
    paths = paths_to_read(args.paths or ["."], argparse.Namespace(stdin_filename=None))
    settings = load_cli_settings(args, paths)
    try:
        return graph(args, settings, paths)
    except GraphError as error:
        raise UsageError(str(error)) from None


COMMANDS = {"check": run_check, "fix": run_fix, "graph": run_graph, "lsp": run_lsp, "rule": run_rule, "rules": run_rules}


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
