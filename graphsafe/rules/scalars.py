"""Python scalars that change between steps (GS3xx): frozen into the graph at capture."""

from __future__ import annotations

import builtins
from dataclasses import replace

import libcst as cst

from graphsafe.analyzer import per_step, step_loops, value_arguments
from graphsafe.analyzer.callgraph import NOT
from graphsafe.analyzer.facts import SCHEDULED_LR
from graphsafe.analyzer.names import dotted
from graphsafe.analyzer.nodes import children, own_nodes
from graphsafe.analyzer.tensorness import PARAM_TENSOR_METHODS, SIZE_NAME, TORCH_NON_TENSOR

from graphsafe.model import Consequence, Example, Principle
from graphsafe.rewriters import scalar_buffer
from graphsafe.rules.base import Rule
from graphsafe.rules.branch import truth_tested
from graphsafe.rules.optimizer import scheduled_here, stepped_optimizer

# Arguments that are sizes, not values: a changing size is a shape change (re-capture), not a
# frozen value, and config ints (`num_classes=n_classes`) are the common case.
SIZE_KEYWORDS = frozenset(
    "size shape dim dims num_classes output_size num_samples k chunks split_size_or_sections sections fill_value minlength".split()
)
SIZE_METHODS = frozenset(
    """view reshape expand repeat permute transpose split chunk narrow unsqueeze squeeze flatten
    unflatten size topk new_zeros new_ones new_empty new_full movedim tensor_split unfold""".split()
)
FACTORIES = frozenset("zeros ones empty full rand randn randint zeros_like ones_like empty_like full_like eye".split())

# How a GS301 on a torch optimizer's step with a scheduled learning rate starts: `graph` leaves it
# to graphed(train=True), which reads the groups' rate from a device tensor refreshed per replay
SCHEDULED_LR_READ = "the learning rate"


def reads_scheduled_lr(d) -> bool:
    """A GS301 on a torch optimizer's step whose Python learning rate the program schedules."""
    return d.code == "GS301" and d.message.startswith(SCHEDULED_LR_READ + " `")


# param_groups keys whose Python values a captured optimizer step bakes in
OPTIMIZER_KEYS = frozenset({"lr", "betas", "momentum", "weight_decay", "eps", "alpha", "initial_lr"})


_SCALED_MODULE = """
class C(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4){init_tail}

    def step2(self, x: torch.Tensor, scale: {annotation}):  # graphsafe: region
        return self.lin(x) * scale

    def run(self, x: torch.Tensor, scales: list[float]):
        for s in scales:
            x = {call}
        return x
"""


