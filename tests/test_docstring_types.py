"""Parameter types declared in docstrings (analyzer/docstring_types.py) stand for annotations:
Google, numpy and Sphinx styles; prose that is no plain type declares nothing."""

from __future__ import annotations

import textwrap

import libcst as cst

from graphsafe.analyzer.docstring_types import declared_types
from tests.helpers import diagnostics


def declared(source: str) -> dict[str, str]:
    function = cst.parse_module(textwrap.dedent(source)).body[0]
    names = {p.name.value for p in function.params.params}
    return {name: cst.Module([]).code_for_node(expr) for name, expr in declared_types(function, names).items()}


def test_google_style_types_with_backticks_shapes_and_optional_markers():
    assert declared('''
    def f(step, scores, lr, mask, note, payload):
        """Do it.

        Args:
            step (`int`): The current training step.
            scores (`torch.FloatTensor` of shape `(batch_size, n)`): Scores.
            lr (float, *optional*, defaults to 1e-3): The rate.
            mask (torch.BoolTensor, optional): Which rows.
            note (a string that says what happened): Prose, not a type.
            payload (Any): Declares nothing.

        Returns:
            out (int): not a parameter.
        """
    ''') == {"step": "int", "scores": "torch.FloatTensor", "lr": "float", "mask": "torch.BoolTensor"}


def test_numpy_and_sphinx_styles():
    assert declared('''
    def f(x, t):
        """Step.

        Parameters
        ----------
        x : torch.Tensor
            The input.
        t : int or float
            The time.

        Returns
        -------
        y : torch.Tensor
        """
    ''') == {"x": "torch.Tensor", "t": "int | float"}
    assert declared('''
    def f(x, t):
        """Step.

        :param x: the input
        :type x: torch.Tensor
        :param int t: the time
        """
    ''') == {"x": "torch.Tensor", "t": "int"}


def test_a_documented_step_number_of_a_region_root_is_a_per_step_value():
    source = textwrap.dedent('''\
        import torch


        class Model:
            def update(self, global_step):  # graphsafe: region
                """
                Args:
                    global_step (`int`): The current training step.
                """
                if global_step < self.config.total_step - self.config.tfinal:
                    self.w.mul_(0.5)
        ''')
    assert [(d.code, d.start.line) for d in diagnostics(source)] == [("GS301", 10)]
    undocumented = source.replace("global_step (`int`)", "global_step")
    assert [d.code for d in diagnostics(undocumented)] == []


def test_a_documented_tensor_parameter_is_a_tensor():
    source = textwrap.dedent('''\
        def step(x, w):  # graphsafe: region
            """x (torch.Tensor): no section header, so not read.

            Args:
                w (torch.Tensor): weights.
            """
            if w.sum() > 0:
                return x
            return -x
        ''')
    assert [(d.code, d.start.line) for d in diagnostics(source)] == [("GS201", 7)]


def test_a_documented_float_may_still_be_a_tensor_read_on_the_host():
    source = textwrap.dedent('''\
        def adapt(t, accept_prob):  # graphsafe: region
            """
            :param int t: time step.
            :param float accept_prob: acceptance probability (a 0-d tensor in practice).
            """
            return accept_prob.item() * 2
        ''')
    assert [(d.code, d.start.line) for d in diagnostics(source)] == [("GS101", 6)]
