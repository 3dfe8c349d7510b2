"""A loop marked as a region (`for ...:  # graphsafe: region`): its body is the captured step,
replayed once per pass (analyzer/step_loops.py). The loop's own counters are per-step numbers
there (GS301, also as sizes), a name the body grows onto itself for the next pass is a growing
buffer (GS404); loops inside the body are unrolled by the capture and count nothing, and the
function around the loop keeps its own reading of the same code."""

from __future__ import annotations

from tests.helpers import diagnostics, lines_of, project_diagnostics, project_findings

DECODE = '''\
import torch


def generate(net, prompt: torch.Tensor, seq_len: int):
    out = prompt
    for step in range(seq_len):{mark}
        logits = net(out)
        scale = torch.full((1,), step, device=out.device)
        sample = (logits[:, -1] * scale).argmax(-1, keepdim=True)
        out = torch.cat((out, sample), dim=-1)
    return out
'''


def test_the_counter_of_a_marked_loop_entering_device_work_is_a_per_step_number():
    source = DECODE.format(mark="  # graphsafe: region")
    assert lines_of(source, "GS301") == [8]
    message = next(d.message for d in diagnostics(source) if d.code == "GS301")
    assert "a new number on every pass of the loop region `for step in range(seq_len)`" in message


def test_a_name_the_body_concatenates_onto_itself_for_the_next_pass_grows():
    assert lines_of(DECODE.format(mark="  # graphsafe: region"), "GS404") == [10]


def test_the_region_is_the_loop_body_and_names_the_function_around_it():
    found = [d for d in diagnostics(DECODE.format(mark="  # graphsafe: region")) if d.code == "GS404"]
    assert found and "loop region in generate" in found[0].region.display


def test_an_unmarked_loop_inside_a_function_region_is_unrolled_and_reports_neither():
    source = DECODE.format(mark="").replace("seq_len: int):", "seq_len: int):  # graphsafe: region")
    source = source.replace("range(seq_len)", "range(4)")
    assert lines_of(source, "GS301") == [] and lines_of(source, "GS404") == []


def test_a_loop_inside_the_marked_body_is_unrolled_and_its_counter_is_not_reported():
    source = ("import torch\n\n\ndef run(x: torch.Tensor, n: int):\n"
              "    for i in range(n):  # graphsafe: region\n"
              "        for j in range(4):\n            x = x * j\n        x = x + i\n    return x\n")
    assert lines_of(source, "GS301") == [8]


def test_a_buffer_started_empty_in_each_pass_does_not_grow():
    source = ("import torch\n\n\ndef run(x: torch.Tensor, n: int):\n"
              "    for _ in range(n):  # graphsafe: region\n"
              "        parts = x[:0]\n        parts = torch.cat((parts, x))\n        x = parts * 2\n    return x\n")
    assert lines_of(source, "GS404") == []


def test_elements_of_a_tolist_are_per_pass_numbers_also_as_sizes():
    source = ("import torch\n\n\ndef demask(scores: torch.Tensor, counts: torch.Tensor):\n"
              "    for k in counts.tolist():  # graphsafe: region\n"
              "        idx = scores.topk(k, dim=-1).indices\n        scores = scores.scatter(1, idx, 0.0)\n"
              "    return scores\n")
    assert lines_of(source, "GS301") == [6]


def test_a_size_from_a_per_run_number_in_a_function_region_stays_quiet():
    source = ("import torch\n\n\ndef pick(scores: torch.Tensor, k: int):  # graphsafe: region\n"
              "    return scores.topk(k, dim=-1).indices\n")
    assert lines_of(source, "GS301") == []


def test_a_while_loop_advanced_by_a_literal_counts_with_its_counter():
    source = ("import torch\n\n\ndef run(x: torch.Tensor):\n    t = 0\n"
              "    while t < 10:  # graphsafe: region\n        x = x * t\n        t += 1\n    return x\n")
    assert lines_of(source, "GS301") == [7]


