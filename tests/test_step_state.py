"""GS401 for state one step hands the next (analyzer/step_state.py): a place the region reads and
rebinds to a new tensor, beyond `self.x` read above in the same method; and the look-alikes
that stay quiet (written only, built on demand, a fresh input read later in the same step)."""

from __future__ import annotations

import textwrap

import libcst as cst

from graphsafe.analyzer import step_state
from tests.helpers import lines_of


def gs401(source: str) -> list[int]:
    return lines_of("import torch\n\n\n" + textwrap.dedent(source), "GS401")


# --- positives ------------------------------------------------------------------------------

def test_tensor_added_to_an_attribute_started_as_a_number_is_handed_state():
    found = gs401("""
        class Mean:
            def reset(self):
                self.total = 0
                self.count = 0

            def update(self, x: torch.Tensor):  # graphsafe: region
                self.total += x.sum()
                self.count += x.shape[0]
        """)
    assert found == [11]  # the tensor sum; the count of rows stays a number (GS302's business)


def test_attribute_a_base_class_resets_to_a_number_is_handed_state_in_the_subclass():
    assert gs401("""
        class Base:
            def reset(self):
                self.total = 0


        class Sum(Base):
            def update(self, x: torch.Tensor):  # graphsafe: region
                self.total += torch.sum(x)
        """) == [12]


def test_grad_rebound_from_itself_in_a_loop_over_parameters_is_handed_state():
    assert gs401("""
        def zero_grads(params):  # graphsafe: region
            for p in params:
                if p.grad is not None:
                    p.grad = torch.zeros_like(p.grad)
        """) == [8]


def test_attribute_of_a_passed_object_read_above_and_rebound_is_handed_state():
    assert gs401("""
        def beam_step(hyps, logits: torch.Tensor):  # graphsafe: region
            scores = hyps.scores.unsqueeze(1) + logits
            hyps.scores = scores.amax(-1)
            return scores
        """) == [7]


def test_list_slots_unpacked_from_a_call_that_reads_them_are_handed_state():
    assert gs401("""
        def rnn(x: torch.Tensor, cell, state=None):  # graphsafe: region
            if state is None:
                state = [None] * 2
                state[0] = torch.zeros(4)
                state[1] = torch.zeros(4)
            x, state[0], state[1] = cell(x, state[0], state[1])
            return x, state
        """) == [10]


def test_list_slot_handed_to_the_next_step_is_one_gs401_not_also_a_container_change():
    from tests.helpers import codes

    found = codes("""
        import torch


        def rnn(x: torch.Tensor, cell, state: list[torch.Tensor]):  # graphsafe: region
            if state[0] is None:
                state[0] = torch.zeros(4)
            x, state[0] = cell(x, state[0])
            return x
        """)
    assert found == ["GS401"]


def test_deeper_attribute_chain_rebound_from_itself_is_handed_state():
    assert gs401("""
        class Renorm(torch.nn.Module):
            def forward(self, x: torch.Tensor):  # graphsafe: region
                self.w.weight.data = torch.renorm(self.w.weight.data, p=2, dim=0, maxnorm=1.0)
                return self.w(x)
        """) == [7]


def test_data_of_a_tensor_rebound_from_the_tensor_itself_is_handed_state():
    # `self.center` read in the new value reads the storage `.data =` replaces (lightly's DINO center)
    assert gs401("""
        class Dino(torch.nn.Module):
            def forward(self, t: torch.Tensor):  # graphsafe: region
                out = t - self.center
                self.center.data = self.center * 0.9 + t.mean(0) * 0.1
                return out
        """) == [8]


def test_data_of_a_tensor_rebound_from_fresh_values_only_is_not_handed_state():
    assert gs401("""
        class Load(torch.nn.Module):
            def forward(self, t: torch.Tensor):  # graphsafe: region
                self.table.data = t.mean(0)
                return t
        """) == []


def test_running_stats_unpacked_from_an_update_call_are_handed_state():
    assert gs401("""
        class Norm(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.count = 0
                self.mean = torch.zeros(3)

            def forward(self, x: torch.Tensor):  # graphsafe: region
                self.count, self.mean = update_stats(x, self.count, self.mean)
                return x - self.mean
        """) == [12]


def test_attribute_read_by_another_method_before_the_rebinding_method_runs_is_handed_state():
    source = """
        class Attn(torch.nn.Module):
            def score(self, h: torch.Tensor):
                return h + self.prev

            def forward(self, h: torch.Tensor):  # graphsafe: region
                s = self.score(h)
                self.remember(s)
                return s

            def remember(self, s: torch.Tensor):
                self.prev = s.detach()
        """
    assert gs401(source) == [15]


