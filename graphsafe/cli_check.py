"""`graphsafe check`: what ruff's `ruff check` does, for capture hazards — report (in one of
ruff's output formats, or as statistics), `--fix`, `--diff`, `--add-noqa`, `--show-files`,
`--show-settings`, `--watch`. Argument handling and output only; the engine does the work."""

from __future__ import annotations

import sys
from pathlib import Path

from graphsafe.cli import (EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, EXIT_NO_REGION, UsageError, load_cli_settings,
                           paths_to_read, print_diffs, progress_printer, validate_options, write_bytes)
from graphsafe.analyzer.reading import read_stdin
from graphsafe.report.style import Style, use_color


def _facts_path(settings):
    from graphsafe.analyzer.run_facts import facts_path

    return facts_path(settings)


def output_format(args) -> str:
    """`--output-format` (or its alias `--format`); `text`, the old name of one line per
    diagnostic, is `concise`; the default is `full`, as in ruff >= 0.5."""
    chosen = args.output_format or "full"
    return "concise" if chosen == "text" else chosen


def _refuse_conflicts(args) -> None:
    """Combinations ruff refuses too, or that would silently drop one of the two."""
    for flag, other in (("add_noqa", "fix"), ("add_noqa", "diff"), ("add_noqa", "watch"), ("diff", "watch"),
                        ("show_files", "show_settings")):
        if getattr(args, flag) and getattr(args, other):
            raise UsageError(f"--{flag.replace('_', '-')} cannot be used with --{other.replace('_', '-')}")


def run_check(args) -> int:
    """Texts that are big or deeply nested are analysed in a forked child under the worker
    caps (memory, CPU), also where the engine analyses in this process (one job, few files, stdin)."""
    from graphsafe.analyzer import limits
    from graphsafe.analyzer.workers import can_fork, run_isolated

    if not can_fork():
        return _run_check(args)
    with limits.isolated(run_isolated, when=limits.needs_isolation):
        return _run_check(args)


def _run_check(args) -> int:
    validate_options(args)
    _refuse_conflicts(args)
    style = Style(use_color(args.color, sys.stdout))
    raw_paths = args.paths or ["."]
    if "-" in raw_paths:
        if raw_paths != ["-"]:
            raise UsageError("`-` (stdin) cannot be combined with other paths")
        for flag in ("add_noqa", "watch", "show_files"):
            if getattr(args, flag):
                raise UsageError(f"--{flag.replace('_', '-')} needs files, not stdin")
        return _check_stdin(args, style)
    paths = paths_to_read(raw_paths, args)
    settings = load_cli_settings(args, paths)
    from graphsafe.analyzer.engine import discover_files

    if args.show_settings:
        return _show_settings(args, discover_files(paths, settings) or paths, settings)
    if args.show_files:
        return _show_files(paths, settings)
    if args.watch:
        from graphsafe.watch import watch

        def watched() -> list[Path]:
            return [*discover_files(paths, settings), *([settings.config_file] if settings.config_file else [])]

        def check_again() -> int:
            """A run with the settings as they are now; a mistake in them is said, and watching goes on."""
            from graphsafe.config import ConfigError

            try:
                return _check_paths(args, raw_paths, paths, load_cli_settings(args, paths), style)
            except (UsageError, ConfigError) as error:
                sys.stderr.write(f"graphsafe: error: {error}\n")
                return EXIT_ERROR

        return watch(check_again, watched, sys.stdout)
    return _check_paths(args, raw_paths, paths, settings, style)


def _check_paths(args, raw_paths: list[str], paths: list[Path], settings, style: Style) -> int:
    from graphsafe.analyzer.engine import check_paths

    result = check_paths(paths, settings, jobs=args.jobs, use_cache=not args.no_cache, cache_dir=args.cache_dir,
                         progress=progress_printer())
    _refuse_unmatched_regions(args, settings, result, raw_paths)  # before anything is written
    if not args.quiet:
        for note in result.notes:
            sys.stderr.write(f"graphsafe: note: {note}\n")
    if args.add_noqa:
        return _add_noqa(result.diagnostics)
    applied = []
    diagnostics = result.diagnostics
    if args.fix or args.diff:
        from graphsafe.fixer import fix_paths

        fixing = fix_paths(paths, settings, unsafe=args.unsafe_fixes, write=not args.diff, jobs=args.jobs,
                           use_cache=not args.no_cache, cache_dir=args.cache_dir, project=result)
        if args.diff:  # ruff: `check --diff` prints the patch only
            return EXIT_FINDINGS if print_diffs(fixing, args.quiet) else EXIT_CLEAN
        for outcome in fixing.outcomes:
            for message in outcome.messages():
                sys.stderr.write(f"graphsafe: {outcome.path}: {message}\n")
        applied, diagnostics = fixing.applied, fixing.remaining
    if args.show_regions and output_format(args) in ("full", "concise"):
        _print_regions(result)
    no_region = not result.regions
    _report(args, diagnostics, applied, style, no_region, sys.stdout)
    if no_region:
        _explain_no_region(result, settings)
    return _exit_code(args, diagnostics, applied, no_region)


