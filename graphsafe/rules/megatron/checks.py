"""Megatron-Core / Megatron-Bridge CUDA-graph configuration (GS801–GS811).

These rules do not look at capture regions: they read a recipe's settings (python_config.py
for Python, shell.py for launch scripts) and check the combinations that Megatron-Core,
Megatron-Bridge and Transformer Engine document or assert, reporting at the line that writes
the offending value (for a missing setting: the line that turns CUDA graphs on).

Sources (quoted in the rules' docs): Megatron-Bridge's CUDA-graph guide and skill
(docs/training/cuda-graphs.md, skills/perf-techniques/cuda-graphs/SKILL.md: "Required
constraints"), Megatron-LM's `megatron/training/arguments.py` (validate_args) and
`megatron/core/transformer/transformer_config.py` (`__post_init__`), and Megatron-Core's
`full_cuda_graph.py`.

Defaults assumed where a recipe does not write a setting:
- `use_te_rng_tracker` is off in Python configs (Bridge's provider asserts it); Megatron-LM's
  launcher turns `--te-rng-tracker` on by itself when `--transformer-impl` is
  `transformer_engine` (its default), and Bridge's performance harness does too, so a launch
  script is reported only when it asks for `--transformer-impl local`.
- `check_for_nan_in_loss(_and_grad)` is ON (its default in both Megatron-LM and Bridge), unless
  the launcher gets `--no-check-for-nan-in-loss-and-grad` or `--fp16` without `--loss-scale`
  (Megatron-LM turns it off for dynamic loss scaling). A Python config is held to it only where
  it writes a whole Bridge `ConfigContainer` (`cfg.model.cuda_graph_scope = ...`): a bare
  `TransformerConfig(...)` does not own that setting. `ddp.check_for_nan_in_grad` is off
  unless written.
- A value that is not a literal (a variable, `$IMPL`) is never assumed to break a rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from graphsafe.model import Consequence, Example, Principle
from graphsafe.rules.base import Rule
from graphsafe.rules.megatron.settings import (
    LEGACY_SCOPES,
    NEWER_IMPLS,
    TRIGGER_WORDS,
    UNKNOWN,
    VALID_IMPLS,
    VALID_SCOPES,
    Origin,
    Recipe,
    Setting,
    closest,
)

Finding = tuple[Setting, dict]


def _recipe(code: str) -> Example:
    """An example recipe: a Bridge config built by a recipe function, then changed."""
    return Example("cfg = pretrain_config()\n" + code, module=True)


class _FileRecipes:
    """The recipes of one Python file, collected once and shared by every GS8 rule."""

    def __init__(self) -> None:
        self.recipes: list[Recipe] | None = None


def python_recipes(ctx) -> list[Recipe]:
    state = ctx.file_state(_FileRecipes)
    if state.recipes is None:
        from graphsafe.rules.megatron.python_config import PythonCollector

        collector = PythonCollector()
        collector.collect(ctx.cst_module)
        state.recipes = collector.recipes()
    return state.recipes


class MegatronRule(Rule):
    """A check over one recipe's settings; reports wherever the config is written."""

    principle = Principle.CONFIG
    consequence = Consequence.REJECTED

    def findings(self, recipe: Recipe) -> Iterable[Finding]:
        raise NotImplementedError

    def end_module(self, ctx) -> None:
        source = getattr(ctx, "source", "")
        if not any(word in source for word in TRIGGER_WORDS):
            return  # the cheap pre-filter: nearly every file stops here
        from graphsafe.analyzer.walker import Place

        for recipe in python_recipes(ctx):
            for setting, fields in self.findings(recipe):
                node, statement = setting.anchor
                ctx.report(self, node, always=True, at=Place((), statement), **fields)


# ---------------------------------------------------------------------------- spelling fixes
def _root(setting: Setting) -> str | None:
    """`cfg` of `cfg.model.cuda_graph_impl`: the ConfigContainer a recipe writes."""
    parts = setting.written.split(".")
    if len(parts) >= 3 and parts[-2] == "model":
        return ".".join(parts[:-2])
    return None


def owns_container(setting: Setting) -> bool:
    """The setting is written on a whole Bridge ConfigContainer (`cfg.model.x` / `model.x=`)."""
    if setting.origin is Origin.OVERRIDE:
        return setting.written.startswith("model.")
    return setting.origin is Origin.CONFIG and _root(setting) is not None


def _lit(value: object) -> str:
    """A Python literal as recipes write it (double quotes)."""
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_lit(v) for v in value) + "]"
    return repr(value)


def fix_text(like: Setting, name: str, value: object, section: str = "model") -> str:
    """`name = value` written the way `like` writes its settings."""
    origin = like.origin
    if origin is Origin.MEGATRON_FLAG:
        flag = "--" + name.replace("_", "-")
        if value is True:
            return f"`{flag}`"
        if value is False:
            return f"`--no-{name.replace('_', '-')}`"
        return f"`{flag} {value}`"
    if origin is Origin.BRIDGE_FLAG:
        return f"`--{name} {value}`" if not isinstance(value, bool) else f"`--{name}`"
    if origin is Origin.OVERRIDE:
        shown = str(value).lower() if isinstance(value, bool) else value
        path = like.written.rpartition(".")[0] if like.written.endswith("." + name) else section
        return f"`{path}.{name}={shown}`"
    if origin is Origin.ENV:
        return f"`{name}={value}`"
    written = like.written
    if written.endswith("="):
        return f"`{name}={_lit(value)}`"
    if written.startswith('"'):
        return f'`"{name}": {_lit(value)}`'
    root = _root(like)
    if root is not None:
        return f"`{root}.{section}.{name} = {_lit(value)}`"
    if "." in written:
        return f"`{written.rpartition('.')[0]}.{name} = {_lit(value)}`"
    return f"`{name} = {_lit(value)}`"


