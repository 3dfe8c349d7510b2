"""A region root's number parameter (GS301) is judged by what its callers pass (issue 18, point 1):

- a visible caller passes it a per-step value (a loop variable, a counter): reported, proven;
- every visible caller passes a step-invariant value (a literal, a per-run setting): silent, a
  per-run setting such as `temperature` or `eta` is not a per-step value;
- no call is visible (a public API, a test-less library), or the caller captures (the value is
  baked at capture, what replays see is not shown): reported as "may vary", kept apart from the
  proven ones by its message (not yet through a chain of parameters: a caller's own parameter
  that may vary makes the callee's reported without the note);
- a root's own parameter that declares nothing, handed to a declared number (`forward(idx)`
  calling `forward_one(idx[0])` with `idx: int`): the callee's use is reported as "may vary",
  naming the root's parameter; silent where the callee's parameter declares nothing too, or a
  visible caller of the root passes a constant.
"""

from __future__ import annotations

import textwrap

from tests.helpers import diagnostics

SAMPLER = """
import torch


def denoise(x: torch.Tensor, sigma: float):  # graphsafe: region
    return x * sigma


{driver}
"""


def gs301(driver: str) -> list[tuple[int, str]]:
    source = textwrap.dedent(SAMPLER.format(driver=textwrap.dedent(driver)))
    return [(d.start.line, d.message) for d in diagnostics(source) if d.code == "GS301"]


def test_a_root_parameter_a_caller_fills_from_its_loop_is_reported_as_proven():
    found = gs301("""
    def sample(x, sigmas):
        for sigma in sigmas:
            x = denoise(x, sigma)
        return x
    """)
    assert [line for line, _ in found] == [6] and "may vary" not in found[0][1]


def test_a_root_parameter_every_caller_passes_a_literal_is_silent():
    assert gs301("""
    def sample(x, steps: int):
        for _ in range(steps):
            x = denoise(x, 0.5)
        return x
    """) == []


def test_a_root_parameter_passed_a_per_run_setting_is_silent():
    assert gs301("""
    class Config:
        eta = 0.1


    def sample(x, cfg: Config, steps: int):
        eta = cfg.eta
        for _ in range(steps):
            x = denoise(x, eta)
        return x
    """) == []


def test_a_root_parameter_with_no_visible_call_is_reported_as_may_vary():
    found = gs301("")
    assert [line for line, _ in found] == [6]
    assert "may vary: no call of `denoise` shows what it is passed" in found[0][1]


def test_a_root_parameter_passed_inside_a_capture_block_is_reported():
    # the capturing function's own parameter has no visible call: it may vary, and so may what it
    # passes on (the message does not yet carry "may vary" through the chain)
    found = gs301("""
    def capture(x, sigma: float):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = denoise(x, sigma)
        return g, out
    """)
    assert [line for line, _ in found] == [6]


def test_a_root_parameter_a_wrapper_forwards_from_its_own_unseen_callers_may_vary():
    # graph's split makes the user's step a wrapper calling the core: the wrapper forwards its own
    # parameter, whose callers are not visible, so the core's parameter may still vary
    found = gs301("""
    def sample_step(x, sigma: float):
        return denoise(x, sigma)
    """)
    assert [line for line, _ in found] == [6] and "may vary" in found[0][1]


def _codes_of(source: str) -> list[tuple[int, str]]:
    return [(d.start.line, d.message) for d in diagnostics(textwrap.dedent(source)) if d.code == "GS301"]


def test_a_roots_undeclared_parameter_used_as_a_slice_bound_may_vary():
    """A Python number there is frozen at capture, a tensor would be read on the host: a hazard
    either way, said as "may vary" where no call shows what the root is passed."""
    found = _codes_of("""
    import torch

    def decode_step(model, cache: torch.Tensor, tok: torch.Tensor, pos):  # graphsafe: region
        keys = cache[:, :, : pos + 1]
        for _ in range(pos):
            tok = tok * keys.mean()
        return tok
    """)
    assert [line for line, _ in found] == [5]  # the trip count is the same value's other use
    message = found[0][1]
    assert "may vary" in message and "slice bound or trip count" in message and "also used at line 6" in message


def test_an_undeclared_parameter_named_like_a_size_or_fed_a_constant_is_a_setting():
    assert _codes_of("""
    def decode_step(model, cache, tok, max_len):  # graphsafe: region
        return model(tok, cache[:, :, :max_len])
    """) == []
    assert _codes_of("""
    def decode_step(model, cache, tok, pos):  # graphsafe: region
        return model(tok, cache[:, :, :pos])

    def run(model, cache, tok):
        for _ in range(10):
            tok = decode_step(model, cache, tok, 16)
    """) == []


