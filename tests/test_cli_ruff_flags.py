"""What a ruff user types works: `graphsafe check` takes ruff's flags with ruff's meaning.

Each test says in a comment what `ruff check` (0.5 and later) does with the flag.
"""

from __future__ import annotations

import io
import json
import re
import textwrap
from xml.etree import ElementTree

import pytest

from tests.helpers import run_cli as run
from tests.test_fix_command import AFTER, BEFORE, PROGRAM

# GS702 (safe fix), GS701 and GS401 (unsafe fixes)
HAZARD = textwrap.dedent("""\
    import torch

    def step(x: torch.Tensor):  # graphsafe: region
        v = x.item()
        torch.cuda.synchronize()
        return v
""")


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("NO_COLOR", "FORCE_COLOR", "CI_PROJECT_DIR"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "prog.py").write_text(PROGRAM)
    (tmp_path / "step.py").write_text(HAZARD)
    return tmp_path


# --output-format / --format ---------------------------------------------------------------


def test_default_output_is_full_with_the_source_line_and_carets_under_the_range(tree, capsys):
    # ruff >= 0.5: `full` is the default; a header line, then the lines around the diagnostic
    # with a gutter and `^^^ CODE` under its range, then `= help:` lines
    code, out, _ = run(capsys, "check", "step.py", "--no-cache")
    assert code == 1
    lines = out.splitlines()
    header = lines.index("step.py:4:9: GS101 `.item()` copies a tensor to the host and waits for the GPU: capture fails")
    assert lines[header + 1] == "  |"
    assert "4 |     v = x.item()" in lines
    assert lines[lines.index("4 |     v = x.item()") + 1] == "  |         ^^^^^^^^ GS101"
    assert "  = note: in capture region: step (# graphsafe: region comment, step.py:3)" in lines
    assert out.endswith("Found 2 errors.\nNo fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n")


def test_concise_is_one_line_per_diagnostic_and_text_is_its_old_name(tree, capsys):
    # ruff: `--output-format concise` prints `path:row:col: CODE message` without source
    _, concise, _ = run(capsys, "check", "step.py", "--no-cache", "--output-format", "concise")
    assert concise.splitlines()[0] == "step.py:4:9: GS101 `.item()` copies a tensor to the host and waits for the GPU: capture fails"
    assert "|" not in concise
    _, text, _ = run(capsys, "check", "step.py", "--no-cache", "--output-format", "text")
    assert text == concise


def test_format_is_an_alias_of_output_format(tree, capsys):
    # graphsafe's own older flag; ruff renamed `--format` to `--output-format` the same way
    _, a, _ = run(capsys, "check", "step.py", "--no-cache", "--format", "json")
    _, b, _ = run(capsys, "check", "step.py", "--no-cache", "--output-format", "json")
    assert a == b and [d["code"] for d in json.loads(a)] == ["GS101", "GS106"]


def test_json_lines_is_one_json_object_per_line(tree, capsys):
    # ruff: `json-lines` is the `json` schema, one object per line, no array
    _, out, _ = run(capsys, "check", "step.py", "--no-cache", "--output-format", "json-lines")
    _, whole, _ = run(capsys, "check", "step.py", "--no-cache", "--output-format", "json")
    assert [json.loads(line) for line in out.splitlines()] == json.loads(whole)


def test_junit_has_one_failed_test_case_per_diagnostic(tree, capsys):
    # ruff: a <testsuite> per file, a <testcase name="org.ruff.CODE"> with a <failure> per diagnostic
    _, out, _ = run(capsys, "check", "step.py", "--no-cache", "--output-format", "junit")
    suites = ElementTree.fromstring(out.split("\n", 1)[1])
    assert suites.get("tests") == "2" and suites.get("failures") == "2"
    cases = suites.find("testsuite").findall("testcase")
    assert [c.get("name") for c in cases] == ["org.graphsafe.GS101", "org.graphsafe.GS106"]
    assert cases[0].get("line") == "4" and cases[0].find("failure").text.startswith("line 4, col 9, `.item()`")
    (tree / "step.py").write_text("x = 1\n")
    _, clean, _ = run(capsys, "check", "step.py", "--no-cache", "--output-format", "junit", "--exit-zero")
    assert ElementTree.fromstring(clean.split("\n", 1)[1]).get("tests") == "0"