def test_a_tensor_carried_to_the_next_pass_is_reported_where_the_body_rebinds_it_not_after_the_loop():
    # a graph of one pass reads the `x` of capture time; the rebinding after the loop runs eagerly
    source = ("import torch\n\n\ndef run(x: torch.Tensor, n: int):\n"
              "    for _ in range(n):  # graphsafe: region\n        x = x * 2\n        x = x + 1\n"
              "    x = x + 1\n    return x\n")
    assert lines_of(source, "GS401") == [6]


def test_a_name_the_pass_binds_before_reading_it_is_not_carried():
    # `q` is made anew by every pass (bound at the top of the body before any read): no state
    source = ("import torch\n\n\ndef run(x: torch.Tensor, n: int, g):\n    q = None\n"
              "    for _ in range(n):  # graphsafe: region\n        q = None\n        if g is not None:\n"
              "            q = torch.empty_like(x).exponential_(1)\n        x.add_(q if q is not None else 0)\n"
              "    return x\n")
    assert lines_of(source, "GS401") == []


def test_a_carried_python_number_is_no_static_input_rebinding():
    source = ("import torch\n\n\ndef run(x: torch.Tensor, n: int):\n    t = 0.0\n"
              "    for _ in range(n):  # graphsafe: region\n        x.mul_(t)\n        t = t + 0.1\n    return x\n")
    assert lines_of(source, "GS401") == []


def test_a_counter_handed_to_a_helper_makes_its_parameter_per_step(tmp_path):
    helper = "import torch\n\n\ndef noise_at(x, t):\n    return x + torch.full_like(x, 0.1) * t\n"
    loop = ("import torch\n\nfrom pkg.helper import noise_at\n\n\ndef sample(x: torch.Tensor, n: int):\n"
            "    for t in range(n):  # graphsafe: region\n        x = noise_at(x, t)\n    return x\n")
    found = project_findings(tmp_path, {"pkg/__init__.py": "", "pkg/helper.py": helper, "pkg/loop.py": loop}, "GS301")
    assert {(path, line) for path, line, _ in found} == {("helper.py", 5)}
    message = next(d.message for d in project_diagnostics(tmp_path, {"pkg/__init__.py": "", "pkg/helper.py": helper,
                                                                    "pkg/loop.py": loop}) if d.code == "GS301")
    assert "a number its loop region counts with, new on every pass" in message


def test_a_scripts_training_loop_at_module_level_is_a_region_with_its_counter():
    source = ("import torch\n\nmodel = torch.nn.Linear(4, 4)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
              "x = torch.randn(8, 4)\nit = 0\n"
              "while True:  # graphsafe: region\n"
              "    lr = 0.1 * (1 - it / 1000)\n"
              "    for group in opt.param_groups:\n        group['lr'] = lr\n"
              "    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"
              "    print(loss.item())\n    it += 1\n    if it > 1000:\n        break\n")
    found = {(d.code, d.start.line) for d in diagnostics(source)}
    assert ("GS301", 10) in found and ("GS101", 14) in found
    assert next(d for d in diagnostics(source) if d.code == "GS301").region.display.startswith("loop region in")


SAMPLER = '''\
import torch
{imports}


def sample(model, x: torch.Tensor, sigmas: torch.Tensor, eta=1.0, disable=None):
    for i in {iterable}:  # graphsafe: region
        denoised = model(x, sigmas[i])
        if eta:
            x = x + (denoised - x) * eta
    return x
'''


def test_a_progress_bar_range_counts_like_range():
    source = SAMPLER.format(imports="from tqdm.auto import trange", iterable="trange(len(sigmas) - 1, disable=disable)")
    assert lines_of(source, "GS301") == [7]


def test_a_progress_bar_around_a_range_counts_like_the_range():
    source = SAMPLER.format(imports="from tqdm import tqdm", iterable="tqdm(range(len(sigmas) - 1), desc='sampling')")
    assert lines_of(source, "GS301") == [7]


def test_a_progress_bar_around_batches_counts_nothing():
    source = SAMPLER.format(imports="from tqdm import tqdm", iterable="tqdm(sigmas)").replace("sigmas[i]", "i")
    assert lines_of(source, "GS301") == []


