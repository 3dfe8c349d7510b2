"""GS702–GS709 on whole programs: how captures are set up (autocast, DDP, hooks, TE, loaders, compile)."""

from __future__ import annotations

import textwrap

from graphsafe.config import Settings
from graphsafe.fixer import fix_text
from tests.helpers import diagnostics


def found(source: str, prefix: str = "GS7") -> list[tuple[str, int]]:
    return [(d.code, d.start.line) for d in diagnostics(textwrap.dedent(source)) if d.code.startswith(prefix)]


DDP_TRAIN = textwrap.dedent("""\
    import os

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"


    def train_step(model, opt, x, y):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
        return loss


    def main(net, x, y):
        dist.init_process_group("nccl")
        model = DDP(net, device_ids=[0])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                train_step(model, opt, x, y)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            loss = train_step(model, opt, x, y)
        for _ in range(100):
            g.replay()
""")


def test_ddp_capture_setup_env_stream_and_warmup():
    d = [x for x in diagnostics(DDP_TRAIN) if x.code in ("GS704", "GS705")]
    assert [(x.code, x.start.line, x.start.column) for x in d] == [("GS705", 7, 0), ("GS704", 20, 12), ("GS704", 25, 17)]
    assert all(x.region is None for x in d)
    assert d[0].message == (
        "`TORCH_NCCL_ASYNC_ERROR_HANDLING` is set to \"1\" in a file that captures DDP graphs; set it to \"0\" "
        "before init_process_group: slower or risky"
    )
    assert d[2].message.startswith("this warm-up runs 3 iterations before capturing a DDP model; DDP needs at least 11")


def test_ddp_capture_setup_done_right_is_silent():
    good = (
        DDP_TRAIN.replace('"1"', '"0"')
        .replace("    model = DDP(net, device_ids=[0])\n", "")
        .replace("    with torch.cuda.stream(s):\n", "    with torch.cuda.stream(s):\n        model = DDP(net, device_ids=[0])\n")
        .replace("range(3)", "range(11)")
        .replace("opt = torch.optim.SGD(model.parameters(), lr=0.1)", "opt = torch.optim.SGD(net.parameters(), lr=0.1)")
    )
    assert found(good) == []


def test_ddp_without_capture_is_not_a_graph_problem():
    source = DDP_TRAIN.split("    g = torch.cuda.CUDAGraph()")[0]
    assert "DDP(net" in source and "torch.cuda.graph" not in source
    assert found(source) == []


AMP = textwrap.dedent("""\
    import torch
    from torch.cuda.amp import autocast


    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(64, 64)

        def forward(self, x):
            with torch.autocast("cuda", dtype=torch.bfloat16):  # inside the captured code: fine
                return self.lin(x)


    def graph_blocks(blocks, x):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return torch.cuda.make_graphed_callables(tuple(blocks), tuple((x,) for _ in blocks))


    def capture(block, x):
        g = torch.cuda.CUDAGraph()
        with autocast(dtype=torch.float16):  # keep
            for _ in range(3):
                block(x)
            with torch.cuda.graph(g):
                out = block(x)
        return g, out
""")


def test_autocast_cache_around_captures():
    d = [x for x in diagnostics(AMP) if x.code == "GS702"]
    assert [(x.start.line, x.start.column) for x in d] == [(16, 9), (22, 9)]
    assert d[0].message == (
        "`torch.autocast(...)` around `make_graphed_callables` keeps autocast's weight-cast cache, which it refuses; "
        "pass `cache_enabled=False`: capture fails"
    )
    assert d[1].message == (
        "`torch.cuda.amp.autocast(...)` around a `torch.cuda.graph` capture keeps autocast's weight-cast cache: the "
        "graph can read cast copies that are freed when the block exits; pass `cache_enabled=False`: replay is "
        "silently wrong"
    )


def test_autocast_fix_adds_cache_enabled_false_and_is_idempotent():
    outcome = fix_text(AMP, "amp.py", Settings(), [], unsafe=False)
    assert outcome.error is None
    assert outcome.fixed == AMP.replace(
        'with torch.autocast("cuda", dtype=torch.bfloat16):\n        return torch.cuda',
        'with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):\n        return torch.cuda',
    ).replace("autocast(dtype=torch.float16):  # keep", "autocast(dtype=torch.float16, cache_enabled=False):  # keep")
    again = fix_text(outcome.fixed, "amp.py", Settings(), [], unsafe=False)
    assert again.fixed == outcome.fixed
    assert [x for x in again.remaining if x.code == "GS702"] == []


def test_grad_scaler_step_reached_from_a_graph():
    source = """
        import torch
        from torch.amp import GradScaler


        class Trainer:
            def __init__(self, model, opt):
                self.model, self.opt = model, opt
                self.grad_scaler = GradScaler("cuda")

            def step(self, x):
                loss = self.model(x).float().mean()
                self.grad_scaler.scale(loss).backward()
                self.grad_scaler.unscale_(self.opt)
                self.grad_scaler.step(self.opt)
                self.grad_scaler.update()
                return loss

            def eager_epoch(self, batches):
                for x in batches:
                    self.step(x)  # not captured: fine

            def capture(self, x):
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    self.step(x)
                return g
    """
    d = [x for x in diagnostics(textwrap.dedent(source)) if x.code == "GS703"]
    assert [(x.start.line, x.chain) for x in d] == [(15, ("torch.cuda.graph block in Trainer.capture (line 25)", "Trainer.step"))]
    assert d[0].message == (
        "`self.grad_scaler.step()` of a GradScaler reads `found_inf` on the host and waits for the GPU: capture fails"
    )