def test_gitlab_report_has_one_stable_unique_fingerprint_per_issue(tree, capsys, monkeypatch):
    # ruff: a Code Climate array for GitLab's Code Quality, paths relative to CI_PROJECT_DIR
    (tree / "twice.py").write_text(HAZARD.replace("    return v", "    w = x.item()\n    return v"))
    monkeypatch.setenv("CI_PROJECT_DIR", str(tree.parent))
    _, out, _ = run(capsys, "check", "twice.py", "--no-cache", "--output-format", "gitlab")
    issues = json.loads(out)
    assert [i["check_name"] for i in issues] == ["GS101", "GS106", "GS101"]
    assert issues[0]["location"]["path"] == f"{tree.name}/twice.py"
    assert issues[0]["location"]["positions"]["begin"] == {"line": 4, "column": 9}
    assert len({i["fingerprint"] for i in issues}) == 3  # two identical findings still differ
    _, again, _ = run(capsys, "check", "twice.py", "--no-cache", "--output-format", "gitlab")
    assert [i["fingerprint"] for i in json.loads(again)] == [i["fingerprint"] for i in issues]


# --fix, --unsafe-fixes, --diff, --show-fixes, --exit-non-zero-on-fix --------------------------


def test_fix_applies_the_safe_fixes_then_reports_what_is_left(tree, capsys):
    # ruff: `check --fix` writes the fixes, lists the remaining diagnostics, "Found N errors (M
    # fixed, K remaining)."; exit 1 while something remains
    code, out, _ = run(capsys, "check", "prog.py", "--no-cache", "--fix", "--output-format", "concise")
    assert code == 1
    assert (tree / "prog.py").read_text() == PROGRAM.replace(BEFORE, AFTER)
    assert "GS702" not in out and "GS701" in out and "GS401" in out
    assert "[*]" not in out  # what is left after --fix is not fixable by it
    assert out.endswith("Found 3 errors (1 fixed, 2 remaining).\n"
                        "No fixes available (2 hidden fixes can be enabled with the `--unsafe-fixes` option).\n")


def test_unsafe_fixes_with_fix_applies_the_unsafe_ones_too_and_exits_0_when_nothing_is_left(tree, capsys):
    # ruff: `--fix --unsafe-fixes` applies both; exit 0 when every diagnostic was fixed
    code, out, _ = run(capsys, "check", "prog.py", "--no-cache", "--fix", "--unsafe-fixes")
    fixed = (tree / "prog.py").read_text()
    assert code == 0 and "capturable=True" in fixed and "static_x.copy_(batch.cuda())" in fixed
    assert out.endswith("Found 3 errors (3 fixed, 0 remaining).\n")


def test_unsafe_fixes_without_fix_shows_them_as_available(tree, capsys):
    # ruff: without the flag unsafe fixes are "hidden" (counted in the summary); with it they
    # get the [*] marker and count as fixable, and nothing is written
    _, out, _ = run(capsys, "check", "prog.py", "--no-cache", "--output-format", "concise")
    assert out.count("[*]") == 2  # GS702's marker and the summary
    assert "[*] 1 fixable with the `--fix` option (2 hidden fixes can be enabled with the `--unsafe-fixes` option)." in out
    _, out, _ = run(capsys, "check", "prog.py", "--no-cache", "--output-format", "concise", "--unsafe-fixes")
    assert "GS701 [*]" in out and "GS401 [*]" in out and out.endswith("[*] 3 fixable with the `--fix` option.\n")
    assert (tree / "prog.py").read_text() == PROGRAM


def test_check_diff_prints_the_patch_changes_nothing_and_exits_1_only_when_there_is_one(tree, capsys):
    # ruff: `check --diff` prints the fixes as a diff, writes nothing, exits 1 when there is a diff
    code, out, err = run(capsys, "check", "prog.py", "--no-cache", "--diff")
    assert code == 1 and out.startswith("--- a/prog.py\n+++ b/prog.py\n")
    assert f"+    {AFTER}" in out and "capturable" not in out
    assert "Would fix 1 hazard." in err and (tree / "prog.py").read_text() == PROGRAM
    _, unsafe, _ = run(capsys, "check", "prog.py", "--no-cache", "--diff", "--unsafe-fixes")
    assert "capturable=True" in unsafe
    code, out, _ = run(capsys, "check", "step.py", "--no-cache", "--diff")  # nothing safe to fix
    assert code == 0 and out == ""