class PythonScalarInput(Rule):
    """## What it does
    Flags a Python number that changes from step to step (a learning rate, a temperature, a
    step counter, a value from a schedule) where a captured region uses it in tensor math,
    indexing, an optimizer setting, or an `if` that decides which tensor work runs.

    ## Why is this bad?
    A graph records kernels with their arguments. A Python number is read once, while the
    graph is captured, and becomes a constant of the graph: every replay uses the value from
    capture (the first learning rate, the first temperature, the first cache position), with
    no error.

    ## Example
    ```python
    def decode_step(logits, temperature: float):
        return logits / temperature
    ```

    ## Use instead
    Keep the value in a device tensor created once outside the graph, update it before each
    replay, and read it inside:
    ```python
    temperature_t = torch.ones((), device="cuda")   # once
    temperature_t.fill_(temperature)                # before each replay
    logits / temperature_t                          # inside the region
    ```

    ## Fix safety
    The fix rewrites the region and its callers together, so it is offered only where one file
    shows every place: a number parameter (`scale: float`, `t: int`) of a method of an
    `nn.Module` that is itself marked as a region (`@graphsafe.region`, `# graphsafe: region`),
    read only as the right operand of `+ - *` on a tensor or (an `int`) as the only index of
    a tensor (`self.alphas[t]`), and called only as `self.method(...)` outside capture blocks.
    Then `__init__` registers a non-persistent buffer (`torch.zeros(())`, int64 for an `int`;
    it follows `.to(device)`), the parameter is annotated `torch.Tensor`, and each call passes
    `self._method_param.fill_(value)`: filled outside the region, read inside it. No fix where
    the value also flows into Python math or control flow, a list, another call or an
    optimizer's `param_groups`, where the method is referenced otherwise (`torch.compile(
    self.step)`, `other.step(...)`), or where it is called from a `torch.cuda.graph` block (the
    fill would belong before each `replay()`, with a value the analyzer cannot know).

    The fix is unsafe. Eager values are bitwise equal for float32 operands with at least one
    dimension on CPU and CUDA (the kernel converts the scalar to its math type from a number
    or a 0-dim tensor alike; a graph captured with the buffer follows each new value: checked
    on an H100 by bench/scalar_fix_cuda.py), for bfloat16/float16 operands on CPU only (CUDA
    rounds a 0-dim device tensor to the operand's dtype first), and for integer operands and
    indexes of an `int` (tested with random values, NaN and inf). They differ for a float64
    operand (the value is held as float32) and in dtype for a 0-dim operand of another
    dtype. Under autograd, `x * scale` now saves the buffer for backward: a graph spanning two
    calls fails in backward because the next call's `fill_` changed it. An index reads a copy
    rather than a view, and a table kept as a plain attribute (not a buffer) does not follow
    the module to the buffer's device. `model.half()` / `.to(dtype)` casts the buffer too,
    rounding the number to that dtype. Callers in other files keep passing numbers (still
    correct eagerly, not graph-safe).

    ## Precise semantics
    A number is flagged when it is one of the values below and the region uses it in one of
    the ways below.

    **Values that change between steps**
    - a number parameter of a captured function (a region root: `lr: float`,
      `temperature: float`, a sampler's `t: int`; a function called from a `torch.cuda.graph`
      block is a callee, see *Callee parameters*), judged by its callers: reported where one
      passes a per-step value (a loop variable, a counter) or a run saw it change; silent where
      every visible caller passes a step-invariant one (a literal, a per-run setting such as
      `eta` read from a config); reported with "may vary" in the message where no call is
      visible or the caller captures (the value is then baked at capture);
    - a number attribute the program updates: `self.pos += T`, `self.ent_coef *= decay`,
      `self.beta = cfg.beta * warmup` outside `__init__`, `session.temperature = t` in a loop,
      or from its old value anywhere: `m.p = max(floor, m.p * decay)`, `m.global_step += 1`;
    - a setting that starts from a config field or a number parameter and is rebound in a loop
      with a value the pass computes: `self.loss_scale = scaler.update(...)`,
      `self.guidance = guidance_at(i, n)`, or outside `__init__` with what a helper (of any
      module) or a schedule object gives a counter or a number parameter:
      `self.explore = self.sched.value(self.served)`,
      `self.forget = decay_at(self.served, cfg.forget)` before each replay;
    - a number field of a dataclass set so, `state.temperature = t`;
    - the length of a container a method other than `__init__` grows, `len(self.prev_f)` with
      `self.prev_f.appendleft(f)` in `_update_history` (a solver's history filling up);
    - an entry of a dict attribute that starts as a number or setting,
      `self.hp["lr"] = lr_at(i)`;
    - an optimizer's param-group entry read in its step: `group["lr"]` always (schedulers
      rewrite it), another key (`group["momentum"]`) where some code of the project rewrites it
      between steps: in a loop besides the one over the param groups (a warm-up in the batch
      loop), in a `step` method (a scheduler's), or with a per-step number; a key set once by a
      setup function (`group["weight_decay"] = weight_decay`) is a per-run setting;
    - a number computed from one:
      - arithmetic, `min`/`max`, `math.exp(...)`, each operand on its own:
        `self.cfg.lr * lr_scale` counts for `lr_scale`;
      - a helper method or property that returns it or a comparison of it
        (`return self.updates % k == 0`, tested as `if self.should_eval:`; a local holding such
        a comparison, `flag = self.updates % k == 0`, likewise; not one whose return is tensor
        arithmetic, `return photo + w_at(self.step) * smooth`: reported there, where the number
        meets the tensor, not at the helper's call);
      - a helper of this file whose returns are number arithmetic given a counter:
        `self.lr_at(self.updates)`;
      - a lambda held in an attribute or a local given one: `self.warmup(self.updates)`;
      - a function or method annotated `-> float` given it (`temp = self.teacher_temp(epoch)`,
        also where `epoch` is a parameter that callers pass a per-step number);
      - a helper imported from another module of the program given a counter:
        `lr_at(self.step, cfg.lr)`, `schedules.lr_at(it, cfg)` in a method whose `it` the
        region fills with one;
      - a method of a schedule object of the program given one:
        `self.sched.value(self.updates)`.

      The counter may be held by another object, built in `__init__` or given to the
      constructor, whose class (in any file) advances it per step: `lr_at(self.state.step)`,
      `self.sched.value(self.trainer.step)`; not a field nothing advances.

    **Uses inside the region**
    - tensor math (comparisons with a tensor included, a method only tensors have such as
      `lerp_` on an element of a dict of tensors);
    - an argument a torch op bakes into its kernel as a value, whatever the other arguments
      are (sizes beside it stay sizes): the fill of `torch.full(size, t)`, `full_like`,
      `x.new_full`, `fill_`, `masked_fill`, `index_fill`; the bounds of `arange`/`linspace`;
      `narrow`'s start; `clamp`/`clip`'s `min`/`max`; `pow`'s exponent; `roll`'s shifts;
      `lerp`'s weight; `alpha=` of `add`/`sub` and `value=` of `addcmul`/`addcdiv`
      (analyzer/value_arguments.py), also after host math: `s = math.sqrt(1 - t)` then
      `torch.full_like(x, s)`, or a pick from a host list, `a = alphas[t]`;
    - tensor indexing/slicing (not `return self.table[epoch]` of a parameter in a function
      annotated `-> float`: that picks a number from a host list, reported where a caller uses
      it);
    - a tensor or optimizer-state assignment (`g["lr"] = lr`, `g.update(lr=lr)` on a param
      group);
    - a torch optimizer's step (`opt.step()`, `scaler.step(opt)` of a GradScaler) on an optimizer
      built by `torch.optim` or named like one (`self._optimizer`) that no project class stands for:
      its kernels take `group["lr"]` as a Python number, reported where some file of the program
      changes the rate between steps (builds a `torch.optim.lr_scheduler` scheduler or a subclass
      of one, or writes `group["lr"]` per step in a function no region reaches, a warm-up in the
      batch loop; a write inside a region is reported where it is), unless the file builds its
      schedulers on other optimizers only; not in a file that builds an optimizer with a tensor
      rate (`lr=torch.tensor(1e-3)`, which a scheduler fills in place), and not for a project
      optimizer, whose own `group["lr"]` reads are judged where they are. Build the optimizer
      with `lr=torch.tensor(lr)` (and `capturable=True`) to keep the rate on the device
      (measured on an H200: replays then follow the scheduler, bench/capture_facts.py);
    - control flow that chooses which tensor work is recorded: an `if`, a guard clause
      `if self.p == 0.0: return x` before the tensor work included, a bare `return` too:
      `if epoch >= freeze: return` before `p.grad.zero_()`, or a conditional expression that
      picks a tensor: `prev = None if i == 0 else self.old`. Tensor work being kernels, module
      or optimizer calls, in-place tensor methods, `load_state_dict`, or a program function
      given tensors or networks: `if self.updates % k == 0: polyak(self.q_target, self.q, tau)`.

    **Callee parameters**
    A callee's number parameter counts when a caller passes it such a value (the region root's
    own parameter, a varying attribute, or a value computed from a loop variable of the eager
    loop that drives the steps: one outside the regions, or one that calls a region root on
    each pass), by keyword, by position, after a spread batch
    (`self.update(*self.static, lr)` fills the last parameter where the trailing ones have no
    default), or bound by `functools.partial(f, w=w)` for a captured call of the partial; a
    step-invariant argument (`self.layer_idx`, a config value, an attribute set only in
    `__init__`: `self.decode_step(..., presence_penalty=self.presence_penalty)` with
    `self.presence_penalty = 0.2`) does not, whatever the parameter's annotation. A parameter
    declared as nothing (no annotation, no default: `def denoise(self, x, guidance)`) counts
    only where a caller passes it a per-step number, not because its function is a region root,
    except where it is a hazard as a tensor too: a region root's such parameter used as a slice
    bound, a `range()` trip count, or compared with a number in a branch around device work
    (`if t > 0:` in `def p_sample(self, x, t)`) "may vary" where no call shows what it is passed
    (not when named like a size: `max_len`, `n_heads`).
    In a loop region (`for ...:  # graphsafe: region`, the loop's body replayed per pass) the
    loop's own counters are per-step numbers, also as sizes (`scores.topk(k)`).
    A number drawn on the host (`lam = float(np.random.beta(a, a))`, `random.uniform(...)`,
    `time.time()`; an array of draws, `size=n`, is no number, but each element of it is:
    `lam = lam_batch[i]`) is new on every step: where it enters device work it is reported too
    (the draw itself is GS502's), also through numpy's functions (`np.clip(cy - h // 2, 0, h)`)
    and a helper's returned tuple (`lam, use_cutmix = self._params()`, `(yl, yh), lam =
    cutmix_box(...)`); a branch on it is left to GS502.
    A number read from the device (`ptr = int(self.ptr)`, `n = t.item()`, an element of a list
    read with `x1l, x2l = boxes.tolist()`) is the step's own
    value: where it selects (an index, a slice bound, a value stored into a tensor slot:
    `self.bank[ptr:ptr + n] = x`, `self.ptr[0] = ptr + n`) it is reported too, since keeping
    it on the device needs those places changed as well; in arithmetic, and passed on, its read
    (GS101/GS105) is the one report, and a branch on it is GS201's.
    In a loop region, a parameter of the function around the loop is the same on every pass
    (unless a caller is seen passing it per-step values), a progress bar's `trange(n)` counts
    like `range(n)`, and a value computed from a parameter and the loop's counter follows the
    counter.
    A loop counter is such a number whatever the callee declares: the target of `for step in
    range(...)`, the index of `enumerate(...)`, an element of a list of numbers (a literal one,
    or one the function computes: `times = [i / n for i in range(n)]`, `list(np.linspace(...))`,
    `torch.linspace(...).tolist()`, one the class keeps, `for t in self.timesteps`, through `zip`,
    `enumerate`, `reversed`, `sorted` and slices:
    `for t, t_next in zip(times[:-1], times[1:])`; not a loop over batches or tensors), a local
    the loop advances (`t += 1`), or arithmetic on one (`step + 1`, `i % k`), passed on through
    any number of calls (`forward` loops `self.search_step(x, step)`, which passes `step` to
    `self._set_eos(x, step)`). The message then gives the path from the source, e.g.
    "(path: `step` is the loop counter of `for step in range(...)` in `Searcher.forward` at
    beam.py:25 → `Searcher.search_step` passes its `step` at beam.py:19)".
    """

    code = "GS301"
    name = "python-scalar-input"
    principle = Principle.STATIC
    consequence = Consequence.SILENTLY_WRONG
    summary = "a per-step Python number (lr, temperature, t, a cache position) used in the region"
    message = "{source} is a Python number read once at capture; every replay reuses that value: {consequence}"
    groups_uses = True  # one value read at six places is one hazard (one buffer fixes them all)
    valid = (
        # a constant learning rate: nothing in the program changes it
        "opt = torch.optim.SGD(params, lr=0.1)\ndef train_step(x):  # graphsafe: region\n    opt.step()",
        # a tensor learning rate, which the scheduler updates in place
        "opt = torch.optim.AdamW(params, lr=torch.tensor(1e-3), capturable=True)\n"
        "sched = torch.optim.lr_scheduler.StepLR(opt, 10)\ndef train_step(x):  # graphsafe: region\n    opt.step()",
        "y = x * 2.0",
        "k = x.size(-1)\nz = x[:, :k]",
        "y = x / x.shape[-1] ** 0.5",
        "def step2(x: torch.Tensor, n: int, lr: float):  # graphsafe: region\n    if x.dim() > n and lr > 0:\n        pass\n    return x",
        "def inner(scale: float):\n    return scale * 2\nz = inner(1.0)",
        # a host dict of logged values updated with the same keys
        "def step2(x: torch.Tensor, lr: float):  # graphsafe: region\n    stats = {}\n    stats.update(lr=lr)\n    return x",
        # a callee's number parameter that every caller fills with a step-invariant value
        Example("import torch\nclass Cache:\n    def update(self, k: torch.Tensor, layer_idx: int):\n"
                "        return k * layer_idx\nclass Layer:\n    def __init__(self, i):\n        self.layer_idx = i\n"
                "        self.cache = Cache()\n    def forward(self, k: torch.Tensor):  # graphsafe: region\n"
                "        return self.cache.update(k, self.layer_idx)", module=True),
        # a method called from a capture block, given an attribute set only in `__init__`
        Example("import torch\nclass E:\n    def __init__(self):\n        self.penalty = 0.2\n"
                "    def decode(self, logits: torch.Tensor, penalty: float):\n        return logits - penalty\n"
                "    def capture(self, x: torch.Tensor):\n        g = torch.cuda.CUDAGraph()\n"
                "        with torch.cuda.graph(g):\n            self.out = self.decode(x, penalty=self.penalty)", module=True),
        # an imported helper given a method's number parameter that the region fills with a setting
        Example("import torch\nfrom schedules import position_lr\nclass C:\n    def __init__(self, opt, cfg):\n"
                "        self.opt = opt\n        self.cfg = cfg\n"
                "    def set_lr(self, it: int):\n        for g in self.opt.param_groups:\n"
                "            g['lr'] = position_lr(it, 0.1)\n"
                "    def step(self, x: torch.Tensor):  # graphsafe: region\n        self.set_lr(self.cfg.max_steps)\n"
                "        return x * 2", module=True),
        # a branch that only computes Python numbers; a branch on a host draw (GS502 reports it)
        "def step2(x: torch.Tensor, lr: float):  # graphsafe: region\n    if lr > 1.0:\n        cap = 1.0\n    return x",
        # the spread call given a config value: step-invariant
        Example("import torch\nclass C:\n    def __init__(self, cfg):\n        self.cfg = cfg\n"
                "    def update(self, obs: torch.Tensor, act: torch.Tensor, bc_weight: float):\n        return (obs * act).mean() * bc_weight\n"
                "    def step(self):  # graphsafe: region\n"
                "        return self.update(*self.static, self.cfg.bc_weight)", module=True),
        # a setting recomputed between replays by a helper given only settings
        Example("import torch\nfrom schedules import decay_at\nclass C:\n    def __init__(self, cfg):\n"
                "        self.cfg = cfg\n        self.forget = cfg.forget\n        self.served = 0\n"
                "    def step(self, x: torch.Tensor):  # graphsafe: region\n        return x * self.forget\n"
                "    def handle(self, x):\n        self.forget = decay_at(self.cfg.warmup, self.cfg.forget)\n"
                "        self.served += 1", module=True),
        # a pick between host values; a config setting rebound each pass to the same field
        "def step2(x: torch.Tensor, i: int):  # graphsafe: region\n    tag = 'first' if i == 0 else 'next'\n    return x, tag",
        Example("import torch\nclass C:\n    def __init__(self, cfg):\n        self.cfg = cfg\n"
                "        self.loss_scale = cfg.init_scale\n"
                "    def step(self, loss: torch.Tensor):  # graphsafe: region\n        return loss * self.loss_scale\n"
                "    def fit(self, batches):\n        for batch in batches:\n"
                "            self.loss_scale = self.cfg.init_scale", module=True),
        ("import random\ndef step2(x: torch.Tensor, eps: float):  # graphsafe: region\n"
         "    if random.random() < eps:\n        x.mul_(2)\n    return x"),
        # a counter branch whose arithmetic is on Python values only
        Example("import torch\nclass C:\n    def __init__(self):\n        self.step = 0\n"
                "    def run(self, loss: torch.Tensor):  # graphsafe: region\n        tag = 'run'\n"
                "        if self.step < 100:\n            tag = tag + '-warmup'\n        self.step += 1\n"
                "        return loss, tag", module=True),
        # a guard clause whose bare `return` skips host work only
        "def step2(x: torch.Tensor, epoch: int):  # graphsafe: region\n    if epoch >= 3:\n        return\n    tag = 'frozen'",
        # a number picked from a host table by a `-> float` helper and used only on the host
        Example("import torch\nclass C:\n    def __init__(self):\n        self.table = [0.1, 0.2]\n"
                "    def temp(self, epoch: int) -> float:\n        return self.table[min(epoch, 1)]\n"
                "    def step(self, x: torch.Tensor, epoch: int):  # graphsafe: region\n"
                "        tag = f'{self.temp(epoch)}'\n        return x", module=True),
        # a loop over batches binds no per-step number; a fill value that is a literal
        Example("import torch\nclass C(torch.nn.Module):\n"
                "    def step(self, x: torch.Tensor, t):  # graphsafe: region\n        return torch.full_like(x, 0.5) * t\n"
                "    def sample(self, x, batches):\n        for t in batches:\n            x = self.step(x, t)\n"
                "        return x", module=True),
    )
    invalid = (
        "def step2(x: torch.Tensor, lr: float):  # graphsafe: region\n    return x * lr",
        # a scheduled learning rate, read by torch's step as a Python number
        "opt = torch.optim.SGD(params, lr=0.1)\nsched = torch.optim.lr_scheduler.StepLR(opt, 10)\n"
        "def train_step(x):  # graphsafe: region\n    opt.step()",
        # an element of a time grid the caller computes, given to a torch factory as its fill value
        Example("import torch\nclass C(torch.nn.Module):\n"
                "    def step(self, x: torch.Tensor, t):  # graphsafe: region\n"
                "        return torch.full((x.shape[0],), t, device=x.device)\n"
                "    def sample(self, x, n):\n        times = [i / n for i in range(n)]\n"
                "        for t in reversed(times):\n            x = self.step(x, t)\n        return x", module=True),
        # a guard clause with a bare `return` before in-place tensor work
        "def step2(x: torch.Tensor, epoch: int):  # graphsafe: region\n    if epoch >= 3:\n        return\n    x.mul_(2)",
        # the same number, picked by a `-> float` helper, reaching tensor math
        Example("import torch\nclass C:\n    def __init__(self):\n        self.table = [0.1, 0.2]\n"
                "    def temp(self, epoch: int) -> float:\n        return self.table[min(epoch, 1)]\n"
                "    def step(self, x: torch.Tensor, epoch: int):  # graphsafe: region\n"
                "        return x / self.temp(epoch)", module=True),
        # a callee's parameter given the root's per-step parameter
        Example("import torch\ndef scale(x: torch.Tensor, lr: float):\n    return x * lr\n"
                "def step(x: torch.Tensor, lr: float):  # graphsafe: region\n    return scale(x, lr)", module=True),
        # given a loop variable by the eager loop that drives the steps
        Example("import torch\ndef lr_at(it: int) -> float:\n    return 0.1 / (it + 1)\n"
                "def scale(x: torch.Tensor, lr: float):\n    return x * lr\n"
                "def step_captured(x: torch.Tensor):  # graphsafe: region\n    return scale(x, lr_at(0))\n"
                "def main(x):\n    for it in range(10):\n        scale(x, lr_at(it))", module=True),
        # a branch on a per-step counter that chooses the tensor work recorded
        Example("import torch\nclass C:\n    def __init__(self):\n        self.step = 0\n"
                "    def run(self, x: torch.Tensor):  # graphsafe: region\n        if self.step % 5 == 0:\n"
                "            x.mul_(2)\n        self.step += 1", module=True),
        "def step2(x: torch.Tensor, t: int):  # graphsafe: region\n    return x[:, t]",
        # a comparison with a tensor is tensor math too
        "def step2(x: torch.Tensor, clip: float):  # graphsafe: region\n    return (x.abs() > clip).float().mean()",
        "def step2(x: torch.Tensor, temperature=1.0):  # graphsafe: region\n    return torch.softmax(x / temperature, -1)",
        "def step2(opt, lr: float):  # graphsafe: region\n    for g in opt.param_groups:\n        g['lr'] = lr",
        "def step2(opt, lr: float):  # graphsafe: region\n    for g in opt.param_groups:\n        g.update(lr=lr)",
        Example(
            _SCALED_MODULE.format(init_tail="", annotation="float", call="self.step2(x, s)"),
            module=True,
            fixed=_SCALED_MODULE.format(
                init_tail='\n        self.register_buffer("_step2_scale", torch.zeros(()), persistent=False)',
                annotation="torch.Tensor", call="self.step2(x, self._step2_scale.fill_(s))",
            ),
        ),
        # read in Python math (`scale / 2`) and called from a capture block: no fix
        Example(_SCALED_MODULE.replace("* scale", "* (scale / 2)").format(init_tail="", annotation="float", call="self.step2(x, s)"),
                module=True),
        Example(_SCALED_MODULE.format(init_tail="", annotation="float", call="self.step2(x, s)").replace(
            "for s in scales:", "with torch.cuda.graph(self.graph):"), module=True),
        # a counter branch that chooses whether a program function gets the tensors
        Example("import torch\ndef save_grid(images: torch.Tensor, path: str):\n    pass\n"
                "class C:\n    def __init__(self):\n        self.step = 0\n"
                "    def run(self, x: torch.Tensor):  # graphsafe: region\n        if self.step % 5 == 0:\n"
                "            save_grid(x[:4], 'grid.pgm')\n        self.step += 1", module=True),
        # a warm-up branch on a counter whose tensor work is arithmetic (`loss * w`: a kernel)
        Example("import torch\nclass C:\n    def __init__(self):\n        self.step = 0\n"
                "    def run(self, loss: torch.Tensor):  # graphsafe: region\n"
                "        if self.step < 100:\n            loss = loss * 0.5\n        self.step += 1\n"
                "        return loss", module=True),
        # a conditional expression on a per-step number that picks which tensor is used
        ("def step2(x: torch.Tensor, prev: torch.Tensor, i: int):  # graphsafe: region\n"
         "    old = None if i == 0 else prev\n    return x if old is None else x + old"),
        # a config setting that the loop replaying the graph rebinds from what a method returns
        Example("import torch\nclass C:\n    def __init__(self, cfg, scaler):\n        self.scaler = scaler\n"
                "        self.loss_scale = cfg.init_scale\n"
                "    def step(self, loss: torch.Tensor):  # graphsafe: region\n        return loss * self.loss_scale\n"
                "    def fit(self, batches):\n        for batch in batches:\n"
                "            self.loss_scale = self.scaler.update(batch)", module=True),
        # a number passed after the spread static batch fills the last parameter
        Example("import torch\nclass C:\n    def update(self, obs: torch.Tensor, act: torch.Tensor, bc_weight: float):\n"
                "        return (obs * act).mean() * bc_weight\n"
                "    def step(self, bc_weight: float):  # graphsafe: region\n"
                "        return self.update(*self.static, bc_weight)", module=True),
        # an imported helper given a method's number parameter that the region passes a counter
        Example("import torch\nfrom schedules import position_lr\nclass C:\n    def __init__(self, opt):\n"
                "        self.opt = opt\n        self.it = 0\n"
                "    def set_lr(self, it: int):\n        for g in self.opt.param_groups:\n"
                "            g['lr'] = position_lr(it, 0.1)\n"
                "    def step(self, x: torch.Tensor):  # graphsafe: region\n        self.set_lr(self.it)\n"
                "        self.it += 1\n        return x * 2", module=True),
        # a setting recomputed between replays by an imported helper given a counter
        Example("import torch\nfrom schedules import decay_at\nclass C:\n    def __init__(self, cfg):\n"
                "        self.cfg = cfg\n        self.forget = cfg.forget\n        self.served = 0\n"
                "    def step(self, x: torch.Tensor):  # graphsafe: region\n        return x * self.forget\n"
                "    def handle(self, x):\n        self.forget = decay_at(self.served, self.cfg.forget)\n"
                "        self.served += 1", module=True),
        # a schedule object's method given a counter
        Example("import torch\nfrom schedules import Linear\nclass C:\n    def __init__(self):\n"
                "        self.updates = 0\n        self.sched = Linear(1.0, 0.1, 100)\n"
                "    def update(self, x: torch.Tensor):  # graphsafe: region\n        self.updates += 1\n"
                "        return x * self.sched.value(self.updates)", module=True),
        # a decay read through a property derived from a counter
        Example("import torch\nclass C:\n    def __init__(self):\n        self.updates = 0\n"
                "    @property\n    def decay(self) -> float:\n        return min(0.999, (1 + self.updates) / (10 + self.updates))\n"
                "    def update(self, p: torch.Tensor, q: torch.Tensor):  # graphsafe: region\n"
                "        self.updates += 1\n        d = self.decay\n        p.lerp_(q, 1.0 - d)", module=True),
    )

    def __init__(self) -> None:
        self.uses = scalar_buffer.ScalarParameterUses()
        # parameter hits in methods, reported at the end of the file with the fix (if any)
        self.deferred: list[tuple[cst.BaseExpression, object, str, str, object]] = []  # ..., ScalarSource
        self.noting: bool | None = None  # is the fix's bookkeeping worth doing in this file?
        # flagging a value that is a hazard as a tensor and as a per-step number alike (a slice
        # bound, a `range()` trip count, a branch's comparison with a number): what it is, or ""
        self.bound = ""
        self.scheduled: frozenset[str] | None = None  # optimizers this file schedules (optimizer.scheduled_here)
        # a number read from the device (`ptr = int(t)`) counts where it selects: an index, a
        # slice bound, a value stored into a tensor slot; in arithmetic its read (GS101/GS105)
        # is the one cause, and keeping the value on the device mends both
        self.selecting = False

    def _noting(self, ctx) -> bool:
        """The fix rewrites a method marked as a region (`@graphsafe.region`, `# graphsafe:
        region`): in a file that never spells `graphsafe` no method is, and the notes the fix
        reads (uses of every attribute, call and parameter) are skipped (they are most of this
        rule's walk, and what every what-if run copies)."""
        if self.noting is None:
            self.noting = "graphsafe" in ctx.source
        return self.noting

    def _flag(self, expr: cst.BaseExpression, ctx) -> None:
        # the cheap, local question first: asking a kind may set off a what-if walk
        source = ctx.scalar_source(expr)
        if source is None or (source.device_read and not self.selecting) or source.array:
            return  # an array of host draws as data is GS402's; its elements are numbers
        if self.bound:
            source = _bound_source(source, expr, self.bound)
        if ctx.kind(expr).is_tensor:
            return  # `x / t` inside an argument: reported at `t` by the arithmetic check
        if source.condition and type(expr) is cst.BinaryOperation:
            # `self.cfg.lr * lr_scale`: each operand's variation is decided on its own (a setting
            # that may be fixed must not hide the per-step parameter beside it); one report
            # per source: `(1.0 - smoothing - smoothing / n)` is one cause
            seen: set = set()
            for operand in _arithmetic_operands(expr):
                found = ctx.scalar_source(operand)
                if found is not None and (found.label, found.condition) not in seen:
                    seen.add((found.label, found.condition))
                    self._flag(operand, ctx)
            return
        method = ctx.function_name
        if isinstance(expr, cst.Name) and source.label == f"parameter `{expr.value}`" and ctx.class_key and method:
            if ctx.in_what_if(self, expr):
                return
            if ctx.first_report(f"{self.code}-deferred", expr):
                self.deferred.append((expr, ctx.here(), ctx.class_key, method, source))
            return
        ctx.report(self, expr, condition=source.condition, source=source.label)

    def end_module(self, ctx) -> None:
        fixes: dict[tuple[str, str, str], object] = {}
        for expr, place, class_key, method, source in self.deferred:
            key = (class_key, method, expr.value)
            if key not in fixes:
                fixes[key] = scalar_buffer.buffer_fix(class_key, method, expr.value, ctx, self.uses)
            ctx.report(self, expr, fix=fixes[key], at=place, condition=source.condition, source=source.label)

    def visit_FunctionDef(self, node: cst.FunctionDef, ctx) -> None:
        if self._noting(ctx):
            scalar_buffer.note_function(node, ctx, self.uses)

    def visit_Attribute(self, node: cst.Attribute, ctx) -> None:
        if self._noting(ctx):
            scalar_buffer.note_attribute(node, ctx, self.uses)
        elif not ctx.is_self(node.value):
            ctx.kind(node.value, note=False)  # asked all the same: kinds are memoised when first asked

    def visit_BinaryOperation(self, node: cst.BinaryOperation, ctx) -> None:
        if self._noting(ctx):
            scalar_buffer.note_binary(node, ctx, self.uses)
        if ctx.scalar_source(node.right) is not None and ctx.kind(node.left).is_tensor:
            self._flag(node.right, ctx)
        elif ctx.scalar_source(node.left) is not None and ctx.kind(node.right).is_tensor:
            self._flag(node.left, ctx)

    def visit_Comparison(self, node: cst.Comparison, ctx) -> None:
        # `(ratio - 1).abs() > clip` is a kernel with the number baked in, like `ratio * clip`
        if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons):
            return
        operands = [node.left] + [c.comparator for c in node.comparisons]
        numbers = [o for o in operands if ctx.scalar_source(o) is not None]
        if numbers and any(ctx.kind(o).is_tensor for o in operands):
            for operand in numbers:
                self._flag(operand, ctx)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if self._noting(ctx):
            scalar_buffer.note_call(node, ctx, self.uses)
        func = node.func
        method = func.attr.value if isinstance(func, cst.Attribute) else ""
        if method == "step" and (optimizer := stepped_optimizer(node, ctx)) is not None and self._may_be_scheduled(
                optimizer, ctx):
            # torch's step reads `group["lr"]` as a Python number: frozen where the program schedules it
            ctx.report(self, node, condition=(SCHEDULED_LR,),
                       source=f'{SCHEDULED_LR_READ} `{ctx.code_for(optimizer)}.step()` reads from its param groups '
                              f'(`group["lr"]`, which the program\'s learning-rate schedule changes between steps)')
        if method == "update" and _param_group(func.value, ctx):
            # `g.update(lr=lr)`, `opt.param_groups[0].update({"lr": lr})`: like `g["lr"] = lr`
            for value in _optimizer_values(node):
                self._flag(value, ctx)
            return
        given = [arg for arg in node.args if ctx.scalar_source(arg.value) is not None]
        if not given:
            return
        name = ctx.resolve(func) or ""
        baked = _baked_values(node, name, method, ctx)
        for value in baked:  # `torch.full(size, t)`, `x.narrow(0, t, n)`: values among sizes
            if any(arg.value is value for arg in given):
                self._flag(value, ctx)
        numbers = [arg.value for arg in given if (arg.keyword is None or arg.keyword.value not in SIZE_KEYWORDS)
                   and not any(arg.value is value for value in baked)]
        if method in SIZE_METHODS:  # a size from a per-run setting is one shape; a loop region's counter is not
            numbers = [value for value in numbers if _per_pass(ctx.scalar_source(value))]
        if not numbers:
            return
        tensor_op = (name.startswith("torch.") and not name.startswith(("torch.cuda.", "torch.distributed."))
                     and name.rpartition(".")[2] not in TORCH_NON_TENSOR)  # `torch.manual_seed(seed + i)`: GS602's
        if isinstance(func, cst.Attribute) and not tensor_op:
            receiver = ctx.kind(func.value)
            # `self.shadow[name].lerp_(v, 1.0 - d)`: a method only tensors have, on a value whose kind
            # is not tracked (an element of a dict of tensors, a value from another file)
            tensor_op = receiver.is_tensor or (receiver.tag in ("unknown", "scalar") and method in PARAM_TENSOR_METHODS)
        if not tensor_op or name.rpartition(".")[2] in FACTORIES:
            return
        for value in numbers:
            self._flag(value, ctx)

    def _may_be_scheduled(self, optimizer: cst.BaseExpression, ctx) -> bool:
        """Not where this file builds learning-rate schedulers only on other optimizers
        (`ReduceLROnPlateau(self.opt)` beside a stepped `self.head_opt`)."""
        if self.scheduled is None:
            self.scheduled = scheduled_here(ctx)
        return not self.scheduled or ctx.code_for(optimizer) in self.scheduled

    def visit_If(self, node: cst.If, ctx) -> None:
        # A branch on a per-step number is decided once, at capture; replay keeps the tensor
        # work of that branch. Branches that only compute Python numbers are left to the place
        # those numbers are used; a condition with a host draw (`random.random() < eps`) is
        # already reported as one (GS502).
        self._branch(node, ctx)

    def visit_While(self, node: cst.While, ctx) -> None:
        self._branch(node, ctx)

    def visit_For(self, node: cst.For, ctx) -> None:
        # `for _ in range(num_steps):` around tensor work: the trip count is read at capture and
        # replay runs the capture's number of iterations, whatever the number is now
        call = node.iter
        if not (type(call) is cst.Call and type(call.func) is cst.Name and call.func.value == "range"
                and ctx.resolve(call.func) in (None, "range", "builtins.range")):
            return
        bounds = [arg.value for arg in call.args if ctx.scalar_source(arg.value) is not None]
        if not bounds:
            return
        with ctx.looking_ahead():
            if not _any_device_work([node.body], ctx):
                return
        for bound in bounds:
            self._flag_bound(bound, ctx)

    def visit_IfExp(self, node: cst.IfExp, ctx) -> None:
        # `prev = None if i == 0 else self.old_denoised`: the test picks, once at capture, which
        # tensor the recorded work reads. A pick between numbers is left to where they are used.
        operands = [o for o in _condition_operands(node.test) if _varies_apart_from_draws(ctx.scalar_source(o))]
        if not operands or _host_draw_in(node.test, ctx):
            return
        if not (ctx.kind(node.body).is_tensor or ctx.kind(node.orelse).is_tensor):
            return
        self._flag_condition(node.test, operands, ctx)

    def _branch(self, node: cst.If | cst.While, ctx) -> None:
        # a decision on a host draw is the draw's consequence: GS502 reports the draw
        operands = [o for o in _condition_operands(node.test) if _varies_apart_from_draws(ctx.scalar_source(o))]
        if not operands or _host_draw_in(node.test, ctx) or not _records_device_work(node, ctx):
            return  # the cheap question first: most conditions hold no per-step number
        self._flag_condition(node.test, operands, ctx)

    def _flag_condition(self, test: cst.BaseExpression, operands, ctx) -> None:
        for operand in operands:
            if _compared_with_number(test, operand):
                self._flag_bound(operand, ctx, "compared with a number in a branch")
            else:
                self._flag(operand, ctx)

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        scalar_buffer.note_subscript(node, ctx, self.uses)  # always: its kind question can widen a what-if run
        if _host_container_store(node, ctx) or _number_returned(node, ctx):
            return
        # Whether `node.value` is a tensor or a Python list, the selection is frozen at capture.
        self.selecting = True
        try:
            for element in node.slice:
                index = element.slice
                if isinstance(index, cst.Index):
                    self._flag(index.value, ctx)
                else:
                    for bound in (index.lower, index.upper, index.step):
                        if bound is not None:
                            self._flag_bound(bound, ctx)
        finally:
            self.selecting = False

    def _flag_bound(self, bound: cst.BaseExpression, ctx, what: str = "a slice bound or trip count") -> None:
        self.bound = what
        try:
            self._flag(bound, ctx)
        finally:
            self.bound = ""

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        for target in node.targets:
            tgt = target.target
            if not isinstance(tgt, cst.Subscript):
                continue
            if ctx.kind(tgt.value).is_tensor or _optimizer_key(tgt):
                self.selecting = ctx.kind(tgt.value).is_tensor  # `self.ptr[0] = ptr + n`: stored in a slot
                try:
                    self._flag(node.value, ctx)
                finally:
                    self.selecting = False


