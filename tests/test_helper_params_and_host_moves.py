"""Shapes of the tenth held-out set's misses (gaussian_splat, pointcloud_seg) and their neighbours.

GS301: a helper imported from another module of the program, given a method's number parameter
that the region fills with a counter, computes a per-step number (`position_lr(iteration, cfg)`).
GS402: a CPU tensor moved to the region's device: `torch.rand(3).to(self.device)`, and an
attribute made by `torch.tensor([...])` without a device, read with `.to(x.device)`.
Each shape has a silent look-alike.
"""

from __future__ import annotations

from tests.helpers import diagnostics


def found(source: str, code: str) -> list[int]:
    return [d.start.line for d in diagnostics(source) if d.code == code]


HELPER = """\
import torch
{imports}

class Trainer:
    def __init__(self, opt, cfg):
        self.opt = opt
        self.cfg = cfg
        self.it = 0

    def set_lr(self, it: int) -> None:
        for group in self.opt.param_groups:
{body}

    def step(self, x: torch.Tensor):  # graphsafe: region
        self.set_lr({arg})
        self.it += 1
        return x * 2
"""


def helper(arg: str, body: str = "            group['lr'] = position_lr(it, self.cfg)",
           imports: str = "from schedules import position_lr") -> str:
    return HELPER.format(arg=arg, body=body, imports=imports)


def test_an_imported_helper_given_a_parameter_the_region_fills_with_a_counter_is_per_step():
    assert found(helper("self.it"), "GS301") == [12]


def test_the_same_helper_given_a_setting_is_step_invariant():
    assert found(helper("self.cfg.max_steps"), "GS301") == []
    assert found(helper("0"), "GS301") == []


def test_the_helper_result_kept_in_a_local_first_is_per_step():
    body = "            lr = position_lr(it, self.cfg)\n            group['lr'] = lr"
    assert found(helper("self.it", body), "GS301") == [13]
    assert found(helper("self.cfg.max_steps", body), "GS301") == []


def test_the_helper_given_by_keyword_is_per_step():
    body = "            group['lr'] = position_lr(step=it, cfg=self.cfg)"
    assert found(helper("self.it", body), "GS301") == [12]


def test_a_helper_given_the_parameter_and_a_tensor_may_be_device_work():
    # `top_p(logits, temperature)` is reported inside the helper where it divides, not at the call
    source = """\
import torch
from sampling import top_p

class Decoder:
    def __init__(self, net):
        self.net = net

    def step(self, x, temperature: float):  # graphsafe: region
        p = top_p(self.net(x)[:, -1], temperature)
        return torch.multinomial(p, 1)
"""
    assert found(source, "GS301") == []


def test_the_region_roots_own_number_parameter_given_to_an_imported_helper_is_per_step():
    source = """\
import torch
from schedules import lr_at

def step(x: torch.Tensor, opt, epoch: int):  # graphsafe: region
    for g in opt.param_groups:
        g['lr'] = lr_at(epoch)
    return x
"""
    assert found(source, "GS301") == [6]


CPU_MOVE = """\
import torch

class Trainer:
    def __init__(self, device: torch.device, freqs):
        self.device = device
        self.weights = torch.tensor([1.0 / f for f in freqs]{where})

    def step(self, x: torch.Tensor, randomize: bool):  # graphsafe: region
        bg = {made}.to(self.device) if randomize else x
        return x * self.weights.to({target}) + bg
"""


def test_a_cpu_factory_moved_to_a_device_attribute_is_a_host_copy():
    source = CPU_MOVE.format(where=", device=device", made="torch.rand(3)", target="x.device")
    assert found(source, "GS402") == [9]


def test_a_factory_made_on_the_device_and_moved_is_not():
    source = CPU_MOVE.format(where=", device=device", made="torch.rand(3, device=x.device)", target="x.device")
    assert found(source, "GS402") == []


def test_a_host_data_attribute_moved_to_a_tensors_device_is_a_host_copy():
    source = CPU_MOVE.format(where="", made="x", target="x.device")
    assert found(source, "GS402") == [10]


def test_a_host_data_attribute_moved_to_the_device_attribute_is_a_host_copy():
    source = CPU_MOVE.format(where="", made="x", target="self.device")
    assert found(source, "GS402") == [10]


def test_a_host_data_attribute_made_on_the_device_is_not():
    source = CPU_MOVE.format(where=", device=device", made="x", target="self.device")
    assert found(source, "GS402") == []
    source = CPU_MOVE.format(where=", device=device", made="x", target="x.device")
    assert found(source, "GS402") == []


def test_a_cpu_factory_moved_with_a_dtype_is_not_a_device_move():
    source = "import torch\n\ndef step(x: torch.Tensor):  # graphsafe: region\n    return x + torch.arange(3).to(x.dtype)\n"
    assert found(source, "GS402") == []
    assert found(source.replace("x.dtype", "x.device"), "GS402") == [4]


def test_a_host_data_attribute_moved_to_a_cuda_device_is_a_host_copy():
    source = CPU_MOVE.format(where="", made="x", target='"cuda"')
    assert found(source, "GS402") == [10]
    source = CPU_MOVE.format(where="", made="x", target="x.device").replace(".to(x.device)", ".cuda()")
    assert found(source, "GS402") == [10]
    source = CPU_MOVE.format(where=", device=device", made="x", target='"cuda"')
    assert found(source, "GS402") == []


def test_the_parameter_with_a_default_or_no_annotation_counts_where_the_region_passes_a_counter():
    assert found(helper("self.it").replace("it: int)", "it: int = 0)"), "GS301") == [12]
    assert found(helper("self.it").replace("it: int)", "it)"), "GS301") == [12]
    assert found(helper("self.cfg.max_steps").replace("it: int)", "it)"), "GS301") == []


def test_the_helpers_result_unpacked_from_a_tuple_is_per_step():
    body = "            lr, wd = position_lr(it, self.cfg)\n            group['lr'] = lr"
    assert found(helper("self.it", body), "GS301") == [13]
    assert found(helper("self.cfg.max_steps", body), "GS301") == []


def test_a_helper_called_through_its_imported_module_is_followed_like_an_imported_name():
    body = "            group['lr'] = schedules.position_lr(it, self.cfg)"
    assert found(helper("self.it", body, "import schedules"), "GS301") == [12]
    assert found(helper("self.cfg.max_steps", body, "import schedules"), "GS301") == []
    body = "            group['lr'] = schedules.position_lr(self.it, self.cfg)"
    assert found(helper("self.cfg.max_steps", body, "import schedules"), "GS301") == [12]


def test_a_registered_buffer_made_from_host_data_moves_with_the_module():
    source = CPU_MOVE.format(where="", made="x", target="x.device").replace(
        "self.weights = torch.tensor([1.0 / f for f in freqs])",
        "self.register_buffer('weights', torch.tensor([1.0 / f for f in freqs]))")
    assert found(source, "GS402") == []