def test_check_diff_on_stdin_prints_the_patch_of_the_buffer(tree, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(PROGRAM.encode())))
    code, out, _ = run(capsys, "check", "--diff", "--stdin-filename", "prog.py", "-")
    assert code == 1 and out.startswith("--- a/prog.py\n+++ b/prog.py\n") and f"+    {AFTER}" in out


def test_fix_with_a_region_pattern_that_matches_nothing_writes_nothing(tree, capsys):
    code, _, err = run(capsys, "check", "prog.py", "--no-cache", "--fix", "--region", "mian")
    assert code == 2 and "matches no function" in err and (tree / "prog.py").read_text() == PROGRAM


def test_show_fixes_lists_what_was_fixed_per_file_and_code(tree, capsys):
    # ruff: `--fix --show-fixes` adds "Fixed N errors:" / "- path:" / "    1 × CODE (name)"
    _, out, _ = run(capsys, "check", "prog.py", "--no-cache", "--fix", "--unsafe-fixes", "--show-fixes")
    assert "Fixed 3 errors:\n- prog.py:\n    1 × GS401 (" in out and "    1 × GS702 (autocast-cache-enabled)" in out


def test_exit_non_zero_on_fix_exits_1_when_anything_was_fixed(tree, capsys):
    # ruff: `--exit-non-zero-on-fix` exits 1 when a fix was applied, even with nothing left
    code, _, _ = run(capsys, "check", "prog.py", "--no-cache", "--fix", "--unsafe-fixes", "--exit-non-zero-on-fix")
    assert code == 1
    code, _, _ = run(capsys, "check", "prog.py", "--no-cache", "--fix", "--exit-non-zero-on-fix")
    assert code == 0  # nothing left and nothing fixed this time


def test_fix_on_stdin_prints_the_fixed_buffer_and_reports_to_stderr(tree, capsys, monkeypatch):
    # ruff: `check --fix -` writes the fixed source to stdout and the diagnostics to stderr
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(PROGRAM.encode())))
    code, out, err = run(capsys, "check", "--fix", "--stdin-filename", "prog.py", "-")
    assert code == 1 and out == PROGRAM.replace(BEFORE, AFTER)
    assert "GS701" in err and "Found 3 errors (1 fixed, 2 remaining)." in err


# --statistics -------------------------------------------------------------------------------


def test_statistics_counts_each_code_like_ruffs_table(tree, capsys):
    # ruff: "count<TAB>code<TAB>[*] name" per code, most frequent first; `[*]` marks fixable codes
    (tree / "twice.py").write_text(HAZARD.replace("    return v", "    w = x.item()\n    return v"))
    code, out, _ = run(capsys, "check", "twice.py", "prog.py", "--no-cache", "--statistics")
    assert code == 1
    rows = out.splitlines()
    assert rows[0] == "2\tGS101\t[ ] item-sync"
    assert "1\tGS702\t[*] autocast-cache-enabled" in rows
    assert rows[-1] == "[*] fixable with `graphsafe check --fix`"
    _, data, _ = run(capsys, "check", "twice.py", "--no-cache", "--statistics", "--output-format", "json")
    assert json.loads(data)[0] == {"code": "GS101", "name": "item-sync", "count": 2, "fixable": False}


# --add-noqa ---------------------------------------------------------------------------------


def test_add_noqa_adds_each_code_once_and_keeps_the_codes_already_there(tree, capsys):
    # ruff: `--add-noqa` appends `# noqa: CODE` (merging into an existing directive) to every
    # line with a diagnostic, says "Added N noqa directives." and exits 0; a second run adds none
    (tree / "step.py").write_text(HAZARD.replace("x.item()", "x.item()  # noqa: E501").replace(
        "    return v", "    w = x.item(); torch.cuda.synchronize()\n    return v"))
    code, _, err = run(capsys, "check", "step.py", "--no-cache", "--add-noqa")
    assert code == 0 and "Added 3 noqa directives." in err
    text = (tree / "step.py").read_text()
    assert "    v = x.item()  # noqa: E501, GS101\n" in text
    assert "    torch.cuda.synchronize()  # noqa: GS106\n" in text
    assert "    w = x.item(); torch.cuda.synchronize()  # noqa: GS101, GS106\n" in text
    code, _, err = run(capsys, "check", "step.py", "--no-cache", "--add-noqa")
    assert "Added 0 noqa directives." in err and (tree / "step.py").read_text() == text
    assert run(capsys, "check", "step.py", "--no-cache")[0] == 0