def _varies_apart_from_draws(source) -> bool:
    """A per-step number other than one drawn on the host (whose draw GS502 reports) or read
    from the device (a branch on it is GS201's)."""
    return source is not None and not source.host_draw and not source.device_read


def _per_pass(source) -> bool:
    """A number that takes a new value on every pass of a loop region (step_loops.py): as a size
    (`scores.topk(k)`), the shape replay keeps is the capture's."""
    return source is not None and bool(source.condition) and source.condition[0] == step_loops.STEP_LOOP


def _baked_values(call: cst.Call, name: str, method: str, ctx) -> list[cst.BaseExpression]:
    """The arguments of a torch op that are values baked into its kernel (value_arguments.py):
    of `torch.<op>(...)`, or of `<tensor>.<op>(...)` on a tensor or a value of unknown kind."""
    if name.startswith("torch.") and name.count(".") == 1:
        return value_arguments.function_values(name[len("torch."):], call)
    if not method or name.startswith("torch."):
        return []
    found = value_arguments.method_values(method, call)
    if not found:
        return []
    root = call.func.value
    while type(root) is cst.Attribute:
        root = root.value
    if type(root) is cst.Name and ctx.scope.imports.is_imported(root.value):
        return []  # `math.pow(1 - t, 0.5)`, `np.roll(a, t)`: a module's function, host work
    receiver = ctx.kind(call.func.value)
    return found if receiver.is_tensor or receiver.tag == "unknown" else []