def shown(setting: Setting) -> str:
    """How the setting reads in the message: `cfg.model.cuda_graph_impl = 'local'`."""
    value = setting.value
    if isinstance(value, tuple):
        value = list(value)
    if setting.origin in (Origin.MEGATRON_FLAG, Origin.BRIDGE_FLAG):
        if isinstance(value, bool):  # a switch: `--te-rng-tracker`, `--no-check-for-nan-in-loss-and-grad`
            return f"`{setting.written}`"
        return f"`{setting.written} {' '.join(value) if isinstance(value, list) else value}`"
    if setting.origin in (Origin.OVERRIDE, Origin.ENV) and not setting.written.startswith(("os.", '"')):
        return f"`{setting.written}={','.join(value) if isinstance(value, list) else value}`"
    written = setting.written.rstrip("=")
    if written.startswith('"'):
        return f"`{written}: {_lit(value)}`"
    if written.startswith("os.environ"):
        return f"`{written} = {_lit(value)}`"
    return f"`{written}={_lit(value)}`" if setting.written.endswith("=") else f"`{written} = {_lit(value)}`"


# ---------------------------------------------------------------------------- GS801
class GraphsWithoutTeRngTracker(MegatronRule):
    """## What it does
    Flags a recipe that turns on Megatron CUDA graphs (`cuda_graph_impl = "local"` or
    `"transformer_engine"`, `enable_cuda_graph=True`, `--cuda-graph-impl`,
    `--enable-cuda-graph`) without the Transformer Engine RNG tracker
    (`use_te_rng_tracker = True` / `rng.te_rng_tracker = True`, `--te-rng-tracker`).

    ## Why is this bad?
    Megatron-Bridge's model provider asserts it: "Transformer engine's RNG tracker is
    required for cudagraphs, it can be enabled with use_te_rng_tracker=True". Megatron's
    default tracker switches RNG states in a way a captured graph cannot replay (dropout
    would repeat the same mask); the TE tracker uses graph-safe generator states. The run
    stops at model construction, after the whole start-up.

    Megatron-LM's launcher enables `--te-rng-tracker` by itself when `--transformer-impl` is
    `transformer_engine` (its default) and Bridge's performance harness does the same, so
    launch scripts are only reported with `--transformer-impl local`.

    ## Example
    ```python
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.cuda_graph_scope = ["attn"]
    ```

    ## Use instead
    ```python
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.cuda_graph_scope = ["attn"]
    cfg.model.use_te_rng_tracker = True
    cfg.rng.te_rng_tracker = True
    ```

    ## Fix safety
    No automatic fix: the recipe may build its RNG config elsewhere.
    """

    code = "GS801"
    name = "megatron-graphs-without-te-rng-tracker"
    summary = "Megatron CUDA graphs enabled without the Transformer Engine RNG tracker"
    message = "{setting} enables CUDA graphs, which require the Transformer Engine RNG tracker; add {remedy}: {consequence}"
    valid = (
        _recipe('cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.use_te_rng_tracker = True\n'
                'cfg.rng.te_rng_tracker = True'),
        _recipe('cfg.model.cuda_graph_impl = "none"'),
        _recipe("config = TransformerConfig(enable_cuda_graph=True, use_te_rng_tracker=True)"),
        _recipe('args = ["--cuda-graph-impl", "transformer_engine", "--cuda-graph-scope", "attn"]'),
        _recipe("cfg.model.cuda_graph_impl = impl_from_cli"),
    )
    invalid = (
        _recipe('cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.cuda_graph_scope = ["attn"]'),
        _recipe("config = TransformerConfig(num_layers=2, enable_cuda_graph=True)"),
        _recipe('args = ["--transformer-impl", "local", "--cuda-graph-impl", "local"]'),
        _recipe("cfg.model.cuda_graph_impl = 'local'\ncfg.model.use_te_rng_tracker = False"),
    )

    def findings(self, recipe: Recipe) -> Iterator[Finding]:
        on = recipe.graphs_on()
        if on is None:
            return
        tracker = recipe.last("te_rng")
        if tracker is not None:
            if tracker.value is False:
                yield tracker, {"setting": shown(tracker) + " turns the tracker off, and " + shown(on),
                                "remedy": self._fix(on)}
            return
        if on.origin is Origin.BRIDGE_FLAG:
            return  # Bridge's performance harness turns te_rng_tracker on with the graph flags
        if on.origin is Origin.MEGATRON_FLAG and recipe.value("transformer_impl", "transformer_engine") != "local":
            return  # Megatron-LM's validate_args enables it for the TE transformer implementation
        yield on, {"setting": shown(on), "remedy": self._fix(on)}

    @staticmethod
    def _fix(on: Setting) -> str:
        if on.origin is Origin.MEGATRON_FLAG:
            return "`--te-rng-tracker`"
        if on.origin is Origin.OVERRIDE:
            return "`model.use_te_rng_tracker=true rng.te_rng_tracker=true`"
        root = _root(on)
        if root is not None:
            return f"`{root}.model.use_te_rng_tracker = True` and `{root}.rng.te_rng_tracker = True`"
        return fix_text(on, "use_te_rng_tracker", True)


