"""One diagnostic per hazard (the uses of one per-step value in one function), and call chains
that name the line of each call, in text, SARIF and the editor."""

from __future__ import annotations

import json
import textwrap

from lsprotocol import types

from graphsafe.analyzer.grouping import each_use, group_uses
from graphsafe.lsp import actions, convert
from graphsafe.report.formats import format_sarif, format_text
from tests.helpers import diagnostics

SAMPLER = textwrap.dedent("""\
    import torch


    class Sampler:
        def step(self, x: torch.Tensor, s_churn: float, t: float):  # graphsafe: region
            a = x * s_churn
            b = x + s_churn
            c = (x - s_churn) * t
            return self.noise(a + b + c, t)

        def noise(self, x: torch.Tensor, t: float):
            y = x * t
            return y + t
    """)


def _gs301(source: str = SAMPLER):
    return [d for d in diagnostics(source, "sampler.py") if d.code == "GS301"]


def test_the_uses_of_one_per_step_value_in_one_function_are_one_diagnostic_at_the_first():
    found = _gs301()
    assert [(d.start.line, d.message.split(" is ")[0]) for d in found] == [
        (6, "parameter `s_churn`"), (8, "parameter `t`"), (12, "parameter `t`")]
    churn = found[0]
    assert churn.message.endswith("(also used at lines 7, 8)")
    assert [use.start.line for use in churn.also] == [7, 8]


def test_the_same_value_in_another_function_is_another_hazard():
    step_t, noise_t = _gs301()[1:]
    assert step_t.also == () and "also used" not in step_t.message
    assert [use.start.line for use in noise_t.also] == [13] and noise_t.message.endswith("(also used at line 13)")


def test_each_use_gives_back_every_use_as_reported_alone():
    grouped = _gs301()
    alone = each_use(grouped)
    assert [d.start.line for d in alone] == [6, 7, 8, 8, 12, 13]
    assert all(not d.also and "also used" not in d.message for d in alone)
    assert group_uses(alone) == grouped


def test_noqa_on_one_use_leaves_the_others_grouped():
    source = SAMPLER.replace("b = x + s_churn", "b = x + s_churn  # noqa: GS301")
    churn = _gs301(source)[0]
    assert churn.start.line == 6 and [u.start.line for u in churn.also] == [8]
    assert churn.message.endswith("(also used at line 8)")


def test_noqa_on_the_first_use_moves_the_group_to_the_next():
    source = SAMPLER.replace("a = x * s_churn", "a = x * s_churn  # noqa: GS301")
    churn = _gs301(source)[0]
    assert churn.start.line == 7 and [u.start.line for u in churn.also] == [8]


def test_text_prints_a_group_and_its_chain_once_with_the_call_lines():
    text = format_text(diagnostics(SAMPLER, "sampler.py"))
    assert text.count("in capture region") == 3  # one per hazard, not one per use (six)
    assert "call chain: Sampler.step → Sampler.noise (called at sampler.py:9)" in text
    assert "Found 3 errors." in text


def test_sarif_relates_the_region_each_call_and_the_other_uses():
    log = json.loads(format_sarif(diagnostics(SAMPLER, "sampler.py")))
    results = log["runs"][0]["results"]
    churn, noise_t = results[0], results[2]
    assert [(r["message"]["text"], r["physicalLocation"]["region"]["startLine"]) for r in churn["relatedLocations"]] == [
        ("capture region: Sampler.step", 5), ("also used here", 7), ("also used here", 8)]
    called = [r for r in noise_t["relatedLocations"] if r["message"]["text"].startswith("called from here")]
    assert [(r["message"]["text"], r["physicalLocation"]["region"]["startLine"]) for r in called] == [
        ("called from here: Sampler.step calls Sampler.noise", 9)]
    assert [r["id"] for r in noise_t["relatedLocations"]] == [0, 1, 2]


def test_a_chain_across_files_names_the_calling_file(tmp_path):
    from tests.helpers import project_diagnostics

    found = project_diagnostics(tmp_path, {
        "train.py": "import torch\nfrom helpers import sync\n\n\ndef step(x: torch.Tensor):  # graphsafe: region\n"
                    "    y = x * 2\n    return sync(y)\n",
        "helpers.py": "def sync(t):\n    return t.item()\n",
    })
    (item,) = [d for d in found if d.code == "GS101"]
    assert item.chain == ("step", "sync")
    assert [(site.path.rpartition("/")[2], site.line) for site in item.call_sites] == [("train.py", 7)]