def _host_container_store(node: cst.Subscript, ctx) -> bool:
    """`self.nodes[i] = self.nodes[2 * i] + v` on Python lists: the statement moves Python values
    between host containers and records no device work (a change GS503 reports), so its
    indexes into non-tensors are no graph input. A tensor read in it (`d[k] = x[i]`) still is."""
    statement = ctx.statement
    if type(statement) is not cst.SimpleStatementLine or len(statement.body) != 1:
        return False
    small = statement.body[0]
    if type(small) is cst.Assign:
        targets = [t.target for t in small.targets]
    elif type(small) is cst.AugAssign:
        targets = [small.target]
    else:
        return False
    if not all(type(t) is cst.Subscript and not _optimizer_key(t) and ctx.kind(t.value).not_tensor for t in targets):
        return False
    return ctx.kind(node.value).not_tensor


def _number_returned(node: cst.Subscript, ctx) -> bool:
    """`return self.temp_table[min(epoch, n)]` in a function annotated `-> float`, indexed by its
    own parameter: the element is a Python number, so the container is a host list, not a
    tensor; the number is reported where a caller given a per-step value uses it in tensor
    math (`x / self.teacher_temp(epoch)`). An index read from a counter (`self.epoch`) is
    still reported here: a caller walked before this method cannot know what it returns."""
    statement = ctx.statement
    function = ctx.function_node
    if (type(statement) is not cst.SimpleStatementLine or len(statement.body) != 1 or function is None
            or function.returns is None):
        return False
    small = statement.body[0]
    annotation = function.returns.annotation
    if not (type(small) is cst.Return and small.value is node
            and type(annotation) is cst.Name and annotation.value == "float"):
        return False
    sources = [ctx.scalar_source(e.slice.value) for e in node.slice if type(e.slice) is cst.Index]
    return bool(sources) and all(s is None or (s.condition and s.condition[0] == "param") for s in sources)


