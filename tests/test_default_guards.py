"""Code behind a parameter whose default turns it off (`if legacy is not None: warnings.warn(...)`)
is a hazard only where a call in reach passes that parameter: in project code and in libraries."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from graphsafe.analyzer import default_guards, libraries
from graphsafe.analyzer.engine import check_paths
from graphsafe.config import Settings

LIB = """\
import warnings
import torch


def scale(x, factor=2.0, legacy=None):
    if legacy is not None:
        warnings.warn("legacy is deprecated")
        x = x * legacy
    return x * factor


def checked(x, strict=False):
    if not strict:
        return x
    if x.abs().max().item() > 1e3:
        raise ValueError("too large")
    return x
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))


def _codes(tmp_path: Path, project: str, library: str | None = None, monkeypatch=None) -> set[tuple[int, str]]:
    root = tmp_path / "proj"
    _write(root, {"step.py": project})
    if library is not None:
        site = tmp_path / "site"
        _write(site, {"fakelib/__init__.py": library,
                      "fakelib-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: fakelib\nVersion: 1.0\n\nbody\n"})
        monkeypatch.setenv(libraries.LIBRARY_PATH_ENV, str(site))
    result = check_paths([root], Settings(root=root, regions=("step.py::step",)), use_cache=False, jobs=1)
    return {(d.start.line, d.code) for d in result.diagnostics}


def test_a_library_warning_behind_an_unpassed_default_is_not_reported(tmp_path, monkeypatch):
    project = "from fakelib import scale\n\ndef step(x):\n    return scale(x, 3.0)\n"
    assert _codes(tmp_path, project, LIB, monkeypatch) == set()


@pytest.mark.parametrize("call", ["scale(x, 3.0, 2.0)", "scale(x, legacy=2.0)", "scale(x, *args)", "scale(x, **kw)"])
def test_a_library_warning_is_reported_where_a_call_passes_the_parameter(tmp_path, monkeypatch, call):
    project = f"from fakelib import scale\n\ndef step(x, *args, **kw):\n    return {call}\n"
    assert _codes(tmp_path, project, LIB, monkeypatch) == {(4, "GS501")}


def test_a_sync_after_a_guard_clause_counts_only_where_the_parameter_is_passed(tmp_path, monkeypatch):
    without = "from fakelib import checked\n\ndef step(x):\n    return checked(x)\n"
    assert _codes(tmp_path, without, LIB, monkeypatch) == set()
    given = "from fakelib import checked\n\ndef step(x):\n    return checked(x, strict=True)\n"
    assert (4, "GS101") in _codes(tmp_path / "given", given, LIB, monkeypatch)


PROJECT = """\
def log_step(x, verbose=False, every=0):
    if verbose:
        print("step")
    if not every:
        return x
    print("every", every)
    return x


def step(x):
    return log_step(x)
"""


def test_project_code_behind_an_unpassed_default_is_not_reported(tmp_path):
    assert _codes(tmp_path, PROJECT) == set()


def test_project_code_is_reported_once_a_reached_call_passes_the_parameter(tmp_path):
    passed = PROJECT.replace("return log_step(x)", "return log_step(x, True)")
    assert _codes(tmp_path, passed) == {(3, "GS501")}
    both = PROJECT.replace("return log_step(x)", "return log_step(x, every=5)")
    assert _codes(tmp_path / "both", both) == {(6, "GS501")}


def test_a_call_outside_the_regions_reach_does_not_count(tmp_path):
    elsewhere = PROJECT + "\n\ndef main(x):\n    return log_step(x, True)\n"
    assert _codes(tmp_path, elsewhere) == set()


def test_a_region_roots_own_parameters_may_be_passed_by_whoever_captures_it(tmp_path):
    root = "def step(x, verbose=False):\n    if verbose:\n        print(x.shape)\n    return x\n"
    assert _codes(tmp_path, root) == {(3, "GS501")}


def test_a_parameter_the_function_rebinds_guards_nothing(tmp_path):
    rebinding = PROJECT.replace("    if verbose:\n", "    verbose = verbose or x.dim() > 3\n    if verbose:\n")
    assert (4, "GS501") in _codes(tmp_path, rebinding)


def _guards(source: str) -> dict[str, tuple[str, ...]]:
    """First line of each guarded statement of the module's first function → what it needs."""
    module = cst.parse_module(textwrap.dedent(source))
    function = module.body[0]
    found = default_guards.guarded_statements(function, None)
    return {module.code_for_node(n).strip().splitlines()[0]: found[id(n)] for n in _statements(function) if id(n) in found}


