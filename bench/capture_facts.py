"""Facts the real-code labels and graphsafe's rules disagree on, measured on a GPU.

    python bench/capture_facts.py [--steps 8] [--json OUT]

Two training steps are captured whole with `torch.cuda.graph` after a warm-up on a side stream,
replayed for several steps with new inputs copied into static buffers, and compared with an
eager twin (same initial weights, same inputs) after every step:

- `autocast_inside`: the step enters `torch.autocast("cuda", dtype=torch.bfloat16)` itself, with
  its weight-cast cache enabled (the default), and an SGD step changes the weights every step.
  Labellers marked such a block a capture hazard; GS702 says a block *inside* the captured code
  is fine (its cache lives and dies within the capture). If replays reused casts of old weights,
  the graphed losses would drift from eager's.
- `grad_scaler_update`: `scaler.scale(loss).backward(); scaler.step(opt); scaler.update()` with a
  fused, capturable AdamW, some steps fed an inf so that the scaler skips them and backs off.
  Labellers marked `scaler.update()` a capture hazard (it resets Python per-optimizer state that
  replay never resets); GS703 says update() runs on the device and captures fine.

- `multinomial_one_sample`: `torch.multinomial(probs, 1)` (a decoder's sampling step) captured
  alone. Two labellers disagree (one: its argument check reads the device, a sync; the other: it
  checks with an asynchronous assert). If it syncs, capture raises.

- `distribution_validation`: GS111 says a `torch.distributions` distribution built with argument
  validation on (the default), and its `log_prob`, read their checks on the host, so capture
  fails; with `validate_args=False` both capture. Three captures of `Normal(mean, std)` (+
  `log_prob`): validation on at construction, on only for the sample, off.

- `scheduled_lr`: GS301 says a torch optimizer's step reads `group["lr"]` as a Python number, so a
  learning-rate scheduler stepped between replays (eagerly, outside the graph) no longer changes
  the captured step's rate; with a tensor `lr` (`lr=torch.tensor(...)`, `capturable=True`) the
  scheduler fills it in place and replays follow. Two captures of an AdamW step with a `StepLR`
  halving the rate after every step, compared with an eager twin: float lr, tensor lr.

Each case reports whether every step matched (max abs difference of loss, weights and, for the
scaler, its scale) and the first error if capture or replay raised. Needs CUDA.
"""

from __future__ import annotations

import argparse
import json
import sys


def _model(torch, seed: int):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 8)).cuda()


def _inputs(torch, steps: int, poison: set[int]):
    gen = torch.Generator(device="cuda").manual_seed(7)
    out = []
    for i in range(steps):
        x = torch.randn(32, 64, device="cuda", generator=gen)
        if i in poison:
            x[0, 0] = float("inf")  # a non-finite gradient: the scaler skips the step and backs off
        out.append((x, torch.randn(32, 8, device="cuda", generator=gen)))
    return out