def _exit_code(args, diagnostics, applied, no_region: bool) -> int:
    if args.exit_zero:
        return EXIT_CLEAN
    if diagnostics or (applied and args.exit_non_zero_on_fix):
        return EXIT_FINDINGS
    return EXIT_NO_REGION if no_region else EXIT_CLEAN


def _report(args, diagnostics, applied, style: Style, no_region: bool, out, buffers: dict[str, str] | None = None) -> None:
    """The diagnostics in the chosen format (or their statistics), then, for text, the summary."""
    from graphsafe.report.formats import FORMATTERS, TextOptions, fix_summary, text_body, text_summary
    from graphsafe.report.snippet import source_reader
    from graphsafe.report.statistics import format_statistics

    chosen = output_format(args)
    if args.statistics:
        out.write(format_statistics(diagnostics, chosen, unsafe_fixes=args.unsafe_fixes, style=style))
        return
    if chosen not in ("full", "concise"):
        out.write(FORMATTERS[chosen](diagnostics))
        return
    options = TextOptions(show_source=chosen == "full", unsafe_fixes=args.unsafe_fixes, hint_unsafe=True,
                          fix_command="the `--fix` option", show_fix_status=not args.fix, fixed=len(applied),
                          style=style, sources=source_reader(buffers) if chosen == "full" else None)
    out.write(text_body(diagnostics, options))
    if args.show_fixes and applied:
        body_ends_blank = chosen == "full" and bool(diagnostics)  # each full diagnostic ends with a blank line
        out.write(("" if body_ends_blank else "\n") + fix_summary(applied, style) + "\n")
    if args.quiet:
        return
    if no_region and not diagnostics and not applied:
        out.write("No capture region found: nothing was checked for capture hazards.\n")
        return
    out.write("\n".join(text_summary(diagnostics, options)) + "\n")


def _check_stdin(args, style: Style) -> int:
    """A buffer read from stdin, checked as `--stdin-filename` (an editor's, pre-commit's).
    With `--fix` the fixed buffer goes to stdout and what is left to stderr (ruff's way)."""
    from graphsafe.analyzer.discovery import exclusion_patterns, force_excluded
    from graphsafe.analyzer.engine import check_source
    from graphsafe.analyzer.parsing import decode

    filename = args.stdin_filename or "<stdin>"
    settings = load_cli_settings(args, [Path(filename)])
    if args.show_settings:
        return _show_settings(args, [Path(filename)], settings)
    source = read_stdin()
    if isinstance(source, str):
        raise UsageError(source)
    patterns = exclusion_patterns(tuple(settings.exclude) + tuple(settings.extend_exclude), settings.default_exclude)
    if args.stdin_filename and settings.force_exclude and force_excluded(Path(filename), settings.root, patterns):
        if args.fix:
            write_bytes(source)  # excluded: the buffer goes back unchanged
        return EXIT_CLEAN
    if args.fix or args.diff:
        from graphsafe.fixer import diff_bytes, fix_buffer

        try:
            outcome, fixed = fix_buffer(source, filename, settings, args.unsafe_fixes)
        except (UnicodeDecodeError, SyntaxError) as error:
            raise UsageError(f"stdin is not valid source text: {error}") from None
        for message in outcome.messages():
            sys.stderr.write(f"graphsafe: {filename}: {message}\n")
        if args.diff:
            patch = diff_bytes(outcome) if outcome.error is None else b""
            write_bytes(patch)
            return EXIT_FINDINGS if patch else EXIT_CLEAN
        write_bytes(fixed)
        applied = outcome.applied if outcome.error is None else []
        _report(args, outcome.remaining, applied, Style(use_color(args.color, sys.stderr)), False, sys.stderr,
                {filename: outcome.fixed})
        return _exit_code(args, outcome.remaining, applied, False)
    try:
        text = decode(source)
    except (UnicodeDecodeError, SyntaxError) as error:
        raise UsageError(f"stdin is not valid source text: {error}") from None
    result = check_source(text, filename, settings)
    if args.show_regions and output_format(args) in ("full", "concise"):
        _print_regions(result)
    _report(args, result.diagnostics, [], style, False, sys.stdout, {filename: text})
    return _exit_code(args, result.diagnostics, [], False)  # the buffer's region may be in another file