def test_a_roots_undeclared_parameter_compared_with_a_number_in_a_branch_may_vary():
    """`if t > 0:` around device work: as a tensor the test reads the device, as a Python number
    the branch taken at capture is replayed for every `t`: either way a hazard."""
    found = _codes_of("""
    import torch

    def p_sample(x: torch.Tensor, t):  # graphsafe: region
        if t > 0:
            x = x + torch.randn_like(x)
        return x
    """)
    assert [line for line, _ in found] == [5]
    assert "may vary" in found[0][1] and "compared with a number in a branch" in found[0][1]


def test_a_roots_undeclared_parameter_ordered_against_a_setting_in_a_branch_may_vary():
    """`if timestep < self.cfg.random_timesteps:` orders the parameter like a number does."""
    found = _codes_of("""
    import torch

    class Agent:
        def act(self, x: torch.Tensor, timestep):  # graphsafe: region
            if timestep < self.cfg.random_timesteps:
                return x
            return x * torch.rand_like(x)
    """)
    assert [line for line, _ in found] == [6]
    assert "may vary" in found[0][1]


def test_a_roots_undeclared_parameter_equated_with_a_setting_is_not_a_comparison_with_a_number():
    assert _codes_of("""
    import torch

    class Agent:
        def act(self, x: torch.Tensor, mode):  # graphsafe: region
            if mode == self.cfg.train_mode:
                return x
            return x * torch.rand_like(x)
    """) == []


def test_a_flag_an_identity_test_or_a_size_name_in_a_roots_branch_is_not_a_comparison_with_a_number():
    assert _codes_of("""
    import torch

    def step(x: torch.Tensor, clip, prev, n_heads):  # graphsafe: region
        if clip:
            x = x.clamp(-1, 1)
        if prev is not None:
            x = x + prev
        if n_heads > 1:
            x = x * 2
        return x
    """) == []


def test_an_optional_number_parameter_of_a_root_may_vary_like_a_number_parameter():
    """`t: Optional[int] = None` and `t: int | None = None` declare a Python number as `t: int` does."""
    for annotation in ("Optional[int]", "int | None", "None | float"):
        found = _codes_of(f"""
        from typing import Optional
        import torch

        def step(x: torch.Tensor, t: {annotation} = None):  # graphsafe: region
            return x * t
        """)
        assert [line for line, _ in found] == [6], annotation
        assert "may vary" in found[0][1]


DECODER = """
import torch


class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)

    def forward(self, idx, state):  # graphsafe: region
        if type(idx) is list:
            return self.forward_one(idx[0], state)
        return self.forward_one(idx, state)

    def forward_one(self, idx{annotation}, state):
        return self.emb.weight[idx] + state
{caller}
"""


def test_a_root_parameter_handed_to_a_declared_number_may_vary():
    found = [(d.start.line, d.message) for d in diagnostics(textwrap.dedent(DECODER.format(annotation=": int", caller="")))
             if d.code == "GS301"]
    assert [line for line, _ in found] == [16]
    assert "may vary: it is given `idx` of `Decoder.forward`, whose caller is not shown" in found[0][1]


def test_a_root_parameter_handed_to_an_undeclared_parameter_or_given_a_constant_stays_silent():
    for annotation, caller in (("", ""), (": int", "\n\ndef run(s):\n    model = Decoder()\n    return model(3, s)\n")):
        source = textwrap.dedent(DECODER.format(annotation=annotation, caller=caller))
        assert [d for d in diagnostics(source) if d.code == "GS301"] == [], (annotation, caller)


def test_a_root_given_the_loop_counter_of_a_caller_that_is_a_region_too_is_reported():
    """A beam search's `forward` loops over `search_step`, both marked as regions: each pass
    replays `search_step`'s graph, so its step number is per step (proven, not "may vary")."""
    source = textwrap.dedent("""\
        import torch


        class Searcher:
            def search_step(self, log_probs: torch.Tensor, step: int):  # graphsafe: region
                return log_probs / (step + 1)

            def forward(self, log_probs: torch.Tensor):  # graphsafe: region
                for step in range(10):
                    log_probs = self.search_step(log_probs, step)
                return log_probs
        """)
    found = [(d.code, d.start.line, d.message) for d in diagnostics(source)]
    assert [(code, line) for code, line, _ in found] == [("GS301", 6)]
    assert "loop counter" in found[0][2] and "may vary" not in found[0][2]