def _statements(node: cst.CSTNode):
    for child in node.children:
        if isinstance(child, cst.BaseStatement):
            yield child
        yield from _statements(child)


def test_which_defaults_and_tests_guard_which_statements():
    found = _guards("""\
        def f(x, a=None, b=False, c=0, d=1.0, e=None, f=None, g=None):
            if a is not None and x:
                s1()
            if b is True:
                s2()
            if d:
                s3()
            if e is None:
                s4()
            else:
                s5()
            if not f:
                pass
            elif x:
                s6()
            if g is not None:
                pass
            else:
                s7()
            if c is None:
                s8()
            return x
        """)
    # (`elif x:` prints as `if x:`; `pass` is the one under `if g is not None:`)
    # `~P`: runs only where P keeps its default
    assert found == {"s1()": ("a=None",), "s2()": ("b=False",), "s4()": ("~e=None",), "s5()": ("e=None",),
                     "if x:": ("f=None",), "s6()": ("f=None",), "pass": ("g=None",), "s7()": ("~g=None",),
                     "s8()": ("c=0",)}


def test_a_guard_clause_leaves_the_rest_of_the_block_to_callers_that_pass_the_parameter():
    found = _guards("""\
        def f(x, hook=None):
            y = x + 1
            if hook is None:
                return y
            hook(y)
            return y
        """)
    assert found == {"hook(y)": ("hook=None",), "return y": ("hook=None",)}


HANDED_ON = """\
import warnings


def inner(x, hook=None):
    if hook is not None:
        warnings.warn("hooks are slow")
    return x


def outer(x, hook=None):
    return inner(x, hook=hook)


def step(x):
    return CALL
"""


@pytest.mark.parametrize("call, reported", [
    ("outer(x)", False),               # outer hands on its own default
    ("outer(x, None)", False),         # the default itself, passed
    ("inner(x, None) + outer(x)", False),
    ("outer(x, hook=print)", True),
    ("outer(x, False)", True),         # not the default: `False is not None`
])
def test_a_parameter_handed_on_counts_only_where_the_outer_callers_pass_it(tmp_path, call, reported):
    assert _codes(tmp_path, HANDED_ON.replace("CALL", call)) == ({(6, "GS501")} if reported else set())


def test_a_none_default_narrowed_to_a_part_of_itself_still_guards():
    found = _guards("""\
        def f(x, generator=None, flag=False):
            if isinstance(generator, list):
                generator = generator[0]
            if generator is not None:
                draw(generator)
            flag = flag.real
            if flag:
                log()
        """)
    assert found == {"draw(generator)": ("generator=None",)}  # `False.real` runs: flag guards nothing


def test_a_false_module_constant_guards_its_code_everywhere():
    module = cst.parse_module(textwrap.dedent("""\
        _debug = False
        VERBOSE = None
        LEVEL = 0
        LEVEL = 1

        def f(x):
            if _debug:
                print(x)
            if VERBOSE is not None:
                log(x)
            if LEVEL:
                warn(x)
            return x
        """))
    function = module.body[4]
    constants = default_guards.module_constants(module)
    assert constants == {"_debug": False, "VERBOSE": None}  # LEVEL is bound twice
    found = default_guards.guarded_statements(function, None, {}, constants)
    assert sorted(found.values()) == [("!VERBOSE",), ("!_debug",)]


def test_a_module_constant_set_by_a_function_guards_nothing():
    module = cst.parse_module("_debug = False\n\ndef on():\n    global _debug\n    _debug = True\n")
    assert default_guards.module_constants(module) == {}


def test_the_code_after_a_cache_hits_early_return_runs_only_on_a_miss():
    found = _guards("""\
        def backend(x):
            found = _cache.get(type(x))
            if found is not None:
                return found
            print("loading")
            _cache[type(x)] = made = make(x)
            return made
        """)
    assert found == {'print("loading")': ("!cache-hit",), "_cache[type(x)] = made = make(x)": ("!cache-hit",),
                     "return made": ("!cache-hit",)}
    keyed = _guards("""\
        def table(self, n):
            if n in self._tables:
                return self._tables[n]
            self._tables[n] = t = build(n)
            return t
        """)
    assert set(keyed) == {"self._tables[n] = t = build(n)", "return t"}