def test_add_noqa_leaves_a_line_that_ends_inside_a_string_and_keeps_crlf(tree, capsys):
    source = ('import torch\r\n\r\ndef step(x: torch.Tensor):  # graphsafe: region\r\n'
              '    print(f"""{x.item()}\r\n    """)\r\n    torch.cuda.synchronize()\r\n')
    (tree / "step.py").write_bytes(source.encode())
    code, _, err = run(capsys, "check", "step.py", "--no-cache", "--add-noqa")
    assert code == 0 and "line(s) 4" in err
    assert (tree / "step.py").read_bytes() == source.replace(
        "synchronize()\r\n", "synchronize()  # noqa: GS106\r\n").encode()


def test_add_noqa_never_edits_a_noqa_written_inside_a_string(tree, capsys):
    source = HAZARD.replace("v = x.item()", 'v = x.item(); s = "# noqa: E501"')
    (tree / "step.py").write_text(source)
    code, _, err = run(capsys, "check", "step.py", "--no-cache", "--add-noqa")
    assert code == 0 and "line(s) 4" in err and "Added 1 noqa directive." in err
    assert (tree / "step.py").read_text() == source.replace("synchronize()", "synchronize()  # noqa: GS106")


# rule selection: --extend-select, --fixable, --unfixable ---------------------------------------


def test_extend_select_adds_to_the_selection_and_select_replaces_the_configs(tree, capsys):
    # ruff: `--select` replaces the configured selection, `--extend-select` adds to it
    (tree / "pyproject.toml").write_text('[tool.graphsafe]\nselect = ["GS101"]\n')
    _, out, _ = run(capsys, "check", "step.py", "--no-cache", "--output-format", "json")
    assert [d["code"] for d in json.loads(out)] == ["GS101"]
    _, out, _ = run(capsys, "check", "step.py", "--no-cache", "--output-format", "json", "--extend-select", "GS106")
    assert [d["code"] for d in json.loads(out)] == ["GS101", "GS106"]
    _, out, _ = run(capsys, "check", "step.py", "--no-cache", "--output-format", "json", "--select", "GS106")
    assert [d["code"] for d in json.loads(out)] == ["GS106"]
    code, _, err = run(capsys, "check", "step.py", "--extend-select", "GS9999")
    assert code == 2 and "GS9999" in err


def test_extend_select_in_the_config_is_read(tree, capsys):
    (tree / "pyproject.toml").write_text('[tool.graphsafe]\nextend-select = ["GS001"]\n')
    (tree / "step.py").write_text(HAZARD.replace("return v", "return v  # noqa: GS101"))
    _, out, _ = run(capsys, "check", "step.py", "--no-cache", "--output-format", "json")
    assert [d["code"] for d in json.loads(out)] == ["GS101", "GS106", "GS001"]


def test_unfixable_and_fixable_take_fixes_away(tree, capsys):
    # ruff: a rule outside `--fixable` (default ALL) or inside `--unfixable` loses its fix:
    # no [*], no fix in the JSON, and `--fix` leaves it
    _, out, _ = run(capsys, "check", "prog.py", "--no-cache", "--output-format", "json", "--unfixable", "GS702")
    assert [d["fix"] for d in json.loads(out) if d["code"] == "GS702"] == [None]
    code, _, _ = run(capsys, "check", "prog.py", "--no-cache", "--fix", "--fixable", "GS701", "--unsafe-fixes")
    fixed = (tree / "prog.py").read_text()
    assert code == 1 and "capturable=True" in fixed and AFTER not in fixed and "copy_" not in fixed


# files: --exclude, --force-exclude, --respect-gitignore, --show-files ---------------------------


