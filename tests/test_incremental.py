"""The incremental parser must give exactly libcst.parse_module's module, and the analysis
built on it exactly the from-scratch analysis, after any sequence of edits."""

from __future__ import annotations

import random
from pathlib import Path

import libcst as cst
import pytest

from graphsafe.analyzer.incremental import IncrementalParser
from graphsafe.analyzer.parsing import analyze_text
from graphsafe.rules import CHECK_RULES

pytestmark = pytest.mark.slow  # random edit sequences re-analysed in full (about a minute of CPU)

ROOT = Path(__file__).resolve().parent.parent

# Comments at every indentation between and after blocks, decorators, a header, a footer,
# nested defs, semicolons, continuation lines: the places where libcst decides who owns
# which comment line.
TRICKY = '''# header comment
"""Docstring."""

import torch  # trailing
  # odd indent
x = 1; y = 2

@decorator
class A:
    # leading
    def f(self, a,
          b):
        if a:
            return b
        # deep footer
      # odd footer
    # block footer

    # between
    @staticmethod
    def g():
        z = [
            1,
        ]
        return \\
            z
# col 0 inside class
    async def h(self):
        with torch.cuda.graph(g):
            self.f(1, 2).item()
    # class footer


def k():
    pass
# module footer
'''

ALPHABET = [" ", " ", "\n", "\n", "\t", "#", ":", "(", ")", "[", "'", '"', '"""', "\\", "x", "pass", "def q():\n    ",
            "    ", "if 1:\n", "1", "=", ".item()", "\r\n"]


