"""GS402–GS407 on whole programs: host data, growing buffers, allocator work, kept outputs."""

from __future__ import annotations

import textwrap

from graphsafe.config import Settings
from graphsafe.fixer import fix_text
from tests.helpers import diagnostics


def found(source: str, prefix: str = "GS4") -> list[tuple[str, int, tuple[str, ...]]]:
    return [(d.code, d.start.line, d.chain) for d in diagnostics(textwrap.dedent(source)) if d.code.startswith(prefix)]


DECODER = textwrap.dedent("""\
    import torch
    from torch import nn


    class Decoder(nn.Module):
        def __init__(self, vocab: int, dim: int):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.head = nn.Linear(dim, vocab)
            self.register_buffer("kv", torch.zeros(1, 0, dim))
            self.bias = torch.tensor([0.0, 1.0])  # set-up: not in the region

        def forward(self, tokens: torch.Tensor, temperature: float):
            h = self.embed(tokens)
            self.kv = torch.cat([self.kv, h], dim=1)
            scale = torch.tensor([1.0, 0.5], device="cuda")
            return self.head(self.kv.mean(1)) * scale


    def load(batch):
        return batch["ids"].to("cuda", non_blocking=True)  # the data loader: not in the region


    def main(loader):
        model = Decoder(100, 16).cuda()
        static_ids = load(next(iter(loader)))
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            logits = model(static_ids, 1.0)
        for batch in loader:
            static_ids.copy_(load(batch))
            g.replay()
""")


def test_decoder_growing_cache_and_constant_in_forward():
    hits = [h for h in found(DECODER) if h[0] != "GS401"]
    chain = ("torch.cuda.graph block in main (line 28)", "Decoder.forward")
    assert hits == [("GS404", 15, chain), ("GS402", 16, chain)]
    messages = {d.code: d.message for d in diagnostics(DECODER)}
    assert messages["GS404"] == (
        "`self.kv` is concatenated onto itself, so it grows every step while the graph replays one shape: "
        "replay is silently wrong"
    )
    assert messages["GS402"] == (
        "`torch.tensor(...)` copies host data to the GPU, which is refused during capture: capture fails"
    )


def test_host_data_in_a_graphed_callable_and_cpu_scalars():
    source = """
        import numpy as np
        import torch


        def policy_step(obs: torch.Tensor, epsilon: float, table):
            noise = torch.from_numpy(np.random.rand(4)).cuda()
            eps = torch.tensor(epsilon)
            rows = torch.as_tensor(table, device=obs.device)
            same = torch.as_tensor(obs)
            return obs * eps + noise + rows + same


        def build(obs):
            return torch.cuda.make_graphed_callables(policy_step, (obs, 0.1, [1.0]))
    """
    d = [x for x in diagnostics(textwrap.dedent(source)) if x.code == "GS402"]
    assert [(x.start.line, x.start.column) for x in d] == [(7, 12), (8, 10), (9, 11)]
    assert d[0].message.startswith("`torch.from_numpy(...).cuda()` copies host data to the GPU")
    # `epsilon` is the graphed callable's own number: what its callers give may vary
    assert d[1].message.endswith("replay keeps the values seen at capture: replay is silently wrong "
                                 "(may vary: no call of `policy_step` shows what it is passed)")
    assert d[2].message.endswith("capture fails")


def test_device_moves_of_known_device_tensors_and_modules_are_fine():
    source = """
        import torch
        from torch import nn


        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def forward(self, x: torch.Tensor):  # graphsafe: region
                self.proj.to("cuda")
                y = x.to("cuda")
                z = (x * 2).cuda()
                w = torch.zeros(4).cuda()
                return self.proj(y + z + w)
    """
    assert found(source) == [("GS402", 15, ("Head.forward",))]


def test_growing_buffers_only_when_they_outlive_the_step():
    source = """
        import torch


        def step(cache: torch.Tensor, k: torch.Tensor, steps: int):  # graphsafe: region
            out = k[:, :0]
            for _ in range(4):
                out = torch.cat([out, k], dim=1)  # local, same shapes every replay
            cache = torch.cat((cache, k), dim=1)  # the caller's buffer grows
            stacked = torch.stack([cache, cache])
            return cache, out, stacked
    """
    assert [(c, line) for c, line, _ in found(source)] == [("GS404", 9)]