_HOST_DRAWS = ("random.", "numpy.random.", "time.")


def _host_draw_in(expr: cst.BaseExpression, ctx) -> bool:
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and (ctx.resolve(node.func) or "").startswith(_HOST_DRAWS):
            return True
        stack.extend(children(node))
    return False


# builtins given a tensor do host work (or a sync another rule reports), not device work
_BUILTIN_CALLS = frozenset(name for name in dir(builtins) if not name.startswith("_"))


# In-place tensor ops a branch can record on a tensor of unknown kind (`w.data.clamp_(-5, 5)`
# on a weight reached through a module): kernels, so the branch chooses recorded work.
_IN_PLACE_TENSOR_OPS = frozenset(
    """clamp_ clip_ clamp_min_ clamp_max_ normal_ uniform_ bernoulli_ exponential_ random_
    pow_ sqrt_ exp_ neg_ abs_ sign_ renorm_ masked_scatter_ index_fill_ index_put_ div_ mul_""".split()
)
# methods that only tensors (in-place kernels) or modules (`load_state_dict`: copies) have
_DEVICE_METHODS = PARAM_TENSOR_METHODS | _IN_PLACE_TENSOR_OPS | {"load_state_dict"}


def _device_state(kind) -> bool:
    return kind.is_tensor or kind.tag in ("object", "modules")  # `polyak_update(self.q, self.q_target, tau)`