def _warm_up(torch, run) -> None:
    """`run()` on a side stream joined back to the current one, as torch asks before a capture."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        run()
    torch.cuda.current_stream().wait_stream(side)


def _max_diff(torch, a, b) -> float:
    return max(float((x.float() - y.float()).abs().max()) for x, y in zip(a, b))


def autocast_inside(torch, steps: int) -> dict:
    def make():
        model = _model(torch, 0)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        return model, opt

    def step(model, opt, x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16):  # cache_enabled defaults to True
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
        return loss

    data = _inputs(torch, steps + 3, set())
    eager_model, eager_opt = make()
    graph_model, graph_opt = make()
    static_x, static_y = data[0][0].clone(), data[0][1].clone()
    def warm():
        for x, y in data[:3]:  # eager, on both twins alike
            step(graph_model, graph_opt, x, y)
            step(eager_model, eager_opt, x, y)

    _warm_up(torch, warm)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = step(graph_model, graph_opt, static_x, static_y)
    # capture recorded the step without running it: both twins are at the same weights here
    worst = 0.0
    for x, y in data[3:]:
        static_x.copy_(x)
        static_y.copy_(y)
        graph.replay()
        loss = step(eager_model, eager_opt, x, y)
        worst = max(worst, abs(float(static_loss) - float(loss)),
                    _max_diff(torch, graph_model.parameters(), eager_model.parameters()))
    return {"steps": steps, "max_abs_diff": worst, "equal": worst == 0.0}


def grad_scaler_update(torch, steps: int) -> dict:
    def make():
        model = _model(torch, 1)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True, capturable=True)
        scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 10, growth_interval=2)
        return model, opt, scaler

    def step(model, opt, scaler, x, y):
        loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=False)
        return loss

    data = _inputs(torch, steps + 3, poison={5, 6})
    eager = make()
    graphed = make()
    static_x, static_y = data[0][0].clone(), data[0][1].clone()
    def warm():
        for x, y in data[:3]:
            step(*graphed, x, y)
            step(*eager, x, y)

    _warm_up(torch, warm)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = step(*graphed, static_x, static_y)
    worst, scales = 0.0, []
    for x, y in data[3:]:
        static_x.copy_(x)
        static_y.copy_(y)
        graph.replay()
        loss = step(*eager, x, y)
        scales.append((float(graphed[2].get_scale()), float(eager[2].get_scale())))
        diff_loss = 0.0 if (torch.isnan(static_loss) and torch.isnan(loss)) or float(static_loss) == float(loss) \
            else abs(float(static_loss) - float(loss))
        worst = max(worst, diff_loss, _max_diff(torch, graphed[0].parameters(), eager[0].parameters()),
                    abs(scales[-1][0] - scales[-1][1]))
    return {"steps": steps, "max_abs_diff": worst, "equal": worst == 0.0, "scales (graphed, eager)": scales}


def multinomial_one_sample(torch, steps: int) -> dict:
    """Capture `torch.multinomial(probs, 1)`; replays draw from the graph's generator state, so
    what is compared is that capture succeeds and replays give valid, changing indices."""
    probs = torch.softmax(torch.randn(4, 50, device="cuda"), -1)
    _warm_up(torch, lambda: [torch.multinomial(probs, 1) for _ in range(3)])
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = torch.multinomial(probs, 1)
    drawn = []
    for _ in range(steps):
        graph.replay()
        drawn.append(out.flatten().tolist())
    valid = all(0 <= i < 50 for row in drawn for i in row)
    return {"steps": steps, "captured": True, "valid_indices": valid, "changes_between_replays": len({tuple(r) for r in drawn}) > 1}


def distribution_validation(torch, steps: int) -> dict:
    """Capture `Normal(mean, std).log_prob(x)` three ways: validation on, on only for the sample
    (`log_prob` of a distribution built with it off, then switched on), off. Capture that raises
    is the finding; the one that captures is replayed and compared with eager."""
    mean = torch.randn(16, device="cuda")
    std = torch.rand(16, device="cuda") + 0.5
    x = torch.randn(16, device="cuda")
    found = {}

    def step(validate: bool, sample_only: bool = False):
        dist = torch.distributions.Normal(mean, std, validate_args=validate and not sample_only)
        if sample_only:
            dist._validate_args = True
        return dist.log_prob(x)

    for name, validate, sample_only in (("unvalidated", False, False), ("sample_validated", True, True),
                                        ("validated", True, False)):
        _warm_up(torch, lambda: [step(validate, sample_only) for _ in range(3)])
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                out = step(validate, sample_only)
        except Exception as error:
            found[name] = {"captured": False, "error": f"{type(error).__name__}: {error}"[:300]}
            torch.cuda.synchronize()
            continue
        worst = 0.0
        for _ in range(steps):
            x.copy_(torch.randn(16, device="cuda"))
            graph.replay()
            worst = max(worst, _max_diff(torch, out, step(False)))
        found[name] = {"captured": True, "max_abs_diff": worst}
    return found


def scheduled_lr(torch, steps: int) -> dict:
    found = {}
    for name, tensor_lr in (("float_lr", False), ("tensor_lr", True)):
        def make():
            model = _model(torch, 2)
            lr = torch.tensor(1e-2, device="cuda") if tensor_lr else 1e-2
            opt = torch.optim.AdamW(model.parameters(), lr=lr, capturable=True)
            return model, opt, torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

        def step(model, opt, x, y):
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=False)
            return loss

        data = _inputs(torch, steps + 3, set())
        eager, graphed = make(), make()
        static_x, static_y = data[0][0].clone(), data[0][1].clone()
        def warm():
            for x, y in data[:3]:
                for model, opt, sched in (graphed, eager):
                    step(model, opt, x, y)
                    sched.step()

        _warm_up(torch, warm)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step(graphed[0], graphed[1], static_x, static_y)
        worst = 0.0
        for x, y in data[3:]:
            static_x.copy_(x)
            static_y.copy_(y)
            graph.replay()
            graphed[2].step()  # the scheduler runs eagerly between replays, as in a training loop
            step(eager[0], eager[1], x, y)
            eager[2].step()
            worst = max(worst, _max_diff(torch, graphed[0].parameters(), eager[0].parameters()))
        found[name] = {"max_abs_diff": worst, "equal": worst == 0.0,
                       "final_lr": float(graphed[1].param_groups[0]["lr"])}
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("capture_facts: needs a CUDA GPU", file=sys.stderr)
        return 2
    results = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    for case in (autocast_inside, grad_scaler_update, multinomial_one_sample, distribution_validation, scheduled_lr):
        try:
            results[case.__name__] = case(torch, args.steps)
        except Exception as error:  # a capture or replay that raises is the finding
            results[case.__name__] = {"error": f"{type(error).__name__}: {error}"[:500]}
    print(json.dumps(results, indent=2))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