def test_allocator_and_pinning_in_a_training_step():
    source = """
        import torch
        import torch.cuda as tc


        def train_step(model, opt, x: torch.Tensor, host: torch.Tensor):
            loss = model(x).mean()
            loss.backward()
            opt.step()
            peak = tc.max_memory_allocated()
            tc.empty_cache()
            staged = host.pin_memory().to("cuda", non_blocking=True)
            buf = torch.empty(4, pin_memory=True)
            return loss, peak, staged, buf


        def capture(model, opt, x, host):
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                train_step(model, opt, x, host)
            torch.cuda.empty_cache()  # outside the capture: fine
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = train_step(model, opt, x, host)
            return g, out
    """
    d = [x for x in diagnostics(textwrap.dedent(source)) if x.code in ("GS405", "GS406")]
    assert [(x.code, x.start.line) for x in d] == [("GS405", 10), ("GS405", 11), ("GS406", 12), ("GS406", 13)]
    assert d[0].message == (
        "`torch.cuda.max_memory_allocated()` reads allocator state on the host: replay keeps the value seen at "
        "capture: slower or risky"
    )
    assert all(x.chain == ("torch.cuda.graph block in capture (line 23)", "train_step") for x in d)


BENCH = textwrap.dedent("""\
    import torch


    def run(model, batches):
        static_x = torch.zeros(8, 16, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_out = model(static_x).float()
            static_logits, static_aux = static_out.chunk(2, dim=-1)
        outputs, by_step = [], {}
        for i, batch in enumerate(batches):
            static_x.copy_(batch)
            g.replay()
            outputs.append(static_out)  # keeps one tensor, overwritten every replay
            by_step[i] = (static_logits, static_aux)
            outputs.append(static_out.clone())  # fine
            by_step[-1] = static_out.detach().cpu()  # fine: a copy
        return outputs, by_step


    def stream(model, batches):
        static_x = torch.zeros(8, 16, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = model(static_x)
        for batch in batches:
            static_x.copy_(batch)
            g.replay()
            yield out
        out = out.clone()
        yield out  # rebound to a copy first: fine
""")


def test_graph_outputs_kept_across_replays():
    d = [x for x in diagnostics(BENCH) if x.code == "GS407"]
    assert [(x.start.line, x.start.column) for x in d] == [(14, 23), (15, 22), (15, 37), (29, 14)]
    assert all(x.region is None and x.chain == () for x in d)  # reported where the loop is
    assert d[0].message == (
        "`static_out` is a graph output that the next replay overwrites in place; keep `static_out.clone()` "
        "instead: replay is silently wrong"
    )
    # `model(...)` alone is not known to be a tensor (it may return a tuple): `.clone()` is unsafe there.
    assert [x.fix.applicability.value for x in d] == ["safe", "safe", "safe", "unsafe"]


def test_graph_output_fix_clones_and_is_idempotent():
    safe = fix_text(BENCH, "bench.py", Settings(), [], unsafe=False)
    assert safe.error is None
    assert "        by_step[i] = (static_logits.clone(), static_aux.clone())\n" in safe.fixed
    assert "outputs.append(static_out.clone())  # keeps" in safe.fixed
    assert "        yield out\n" in safe.fixed  # unsafe: not without --unsafe-fixes
    outcome = fix_text(BENCH, "bench.py", Settings(), [], unsafe=True)
    assert outcome.error is None
    assert "        outputs.append(static_out.clone())  # keeps one tensor" in outcome.fixed
    assert "        yield out.clone()\n    out = out.clone()" in outcome.fixed
    assert "clone().clone()" not in outcome.fixed
    again = fix_text(outcome.fixed, "bench.py", Settings(), [], unsafe=True)
    assert again.fixed == outcome.fixed
    assert [x for x in again.remaining if x.code == "GS407"] == []


