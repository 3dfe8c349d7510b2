"""Host-resident values moved to the device inside a region (GS402, analyzer/host_resident.py):
a CPU tensor built in the step (`torch.arange(w)` without device=, or a local bound to one)
then `.to(dev)`, `.cuda()` or `.type_as(cuda_t)`; a device tensor indexed with such a tensor
or with a local list of Python ints; an attribute built in `__init__` by a torch factory
without a device and not registered as a buffer. Look-alikes stay quiet: a dtype-only `.to`,
factories given a device, buffers, and indexes whose origin is unknown. A copy made by `.cpu()`
is in host memory too: moved back it is reported, and asserting or formatting it waits for
nothing (no GS201/GS104); neither does formatting in an `assert`'s message."""

from __future__ import annotations

import textwrap

from tests.helpers import diagnostics


def _region(body: str, params: str = "x: torch.Tensor, feats: list[torch.Tensor], n: int") -> str:
    return "import torch\n\n\ndef step(" + params + "):  # graphsafe: region\n" + textwrap.indent(
        textwrap.dedent(body), "    ")


def _gs402(source: str) -> list[tuple[int, str]]:
    return [(d.start.line, d.message) for d in diagnostics(source) if d.code == "GS402"]


def test_a_cpu_arange_bound_to_a_local_then_moved_is_reported_with_its_origin():
    found = _gs402(_region("w = torch.arange(n)\nw = w[..., None]\nreturn x * w.to(x.device)\n"))
    assert [line for line, _ in found] == [7]
    assert "`w` is built by `torch.arange` without device=" in found[0][1]


def test_cuda_of_a_converted_cpu_tensor_is_reported():
    assert [line for line, _ in _gs402(_region("w = torch.rand(n)\nreturn w.float().cuda()\n"))] == [6]


def test_type_as_of_a_cpu_factory_copies_it_to_the_device():
    found = _gs402(_region("sx = torch.arange(n).type_as(feats[0]) + 0.5\nreturn sx\n"))
    assert [line for line, _ in found] == [5]
    assert "`.type_as(feats[0])`" in found[0][1]


def test_indexing_a_device_tensor_with_a_cpu_index_tensor_is_reported():
    body = "rows = torch.arange(n)[..., None]\nkeep = torch.randn(n, 4).topk(2, dim=-1).indices\nreturn x[rows, keep]\n"
    found = _gs402(_region(body))
    assert [line for line, _ in found] == [7]
    assert "`rows` is built by `torch.arange` without device=" in found[0][1]


def test_indexing_with_a_list_of_ints_grown_in_the_function_is_reported():
    body = """\
    group = []
    for b in range(n):
        group.extend([b * 4 + i for i in range(4)])
    y = x[group]
    x[group] = y
    return x[list(range(n))]
    """
    assert [line for line, _ in _gs402(_region(body))] == [8, 9, 10]


def test_indexing_with_a_list_made_by_list_of_anything_is_reported():
    found = _gs402(_region("au = list(units)\nreturn x[:, au]\n", params="x: torch.Tensor, units: set"))
    assert [line for line, _ in found] == [6]
    assert "`au` is a Python list (`list(...)`)" in found[0][1]


def test_indexing_with_an_entry_of_a_list_of_enumerate_index_lists_is_reported():
    body = """\
    rows = []
    for name in set(names):
        rows.append([i for i, item in enumerate(names) if item == name])
    for i in range(len(rows)):
        x[rows[i]] += 1
    return x
    """
    found = _gs402(_region(body, params="x: torch.Tensor, names: list[str]"))
    assert [line for line, _ in found] == [9]
    assert "`rows` holds Python lists of ints" in found[0][1]


def test_an_entry_of_a_list_also_given_other_values_is_not_reported():
    body = """\
    rows = []
    rows.append([0, 1])
    rows.append(picked)
    return x[rows[0]]
    """
    assert _gs402(_region(body, params="x: torch.Tensor, picked: torch.Tensor")) == []


def test_an_attribute_built_by_a_window_factory_in_init_is_a_host_copy_when_moved():
    source = textwrap.dedent("""\
        import torch


        class Stft(torch.nn.Module):
            def __init__(self, n, window_fn=torch.hamming_window):
                super().__init__()
                self.window = window_fn(n)
                self.hann = torch.hann_window(n)

            def forward(self, x: torch.Tensor):  # graphsafe: region
                a = self.window.to(x.device)
                return a, self.hann.to(x.device)
        """)
    found = _gs402(source)
    assert [line for line, _ in found] == [11, 12]
    assert "`self.window` is built by `window_fn` (default `torch.hamming_window`) without device=" in found[0][1]