def _random_edit(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    kind = rng.random()
    if kind < 0.35:  # insert a few characters anywhere
        at = rng.randint(0, len(text))
        return text[:at] + rng.choice(ALPHABET) + text[at:]
    if kind < 0.6:  # delete a few characters
        at = rng.randint(0, max(len(text) - 1, 0))
        return text[:at] + text[at + rng.randint(1, 3):]
    if kind < 0.75:  # delete a line
        del lines[rng.randrange(len(lines))]
        return "\n".join(lines)
    if kind < 0.9:  # duplicate a line elsewhere
        lines.insert(rng.randint(0, len(lines)), rng.choice(lines))
        return "\n".join(lines)
    at = rng.randint(0, len(lines))  # type a statement into a body
    lines.insert(at, rng.choice(["        y = 3", "    pass", "z = f(x)", "    # note", "", "   "]))
    return "\n".join(lines)


def _full(text: str):
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError:
        return None


def _incremental(parser: IncrementalParser, text: str):
    try:
        return parser.parse(text)
    except cst.ParserSyntaxError:
        return None


def _sources() -> list[tuple[str, str]]:
    corpus = sorted((ROOT / "corpus").glob("*/*.py"))[:6]
    variants = [("tricky", TRICKY), ("crlf", TRICKY.replace("\n", "\r\n")), ("tabs", TRICKY.replace("    ", "\t")),
                ("two spaces", TRICKY.replace("    ", "  ")), ("no blocks", "import os\n# c\nx = 1\n\ny = [\n  2]\n")]
    return variants + [(p.name, p.read_text(encoding="utf-8")) for p in corpus]


@pytest.mark.parametrize("seed", range(6))
def test_random_edits_match_a_full_parse(seed: int) -> None:
    rng = random.Random(seed)
    reused = 0
    for name, original in _sources():
        parser = IncrementalParser()
        text = original
        parser.parse(text)
        for step in range(60):
            text = _random_edit(rng, text) if rng.random() < 0.8 else original  # back to good text at times
            expected = _full(text)
            got = _incremental(parser, text)
            context = f"{name}, seed {seed}, step {step}:\n{text}"
            if expected is None:
                assert got is None, context
                continue
            assert got is not None, context
            # libcst itself does not round-trip a few odd endings ("\n\n   " at EOF loses a line)
            assert got.code == expected.code and (got.code == text or expected.code != text), context
            assert got.deep_equals(expected), context
            assert (got.default_indent, got.default_newline, got.has_trailing_newline, got.encoding) == (
                expected.default_indent, expected.default_newline, expected.has_trailing_newline, expected.encoding), context
            reused += parser.reparsed
    assert reused > 100  # the incremental path was taken, not only the fallback


def _diagnostics(facts):
    return [(u.key, u.line, u.hits, u.marks, u.calls) for u in facts.units], facts.always, facts.noqa, facts.errors, \
        facts.region_refs, facts.classes


def test_analysis_of_an_incremental_module_equals_a_fresh_one() -> None:
    rng = random.Random(7)
    for name, original in _sources():
        parser = IncrementalParser()
        text = original
        for step in range(40):
            text = _random_edit(rng, text) if step and rng.random() < 0.85 else original
            fresh = analyze_text(name, "m", False, text, CHECK_RULES)
            incremental = analyze_text(name, "m", False, text, CHECK_RULES, parse=parser.parse)
            assert _diagnostics(incremental) == _diagnostics(fresh), f"{name}, step {step}:\n{text}"


def test_edits_inside_a_method_reparse_only_that_method() -> None:
    text = TRICKY
    parser = IncrementalParser()
    before = parser.parse(text)
    edited = text.replace("return b", "return b + 1")
    after = parser.parse(edited)
    assert parser.reparsed and after.code == edited
    assert after.body[0] is before.body[0]  # the import line is the same node
    old_class, new_class = before.body[3], after.body[3]
    assert new_class is not old_class and new_class.body.body[1] is old_class.body.body[1]  # g() reused


def _typing_edit(rng: random.Random, text: str) -> str:
    """Edits that keep the call graph: a trailing space, a character typed into a bound name."""
    lines = text.split("\n")
    k = rng.randrange(len(lines))
    if rng.random() < 0.5:
        lines[k] += " "
    else:
        import re

        found = re.match(r"^(\s+[A-Za-z_]\w*)(\s*=[^=].*)$", lines[k])
        if found:
            lines[k] = found.group(1) + rng.choice("xyz_") + found.group(2)
    return "\n".join(lines)


REDEFINED = """import torch


def step(x: torch.Tensor):  # graphsafe: region
    y = x * 2
    return y.item()


def step(x: torch.Tensor):  # graphsafe: region
    y = x * 3
    return y.cpu()
"""


def test_reused_project_step_gives_the_full_diagnostics(tmp_path: Path) -> None:
    from graphsafe.analyzer.discovery import module_names
    from graphsafe.analyzer.engine import ProjectCache, check_source, collect_facts
    from graphsafe.config import Settings

    folder = ROOT / "corpus" / "decode_loop"
    files = sorted(folder.glob("*.py"))
    redefined = tmp_path / "redefined.py"  # one name defined twice: the first definition is the unit
    redefined.write_text(REDEFINED, encoding="utf-8")
    files.append(redefined)
    facts, _ = collect_facts(files, folder, jobs=1)
    names = module_names(files, Path.cwd())
    settings = Settings()
    rng = random.Random(11)
    reused = 0
    for target in files:
        others = [f for f, p in zip(facts, files) if p != target]
        naming = names[target]
        original = target.read_text(encoding="utf-8")
        parser, cache = IncrementalParser(), ProjectCache()
        text, in_regions = original, 0
        for step in range(40):
            roll = rng.random()
            text = original if roll < 0.1 else _random_edit(rng, text) if roll < 0.3 else _typing_edit(rng, text)
            full = check_source(text, str(target), settings, others, naming)
            fast = check_source(text, str(target), settings, others, naming, parse=parser.parse, cache=cache)
            assert fast.diagnostics == full.diagnostics, f"{target.name}, step {step}:\n{text}"
            assert fast.regions == full.regions
            reused += cache.reused
            in_regions += sum(d.region is not None for d in fast.diagnostics)
        assert in_regions or target.name in ("run.py", "capture.py", "redefined.py")  # chains were compared
    assert reused > 40  # the reuse path was taken