def _lsp(diagnostic, lines):
    return convert.to_diagnostic(diagnostic, lines, convert.UTF16, lambda path: None)


def test_the_editor_shows_other_uses_and_call_sites_as_related_information():
    lines = convert.split_lines(SAMPLER)
    churn, _, noise_t = _gs301()
    related = [(r.message, r.location.range.start.line) for r in _lsp(churn, lines).related_information]
    assert related[1:] == [("also used here", 6), ("also used here", 7)]  # 0-based lines
    related = [(r.message, r.location.range.start.line) for r in _lsp(noise_t, lines).related_information]
    assert ("called from here: Sampler.step calls Sampler.noise", 8) in related


def test_the_editor_offers_a_noqa_for_a_later_use_under_the_cursor():
    lines = convert.split_lines(SAMPLER)
    cursor = types.Position(line=6, character=16)  # `s_churn` in `b = x + s_churn` (line 7)
    found = actions.diagnostic_actions("file:///s.py", 1, SAMPLER, lines, _gs301(), types.Range(start=cursor, end=cursor),
                                       convert.UTF16)
    titles = [(a.title, a.edit.changes["file:///s.py"][0].range.start.line) for a in found]
    assert titles == [("Disable GS301 for this line", 6)]


# with main's GS001, --add-noqa and output formats ---------------------------------------------


def test_a_noqa_on_a_later_use_of_a_grouped_hazard_is_used_not_flagged_by_gs001():
    source = SAMPLER.replace("b = x + s_churn", "b = x + s_churn  # noqa: GS301")
    found = diagnostics(source, "sampler.py", extend_select=["GS001"])
    assert "GS001" not in [d.code for d in found]
    assert [u.start.line for u in found[0].also] == [8]
    stale = diagnostics(source.replace("b = x + s_churn", "b = x + 1.0"), "sampler.py", extend_select=["GS001"])
    assert [d.start.line for d in stale if d.code == "GS001"] == [7]


def test_add_noqa_comments_every_use_of_a_grouped_hazard_so_a_second_check_is_clean(tmp_path):
    from graphsafe.noqa_writer import add_noqa

    path = tmp_path / "sampler.py"
    path.write_text(SAMPLER)
    (outcome,) = add_noqa(diagnostics(SAMPLER, str(path)))
    assert outcome.error is None and outcome.added == 5  # lines 6, 7, 8, 12, 13
    text = path.read_text()
    assert [n for n, line in enumerate(text.splitlines(), 1) if "# noqa: GS301" in line] == [6, 7, 8, 12, 13]
    assert [d.code for d in diagnostics(text, str(path), extend_select=["GS001"])] == []


def test_full_json_lines_junit_and_gitlab_show_the_other_uses_and_the_call_lines():
    from xml.etree import ElementTree

    from graphsafe.report.formats import TextOptions, format_gitlab, format_json_lines, format_junit

    found = diagnostics(SAMPLER, "sampler.py")
    chain = "call chain: Sampler.step → Sampler.noise (called at sampler.py:9)"
    full = format_text(found, options=TextOptions(show_source=True, sources=lambda path: SAMPLER.splitlines()))
    assert f"  = note: {chain}" in full and "(also used at lines 7, 8)" in full
    objects = [json.loads(line) for line in format_json_lines(found).splitlines()]
    assert [u["location"]["row"] for u in objects[0]["also"]] == [7, 8]
    assert objects[2]["call_sites"] == [{"filename": "sampler.py", "row": 9}]
    failures = [f.text for f in ElementTree.fromstring(format_junit(found).split("\n", 1)[1]).iter("failure")]
    assert "(also used at lines 7, 8)" in failures[0] and chain in failures[2]
    issues = json.loads(format_gitlab(found))
    assert [o["positions"]["begin"]["line"] for o in issues[0]["other_locations"]] == [7, 8]
    assert "(called at sampler.py:9)" in issues[2]["description"]


def test_a_gitlab_fingerprint_stays_when_a_group_loses_a_use():
    from graphsafe.report.formats import format_gitlab

    before = json.loads(format_gitlab(diagnostics(SAMPLER, "sampler.py")))
    fewer = SAMPLER.replace("b = x + s_churn", "b = x + s_churn  # noqa: GS301")
    after = json.loads(format_gitlab(diagnostics(fewer, "sampler.py")))
    assert before[0]["description"] != after[0]["description"]  # the message lists the other lines
    assert before[0]["fingerprint"] == after[0]["fingerprint"]