def test_exclude_replaces_the_default_excludes(tree, capsys):
    # ruff: `--exclude` overrides the default exclusions (`.venv`, `build`, ...); `--extend-exclude` adds
    for name in ("build/gen.py", "legacy/old.py"):
        (tree / name).parent.mkdir()
        (tree / name).write_text(HAZARD)
    _, out, _ = run(capsys, "check", ".", "--show-files")
    assert "build" not in out and "legacy/old.py" in out
    _, out, _ = run(capsys, "check", ".", "--show-files", "--exclude", "legacy")
    assert "build/gen.py" in out and "legacy" not in out


def test_force_exclude_skips_excluded_files_named_on_the_command_line(tree, capsys, monkeypatch):
    # ruff: paths named explicitly are checked even when excluded, unless `--force-exclude`
    # (what pre-commit needs: it passes every changed file)
    (tree / "build").mkdir()
    (tree / "build" / "gen.py").write_text(HAZARD)
    _, out, _ = run(capsys, "check", "build/gen.py", "--show-files")
    assert out.endswith("build/gen.py\n")
    _, out, _ = run(capsys, "check", "build/gen.py", "step.py", "--show-files", "--force-exclude")
    assert "build" not in out and out.endswith("step.py\n")
    (tree / "pyproject.toml").write_text('[tool.graphsafe]\nforce-exclude = true\nextend-exclude = ["step.py"]\n')
    code, out, _ = run(capsys, "check", "step.py", "--no-cache", "--exit-zero")
    assert "GS101" not in out
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(HAZARD.encode())))
    code, out, _ = run(capsys, "check", "--stdin-filename", "step.py", "-", "--no-cache")
    assert code == 0 and out == ""  # an excluded buffer is not reported either


def test_no_respect_gitignore_checks_ignored_files(tree, capsys):
    # ruff: .gitignore is respected by default; `--no-respect-gitignore` turns it off
    (tree / ".git").mkdir()
    (tree / ".gitignore").write_text("ignored.py\n")
    (tree / "ignored.py").write_text(HAZARD)
    _, out, _ = run(capsys, "check", ".", "--show-files")
    assert "ignored.py" not in out
    _, out, _ = run(capsys, "check", ".", "--show-files", "--no-respect-gitignore")
    assert "ignored.py" in out


def test_show_files_lists_the_files_as_absolute_paths_and_checks_nothing(tree, capsys):
    # ruff: `--show-files` prints each file it would check and exits 0
    code, out, _ = run(capsys, "check", ".", "--show-files")
    assert code == 0 and out.splitlines() == [str(tree / "prog.py"), str(tree / "step.py")]


def test_show_settings_prints_the_resolved_settings(tree, capsys):
    # ruff: `--show-settings` prints the settings resolved for the first file and exits 0
    (tree / "pyproject.toml").write_text('[tool.graphsafe]\nignore = ["GS106"]\n')
    code, out, _ = run(capsys, "check", ".", "--show-settings", "--extend-select", "GS001")
    assert code == 0 and out.startswith(f"Resolved settings for: {tree / 'prog.py'}\n")
    assert 'ignore            = ["GS106"]' in out and 'extend-select     = ["GS001"]' in out
    assert '"GS001"' in out.split("enabled rules")[1].splitlines()[0]


# --color ------------------------------------------------------------------------------------


def test_color_always_colours_and_never_or_a_pipe_does_not(tree, capsys, monkeypatch):
    # ruff: `--color auto` (default) colours a terminal only; `always` / `never` force it
    _, out, _ = run(capsys, "check", "step.py", "--no-cache", "--color", "always")
    assert "\x1b[1;31mGS101\x1b[0m" in out
    assert "\x1b[" not in run(capsys, "check", "step.py", "--no-cache")[1]
    assert "\x1b[" not in run(capsys, "check", "step.py", "--no-cache", "--color", "never")[1]
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in run(capsys, "check", "step.py", "--no-cache")[1]
    assert "\x1b[" not in run(capsys, "check", "step.py", "--no-cache", "--output-format", "json")[1]


# rules --------------------------------------------------------------------------------------