def test_graph_output_attribute_across_methods_and_module_level_scripts():
    source = """
        import torch


        class Runner:
            def replay(self, history):
                self.g.replay()
                history.append(self.out)

            def capture(self, model, x):
                self.g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.g):
                    self.out = model(x)


        model = torch.nn.Linear(4, 4).cuda()
        x = torch.zeros(2, 4, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = model(x)
        seen = []
        for _ in range(3):
            g.replay()
            seen.append(y)
    """
    assert [(c, line) for c, line, _ in found(source)] == [("GS407", 8), ("GS407", 24)]


def test_no_graph_no_graph_output():
    source = """
        import torch


        def collect(model, batches):
            outs = []
            for b in batches:
                out = model(b)
                outs.append(out)
            return outs
    """
    assert found(source) == []


def test_graph_outputs_written_in_place_in_the_block_are_outputs_too():
    source = """
        import torch


        class Trainer:
            def __init__(self):
                self.static_loss = torch.zeros((), device="cuda")
                self.static_sum = torch.zeros((), device="cuda")
                self.static_in = torch.zeros(4, device="cuda")
                self.g = torch.cuda.CUDAGraph()

            def capture(self, model):
                with torch.cuda.graph(self.g):
                    loss = model(self.static_in).sum()
                    self.static_loss.copy_(loss)
                    torch.add(loss, 1.0, out=self.static_sum)

            def fit(self, batches, history: list, sums: list, inputs: list):
                for b in batches:
                    self.static_in.copy_(b)
                    self.g.replay()
                    history.append(self.static_loss)
                    sums.append({"sum": self.static_sum, "step": len(history)})
                    inputs.append(self.static_in)
    """
    # the input is copied into outside the block only: keeping it is not keeping an output
    assert [(c, line) for c, line, _ in found(source)] == [("GS407", 22), ("GS407", 23)]


def test_an_eager_fallback_on_one_branch_does_not_end_the_graph_output():
    source = """
        import torch


        def fit(step, x, batches, curve: list, use_graph: bool):
            graph = None
            if use_graph:
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    static_loss = step(x)
            for b in batches:
                x.copy_(b)
                if graph is not None:
                    graph.replay()
                else:
                    static_loss = step(x)
                curve.append(static_loss)
    """
    assert [(c, line) for c, line, _ in found(source)] == [("GS407", 17)]


def test_a_rebinding_on_every_path_ends_the_graph_output():
    source = """
        import torch


        def fit(step, x, batches, curve: list, clone_all: bool):
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_loss = step(x)
            for b in batches:
                x.copy_(b)
                graph.replay()
                if clone_all:
                    kept = static_loss.clone()
                    curve.append(kept)
                    static_loss = static_loss.clone()
                    curve.append(static_loss)
                static_loss = static_loss.clone()
                curve.append(static_loss)
    """
    assert found(source) == []


def test_outputs_written_in_place_by_a_method_the_block_calls():
    source = """
        import torch


        class Trainer:
            def __init__(self, model):
                self.model = model
                self.static_in = torch.zeros(4, device="cuda")
                self.static_loss = torch.zeros((), device="cuda")
                self.last_batch = torch.zeros(4, device="cuda")
                self.g = torch.cuda.CUDAGraph()

            def train_step(self):
                self.static_loss.copy_(self.model(self.static_in).sum())

            def remember(self, b):
                self.last_batch.copy_(b)

            def capture(self):
                with torch.cuda.graph(self.g):
                    self.train_step()

            def fit(self, batches, history: list, seen: list):
                for b in batches:
                    self.static_in.copy_(b)
                    self.remember(b)
                    self.g.replay()
                    history.append(self.static_loss)
                    seen.append(self.last_batch)
                    seen.append(self.static_in)
    """
    # written by a method the block calls: an output; written by methods run between replays: not
    assert [(c, line) for c, line, _ in found(source)] == [("GS407", 28)]  # history.append


PAGED = """
    import torch


    class Paged:
        def __init__(self):
            self.pages = {{}}

        def page_in(self, key: int, p: torch.Tensor) -> torch.Tensor:
            if key not in self.pages:
                self.pages[key] = {store}
            return self.pages[key].to(p.device, non_blocking=True)

        def step(self, p: torch.Tensor):  # graphsafe: region
            return p + self.page_in(0, p)
"""