# ---------------------------------------------------------------------------- GS802
class FullIterationWithTeImpl(MegatronRule):
    """## What it does
    Flags `cuda_graph_scope` containing `"full_iteration"` while `cuda_graph_impl` is
    `"transformer_engine"` (or `external_cuda_graph=True`).

    ## Why is this bad?
    Megatron-Bridge documents `full_iteration` as the scope of the `"local"` implementation
    only (MCore's `FullCudaGraphWrapper` captures the whole forward-backward step); Transformer
    Engine's `make_graphed_callables` graphs layers: `attn`, `mlp`, `moe`, `moe_router`,
    `moe_preprocess`, `mamba`. "`full_iteration` scope only with `cuda_graph_impl = "local"`"
    is one of Bridge's required constraints.

    ## Example
    ```python
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.cuda_graph_scope = ["full_iteration"]
    ```

    ## Use instead
    ```python
    cfg.model.cuda_graph_impl = "local"
    cfg.model.cuda_graph_scope = ["full_iteration"]
    ```

    ## Fix safety
    No automatic fix: the two implementations have different memory costs.
    """

    code = "GS802"
    name = "megatron-full-iteration-needs-local-impl"
    summary = '`full_iteration` CUDA-graph scope with an implementation other than `"local"`'
    message = '{setting} asks for a `full_iteration` graph, which only `cuda_graph_impl="local"` captures, but {impl} selects Transformer Engine; set {remedy} or use a TE scope (`attn`, `mlp`, ...): {consequence}'
    valid = (
        _recipe('cfg.model.cuda_graph_impl = "local"\ncfg.model.cuda_graph_scope = ["full_iteration"]\n'
                "cfg.model.use_te_rng_tracker = True\ncfg.rerun_state_machine.check_for_nan_in_loss = False"),
        _recipe('cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.cuda_graph_scope = ["attn", "mlp"]'),
    )
    invalid = (
        _recipe('cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.cuda_graph_scope = ["full_iteration"]'),
        _recipe('args = ["--cuda-graph-impl", "transformer_engine", "--cuda-graph-scope", "full_iteration"]'),
    )

    def findings(self, recipe: Recipe) -> Iterator[Finding]:
        scopes, scope = recipe.scopes()
        impl, chosen = recipe.impl()
        if scopes and "full_iteration" in scopes and impl == "transformer_engine" and chosen is not None:
            yield scope, {"setting": shown(scope), "impl": shown(chosen), "remedy": fix_text(chosen, "cuda_graph_impl", "local")}