def test_grad_scaler_with_fused_optimizer_or_outside_regions():
    source = """
        import torch


        def step(model, x, scaler, opt):  # graphsafe: region
            scaler.scale(model(x).sum()).backward()
            scaler.step(opt)
            scaler.update()


        def main(model, x):
            opt = torch.optim.AdamW(model.parameters(), fused=True, capturable=True)
            scaler = torch.amp.GradScaler("cuda")
            step(model, x, scaler, opt)
            scaler.step(opt)
    """
    assert found(source) == []


def test_hooks_before_graphing_in_a_builder_and_a_constructor():
    source = """
        import torch
        from torch.cuda import make_graphed_callables


        def log_shapes(module, args, out):
            print(out.shape)


        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = torch.nn.Linear(8, 8)
                self.decoder = torch.nn.Linear(8, 8)
                self.encoder.register_forward_hook(log_shapes)

            def graph(self, x):
                self.encoder = make_graphed_callables(self.encoder, (x,))
                self.decoder = make_graphed_callables(self.decoder, (x,))
                self.decoder.register_forward_hook(log_shapes)  # after graphing: allowed


        def build(x):
            head = torch.nn.Linear(8, 8).cuda()
            head.register_full_backward_hook(lambda m, gi, go: None)
            head = make_graphed_callables(head, (x,))
            head.register_forward_pre_hook(lambda m, a: None)
            return head
    """
    d = [x for x in diagnostics(textwrap.dedent(source)) if x.code == "GS706"]
    assert [x.start.line for x in d] == [15, 25]
    assert d[0].message == (
        "`self.encoder.register_forward_hook()` before `self.encoder` is passed to make_graphed_callables, "
        "which refuses hooked modules: capture fails"
    )


TE = textwrap.dedent("""\
    import torch
    import transformer_engine.pytorch as te
    from transformer_engine.common.recipe import DelayedScaling

    recipe = DelayedScaling()


    def build(layers, x):
        return te.make_graphed_callables(tuple(layers), tuple((x,) for _ in layers), fp8_enabled=True, fp8_recipe=recipe)


    def forward(graphed, x):
        for layer in graphed:
            x = layer(x)
        return x


    def main(layers, batches):
        first, second = te.make_graphed_callables((layers[0], layers[1]), ((batches[0],), (batches[0],)), fp8_enabled=True)
        for x in batches:
            with te.fp8_autocast(enabled=True, fp8_recipe=recipe):
                y = second(first(x))
            z = first(x)
            run_eval(x)


    def run_eval(x):
        return second(x)
""")


def test_te_fp8_graphs_called_outside_fp8_autocast():
    d = [x for x in diagnostics(TE) if x.code == "GS707"]
    assert [(x.start.line, x.start.column) for x in d] == [(23, 12), (28, 11)]
    assert d[0].message == (
        "`first` is an FP8 graph from Transformer Engine, called outside `fp8_autocast`: its FP8 scaling state is "
        "not updated: replay is silently wrong"
    )


def test_te_call_inside_a_function_called_under_fp8_autocast_is_fine():
    source = TE.replace("        run_eval(x)\n", "").replace(
        "            y = second(first(x))\n", "            y = second(first(x))\n            run_eval(x)\n"
    )
    assert source.count("run_eval(x)") == 2  # the call (now under fp8_autocast) and the def
    assert [line for code, line in found(source) if code == "GS707"] == [24]  # only `z = first(x)`


LOADER = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader


    def serve(model, dataset, static_x):
        loader = DataLoader(dataset, batch_size=8, num_workers=2, pin_memory=True)
        g = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(g, pool=None):
            static_y = model(static_x)
        g2 = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g2, capture_error_mode="relaxed"):
            static_z = model(static_x)
        for batch in loader:
            static_x.copy_(batch, non_blocking=True)
            g.replay()
""")


def test_global_capture_mode_with_a_pinned_loader_and_its_fix():
    d = [x for x in diagnostics(LOADER) if x.code == "GS708"]
    assert [(x.start.line, x.start.column) for x in d] == [(8, 26)]
    assert d[0].fix is not None and d[0].fix.applicability.value == "safe"
    outcome = fix_text(LOADER, "serve.py", Settings(), [], unsafe=False)
    assert outcome.fixed == LOADER.replace(
        "torch.cuda.graph(g, pool=None)", 'torch.cuda.graph(g, pool=None, capture_error_mode="thread_local")'
    )
    assert found(outcome.fixed) == []


def test_global_capture_mode_without_pinned_memory_is_fine():
    assert found(LOADER.replace("pin_memory=True", "pin_memory=False")) == []


def test_compiled_step_captured_without_warmup():
    source = """
        import torch


        class Engine:
            def __init__(self, model):
                self.model = torch.compile(model, dynamic=False)

            def capture_cold(self, x):
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    out = self.model(x)
                return g, out

            def capture_warm(self, x):
                s = torch.cuda.Stream()
                with torch.cuda.stream(s):
                    for _ in range(3):
                        self.model(x)
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    out = self.model(x)
                return g, out
    """
    d = [x for x in diagnostics(textwrap.dedent(source)) if x.code == "GS709"]
    assert [(x.start.line, x.chain) for x in d] == [(12, ("torch.cuda.graph block in Engine.capture_cold (line 11)",))]
    assert d[0].message == (
        "`self.model` is compiled by torch.compile and first called during capture, so it compiles there: capture fails"
    )


def test_files_without_captures_stay_quiet():
    source = """
        import os
        import torch
        from torch.utils.data import DataLoader

        os.environ["NCCL_ASYNC_ERROR_HANDLING"] = "1"
        loader = DataLoader([1], pin_memory=True)
        model = torch.compile(torch.nn.Linear(2, 2))
        model.register_forward_hook(print)
        with torch.autocast("cuda"):
            y = model(torch.ones(2))
    """
    assert found(source) == []
