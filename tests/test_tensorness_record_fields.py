"""Tensor-ness of the fields of small result objects: a namedtuple (or a plain class that keeps
its constructor's arguments) built from tensors, returned by a helper or built in place, and
tested later (`if tree.turning or tree.diverging:`). A field is a tensor where every call that
builds the object passes one there (analyzer/records.py)."""

from __future__ import annotations

import textwrap

from tests.helpers import lines_of, project_findings

TREE = """
    from collections import namedtuple

    import torch

    _TreeInfo = namedtuple("TreeInfo", ["z", "r", "turning", "diverging"])


    def is_turning(r, z):
        return (r * z).sum() <= 0


    def build_leaf(z, r):
        return _TreeInfo(z, r, is_turning(r, z), z.abs().sum() > 10)
"""


def test_a_namedtuple_field_a_helper_fills_with_a_tensor_is_a_tensor_when_tested():
    source = TREE + """

    def build(z: torch.Tensor, r: torch.Tensor):  # graphsafe: region
        tree = build_leaf(z, r)
        if tree.turning or tree.diverging:
            return z
        return z + r
    """
    assert set(lines_of(source, "GS201")) == {19}


def test_a_namedtuple_built_in_place_from_tensors_has_tensor_fields():
    source = """
        import collections

        import torch

        Step = collections.namedtuple("Step", "value done")


        def advance(x: torch.Tensor):  # graphsafe: region
            step = Step(x * 2, x.sum() > 0)
            if step.done:
                return step.value
            return x
        """
    assert lines_of(source, "GS201") == [11]


def test_a_typing_namedtuple_call_with_field_types_is_read_the_same_way():
    source = """
        from typing import NamedTuple

        import torch

        Pair = NamedTuple("Pair", [("low", torch.Tensor), ("high", object)])


        def clip(x: torch.Tensor):  # graphsafe: region
            pair = Pair(x.min(), x.max() > 1)
            if pair.high:
                return x.clamp(max=1)
            return x
        """
    assert lines_of(source, "GS201") == [11]


def test_a_field_some_caller_fills_with_a_python_bool_stays_silent():
    source = TREE + """

    def build(z: torch.Tensor, r: torch.Tensor, flag: bool):  # graphsafe: region
        tree = _TreeInfo(z, r, flag, False)
        other = build_leaf(z, r)
        if tree.diverging:
            return z
        return other.z + r
    """
    assert lines_of(source, "GS201") == []


def test_a_plain_class_keeping_its_arguments_has_tensor_fields_when_built_in_place():
    source = """
        import torch


        class Outcome:
            def __init__(self, value, failed):
                self.value = value
                self.failed = failed


        def attempt(x: torch.Tensor):  # graphsafe: region
            out = Outcome(x + 1, torch.isnan(x).any())
            if out.failed:
                return x
            return out.value
        """
    assert lines_of(source, "GS201") == [13]


def test_a_private_class_name_is_still_a_class():
    source = """
        import torch


        class _Result:
            def __init__(self, ok):
                self.ok = ok


        def make(x):
            return _Result(x.sum() > 0)


        def run(x: torch.Tensor):  # graphsafe: region
            res = make(x)
            if res.ok:
                return x
            return -x
        """
    assert lines_of(source, "GS201") == [16]


def test_a_namedtuple_returned_by_a_helper_in_another_file_is_followed(tmp_path):
    found = project_findings(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/tree.py": textwrap.dedent(TREE),
        "pkg/sampler.py": """
            import torch

            from pkg.tree import build_leaf


            def sample(z: torch.Tensor, r: torch.Tensor):  # graphsafe: region
                tree = build_leaf(z, r)
                if tree.diverging:
                    return z
                return r
            """,
    }, "GS201")
    assert found == {("sampler.py", 9, "GS201")}


def test_field_names_the_source_does_not_spell_out_leave_the_record_unknown():
    source = """
        from collections import namedtuple

        import torch

        FIELDS = ["a", "b"]
        Rec = namedtuple("Rec", FIELDS)


        def run(x: torch.Tensor):  # graphsafe: region
            rec = Rec(x, x > 0)
            if rec.b:
                return x
            return -x
        """
    assert lines_of(source, "GS201") == []


def test_a_recursive_builder_returning_its_record_or_a_delegated_call_returns_the_record():
    source = """
        from collections import namedtuple

        import torch

        Tree = namedtuple("Tree", ["weight", "diverging"])


        class Sampler:
            def _leaf(self, z):
                return Tree(z.sum(), z.abs().max() > 10)

            def _build(self, z, depth):
                if depth == 0:
                    return self._leaf(z)
                half = self._build(z, depth - 1)
                return Tree(half.weight * 2, z.abs().max() > 10)

            def sample(self, z: torch.Tensor):  # graphsafe: region
                tree = self._build(z, 3)
                if tree.diverging:
                    return z
                return -z
        """
    assert lines_of(source, "GS201") == [21]



def test_a_field_a_recursive_builder_passes_back_from_its_own_result_keeps_the_other_callers_kind():
    # `Tree(..., half.diverging)` only hands on what the leaf put there: the leaf decides
    source = """
        from collections import namedtuple

        import torch

        Tree = namedtuple("Tree", ["weight", "diverging"])


        class Sampler:
            def _leaf(self, z):
                return Tree(z.sum(), z.abs().max() > 10)

            def _build(self, z, depth):
                if depth == 0:
                    return self._leaf(z)
                half = self._build(z, depth - 1)
                diverging = half.diverging
                return Tree(half.weight * 2, diverging)

            def sample(self, z: torch.Tensor):  # graphsafe: region
                tree = self._build(z, 3)
                if tree.diverging:
                    return z
                return -z
        """
    assert lines_of(source, "GS201") == [22]


def test_a_field_only_ever_passed_back_by_the_recursion_stays_unknown():
    source = """
        from collections import namedtuple

        import torch

        Tree = namedtuple("Tree", ["weight", "flag"])


        class Sampler:
            def _leaf(self, z, flag: bool):
                return Tree(z.sum(), flag)

            def _build(self, z, depth, flag: bool):
                if depth == 0:
                    return self._leaf(z, flag)
                half = self._build(z, depth - 1, flag)
                return Tree(half.weight * 2, half.flag)

            def sample(self, z: torch.Tensor, flag: bool):  # graphsafe: region
                tree = self._build(z, 3, flag)
                if tree.flag:
                    return z
                return -z
        """
    assert lines_of(source, "GS201") == []