def test_a_parameter_of_the_function_around_a_marked_loop_is_the_same_on_every_pass():
    # `eta` is a per-run setting of the sampler: no caller shows it, yet every pass reads one value
    source = SAMPLER.format(imports="", iterable="range(len(sigmas) - 1)")
    assert lines_of(source, "GS301") == [7]


def test_the_same_parameter_with_the_whole_function_as_region_may_vary():
    source = SAMPLER.format(imports="", iterable="range(3)").replace(
        "disable=None):", "disable=None):  # graphsafe: region").replace("  # graphsafe: region\n        denoised", "\n        denoised")
    assert lines_of(source, "GS301") == [8, 9]  # `if eta:` and `* eta`: each may vary


def test_a_value_computed_from_a_parameter_and_the_loop_counter_follows_the_counter():
    # `start_temperature * (step / n)`: annealed on every pass, whatever the caller passes
    source = ("import torch\n\n\ndef generate(net, seq: torch.Tensor, steps: int, start_temperature=1.0):\n"
              "    for left in reversed(range(steps)):  # graphsafe: region\n"
              "        temperature = start_temperature * (left / steps)\n"
              "        logits = net(seq)\n        seq = (logits / max(temperature, 1e-3)).argmax(-1)\n    return seq\n")
    found = [d for d in diagnostics(source) if d.code == "GS301"]
    assert [d.start.line for d in found] == [8] and "`left`" in found[0].message


HISTORY = '''\
import torch


def sample(model, x: torch.Tensor, sigmas: torch.Tensor){mark}
    ds = []
    info = {{"steps": 0}}
    for i in range(3):{loop_mark}
        d = model(x) - x
        ds.append(d)
        info["steps"] += 1
        fresh = []
        fresh.append(d)
        x = x + d
    return x, ds
'''


def test_a_container_every_pass_shares_changed_in_the_body_is_reported_in_the_loop_region():
    source = HISTORY.format(mark=":", loop_mark="  # graphsafe: region")
    assert lines_of(source, "GS503") == [9, 10]


def test_the_same_container_made_in_each_call_of_a_function_region_is_a_local():
    source = HISTORY.format(mark=":  # graphsafe: region", loop_mark="")
    assert lines_of(source, "GS503") == []


def test_a_local_the_body_advances_for_the_next_pass_is_a_counter_replay_never_advances():
    source = ("import torch\n\n\ndef generate(model, tokens: torch.Tensor, n: int):\n    pos = tokens.shape[1]\n"
              "    for _ in range(n):{mark}\n        logits = model(tokens[:, pos - 1:pos])\n"
              "        pos += 1\n    return logits\n")
    assert lines_of(source.format(mark="  # graphsafe: region"), "GS302") == [8]
    assert lines_of(source.format(mark="").replace("n: int):", "n: int):  # graphsafe: region"), "GS302") == []


def test_a_computed_count_added_to_a_carried_name_is_no_host_counter_but_a_literal_step_is():
    # `current` may be a tensor (a sum over the batch): `num_tokens += current` is then device work
    source = ("import torch\n\n\ndef run(model, loader, n: int):\n    num_tokens = 0\n    pos = 0\n"
              "    for batch in loader:  # graphsafe: region\n        current = (batch != 0).sum()\n"
              "        num_tokens += current\n        pos += 1\n        model(batch, pos)\n")
    assert lines_of(source, "GS302") == [10]


def test_a_sum_started_as_a_number_and_carried_between_passes_is_a_rebinding_unless_each_pass_resets_it():
    source = ("import torch\n\n\ndef run(model, xs, accum: int):\n    total = 0\n    seen = 0\n"
              "    for i, x in enumerate(xs):  # graphsafe: region\n        loss = model(x).sum()\n"
              "        total += loss.detach()\n        seen += loss.detach()\n        seen = 0\n"
              "        if (i + 1) % accum == 0:\n            total = 0\n")
    assert lines_of(source, "GS401") == [9]