def _records_device_work(node: cst.If | cst.While, ctx) -> bool:
    """Does either branch call torch, a tensor method, a module/optimizer, a method of self, or
    a function of the program given a tensor or a module (`save_grid(logits[:16], path)`), or
    do tensor arithmetic (`loss = loss * w`, `loss *= w`, `x[i] = 0` on a tensor: kernels)?
    A guard clause (`if p == 0.0: return x`) has the rest of its block as its other branch."""
    with ctx.looking_ahead():  # the branches are not walked yet: their kinds are provisional
        stack: list[cst.CSTNode] = [node.body]
        if node.orelse is not None:
            stack.append(node.orelse)
        elif isinstance(node, cst.If) and _exits(node.body, ctx):
            stack.extend(ctx.statements_after(node))
        return _any_device_work(stack, ctx)


def _any_device_work(stack: list[cst.CSTNode], ctx) -> bool:
    while stack:
        current = stack.pop()
        if isinstance(current, cst.BinaryOperation) and ctx.kind(current).is_tensor:
            return True
        if isinstance(current, cst.AugAssign) and ctx.kind(current.target).is_tensor:
            return True
        if isinstance(current, cst.Assign) and any(
                isinstance(t.target, cst.Subscript) and ctx.kind(t.target.value).is_tensor for t in current.targets):
            return True
        if isinstance(current, cst.Call):
            func = current.func
            if (ctx.resolve(func) or "").startswith("torch."):
                return True
            if isinstance(func, cst.Attribute):
                receiver = ctx.kind(func.value)
                if receiver.is_tensor or receiver.tag in ("object", "modules") or ctx.is_self(func.value):
                    return True
                if receiver.tag == "unknown" and func.attr.value in _DEVICE_METHODS:
                    return True  # `tp.data.lerp_(p.data, tau)`, `self.q_t.load_state_dict(...)` built elsewhere
            elif (isinstance(func, cst.Name) and func.value not in _BUILTIN_CALLS
                    and any(_device_state(ctx.kind(arg.value)) or ctx.placed_on_device(arg.value) for arg in current.args)):
                return True  # (`polyak(self.q_target, self.q, tau)` with `self.q = build_q().to(device)`)
        if isinstance(current, (cst.FunctionDef, cst.ClassDef)):
            continue
        stack.extend(children(current))
    return False


def _exits(body: cst.BaseSuite, ctx) -> bool:
    """Does the block end by leaving it for other tensor work (`return x` of a tensor, a bare
    `return` skipping in-place work after it, `continue`, `break`)? A `raise` is a check
    (`if p < 0: raise ValueError`) and `return "p must be 0"` a host answer: they pick no
    recorded work."""
    last = body.body[-1] if body.body else None
    if isinstance(last, cst.SimpleStatementLine):  # an indented block's last line
        last = last.body[-1] if last.body else None
    if isinstance(last, cst.Return):
        if last.value is None or (type(last.value) is cst.Name and last.value.value == "None"):
            return True  # `if epoch >= freeze: return` before `p.grad.zero_()`
        return ctx.kind(last.value).is_tensor
    return isinstance(last, (cst.Continue, cst.Break))