def test_look_alikes_stay_quiet():
    body = """\
    on_device = torch.arange(n, device=x.device)
    a = x[on_device]
    w = torch.arange(n)
    b = w.to(torch.float32)
    c = w.to(dtype=torch.float16)
    d = w[on_device.cpu()]
    e = torch.arange(n, pin_memory=True).to(x.device)
    f = x.to(x.device)
    items = [t for t in feats]
    g = x[items]
    h = x[torch.arange(n, device=x.device)]
    return a, b, c, d, e, f, g, h
    """
    assert _gs402(_region(body)) == []


def test_a_registered_buffer_moved_to_the_device_stays_quiet():
    source = textwrap.dedent("""\
        import torch


        class Stft(torch.nn.Module):
            def __init__(self, n):
                super().__init__()
                self.register_buffer("window", torch.hann_window(n))

            def forward(self, x: torch.Tensor):  # graphsafe: region
                return self.window.to(x.device)
        """)
    assert _gs402(source) == []


def test_a_list_that_may_hold_tensors_or_comes_from_elsewhere_is_no_host_index():
    body = """\
    picked = []
    picked.append(feats[0])
    return x[picked], x[feats]
    """
    assert _gs402(_region(body)) == []


def test_moves_outside_a_region_stay_quiet():
    source = "import torch\n\n\ndef setup(x: torch.Tensor, n: int):\n    w = torch.arange(n)\n    return x[w], w.to(x.device)\n"
    assert _gs402(source) == []


def test_batches_from_a_data_loader_loop_moved_inside_the_region_are_reported():
    source = textwrap.dedent("""\
        import torch


        def train_epoch(model, data, device):  # graphsafe: region
            loader = data["train"].dataloader
            for i, batch in enumerate(loader):
                images, texts = batch
                images = images.to(device=device, non_blocking=True)
                texts = texts.to(device=device, non_blocking=True)
                model(images, texts)
        """)
    found = _gs402(source)
    assert [line for line, _ in found] == [8, 9]
    assert "`images` is unpacked from `batch`, which comes from iterating `loader`" in found[0][1]


def test_a_batch_is_reported_where_it_is_moved_not_after_and_loops_over_other_things_stay_quiet():
    source = textwrap.dedent("""\
        import torch


        def train_epoch(model, train_loader, feats, device):  # graphsafe: region
            for batch in train_loader:
                batch = batch.to(device=device)
                model(batch.to(device=device))
            for t in feats:
                model(t.to(device=device))
        """)
    assert [line for line, _ in _gs402(source)] == [6]


# ------------------------------------------- copies to the host: no wait to read them again

def _codes_at(source: str) -> list[tuple[int, str]]:
    return sorted((d.start.line, d.code) for d in diagnostics(source) if d.code in ("GS104", "GS201", "GS402"))


def test_a_copy_made_by_cpu_is_on_the_host_when_moved_back():
    for copy in ("x.cpu()", 'x.to("cpu")', 'x.to(device="cpu")', 'x.to(torch.device("cpu"))'):
        found = _gs402(_region(f"h = {copy}\nreturn h.cuda()\n"))
        assert [line for line, _ in found] == [6], copy
        assert "copied to the host by" in found[0][1]


def test_asserting_and_formatting_a_host_copy_wait_for_nothing():
    body = "h = x.cpu()\ntotal = h.new_full((), n)\nassert total == 0, f'bad {total}'\nmsg = f'left {h}'\nreturn h\n"
    assert _codes_at(_region(body)) == []


def test_asserting_and_formatting_a_device_tensor_are_still_reported():
    body = "total = x.new_full((), n)\nassert total == 0\nmsg = f'left {x}'\nreturn x\n"
    assert _codes_at(_region(body)) == [(6, "GS201"), (7, "GS104")]


def test_a_tensor_formatted_only_in_an_assert_message_is_formatted_on_failure_only():
    assert _codes_at(_region("assert n > 0, f'bad {x}'\nreturn x\n")) == []
    assert _codes_at(_region("assert n > 0, 'bad {}'.format(x)\nreturn x\n")) == []
    assert _codes_at(_region("assert n > 0, 'bad %s' % x\nreturn x\n")) == []


def test_a_batch_drawn_with_next_from_a_loader_is_host_memory():
    source = textwrap.dedent("""\
        import torch


        class Replay:
            def before_backward(self, strategy):  # graphsafe: region
                samples_x, samples_y = next(self.replay_loader)
                batch = next(iter(self.buffer_loader))
                return samples_x.to(strategy.device), batch.to(strategy.device), samples_y
        """)
    found = _gs402(source)
    assert [line for line, _ in found] == [8, 8]
    assert "`samples_x` is drawn from `replay_loader`" in found[0][1] + found[1][1]
    assert "`batch` is drawn from `buffer_loader`" in found[0][1] + found[1][1]