def _add_noqa(diagnostics) -> int:
    from graphsafe.noqa_writer import add_noqa

    outcomes = add_noqa(diagnostics)
    for outcome in outcomes:
        if outcome.error:
            sys.stderr.write(f"graphsafe: {outcome.path}: {outcome.error}\n")
        elif outcome.skipped:
            lines = ", ".join(str(n) for n in outcome.skipped)
            sys.stderr.write(f"graphsafe: {outcome.path}: no noqa comment can go on line(s) {lines} "
                             "(it ends inside a multi-line string, is continued by a backslash, or has `# noqa` in a string)\n")
    added = sum(o.added for o in outcomes)
    sys.stderr.write(f"Added {added} noqa directive{'s' if added != 1 else ''}.\n")
    return EXIT_ERROR if any(o.error for o in outcomes) else EXIT_CLEAN


def _show_files(paths: list[Path], settings) -> int:
    """ruff's `--show-files`: every file a check would read, as absolute paths, sorted."""
    import os

    from graphsafe.analyzer.engine import discover_files

    for path in sorted(os.path.abspath(p) for p in discover_files(paths, settings)):
        sys.stdout.write(path + "\n")
    return EXIT_CLEAN


def _show_settings(args, files: list[Path], settings) -> int:
    """ruff's `--show-settings`: the settings a check of the first file would use, resolved."""
    import os

    from graphsafe.analyzer.discovery import exclusion_patterns
    from graphsafe.rules import selected

    first = os.path.abspath(files[0])
    enabled = sorted(selected(list(settings.select), list(settings.ignore), list(settings.extend_select)))
    fixable = sorted(selected(list(settings.fixable or ["ALL"]), list(settings.unfixable)))

    def listed(values) -> str:
        return "[" + ", ".join(f'"{v}"' for v in values) + "]"

    rows = [
        ("config-file", str(settings.config_file.resolve()) if settings.config_file else "none (defaults)"),
        ("root", str(settings.root)),
        ("facts-file", str(_facts_path(settings) or "none (no .graphsafe/facts.json)")),
        ("select", listed(settings.select) if settings.select else "(default: every rule on by default)"),
        ("extend-select", listed(settings.extend_select)),
        ("ignore", listed(settings.ignore)),
        ("enabled rules", listed(enabled)),
        ("fixable", listed(settings.fixable) if settings.fixable is not None else '["ALL"]'),
        ("unfixable", listed(settings.unfixable)),
        ("fixable rules", listed(fixable)),
        ("regions", listed(settings.regions)),
        ("exclude", listed(exclusion_patterns(tuple(settings.exclude), settings.default_exclude))),
        ("extend-exclude", listed(settings.extend_exclude)),
        ("force-exclude", str(settings.force_exclude).lower()),
        ("respect-gitignore", str(settings.respect_gitignore).lower()),
        ("follow-libraries", str(settings.follow_libraries).lower()),
        ("per-file-ignores", "{" + ", ".join(f'"{p}" = {listed(c)}' for p, c in settings.per_file_ignores) + "}"),
        ("output-format", output_format(args)),
        ("unsafe-fixes", str(args.unsafe_fixes).lower()),
    ]
    sys.stdout.write(f"Resolved settings for: {first}\n\n")
    width = max(len(key) for key, _ in rows)
    sys.stdout.write("".join(f"{key.ljust(width)} = {value}\n" for key, value in rows))
    return EXIT_CLEAN


def _print_regions(result) -> None:
    from graphsafe.analyzer.region_hints import def_line

    for region in result.regions:
        line = region.line or def_line(region.path, region.display)  # a pattern names a def the analysis did not place
        sys.stdout.write(f"region {region.display} ({region.kind.value}, {region.confidence.value}) at {region.path}:{line}\n")
    if not result.regions:
        sys.stdout.write("no capture regions found\n")


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
    from graphsafe.analyzer.region_hints import loop_candidates, step_candidates

    lines = [
        f"graphsafe: no capture region found in the {result.files} file(s) checked, so no code is reachable from one "
        "and only region-independent settings were checked.",
        "  Mark the step you capture: `# graphsafe: region` on its `def` line, `@graphsafe.region`, "
        "`--region 'Class.method'` or `regions = [...]` under [tool.graphsafe]; "
        "`--region '*'` audits every function; the comment on a `for`/`while` line captures one pass of the loop.",
    ]
    candidates = step_candidates(result.facts, settings.root)
    if candidates:
        lines.append("  Functions that look like a step: " + "; ".join(candidates))
    loops = loop_candidates(result.facts, settings.root)
    if loops:
        lines.append("  Loops that run a training step: " + "; ".join(loops))
    sys.stderr.write("\n".join(lines) + "\n")