def _condition_operands(test: cst.BaseExpression):
    """The values a condition compares or tests: `a % n == 0` → `a % n`, `0`."""
    if isinstance(test, cst.BooleanOperation):
        yield from _condition_operands(test.left)
        yield from _condition_operands(test.right)
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from _condition_operands(test.expression)
    elif isinstance(test, cst.Comparison):
        if all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in test.comparisons):
            return  # `x is None`: identity, not a number
        yield test.left
        for comparison in test.comparisons:
            yield comparison.comparator
    else:
        yield test


def _optimizer_values(call: cst.Call):
    """The values `update(lr=..)` / `update({"lr": ..})` gives optimizer keys."""
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value in OPTIMIZER_KEYS:
                yield arg.value
        elif type(arg.value) is cst.Dict:
            for element in arg.value.elements:
                if (type(element) is cst.DictElement and type(element.key) is cst.SimpleString
                        and element.key.evaluated_value in OPTIMIZER_KEYS):
                    yield element.value


def _param_group(expr: cst.BaseExpression, ctx) -> bool:
    """`opt.param_groups[i]`, or `g` of `for g in opt.param_groups` in this function."""
    return per_step.param_group(expr, ctx.function_node)


def _optimizer_key(target: cst.Subscript) -> bool:
    if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return False
    key = target.slice[0].slice.value
    return isinstance(key, cst.SimpleString) and key.evaluated_value in OPTIMIZER_KEYS


def _lr_scheduler(receiver: cst.BaseExpression, ctx) -> str | None:
    """Why `receiver` is a learning-rate scheduler (torch's, or one by name where nothing says
    what it is), else None. A project class is followed into by the call graph instead."""
    kind = ctx.kind(receiver)
    refs = kind.refs if kind.tag == "object" else ()
    if any(r.startswith("torch.optim.lr_scheduler.") for r in refs):
        return f"`{refs[0].rpartition('.')[2]}`"
    if refs or kind.is_tensor or kind.tag not in ("unknown",):
        return None
    name = receiver.attr.value if type(receiver) is cst.Attribute else receiver.value if type(receiver) is cst.Name else ""
    lowered = name.lower()
    if "sched" in lowered and "noise" not in lowered:
        return f"by its name `{name}`"
    return None


def _arithmetic_operands(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of a chain of binary operations, left to right."""
    if type(expr) is cst.BinaryOperation:
        return _arithmetic_operands(expr.left) + _arithmetic_operands(expr.right)
    return [expr]


class PythonCounterInRegion(Rule):
    """## What it does
    Flags Python state updated inside a captured region: a number attribute (`self.step += 1`,
    `self.pos += T`), an optimizer setting written into its param groups (`g["lr"] = new_lr`), or
    a learning-rate scheduler stepped in it (`self.lr_scheduler.step()`).

    ## Why is this bad?
    Python code runs only while the graph is captured. On replay the counter never moves, so
    everything that depends on it (a schedule, a cache position, logging) is stuck at its
    capture-time value, with no error.

    ## Example
    ```python
    def train_step(self, x):
        ...
        self.step += 1
    ```

    ## Use instead
    Count outside the region (around `graph.replay()`), or keep the counter in a device tensor
    updated in place (`self.step_t.add_(1)`). For a learning rate, build the optimizer with a
    tensor `lr` (`capturable=True`) and `.fill_()` it before each replay.

    ## Fix safety
    No automatic fix: where the counter is read decides the right place for it.

    ## Precise semantics
    An update that reads a tensor on the host (`self.ema = 0.9 * self.ema + loss.item()`,
    `float(t)`) is reported once, at the sync (GS101/GS105): capture fails there first, and
    keeping the value on the device (`self.ema` a tensor) removes both.

    A param-group write is reported wherever its value is not a literal (a scheduler writes a
    setting to change it); where the value is itself a per-step number, GS301 reports it
    instead.

    An entry of state kept across steps that starts as a number and is advanced in the region
    (`state["step"] += 1` on `state = self.state[p]`, `group["step"] = group.get("step", 0) + 1`
    for `group in self.param_groups`: a custom optimizer's step count) is such a counter too;
    where it reaches tensor math (`bias_correction = 1 - beta ** group["step"]`), GS301 reports it.
    So is one held as one number in a CPU tensor (`state["step"] = torch.tensor(0.0)`, then
    `+= 1` or `.add_(1)`: CPU work, which replay does not redo), and any entry of such state
    written with a value computed from what it held (`d = group["d"]` ... `d = max(d, d_hat)`
    ... `group["d"] = d`, `k = group["k"]` ... `group["k"] = k + 1`); an entry given its own
    default (`group.get("seen", 0)`), another entry or a tensor is not.

    In a loop region (`for ...:  # graphsafe: region`), a local the body advances for the next pass
    (`curr_pos += 1`, `t += dt`) is such a counter too: the loop's header runs on every pass, the
    body's Python only at capture.

    A learning-rate scheduler's `step()` (torch's `LRScheduler`s) advances its Python step count
    and writes the next rate into the optimizer's param groups: on replay neither happens, so
    the rate stays at its capture-time value. Reported at a `.step()` without arguments on an
    object built by `torch.optim.lr_scheduler`, or, where nothing in the file says what the
    object is, on one whose name says it is a scheduler (`self._lr_scheduler`, `sched`); a
    noise scheduler's `step(model_output, t, x)` takes arguments and is not one, and a project
    class's own `step` is followed into instead.

    A counter of a program's own progress bar advanced from the region (`self.n += n` in
    `update`, called as `self.pbar.update(1)`) is reported too, besides the call's GS505: the
    method runs inside the region and its count is stuck at capture.
    """

    code = "GS302"
    name = "python-counter-in-region"
    principle = Principle.STATIC
    consequence = Consequence.SILENTLY_WRONG
    summary = "a Python number attribute mutated inside the region (`self.step += 1`)"
    message = "`{target}` is {what} updated only while capturing; replay never {effect}: {consequence}"
    valid = (
        "count = 0\ncount += 1",
        # a constant written into a param group is the same every step
        "def step2(opt):  # graphsafe: region\n    for g in opt.param_groups:\n        g['lr'] = 0.1",
        "class C:\n    def run(self, x: torch.Tensor):  # graphsafe: region\n        self.total = x.sum()\n        self.total += x.sum()",
        "class C:\n    def reset(self):\n        self.step += 1",
        # one cause, reported at the sync (GS101)
        "class C:\n    def run(self, x: torch.Tensor):  # graphsafe: region\n        self.ema = 0.9 * self.ema + x.sum().item()",
        # a diffusion noise scheduler's step is tensor math on its arguments
        "x = noise_scheduler.step(model_output, t, x).prev_sample",
    )
    invalid = (
        "class C:\n    def run(self, x):  # graphsafe: region\n        self.step += 1",
        "class C:\n    def run(self, x):  # graphsafe: region\n        self.iter = self.iter + 1",
        # a scheduler writing the lr into the optimizer's param groups inside the step
        "def assign_lr(opt, new_lr):\n    for g in opt.param_groups:\n        g['lr'] = new_lr\n"
        "def step2(opt, sched):  # graphsafe: region\n    assign_lr(opt, sched.lr())",
        "class C:\n    def step(self):  # graphsafe: region\n        for group in self.param_groups:\n"
        "            group['lr'] *= group['lrd']",
        # an LR scheduler stepped in the training step: the rate never moves on replay
        "class C:\n    def train_step(self, loss):  # graphsafe: region\n        loss.backward()\n"
        "        self.optimizer.step()\n        self.lr_scheduler.step()",
        "sched = torch.optim.lr_scheduler.StepLR(opt, 10)\nopt.step()\nsched.step()",
    )

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if per_step.added_in_place(node) is not None and per_step.advanced_entry(func.value, ctx.function_node):
            self._report_entry(func.value, ctx)  # `state["step"].add_(1)` of a CPU tensor
            return
        if type(func) is not cst.Attribute or func.attr.value != "step" or node.args:
            return
        why = _lr_scheduler(func.value, ctx)
        if why is not None:
            ctx.report(self, node, target=f"{ctx.code_for(func.value)}.step()",
                       what=f"a learning-rate scheduler's step ({why}): its count and rate are",
                       effect="advances the rate")

    def visit_AugAssign(self, node: cst.AugAssign, ctx) -> None:
        if type(node.target) is cst.Name:
            step = ctx.step_loop_carrying(node.target.value)
            if (step is not None and not ctx.kind(node.target).is_tensor and not ctx.kind(node.value).is_tensor
                    and not _computed_here(node.value, ctx)):
                # `curr_pos += 1` in a loop region's body: the next pass reads it, a replay never advances it
                ctx.report(self, node.target, target=node.target.value, what="a Python counter of the loop region",
                           effect="advances it", condition=step.condition)
            return
        if isinstance(node.target, cst.Subscript):
            self._check_param_group(node.target, ctx, node.value)
            if per_step.advanced_entry(node.target, ctx.function_node) is not None:
                # `state["step"] += 1` on `state = self.state[p]`: a host counter kept across steps
                self._report_entry(node.target, ctx)
        self._check(node.target, ctx, node.value)

    def _report_entry(self, target: cst.Subscript, ctx) -> None:
        held = "a counter in a CPU tensor" if per_step.held_in_cpu_tensor(target, ctx.function_node) else "a Python counter"
        ctx.report(self, target, target=f'{target.value.value}["{per_step.entry_key(target)}"]',
                   what=held, effect="advances it")

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        for target in node.targets:
            tgt = target.target
            if isinstance(tgt, cst.Subscript):
                self._check_param_group(tgt, ctx, node.value)
                if type(node.value) is cst.BinaryOperation and per_step.advanced_entry(tgt, ctx.function_node) is not None:
                    # `state["n"] = state.get("n", 0) + 1` on `state = self.state[p]`
                    self._report_entry(tgt, ctx)
                elif per_step.recurrent_entry(tgt, ctx.function_node) and not ctx.kind(node.value).is_tensor:
                    # `group["d"] = d` with `d = group["d"]` ... `d = max(d, d_hat)`: a new value from the old
                    ctx.report(self, tgt, target=f'{tgt.value.value}["{per_step.entry_key(tgt)}"]',
                               what="a Python value kept across steps, computed from its last value,",
                               effect="updates it")
                continue
            if not isinstance(tgt, cst.Attribute):
                continue
            source = ctx.scalar_source(node.value)  # `total = self.count + n; self.count = total`
            if _mentions(node.value, tgt) or (source is not None and source.label == f"attribute `self.{tgt.attr.value}`"):
                self._check(tgt, ctx, node.value)

    def _check(self, target: cst.BaseExpression, ctx, value: cst.BaseExpression) -> None:
        if not (isinstance(target, cst.Attribute) and ctx.is_self(target.value)):
            return
        if ctx.kind(target).is_tensor or ctx.kind(value).is_tensor:
            return  # `self.total += loss` on a tensor attribute is a device op
        if _reads_tensor_on_host(value, ctx):
            return  # `self.ema = 0.9 * self.ema + loss.item()`: one cause, reported at the sync (GS101/GS105)
        ctx.report(self, target, target=f"self.{target.attr.value}", what="a Python counter", effect="advances it")

    def _check_param_group(self, target: cst.Subscript, ctx, value: cst.BaseExpression) -> None:
        """`g["lr"] = new_lr` on an optimizer's param group: code writes a setting there to
        change it between steps (a scheduler, a warm-up), but the captured step keeps the
        Python value it read at capture. A literal is the same every step; a per-step number
        as the value is GS301's report."""
        if type(value) in (cst.Integer, cst.Float) or not _optimizer_key(target) or not _param_group(target.value, ctx):
            return
        if ctx.kind(value).is_tensor:
            return
        source = ctx.scalar_source(value)
        if source is not None and not source.condition:
            return  # a per-step number whatever the callers: GS301 reports it
        key = target.slice[0].slice.value.evaluated_value
        shown = f'{dotted(target.value) or "param_group"}["{key}"]'
        # where GS301's report depends on the callers (a parameter), this one stands in when it does not hold
        condition = (NOT, *source.condition) if source is not None else None
        ctx.report(self, target, condition=condition, target=shown, what="an optimizer setting", effect="changes it")