def test_rule_all_prints_every_rules_documentation(capsys):
    # ruff: `rule --all` prints every rule's explanation; `--output-format json` as a list
    from graphsafe.rules import ALL_RULES

    code, out, _ = run(capsys, "rule", "--all")
    assert code == 0 and all(f"# {r.code} {r.name}\n" in out for r in ALL_RULES)
    _, out, _ = run(capsys, "rule", "--all", "--output-format", "json")
    assert [r["code"] for r in json.loads(out)] == [r.code for r in ALL_RULES]
    code, _, err = run(capsys, "rule")
    assert code == 2 and "--all" in err


def test_rules_are_listed_in_aligned_columns(capsys):
    _, out, _ = run(capsys, "rules")
    rows = [re.match(r"^GS\d{3}  \S+ +(error|warning) +\S", row) for row in out.splitlines()]
    assert all(rows) and len({m.start(1) for m in rows}) == 1  # the severity column starts at one place
    assert len({m.end() for m in rows}) == 1  # and so does the summary


def test_fix_options_have_help_texts(capsys):
    with pytest.raises(SystemExit):
        run(capsys, "fix", "--help")
    lines = capsys.readouterr().out.splitlines()
    for flag in ("--select CODES", "--ignore CODES", "--region PATTERN", "--config PYPROJECT"):
        at = next(i for i, line in enumerate(lines) if line.strip().startswith(flag))
        description = lines[at].strip()[len(flag):].strip() or lines[at + 1].strip()
        assert description and not description.startswith("-"), flag


def test_add_noqa_refuses_to_be_combined_with_fix(tree, capsys):
    # ruff refuses `--add-noqa` together with `--fix` too
    code, _, err = run(capsys, "check", "step.py", "--add-noqa", "--fix")
    assert code == 2 and "--add-noqa cannot be used with --fix" in err


# --watch ------------------------------------------------------------------------------------


def test_watch_checks_again_when_a_file_changes(tree):
    # ruff: `--watch` re-runs the check on every change to a checked file
    from graphsafe.watch import watch

    runs, edits = [], []

    def check() -> int:
        runs.append((tree / "step.py").read_text())
        return len(runs)

    def sleep(_seconds: float) -> None:  # the first poll sees nothing new; then the file is edited
        edits.append(1)
        if len(edits) == 2:
            (tree / "step.py").write_text(HAZARD + "# edited, one byte longer at least\n")

    out = io.StringIO()
    assert watch(check, lambda: [tree / "step.py"], out, runs=2, sleep=sleep) == 2
    assert runs == [HAZARD, HAZARD + "# edited, one byte longer at least\n"] and len(edits) == 2
    assert "Starting linter in watch mode" in out.getvalue() and "File change detected" in out.getvalue()


def test_watch_ends_quietly_on_ctrl_c(tree):
    from graphsafe.watch import watch

    def interrupted(_seconds: float) -> None:
        raise KeyboardInterrupt

    assert watch(lambda: 1, lambda: [tree / "step.py"], io.StringIO(), sleep=interrupted) == 0


def test_check_watch_runs_the_check_through_the_watch_loop(tree, capsys, monkeypatch):
    import graphsafe.watch as watching

    real = watching.watch
    monkeypatch.setattr(watching, "watch", lambda check, files, out: real(check, files, out, runs=1))
    code, out, _ = run(capsys, "check", "step.py", "--no-cache", "--watch", "--output-format", "concise")
    assert code == 1 and "Starting linter in watch mode" in out and "step.py:4:9: GS101" in out


def test_watch_reads_the_config_again_and_survives_a_mistake_in_it(tree, capsys, monkeypatch):
    import graphsafe.watch as watching

    (tree / "pyproject.toml").write_text('[tool.graphsafe]\nignore = ["GS106"]\n')
    real = watching.watch
    calls = []

    def two_runs(check, files, out):
        def run_twice() -> int:
            calls.append(check())
            (tree / "pyproject.toml").write_text("[tool.graphsafe]\nignore = 3\n")  # broken for the next run
            return calls[-1]

        real(run_twice, files, out, runs=1)
        return check()

    monkeypatch.setattr(watching, "watch", two_runs)
    code, out, err = run(capsys, "check", "step.py", "--no-cache", "--watch", "--output-format", "concise")
    assert calls == [1] and "GS106" not in out  # the first run read the config
    assert code == 2 and "ignore must be a list of strings" in err  # the second said what is wrong