def test_handed_state_message_names_the_method_that_reads_it():
    from tests.helpers import diagnostics

    source = textwrap.dedent("""
        import torch


        class Attn(torch.nn.Module):
            def forward(self, h: torch.Tensor):  # graphsafe: region
                out = h + self.prev
                self.remember(out)
                return out

            def remember(self, s: torch.Tensor):
                self.prev = s.detach()
        """)
    [found] = [d for d in diagnostics(source) if d.code == "GS401"]
    assert "`forward`" in found.message and found.fix is None


# --- look-alikes ----------------------------------------------------------------------------

def test_attribute_written_but_never_read_is_not_handed_state():
    assert gs401("""
        class M(torch.nn.Module):
            def forward(self, x: torch.Tensor):  # graphsafe: region
                self.last = x * 2
                return self.last_fn(x)
        """) == []


def test_fresh_input_read_by_a_helper_called_after_it_is_not_handed_state():
    assert gs401("""
        class Fresh(torch.nn.Module):
            def forward(self, x: torch.Tensor):  # graphsafe: region
                self.x = x * 2
                return self.helper()

            def helper(self):
                return self.x + 1
        """) == []


def test_reader_that_the_region_never_reaches_keeps_the_rebinding_quiet():
    assert gs401("""
        class Attn(torch.nn.Module):
            def score(self, h: torch.Tensor):
                out = h + self.prev
                self.remember(out)
                return out

            def remember(self, s: torch.Tensor):  # graphsafe: region
                self.prev = s.detach()
        """) == []


def test_caches_built_on_demand_under_a_test_of_themselves_are_not_handed_state():
    assert gs401("""
        class Rope(torch.nn.Module):
            def forward(self, x: torch.Tensor, key: int):  # graphsafe: region
                if key not in self.tables:
                    self.tables[key] = torch.zeros(x.shape[1])
                if self.cos is None or x.shape[1] > self.cos.shape[0]:
                    self.cos = torch.cos(torch.arange(x.shape[1]))
                return x * self.cos + self.tables[key]
        """) == []


def test_item_written_into_a_tensor_is_in_place_not_a_rebinding():
    assert gs401("""
        def scale_rows(x: torch.Tensor):  # graphsafe: region
            for i in range(3):
                x[i] = x[i] * 2
            return x
        """) == []


def test_attribute_of_an_object_built_in_the_step_is_not_handed_state():
    assert gs401("""
        def step(x: torch.Tensor):  # graphsafe: region
            box = Box()
            box.value = box.value + x
            return box.value
        """) == []


def test_rebinding_in_module_setup_outside_the_region_is_not_reported():
    assert gs401("""
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.setup()

            def setup(self):
                with torch.no_grad():
                    self.w.weight.data = self.w.weight.data.half()

            def forward(self, x: torch.Tensor):  # graphsafe: region
                return self.w(x)
        """) == []


def test_number_attribute_recomputed_from_itself_is_not_a_tensor_rebinding():
    assert gs401("""
        class C:
            def reset(self):
                self.count = 0

            def run(self, x: torch.Tensor):  # graphsafe: region
                self.count = self.count + 1
                return x * 2
        """) == []


# --- the syntax helpers ---------------------------------------------------------------------

def test_place_key_ignores_spacing_inside_an_index():
    one = cst.parse_expression("state[i*5 + 0]")
    two = cst.parse_expression("state[ i * 5+0 ]")
    assert step_state.place_key(one) == step_state.place_key(two) == "state[i*5+0]"


def test_handed_readers_need_a_read_before_the_rebinding_in_call_order():
    module = cst.parse_module(textwrap.dedent("""
        class C:
            def first(self):
                return self.a

            def then(self):
                return self.a

            def run(self):
                self.first()
                self.write()
                self.then()

            def write(self):
                self.a = 1
        """))
    steps = step_state.ClassSteps(module.body[0])
    assign = module.body[0].body.body[3].body.body[0].body[0]
    assert steps.handed_readers("write", "a", steps.order_of("write", assign)) == ["first"]


BUFFERS = """
    class EMA(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("avg", torch.zeros(4))
            self.register_buffer("count", torch.zeros(()))

        def update_with_decay(self, buffer_name, new_value, decay):
            old_value = getattr(self, buffer_name)
            value = old_value * decay + new_value.detach() * (1 - decay)
            self.register_buffer(buffer_name, value)

        def forward(self, x: torch.Tensor):  # graphsafe: region
            self.update_with_decay("avg", x.mean(0), 0.9)
            self.register_buffer("count", x.new_ones(()))
            if self.avg.shape[-1] >= 4:
                return x - self.avg
            self.register_buffer("avg", x.mean(0), persistent=False)
            return x - self.avg
    """


def test_a_buffer_registered_again_where_it_is_read_is_handed_state():
    # by name (line 21) and through `getattr(self, name)` (line 14); `count`, never read, and
    # `__init__`'s registrations are not
    assert gs401(BUFFERS) == [14, 21]