def _computed_here(value: cst.BaseExpression, ctx) -> bool:
    """`num_tokens += current` where the function binds `current` from a call or an expression the
    analysis cannot type (`(batch["labels"] != pad).sum()`): it may well be a tensor, and a
    tensor added to the name is device work, not a host counter. A literal, a parameter or an
    attribute (`t += dt`, `pos += self.stride`) is a number as far as the loop goes."""
    if ctx.kind(value).not_tensor or type(value) is not cst.Name or ctx.function_node is None:
        return False
    name = value.value
    for node in own_nodes(ctx.function_node.body):
        if type(node) is cst.Assign and any(type(t.target) is cst.Name and t.target.value == name for t in node.targets):
            if type(node.value) not in (cst.Integer, cst.Float, cst.Name, cst.Attribute):
                return True
    return False


def _reads_tensor_on_host(expr: cst.BaseExpression, ctx) -> bool:
    """`t.item()`, `t.tolist()`, `float(t)`, `int(t)` of a tensor somewhere in `expr`."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("item", "tolist"):
                return True
            if (isinstance(func, cst.Name) and func.value in ("float", "int", "bool") and node.args
                    and ctx.kind(node.args[0].value).is_tensor):
                return True
        stack.extend(children(node))
    return False


def _mentions(expr: cst.BaseExpression, attribute: cst.Attribute) -> bool:
    """Does `expr` read the same `self.x` (as in `self.x = self.x + 1`)?"""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Attribute) and node.attr.value == attribute.attr.value:
            if isinstance(node.value, cst.Name) and isinstance(attribute.value, cst.Name) and node.value.value == attribute.value.value:
                return True
        stack.extend(children(node))
    return False


RULES = (PythonScalarInput, PythonCounterInRegion)


def _bound_source(source, expr: cst.BaseExpression, what: str):
    """A slice bound, a `range()` trip count or a branch's comparison with a number, from a
    parameter of no declared kind: where the function is a region root that no visible call
    feeds, it may vary as a root's number parameter may (`cache[:, :, :pos]`, `if t > 0:` in
    `def p_sample(self, x, t)`): a Python number there is frozen at capture, and a tensor would
    be read on the host, so either way it is a hazard. Named like a size (`max_len`,
    `n_heads`), it is taken for a setting."""
    condition = source.condition
    if condition and condition[0] == "param" and len(condition) == 4 and not SIZE_NAME.match(condition[2]):
        return replace(source, condition=condition[:3], label=f"parameter `{condition[2]}` ({what})")
    return source


_ORDERINGS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)


def _compared_with_number(test: cst.BaseExpression, operand: cst.BaseExpression) -> bool:
    """Is `operand` a plain name the condition orders or equates with a number literal
    (`t > 0`, `step == 0`, `0 < t`), or orders against a setting (`timestep <
    self.cfg.random_timesteps`: only numbers and tensors are ordered)? As a tensor that is a read
    of device data, as a Python number a decision frozen at capture."""
    if type(operand) is not cst.Name:
        return False
    for comparison in _comparisons(test):
        operands = [comparison.left, *(c.comparator for c in comparison.comparisons)]
        if not any(o is operand for o in operands) or any(
                type(c.operator) in (cst.Is, cst.IsNot, cst.In, cst.NotIn) for c in comparison.comparisons):
            continue
        if any(type(o) in (cst.Integer, cst.Float) for o in operands):
            return True
        if all(type(c.operator) in _ORDERINGS for c in comparison.comparisons) and any(
                type(o) is cst.Attribute for o in operands if o is not operand):
            return True
    return False


def _comparisons(test: cst.BaseExpression):
    return (operand for operand in truth_tested(test) if type(operand) is cst.Comparison)