def test_an_entry_of_a_table_of_cpu_tensors_moved_to_a_tensors_device():
    """`self.pages[k] = torch.zeros(...)` (no device), then `self.pages[k].to(p.device)` in the
    region: a pageable host-to-device copy, like `torch.ones(n).to(x.device)`."""
    found_here = found(PAGED.format(store="torch.zeros((2,) + tuple(p.shape))"))
    assert found_here == [("GS402", 12, ("Paged.step", "Paged.page_in"))]


def test_tables_of_device_or_pinned_tensors_stay_silent():
    for store in ("torch.zeros(p.shape, device=p.device)", "torch.zeros(p.shape, pin_memory=True)", "p.clone()"):
        assert found(PAGED.format(store=store), "GS402") == [], store  # (pinning there is GS406)


RAGGED = """
    import torch
    from torch.nn.utils.rnn import pad_sequence


    def score(id_lists: list[torch.Tensor], n: int):  # graphsafe: region
        flat = {flat}
        return flat.view({rows}, n, -1)
"""


def test_a_view_of_a_padded_batch_sized_by_the_list_length():
    """`pad_sequence` returns a tensor: its `.view(len(id_lists), ...)` takes a per-call length."""
    got = found(RAGGED.format(flat="pad_sequence(id_lists, batch_first=True)", rows="len(id_lists)"), "GS408")
    assert [(code, line) for code, line, _ in got] == [("GS408", 7), ("GS408", 8)]


def test_a_view_of_a_padded_batch_sized_by_its_own_shape_is_fine():
    got = found(RAGGED.format(flat="pad_sequence(id_lists, batch_first=True)", rows="flat.shape[0]"), "GS408")
    assert [(code, line) for code, line, _ in got] == [("GS408", 7)]  # pad_sequence itself only


def test_a_cpu_tensor_of_an_attribute_is_reported_only_where_the_attribute_changes_between_steps():
    constant = textwrap.dedent("""\
        import torch


        class Loss:
            def __init__(self, temp: float):
                self.temp = temp

            def __call__(self, x: torch.Tensor):  # graphsafe: region
                return x / torch.tensor(self.temp)
        """)
    counted = textwrap.dedent("""\
        import torch


        class Loss:
            def __init__(self):
                self.t = 0

            def __call__(self, x: torch.Tensor):  # graphsafe: region
                self.t += 1
                return x * torch.tensor(self.t)
        """)
    assert [d.start.line for d in diagnostics(constant) if d.code == "GS402"] == []
    assert [d.start.line for d in diagnostics(counted) if d.code == "GS402"] == [10]


DATA_SIZED = """
    import torch


    def sample(x: torch.Tensor, mask: torch.Tensor, k: int):  # graphsafe: region
        n = {size}
        return torch.arange(n, device=x.device), torch.zeros(x.shape[0], k, device=x.device)
"""


def test_a_factory_sized_by_a_number_read_from_the_device_has_a_data_dependent_shape():
    for size in ("mask.sum().item()", "int(mask.sum())", "x[mask].shape[0]"):
        got = found(DATA_SIZED.format(size=size), "GS408")
        assert [(code, line) for code, line, _ in got] == [("GS408", 7)], size
        assert not any("x.shape[0]" in str(g) for g in got)


def test_a_factory_sized_by_a_fixed_shape_or_a_number_parameter_is_not_data_sized():
    for size in ("x.shape[0]", "k * 2"):
        assert found(DATA_SIZED.format(size=size), "GS408") == [], size


def test_as_tensor_of_a_parameter_callers_may_give_a_tensor_is_no_host_copy():
    source = """
    import torch


    class Sampler:
        def __call__(self, sigma, sigma_next):
            t0, t1 = torch.as_tensor(sigma), torch.as_tensor(sigma_next)
            return (t1 - t0) * torch.as_tensor([1.0, 2.0])


    def sample(x: torch.Tensor, sigmas, sampler: Sampler):  # graphsafe: region
        for i in range(len(sigmas) - 1):
            x = x + sampler(sigmas[i], sigmas[i + 1])
        return x
    """
    lines = [line for code, line, _ in found(source) if code == "GS402"]
    assert lines == [8]  # host data, not the parameters