def test_library_debug_prints_and_cache_misses_are_not_reported(tmp_path, monkeypatch):
    library = """\
        _backends = {}
        _debug_importing = False

        def get_backend(x):
            found = _backends.get(type(x))
            if found is not None:
                return found
            if _debug_importing:
                print("testing backends")
            _backends[type(x)] = made = object()
            return made

        def rearrange(x, pattern):
            get_backend(x)
            return x.reshape(-1)
        """
    project = "from fakelib import rearrange\n\ndef step(x):\n    return rearrange(x, 'b n -> (b n)')\n"
    assert _codes(tmp_path, project, textwrap.dedent(library), monkeypatch) == set()


def test_the_body_of_an_lru_cached_function_runs_only_on_a_miss():
    found = _guards("""\
        @functools.lru_cache(maxsize=256)
        def parse(pattern):
            warnings.warn("deprecated axis name")
            return pattern.split()
        """)
    assert found == {'warnings.warn("deprecated axis name")': ("!cache-hit",), "return pattern.split()": ("!cache-hit",)}


def test_what_a_cached_function_calls_is_not_reached_from_it(tmp_path, monkeypatch):
    library = """\
        import functools
        import warnings

        def check_name(name):
            if name.startswith("_"):
                warnings.warn("odd axis name")
            return name

        @functools.lru_cache(maxsize=128)
        def parse(pattern):
            return [check_name(n) for n in pattern.split()]

        def rearrange(x, pattern):
            parse(pattern)
            return x.reshape(-1)

        def checked(x, pattern):
            check_name(pattern)
            return x
        """
    cached = "from fakelib import rearrange\n\ndef step(x):\n    return rearrange(x, 'b n')\n"
    assert _codes(tmp_path, cached, textwrap.dedent(library), monkeypatch) == set()
    direct = "from fakelib import checked\n\ndef step(x):\n    return checked(x, 'b n')\n"
    assert _codes(tmp_path / "direct", direct, textwrap.dedent(library), monkeypatch) == {(4, "GS501")}


def test_a_cache_keyed_by_identity_misses_every_eager_step_and_guards_nothing():
    found = _guards("""\
        def pos(self, feat):
            cached = self._cache.get(feat.data_ptr())
            if cached is not None:
                return cached
            self._cache[feat.data_ptr()] = made = build(feat)
            return made
        """)
    assert found == {}


KEEPS_DEFAULT = """\
def exists(v):
    return v is not None


def lens_to_mask(lens, max_len=None):
    if not exists(max_len):
        max_len = lens.amax().item()
    return max_len


def step(x, lens):
    return CALL
"""


@pytest.mark.parametrize("call, reported", [
    ("lens_to_mask(lens, x.shape[1])", False),   # every reached call passes max_len
    ("lens_to_mask(lens, max_len=8)", False),
    ("lens_to_mask(lens)", True),                 # the default is in force: the sync runs
    ("lens_to_mask(lens, None)", True),
    ("lens_to_mask(lens, 8) + lens_to_mask(lens)", True),
])
def test_code_that_runs_with_the_default_counts_where_a_reached_call_leaves_it(tmp_path, call, reported):
    found = _codes(tmp_path, KEEPS_DEFAULT.replace("CALL", call))
    assert ((7, "GS101") in found) == reported


def test_after_a_default_is_filled_in_the_parameter_guards_nothing():
    found = _guards("""\
        def f(x, scale=None):
            if scale is None:
                scale = x.abs().max().item()
            if scale is not None:
                log(scale)
            return x / scale
        """)
    assert found == {"scale = x.abs().max().item()": ("~scale=None",)}


def test_a_value_not_known_here_may_be_the_default(tmp_path):
    project = """\
def gather(x, use_other=False):
    if use_other:
        print("other")
    else:
        print("usual")
    return x


class Loss:
    def __init__(self, use_other=False):
        self.use_other = use_other

    def step(self, x):
        return gather(x, use_other=self.use_other)
"""
    root = tmp_path / "proj"
    _write(root, {"step.py": project})
    result = check_paths([root], Settings(root=root, regions=("step.py::Loss.step",)), use_cache=False, jobs=1)
    assert {(d.start.line, d.code) for d in result.diagnostics} == {(3, "GS501"), (5, "GS501")}


@pytest.mark.parametrize("argument, reported", [("n", True), ("x.shape[1]", False), ("8", False), ("x", False)])
def test_a_value_that_cannot_be_none_keeps_code_for_the_default_from_running(tmp_path, argument, reported):
    project = """\
import torch


def pad(x, n=None):
    if n is None:
        n = x.sum().item()
    return x[:n]


def step(x: torch.Tensor, n):
    return pad(x, ARG)
""".replace("ARG", argument)
    assert ((6, "GS101") in _codes(tmp_path, project)) == reported