# ---------------------------------------------------------------------------- GS803
class FullIterationWithNanCheck(MegatronRule):
    """## What it does
    Flags a local `full_iteration` CUDA graph while the NaN check of the loss or of the
    gradients is on. The loss check is on by default in Megatron-LM and Megatron-Bridge, so a
    recipe that does not turn it off is flagged.

    ## Why is this bad?
    The NaN check reads the loss and gradients on the host inside the captured step.
    Megatron-LM asserts "--no-check-for-nan-in-loss-and-grad should be set with
    full_iteration CUDA graph"; Bridge asserts "check_for_nan_in_loss must be disabled when
    using full_iteration CUDA graph. Set rerun_state_machine.check_for_nan_in_loss=False."
    Bridge's documented recipe also sets `cfg.ddp.check_for_nan_in_grad = False`.

    ## Example
    ```bash
    torchrun pretrain_gpt.py --cuda-graph-impl local --cuda-graph-scope full_iteration
    ```

    ## Use instead
    ```bash
    torchrun pretrain_gpt.py --cuda-graph-impl local --cuda-graph-scope full_iteration \\
        --no-check-for-nan-in-loss-and-grad
    ```

    ## Fix safety
    No automatic fix: turning the NaN check off is the user's decision.

    ## Precise semantics
    The checks: the loss check (`rerun_state_machine.check_for_nan_in_loss`, Megatron-LM's
    `check_for_nan_in_loss_and_grad`) and the gradient check (`ddp.check_for_nan_in_grad`).

    The loss check is ON by default in both Megatron-LM and Megatron-Bridge: a launch script
    needs `--no-check-for-nan-in-loss-and-grad` (unless it trains in `--fp16` without
    `--loss-scale`, where Megatron-LM turns it off itself), and a Bridge recipe that writes
    its `ConfigContainer` needs `cfg.rerun_state_machine.check_for_nan_in_loss = False`.
    A bare `TransformerConfig(...)` does not own this setting and is only reported when it
    sets the check on explicitly.
    """

    code = "GS803"
    name = "megatron-full-iteration-nan-check"
    summary = "`full_iteration` CUDA graph with the loss/grad NaN check on"
    message = "{setting} captures the whole iteration, but {check}; set {remedy}: {consequence}"
    valid = (
        _recipe('cfg.model.cuda_graph_impl = "local"\ncfg.model.cuda_graph_scope = ["full_iteration"]\n'
                "cfg.model.use_te_rng_tracker = True\ncfg.rng.te_rng_tracker = True\n"
                "cfg.rerun_state_machine.check_for_nan_in_loss = False\ncfg.ddp.check_for_nan_in_grad = False"),
        _recipe('args = ["--cuda-graph-impl", "local", "--cuda-graph-scope", "full_iteration",\n'
                '        "--no-check-for-nan-in-loss-and-grad"]'),
        _recipe('args = ["--fp16", "--cuda-graph-impl", "local", "--cuda-graph-scope", "full_iteration"]'),
        _recipe('config = TransformerConfig(cuda_graph_impl="local", cuda_graph_scope=["full_iteration"], use_te_rng_tracker=True)'),
    )
    invalid = (
        _recipe('cfg.model.cuda_graph_impl = "local"\ncfg.model.cuda_graph_scope = ["full_iteration"]\n'
                "cfg.model.use_te_rng_tracker = True"),
        _recipe('args = ["--cuda-graph-impl", "local", "--cuda-graph-scope", "full_iteration"]'),
        _recipe('cfg.model.cuda_graph_impl = "local"\ncfg.model.cuda_graph_scope = ["full_iteration"]\n'
                "cfg.rerun_state_machine.check_for_nan_in_loss = False\ncfg.ddp.check_for_nan_in_grad = True"),
    )

    def findings(self, recipe: Recipe) -> Iterator[Finding]:
        scopes, scope = recipe.scopes()
        impl, _ = recipe.impl()
        if impl != "local" or not scopes or "full_iteration" not in scopes:
            return
        loss = recipe.last("nan_loss")
        if loss is not None and loss.value is True:
            yield loss, {"setting": shown(scope), "check": f"{shown(loss)} keeps the loss NaN check on",
                         "remedy": self._loss_fix(loss)}
        elif loss is None and self._on_by_default(recipe, scope):
            yield scope, {"setting": shown(scope), "check": "the loss NaN check is on by default",
                          "remedy": self._loss_fix(scope)}
        grad = recipe.last("nan_grad")
        if grad is not None and grad.value is True:
            yield grad, {"setting": shown(scope), "check": f"{shown(grad)} keeps the gradient NaN check on",
                         "remedy": fix_text(grad, "check_for_nan_in_grad", False, "ddp")}

    @staticmethod
    def _on_by_default(recipe: Recipe, scope: Setting) -> bool:
        if scope.origin is Origin.MEGATRON_FLAG:
            # --fp16 with dynamic loss scaling: Megatron-LM turns the check off itself
            return not (recipe.value("fp16") is True and not recipe.has("loss_scale"))
        return owns_container(scope)

    @staticmethod
    def _loss_fix(like: Setting) -> str:
        if like.origin is Origin.MEGATRON_FLAG:
            return "`--no-check-for-nan-in-loss-and-grad`"
        if like.origin is Origin.BRIDGE_FLAG:
            return "`rerun_state_machine.check_for_nan_in_loss=false`"
        if like.written.split(".")[-1] == "check_for_nan_in_loss_and_grad" or like.written == "check_for_nan_in_loss_and_grad=":
            return fix_text(like, "check_for_nan_in_loss_and_grad", False)
        return fix_text(like, "check_for_nan_in_loss", False, "rerun_state_machine")


# ---------------------------------------------------------------------------- GS804
class GraphScopeConflict(MegatronRule):
    """## What it does
    Flags a `cuda_graph_scope` that lists `moe` together with `moe_router`, or
    `moe_preprocess` without `moe_router`.

    ## Why is this bad?
    Megatron-Bridge's required constraints: "Do not combine `moe` scope and `moe_router`
    scope" (`moe` graphs the whole MoE layer, `moe_router` only its router, for token-dropless
    MoE) and "`moe_preprocess` scope requires `moe_router` scope to also be set".
    Megatron-Core's validation rejects both.

    ## Example
    ```bash
    --cuda-graph-impl transformer_engine --cuda-graph-scope attn moe moe_router
    ```

    ## Use instead
    ```bash
    --cuda-graph-impl transformer_engine --cuda-graph-scope attn moe_router moe_preprocess
    ```

    ## Fix safety
    No automatic fix: which scope to keep depends on the MoE dispatcher.
    """

    code = "GS804"
    name = "megatron-graph-scope-conflict"
    summary = "`moe` with `moe_router`, or `moe_preprocess` without `moe_router`, in `cuda_graph_scope`"
    message = "{setting}: {problem}; {remedy}: {consequence}"
    valid = (
        _recipe('cfg.model.cuda_graph_scope = ["attn", "moe_router", "moe_preprocess"]'),
        _recipe('cfg.model.cuda_graph_scope = ["attn", "moe"]'),
    )
    invalid = (
        _recipe('cfg.model.cuda_graph_scope = ["attn", "moe", "moe_router"]'),
        _recipe('args = ["--cuda-graph-scope", "attn,moe_preprocess"]'),
    )

    def findings(self, recipe: Recipe) -> Iterator[Finding]:
        scopes, scope = recipe.scopes()
        if not scopes:
            return
        if "moe" in scopes and "moe_router" in scopes:
            yield scope, {"setting": shown(scope), "problem": "`moe` and `moe_router` cannot be graphed together",
                          "remedy": "keep `moe` (the whole MoE layer) or `moe_router` (token-dropless MoE), not both"}
        elif "moe_preprocess" in scopes and "moe_router" not in scopes:
            yield scope, {"setting": shown(scope), "problem": "`moe_preprocess` requires `moe_router` in the scope",
                          "remedy": "add `moe_router` to `cuda_graph_scope`"}


