"""RNG rules (GS6xx): random-number generators and captured regions.

A captured graph replays random kernels correctly only through generators the graph knows
about: the default CUDA generator is registered by every capture, a custom one must be
registered with `graph.register_generator_state(gen)`. Seeding is host work that happens once,
at capture. Checkpointing stashes and restores RNG state around the recomputation.

Facts measured on an H100 with torch 2.11 (re-check on new versions):
- an unregistered `torch.Generator(device="cuda")` used inside capture fails it with
  `RuntimeError: Attempt to increase offset for a CUDA generator not in capture mode.`;
  registered, each replay draws new numbers;
- `torch.manual_seed`/`torch.cuda.manual_seed` inside capture raise nothing and draw nothing:
  replays keep advancing the generator, never reseeding it;
- `torch.utils.checkpoint.checkpoint` with the default `preserve_rng_state=True` captures
  (reentrant and not) and replays with matching dropout masks in forward and recomputation;
  before torch 2.10 it failed ("Cannot call CUDAGeneratorImpl::current_seed during CUDA
  graph capture", pytorch/pytorch#83148, fixed by #162505). `preserve_rng_state=False` makes
  the recomputation draw different masks, in eager mode too.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.model import Applicability, Consequence, Example, Principle
from graphsafe.rules.base import Callees, Rule, last_parts
from graphsafe.rewriters.keywords import keyword_fix
from graphsafe.rules.gpu_only import BindingRule, binding_key, imported_name, keyword, method_call
from graphsafe.analyzer.generators import GENERATOR_PARAM

# ------------------------------------------------------------------ GS601


class UnregisteredGenerator(BindingRule):
    """## What it does
    Flags an op inside a captured region that draws from a CUDA generator of your own
    (`generator=gen`) when the file never registers that generator with a graph
    (`graph.register_generator_state(gen)`).

    ## Why is this bad?
    During capture, random kernels do not draw numbers: they record an offset into the
    generator's Philox stream, and each replay advances that offset. PyTorch does this
    bookkeeping for the default CUDA generator of every capture, and for other generators
    only when they are registered with the graph. An unregistered CUDA generator used inside
    capture makes capture fail (torch 2.11: `RuntimeError: Attempt to increase offset for a
    CUDA generator not in capture mode.`).

    ## Example
    ```python
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)

    def sample(logits):
        return torch.multinomial(logits.softmax(-1), 1, generator=gen)

    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = sample(static_logits)
    ```

    ## Use instead
    Register the generator with the graph before capturing:
    ```python
    g = torch.cuda.CUDAGraph()
    g.register_generator_state(gen)
    with torch.cuda.graph(g):
        out = sample(static_logits)
    ```

    ## Fix safety
    No automatic fix: the registration belongs where the graph is built, which may be in
    another file.

    ## Precise semantics
    `gen` counts as a CUDA generator when it is built in the same file
    (`torch.Generator(device="cuda")`, any device text that mentions `cuda`, or a device given
    by a variable such as `self.device`: the region is captured on the GPU) and no
    `register_generator_state(gen)` call in the file registers it with a graph. Generators are
    matched by name: `gen`, or `.gen` for an attribute (`self.gen` in `__init__`, `model.gen`
    where the graph is built).

    A draw whose `generator=` is a parameter of its function (`randn_tensor(shape,
    generator=generator)` in a helper, in the project or a followed library) is judged by what
    reached calls pass it: a `torch.Generator` object that the passing file does not register
    (directly, or through a parameter of the caller handed on), or a generator the region root
    receives from its own caller (it may be a CUDA one: reported, saying so). Calls that pass
    nothing or `None` leave the default generator in force and are not reported.
    """

    code = "GS601"
    name = "unregistered-generator"
    principle = Principle.STATIC
    consequence = Consequence.CAPTURE_FAILS
    summary = "a custom CUDA generator used inside a region but never registered with a graph"
    message = (
        "generator `{generator}` is a CUDA generator that no graph registers "
        "(`graph.register_generator_state({generator})`): {consequence}"
    )
    valid = (
        'g = torch.Generator(device="cuda")\ntorch.cuda.CUDAGraph().register_generator_state(g)\n'
        'z = torch.randn(4, generator=g, device="cuda")',
        "g = torch.Generator()\nz = torch.randn(4, generator=g)",  # a CPU generator
        # a helper drawing from its `generator` parameter, called without one: the default generator
        Example('def draw(generator=None):\n    return torch.rand(4, generator=generator, device="cuda")\n\n\n'
                'def step(x):  # graphsafe: region\n    return draw()', module=True),
        'g = torch.Generator(device="cpu")\nz = torch.rand(4, generator=g)',
        "g = torch.Generator()\nz = torch.rand(4, generator=g)",
        "g = torch.Generator().manual_seed(0)\nz = torch.rand(4, generator=g)",  # a CPU generator, seeded
        Example('g = torch.Generator(device="cuda")\nz = torch.rand(4, generator=g, device="cuda")', region=False),
    )
    invalid = (
        'g = torch.Generator(device="cuda")\nz = torch.randn(4, generator=g, device="cuda")',
        'self.gen = torch.Generator(device=f"cuda:{n}")\nz = torch.multinomial(x, 1, generator=self.gen)',
        Example('g = torch.Generator("cuda")\nx.normal_(generator=g)\ny.bernoulli_(0.5, generator=g)', expect=2),
        # a generator the region root receives (may be a CUDA one), drawn from in a helper
        Example('def draw(generator=None):\n    return torch.rand(4, generator=generator, device="cuda")\n\n\n'
                'def step(x, gen=None):  # graphsafe: region\n    return draw(gen)', module=True),
        # a device variable: the region using the generator is captured on the GPU
        "self.noise = torch.Generator(device=self.device)\nz = torch.randn(4, generator=self.noise, device=x.device)",
        'self.gen = torch.Generator(device="cuda").manual_seed(0)\nz = torch.rand(4, generator=self.gen, device="cuda")',
    )

    def __init__(self) -> None:
        super().__init__()
        self.registered: set[str] = set()
        self.registers_unknown = False  # register_generator_state(<not a plain name>): could be any

    calls = Callees({"register_generator_state"}, keywords=("generator",))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        call = method_call(node)
        if call is not None and call[1] == "register_generator_state":
            positional = [a for a in node.args if a.keyword is None]
            key = binding_key(positional[0].value) if positional else None
            if key is None:
                self.registers_unknown = True
            else:
                self.registered.add(key)
            return
        arg = keyword(node, "generator")
        key = binding_key(arg.value) if arg is not None else None
        if key is not None and key in ctx.params and ctx.function_key:
            # a parameter: judged by what reached calls pass it (analyzer/generators.py)
            ctx.report(self, arg.value, condition=(GENERATOR_PARAM, ctx.function_key, key), generator=key)
            return
        if key is not None:
            def built_for_cuda(bindings) -> bool:
                return _maybe_cuda(bindings.generators.get(key, ""))

            self.later(built_for_cuda, arg.value, ctx, generator=ctx.code_for(arg.value))

    def end_module(self, ctx) -> None:
        if self.registers_unknown:
            return
        self.pending = [p for p in self.pending if binding_key(p[1]) not in self.registered]
        super().end_module(ctx)


# ------------------------------------------------------------------ GS602

SEED_FUNCTIONS = frozenset(
    """torch.manual_seed torch.seed torch.random.manual_seed torch.random.seed
    torch.cuda.manual_seed torch.cuda.manual_seed_all torch.cuda.seed torch.cuda.seed_all
    torch.cuda.random.manual_seed torch.cuda.random.manual_seed_all random.seed numpy.random.seed
    lightning.seed_everything lightning.pytorch.seed_everything lightning.fabric.seed_everything
    pytorch_lightning.seed_everything transformers.set_seed accelerate.utils.set_seed""".split()
)


class SeedInRegion(BindingRule):
    """## What it does
    Flags seeding a random number generator inside a captured region: `torch.manual_seed`,
    `random.seed`, `numpy.random.seed`, `seed_everything`, `gen.manual_seed(...)`, and the like.

    ## Why is this bad?
    Seeding is host work: it runs once, while the graph is captured, and never on replay.
    Replays do not start from the seed again; they keep advancing the captured generator's
    offsets, so a step that was meant to be reproducible ("reseed, then sample") draws
    different numbers on every replay. (On torch 2.11 seeding the CUDA generator during
    capture raises nothing; it simply has no effect on replays.)

    ## Example
    ```python
    def sample_step(logits):
        torch.manual_seed(0)
        return torch.multinomial(logits.softmax(-1), 1)
    ```

    ## Use instead
    Seed once before capture. To replay the same numbers, reset the generator's state
    between replays, outside the region:
    ```python
    torch.manual_seed(0)
    with torch.cuda.graph(g):
        out = sample_step(static_logits)
    ...
    gen.set_state(saved_state)  # outside the region, before the replay that must repeat
    g.replay()
    ```

    ## Fix safety
    No automatic fix.

    ## Precise semantics
    Flagged: `torch.manual_seed`, `torch.seed`, `torch.cuda.manual_seed(_all)`,
    `torch.random.manual_seed`, `random.seed`, `numpy.random.seed`, Lightning's
    `seed_everything`, `transformers.set_seed`, and `.manual_seed()`/`.seed()` on a generator
    built in the same file.
    """

    code = "GS602"
    name = "seed-in-region"
    principle = Principle.STATIC
    consequence = Consequence.SILENTLY_WRONG
    summary = "seeding (`torch.manual_seed`, `random.seed`, `np.random.seed`, ...) inside a region"
    message = "`{what}` reseeds once, at capture; replays never reseed and keep advancing the generator: {consequence}"
    valid = (
        Example("torch.manual_seed(0)", region=False),
        "s = torch.initial_seed()",
        "z = torch.rand_like(x)",
        "self.seed = n",
    )
    invalid = (
        "torch.manual_seed(0)",
        "torch.cuda.manual_seed_all(n)",
        "import random\nrandom.seed(0)",
        "import numpy as np\nnp.random.seed(0)",
        Example('g = torch.Generator(device="cuda")\ng.manual_seed(0)\ntorch.random.manual_seed(n)', expect=2),
    )

    calls = Callees(last_parts(SEED_FUNCTIONS) | {"manual_seed", "seed"})

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = imported_name(node.func, ctx)
        if name in SEED_FUNCTIONS:
            ctx.report(self, node, what=f"{name}()")
            return
        call = method_call(node)
        if call is None or call[1] not in ("manual_seed", "seed"):
            return
        key = binding_key(call[0])
        if key is not None:
            what = f"{ctx.code_for(node.func)}()"
            self.later(lambda b: key in b.generators or key in b.host_rngs, node, ctx, what=what)


# ------------------------------------------------------------------ GS603

CHECKPOINT_FUNCTIONS = frozenset(
    """torch.utils.checkpoint.checkpoint torch.utils.checkpoint.checkpoint_sequential""".split()
)


class CheckpointRngState(Rule):
    """## What it does
    Flags `torch.utils.checkpoint.checkpoint(...)` and `checkpoint_sequential(...)` inside a
    captured region unless they pass `preserve_rng_state=False`.

    ## Why is this bad?
    With `preserve_rng_state=True` (the default) checkpointing stashes the CPU and CUDA RNG
    state in forward and restores it before recomputing in backward, so that dropout draws
    the same mask twice. Before torch 2.10 reading the CUDA generator's state is refused
    while a stream is captured: capture fails with `Cannot call
    CUDAGeneratorImpl::current_seed during CUDA graph capture` (pytorch/pytorch#83148).
    Torch 2.10 made this rewind capturable; on torch 2.11 both `use_reentrant=True` and
    `use_reentrant=False` captured and replayed with matching masks. If you only support
    torch >= 2.10, ignore this rule (`--ignore GS603`).
    `use_reentrant` does not change the hazard; pass `use_reentrant=False` explicitly
    (PyTorch asks for it, and only that variant works with `torch.autograd.grad`).

    ## Example
    ```python
    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False)
        return x
    ```

    ## Use instead
    ```python
    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False, preserve_rng_state=False)
        return x
    ```
    or, on torch >= 2.10, keep the default and ignore this rule.

    ## Fix safety
    The fix adds `preserve_rng_state=False` (or turns `=True` into `=False`). It is unsafe:
    when the checkpointed function draws random numbers (dropout, stochastic depth), the
    recomputation in backward then draws different numbers than forward did, so gradients no
    longer match the forward pass (measured: the dropout masks differ, in eager mode too).
    Without randomness in the checkpointed function the change has no effect on the values.
    """

    code = "GS603"
    name = "checkpoint-rng-state"
    principle = Principle.CONFIG
    # A warning: torch >= 2.10 captures the RNG rewind (measured on 2.11); only older torch fails.
    consequence = Consequence.SLOWER
    fixable = True
    summary = "activation checkpointing without `preserve_rng_state=False` inside a region (torch < 2.10)"
    message = (
        "`{what}()` stashes and restores the CUDA RNG state (`preserve_rng_state` defaults to True), "
        "which torch before 2.10 refuses during capture (fine on 2.10+): {consequence}"
    )
    valid = (
        "z = torch.utils.checkpoint.checkpoint(F.gelu, x, use_reentrant=False, preserve_rng_state=False)",
        "from torch.utils.checkpoint import checkpoint_sequential\n"
        "z = checkpoint_sequential(self.blocks, 2, x, use_reentrant=False, preserve_rng_state=False)",
        "z = torch.utils.checkpoint.checkpoint(F.gelu, x, **self.ckpt_kwargs)",  # unknown: not reported
        Example("z = torch.utils.checkpoint.checkpoint(F.gelu, x, use_reentrant=False)", region=False),
    )
    invalid = (
        Example(
            "z = torch.utils.checkpoint.checkpoint(F.gelu, x, use_reentrant=False)",
            fixed="z = torch.utils.checkpoint.checkpoint(F.gelu, x, use_reentrant=False, preserve_rng_state=False)",
        ),
        Example(
            "from torch.utils.checkpoint import checkpoint as ckpt\nz = ckpt(F.gelu, x, preserve_rng_state=True)",
            fixed="from torch.utils.checkpoint import checkpoint as ckpt\n"
            "z = ckpt(F.gelu, x, preserve_rng_state=False)",
        ),
        Example(
            "from torch.utils import checkpoint as cp\nz = cp.checkpoint_sequential(\n    self.blocks,\n    2,\n    x,\n)",
            fixed="from torch.utils import checkpoint as cp\nz = cp.checkpoint_sequential(\n    self.blocks,\n"
            "    2,\n    x,\n    preserve_rng_state=False,\n)",
        ),
    )

    calls = Callees(last_parts(CHECKPOINT_FUNCTIONS))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = imported_name(node.func, ctx)
        if name not in CHECKPOINT_FUNCTIONS:
            return
        if any(arg.star == "**" for arg in node.args):
            return  # preserve_rng_state may come in **kwargs
        arg = keyword(node, "preserve_rng_state")
        if arg is not None and not (isinstance(arg.value, cst.Name) and arg.value.value == "True"):
            return  # False, or a value we cannot see
        edit = keyword_fix(ctx, node, "preserve_rng_state", "False")
        fix = ("Pass `preserve_rng_state=False`", [edit], Applicability.UNSAFE,
               "the recomputation then draws other random numbers than the forward did (dropout masks differ)")
        ctx.report(self, node, fix=fix, what=name.rpartition(".")[2])


RULES = (UnregisteredGenerator, SeedInRegion, CheckpointRngState)


def _maybe_cuda(device_text: str) -> bool:
    """A generator's device argument that can be the GPU: text mentioning cuda, or a variable
    (`device`, `self.device`): the region using it is captured on the GPU. No argument or a
    literal string without "cuda" (`"cpu"`) is a CPU generator."""
    if "cuda" in device_text:
        return True
    return bool(device_text) and not device_text.startswith(("'", '"'))