# ---------------------------------------------------------------------------- GS805
class UnknownGraphValue(MegatronRule):
    """## What it does
    Flags a `cuda_graph_impl` or `cuda_graph_scope` value that Megatron does not accept (a
    typo such as `transformer-engine` or `moe_routr`), and suggests the closest valid value.

    ## Why is this bad?
    These are the values Megatron-Bridge accepts (`VALID_CUDA_GRAPH_IMPLS`,
    `VALID_CUDA_GRAPH_SCOPES` in its performance harness; the `CudaGraphScope` enum in
    Megatron-Core). A typo such as `transformer-engine` or `moe_routr` is rejected only when
    the config is validated, after start-up on every rank.

    ## Example
    ```python
    cfg.model.cuda_graph_impl = "te"
    cfg.model.cuda_graph_scope = ["attention"]
    ```

    ## Use instead
    ```python
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.cuda_graph_scope = ["attn"]
    ```

    ## Fix safety
    No automatic fix: the closest value is a guess.

    ## Precise semantics
    Valid `cuda_graph_impl` values: `none`, `local`, `transformer_engine`. Valid
    `cuda_graph_scope` entries: `full_iteration`, `attn`, `mlp`, `moe`, `moe_router`,
    `moe_preprocess`, `mamba`. `full`, the older Megatron-Core spelling of "the whole layer",
    is accepted, and so is the newest Megatron-Core's `cuda_graph_impl="full_iteration"`, read
    as `local` + `full_iteration`.
    """

    code = "GS805"
    name = "megatron-unknown-graph-value"
    summary = "unknown `cuda_graph_impl` or `cuda_graph_scope` value"
    message = "{setting}: {problem}: {consequence}"
    valid = (
        _recipe('cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.cuda_graph_scope = ["attn", "mamba"]\n'
                "cfg.model.use_te_rng_tracker = True"),
        _recipe('args = ["--cuda-graph-scope", "full"]'),
    )
    invalid = (
        _recipe('cfg.model.cuda_graph_impl = "transformer-engine"\ncfg.model.use_te_rng_tracker = True'),
        _recipe('args = ["--cuda-graph-scope", "attn", "moe_routr"]'),
    )

    def findings(self, recipe: Recipe) -> Iterator[Finding]:
        for setting in recipe.settings:
            if setting.key == "impl" and isinstance(setting.value, str) and setting.value not in VALID_IMPLS + NEWER_IMPLS:
                yield setting, {"setting": shown(setting), "problem": _unknown("cuda_graph_impl", setting.value, VALID_IMPLS)}
            elif setting.key == "scope" and isinstance(setting.value, tuple):
                bad = [s for s in setting.value if s not in VALID_SCOPES and s not in LEGACY_SCOPES]
                if bad:
                    problem = "; ".join(_unknown("cuda_graph_scope", s, VALID_SCOPES) for s in bad)
                    yield setting, {"setting": shown(setting), "problem": problem}


def _unknown(name: str, value: str, valid: tuple[str, ...]) -> str:
    guess = closest(value, valid)
    hint = f"did you mean `{guess}`?" if guess else "valid: " + ", ".join(f"`{v}`" for v in valid)
    return f"`{value}` is not a valid `{name}` ({hint})"


# ---------------------------------------------------------------------------- GS806
class ExpandableSegmentsWithGraphs(MegatronRule):
    """## What it does
    Flags `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` in a recipe or launch script
    that enables Megatron CUDA graphs without `NCCL_GRAPH_REGISTER=0`.

    ## Why is this bad?
    NCCL registers the buffers of captured collectives with the graph; with expandable
    segments the allocator remaps that memory and replay can hit an illegal memory access.
    Megatron-LM asserts "Setting NCCL_GRAPH_REGISTER=0 to avoid illegal memory access when
    using CUDA Graph with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" for
    `transformer_engine` graphs, and Megatron-Core enforces it for `local` graphs on GPUs
    before Blackwell (compute capability < 10).

    ## Example
    ```bash
    export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
    torchrun pretrain_gpt.py --cuda-graph-impl transformer_engine --cuda-graph-scope attn
    ```

    ## Use instead
    ```bash
    export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
    export NCCL_GRAPH_REGISTER=0
    torchrun pretrain_gpt.py --cuda-graph-impl transformer_engine --cuda-graph-scope attn
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "GS806"
    name = "megatron-expandable-segments-nccl-graph-register"
    summary = "`expandable_segments:True` with CUDA graphs and without `NCCL_GRAPH_REGISTER=0`"
    message = "{setting} with CUDA graphs ({graphs}) needs NCCL graph registration off; set {remedy}: {consequence}"
    valid = (
        _recipe('import os\nos.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"\n'
                'os.environ["NCCL_GRAPH_REGISTER"] = "0"\ncfg.model.cuda_graph_impl = "transformer_engine"\n'
                "cfg.model.use_te_rng_tracker = True"),
        _recipe('import os\nos.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"\n'
                'cfg.model.cuda_graph_impl = "none"'),
    )
    invalid = (
        _recipe('import os\nos.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"\n'
                'cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.use_te_rng_tracker = True'),
        _recipe('env = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "NCCL_GRAPH_REGISTER": "1"}\n'
                'args = ["--cuda-graph-impl", "local"]'),
    )

    def findings(self, recipe: Recipe) -> Iterator[Finding]:
        alloc = recipe.last("alloc_conf")
        if alloc is None or not isinstance(alloc.value, str) or "expandable_segments:true" not in alloc.value.lower().replace(" ", ""):
            return
        on = recipe.graphs_on()
        register = recipe.last("nccl_graph_register")
        if on is None or register is not None and (register.value is UNKNOWN or str(register.value).strip() == "0"):
            return
        yield alloc, {"setting": shown(alloc), "graphs": shown(on), "remedy": _env_fix(alloc, "NCCL_GRAPH_REGISTER", "0")}


def _env_fix(like: Setting, name: str, value: str) -> str:
    if like.written.startswith("os.environ"):
        return f'`os.environ["{name}"] = "{value}"`'
    if like.written.startswith('"'):
        return f'`"{name}": "{value}"`'
    return f"`export {name}={value}`"


# ---------------------------------------------------------------------------- GS807
class CpuOffloadingWithGraphs(MegatronRule):
    """## What it does
    Flags activation CPU offloading (`cpu_offloading = True`, `--cpu-offloading`,
    `--cpu-offloading-num-layers N`) in a recipe that enables Megatron CUDA graphs.

    ## Why is this bad?
    Offloading moves activations between host and device with host-side bookkeeping the
    graph cannot replay. Megatron-Core raises "CUDA graphs not supported with CPU offloading."
    and Bridge lists "CPU offloading is incompatible with CUDA graphs". Optimizer offloading
    (`optimizer.optimizer_cpu_offload`) is a different mechanism and is not flagged.

    ## Example
    ```python
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.cpu_offloading = True
    ```

    ## Use instead
    ```python
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.cpu_offloading = False
    cfg.optimizer.optimizer_cpu_offload = True  # if memory is the reason
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "GS807"
    name = "megatron-cpu-offloading-with-graphs"
    summary = "activation CPU offloading together with Megatron CUDA graphs"
    message = "{setting} with CUDA graphs ({graphs}): CUDA graphs are not supported with CPU offloading; {remedy}: {consequence}"
    valid = (
        _recipe('cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.use_te_rng_tracker = True\n'
                "cfg.model.cpu_offloading = False\ncfg.optimizer.optimizer_cpu_offload = True"),
        _recipe('cfg.model.cuda_graph_impl = "none"\ncfg.model.cpu_offloading = True'),
    )
    invalid = (
        _recipe('cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.use_te_rng_tracker = True\n'
                "cfg.model.cpu_offloading = True"),
        _recipe('args = ["--cuda-graph-impl", "local", "--cpu-offloading-num-layers", "4"]'),
    )

    def findings(self, recipe: Recipe) -> Iterator[Finding]:
        on = recipe.graphs_on()
        if on is None:
            return
        offload = recipe.last("cpu_offloading")
        layers = recipe.last("cpu_offloading_layers")
        if offload is not None and offload.value is True:
            remedy = ("remove `--cpu-offloading`" if offload.origin is Origin.MEGATRON_FLAG
                      else "set " + fix_text(offload, "cpu_offloading", False))
            yield offload, {"setting": shown(offload), "graphs": shown(on), "remedy": remedy}
        elif layers is not None and type(layers.value) is int and layers.value > 0:
            yield layers, {"setting": shown(layers), "graphs": shown(on),
                           "remedy": "remove it (it turns `cpu_offloading` on)"}


# ---------------------------------------------------------------------------- GS808
class FullRecomputeWithScopedGraphs(MegatronRule):
    """## What it does
    Flags `recompute_granularity = "full"` (`--recompute-granularity full`) in a recipe with
    CUDA graphs other than a local `full_iteration` graph (Transformer Engine scoped graphs,
    or local per-layer graphs).

    ## Why is this bad?
    Full recompute re-runs whole layers in the backward pass, crossing the boundaries of
    per-layer graphs. Megatron-Core asserts "full recompute is only supported with full
    iteration CUDA graph"; Bridge's guide: "TE-scoped graphs pair naturally with selective
    recompute".

    ## Example
    ```python
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.cuda_graph_scope = ["attn"]
    cfg.model.recompute_granularity = "full"
    ```

    ## Use instead
    ```python
    cfg.model.recompute_granularity = "selective"
    cfg.model.recompute_modules = ["core_attn"]
    ```

    ## Fix safety
    No automatic fix: selective recompute saves less memory.
    """

    code = "GS808"
    name = "megatron-full-recompute-with-scoped-graphs"
    summary = '`recompute_granularity="full"` with TE-scoped or per-layer CUDA graphs'
    message = "{setting} with {graphs}: full recompute is only supported with a local full_iteration CUDA graph; use {remedy}: {consequence}"
    valid = (
        _recipe('cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.cuda_graph_scope = ["attn"]\n'
                'cfg.model.use_te_rng_tracker = True\ncfg.model.recompute_granularity = "selective"'),
        _recipe('cfg.model.cuda_graph_impl = "local"\ncfg.model.cuda_graph_scope = ["full_iteration"]\n'
                'cfg.model.use_te_rng_tracker = True\ncfg.rerun_state_machine.check_for_nan_in_loss = False\n'
                'cfg.model.recompute_granularity = "full"'),
    )
    invalid = (
        _recipe('cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.cuda_graph_scope = ["attn"]\n'
                'cfg.model.use_te_rng_tracker = True\ncfg.model.recompute_granularity = "full"'),
        _recipe('args = ["--cuda-graph-impl", "transformer_engine", "--recompute-granularity", "full"]'),
    )

    def findings(self, recipe: Recipe) -> Iterator[Finding]:
        on = recipe.graphs_on()
        recompute = recipe.last("recompute")
        if on is None or recompute is None or recompute.value != "full":
            return
        impl, _ = recipe.impl()
        scopes, scope = recipe.scopes()
        if scope is not None and scopes is None:
            return  # scope not known here
        if impl == "local" and scopes == ("full_iteration",):
            return
        yield recompute, {"setting": shown(recompute), "graphs": shown(scope or on),
                          "remedy": fix_text(recompute, "recompute_granularity", "selective")
                          + (" with `--recompute-modules ...`" if recompute.origin is Origin.MEGATRON_FLAG else " with `recompute_modules`")}


# ---------------------------------------------------------------------------- GS809
class PackedSequenceWithTeGraphs(MegatronRule):
    """## What it does
    Flags packed sequences in a recipe with Transformer Engine scoped CUDA graphs
    (`cuda_graph_impl = "transformer_engine"`).

    ## Why is this bad?
    With packing, the layers receive `packed_seq_params`, a non-tensor argument, and TE's
    `make_graphed_callables` graphs tensor arguments only. Bridge's guide records the
    failure: "CUDA graph accepts only Tensor inputs. inference_context and packed_seq_params
    are excluded from input list." (packed-sequence SFT/LoRA with TE-scoped graphs).

    ## Example
    ```python
    cfg = llama3_8b_finetune_config(packed_sequence=True)
    cfg.model.cuda_graph_impl = "transformer_engine"
    ```

    ## Use instead
    ```python
    cfg = llama3_8b_finetune_config(packed_sequence=False)
    cfg.model.cuda_graph_impl = "transformer_engine"
    ```

    ## Fix safety
    No automatic fix.

    ## Precise semantics
    Packed sequences: `packed_sequence=True`, `packed_sequence_specs=PackedSequenceSpecs(...)`,
    or a positive `packed_sequence_size`.
    """

    code = "GS809"
    name = "megatron-packed-sequence-with-te-graphs"
    summary = "packed sequences with Transformer Engine scoped CUDA graphs"
    message = "{setting} with {graphs}: TE-scoped CUDA graphs accept only tensor inputs, not `packed_seq_params`; {remedy}: {consequence}"
    consequence = Consequence.CAPTURE_FAILS
    valid = (
        _recipe('cfg = llama3_8b_finetune_config(packed_sequence=False)\ncfg.model.cuda_graph_impl = "transformer_engine"\n'
                "cfg.model.use_te_rng_tracker = True"),
        _recipe('cfg = llama3_8b_finetune_config(packed_sequence=True)\ncfg.model.cuda_graph_impl = "none"'),
    )
    invalid = (
        _recipe('cfg = llama3_8b_finetune_config(packed_sequence=True)\ncfg.model.cuda_graph_impl = "transformer_engine"\n'
                "cfg.model.use_te_rng_tracker = True"),
        _recipe('cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.use_te_rng_tracker = True\n'
                "cfg.dataset.packed_sequence_specs = PackedSequenceSpecs(packed_sequence_size=4096)"),
    )

    def findings(self, recipe: Recipe) -> Iterator[Finding]:
        impl, chosen = recipe.impl()
        if impl != "transformer_engine" or chosen is None:
            return
        for key in ("packed", "packed_specs", "packed_size"):
            packed = recipe.last(key)
            if packed is not None and (packed.value is True or key == "packed_size" and type(packed.value) is int and packed.value > 0):
                fix = ("turn packing off (" + fix_text(packed, "packed_sequence", False) + ") or CUDA graphs off"
                       if key == "packed" else "drop `packed_sequence_specs` or turn CUDA graphs off")
                yield packed, {"setting": f"`{packed.written.rstrip('=')}`" if key == "packed_specs" else shown(packed),
                               "graphs": shown(chosen), "remedy": fix}
                return


# ---------------------------------------------------------------------------- GS810
class VariableShapesWithGraphs(MegatronRule):
    """## What it does
    Flags variable sequence lengths (`variable_seq_lengths = True`, `--variable-seq-lengths`)
    in a recipe with Megatron CUDA graphs.

    ## Why is this bad?
    A graph replays the shapes it was captured with. Bridge's guide: "Tensor shapes must be
    static (fixed seq_length, fixed micro_batch_size)", "Dynamic sequence or batch shapes
    break capture or replay assumptions"; packing, if needed, must pad to a fixed length.

    ## Example
    ```python
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.variable_seq_lengths = True
    ```

    ## Use instead
    ```python
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.variable_seq_lengths = False  # pad every batch to seq_length
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "GS810"
    name = "megatron-variable-shapes-with-graphs"
    summary = "variable sequence lengths with Megatron CUDA graphs"
    message = "{setting} with CUDA graphs ({graphs}): graphs replay fixed shapes (fixed seq_length and micro_batch_size); {remedy}: {consequence}"
    consequence = Consequence.SILENTLY_WRONG
    valid = (
        _recipe('cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.use_te_rng_tracker = True\n'
                "cfg.model.variable_seq_lengths = False"),
        _recipe("cfg.model.variable_seq_lengths = True"),
    )
    invalid = (
        _recipe('cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.use_te_rng_tracker = True\n'
                "cfg.model.variable_seq_lengths = True"),
        _recipe('args = ["--cuda-graph-impl", "transformer_engine", "--variable-seq-lengths"]'),
    )

    def findings(self, recipe: Recipe) -> Iterator[Finding]:
        on = recipe.graphs_on()
        variable = recipe.last("variable_seq")
        if on is not None and variable is not None and variable.value is True:
            fix = ("remove `--variable-seq-lengths` and pad batches to `--seq-length`" if variable.origin is Origin.MEGATRON_FLAG
                   else "set " + fix_text(variable, "variable_seq_lengths", False) + " and pad batches to `seq_length`")
            yield variable, {"setting": shown(variable), "graphs": shown(on), "remedy": fix}


# ---------------------------------------------------------------------------- GS811
class GraphWarmupTooShort(MegatronRule):
    """## What it does
    Flags `cuda_graph_warmup_steps` (`--cuda-graph-warmup-steps`) below the minimum for the
    chosen mode: at least 1 for a local `full_iteration` graph and whenever
    `fine_grained_activation_offloading` is on; never negative.

    ## Why is this bad?
    Megatron-Core's `FullCudaGraphWrapper` captures at the iteration whose number equals the
    warm-up count: with 0 it captures the very first iteration, whose lazy initialisation
    (NCCL communicators, optimizer state, allocator growth) cannot run inside a capture.
    Megatron-Core asserts "cuda_graph_warmup_steps must be > 0 when enabling fine-grained
    activation offloading". Bridge's documented recipes use 3. (Transformer Engine scoped
    graphs warm up inside `make_graphed_callables`, so 0 is accepted there.)

    ## Example
    ```python
    cfg.model.cuda_graph_impl = "local"
    cfg.model.cuda_graph_scope = ["full_iteration"]
    cfg.model.cuda_graph_warmup_steps = 0
    ```

    ## Use instead
    ```python
    cfg.model.cuda_graph_warmup_steps = 3
    ```

    ## Fix safety
    No automatic fix.
    """

    code = "GS811"
    name = "megatron-graph-warmup-too-short"
    summary = "`cuda_graph_warmup_steps` below the minimum for the CUDA-graph mode"
    message = "{setting} is below the minimum of {minimum} for {mode}; set {remedy}: {consequence}"
    consequence = Consequence.CAPTURE_FAILS
    valid = (
        _recipe('cfg.model.cuda_graph_impl = "local"\ncfg.model.cuda_graph_scope = ["full_iteration"]\n'
                "cfg.model.use_te_rng_tracker = True\ncfg.rerun_state_machine.check_for_nan_in_loss = False\n"
                "cfg.model.cuda_graph_warmup_steps = 3"),
        _recipe('cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.use_te_rng_tracker = True\n'
                "cfg.model.cuda_graph_warmup_steps = 0"),
    )
    invalid = (
        _recipe('cfg.model.cuda_graph_impl = "local"\ncfg.model.cuda_graph_scope = ["full_iteration"]\n'
                "cfg.model.use_te_rng_tracker = True\ncfg.rerun_state_machine.check_for_nan_in_loss = False\n"
                "cfg.model.cuda_graph_warmup_steps = 0"),
        _recipe('args = ["--cuda-graph-impl", "transformer_engine", "--fine-grained-activation-offloading",\n'
                '        "--cuda-graph-warmup-steps", "0"]'),
    )

    def findings(self, recipe: Recipe) -> Iterator[Finding]:
        warmup = recipe.last("warmup")
        if warmup is None or type(warmup.value) is not int:
            return
        on = recipe.graphs_on()
        impl, _ = recipe.impl()
        scopes, _ = recipe.scopes()
        minimum, mode = 0, "any CUDA-graph mode"
        if on is not None and impl == "local" and scopes and "full_iteration" in scopes:
            minimum, mode = 1, "a local `full_iteration` graph"
        elif on is not None and recipe.value("fine_grained_offloading") is True:
            minimum, mode = 1, "CUDA graphs with fine-grained activation offloading"
        if warmup.value < minimum:
            yield warmup, {"setting": shown(warmup), "minimum": str(minimum), "mode": mode,
                           "remedy": fix_text(warmup, "cuda_graph_warmup_steps", 3)}


RULES = (
    GraphsWithoutTeRngTracker, FullIterationWithTeImpl, FullIterationWithNanCheck, GraphScopeConflict,
    UnknownGraphValue, ExpandableSegmentsWithGraphs, CpuOffloadingWithGraphs, FullRecomputeWithScopedGraphs,
    PackedSequenceWithTeGraphs, VariableShapesWithGraphs, GraphWarmupTooShort,
)
