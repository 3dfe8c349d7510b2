"""GS801–GS811: Megatron-Core / Megatron-Bridge CUDA-graph configuration, in Python configs and
shell launch scripts; the engine's handling of `*.sh` files (discovery, noqa, select, cache,
bad input)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphsafe.analyzer.discovery import discover, module_name
from graphsafe.analyzer.engine import check_paths, check_source
from graphsafe.config import Settings
from graphsafe.rules.megatron.shell import lex

ROOT = Path(__file__).resolve().parent.parent


def found(source: str, filename: str, **settings) -> list[tuple[int, str]]:
    """(line, code) of every diagnostic, in order."""
    result = check_source(textwrap.dedent(source).lstrip("\n"), filename, Settings(**settings))
    return [(d.start.line, d.code) for d in result.diagnostics]


def py(source: str, **settings) -> list[tuple[int, str]]:
    return found(source, "recipe.py", **settings)


def sh(source: str, **settings) -> list[tuple[int, str]]:
    return found(source, "launch.sh", **settings)


def messages(source: str, filename: str) -> list[str]:
    return [d.message for d in check_source(textwrap.dedent(source).lstrip("\n"), filename).diagnostics]


TE_OK = textwrap.dedent("""
    cfg = pretrain_config()
    cfg.model.cuda_graph_impl = "transformer_engine"
    cfg.model.cuda_graph_scope = ["attn"]
    cfg.model.use_te_rng_tracker = True
    cfg.rng.te_rng_tracker = True
""").lstrip("\n")
FULL_OK = textwrap.dedent("""
    cfg = pretrain_config()
    cfg.model.cuda_graph_impl = "local"
    cfg.model.cuda_graph_scope = ["full_iteration"]
    cfg.model.cuda_graph_warmup_steps = 3
    cfg.model.use_te_rng_tracker = True
    cfg.rng.te_rng_tracker = True
    cfg.rerun_state_machine.check_for_nan_in_loss = False
    cfg.ddp.check_for_nan_in_grad = False
""").lstrip("\n")


def without(source: str, *lines: str) -> str:
    return "".join(line for line in source.splitlines(keepends=True) if line.strip() not in lines)


# ---------------------------------------------------------------------------- documented recipes stay silent
def test_documented_bridge_recipes_are_silent():
    assert py(TE_OK) == []
    assert py(FULL_OK) == []
    moe = TE_OK.replace('["attn"]', '["attn", "moe_router", "moe_preprocess"]')
    assert py(moe) == []


def test_documented_launch_scripts_are_silent():
    assert sh("""
        export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
        export NCCL_GRAPH_REGISTER=0
        torchrun pretrain_gpt.py --cuda-graph-impl transformer_engine --cuda-graph-scope attn mlp \\
            --cuda-graph-warmup-steps 3
    """) == []
    assert sh("""
        python pretrain_gpt.py --enable-cuda-graph --cuda-graph-scope full_iteration \\
            --te-rng-tracker --no-check-for-nan-in-loss-and-grad
    """) == []
    assert sh("""
        python scripts/performance/run_performance_workload.py \\
          --cuda_graph_impl transformer_engine \\
          --cuda_graph_scope attn moe_router moe_preprocess
    """) == []


# ---------------------------------------------------------------------------- GS801
def test_te_rng_tracker_python_forms():
    assert py(without(TE_OK, "cfg.model.use_te_rng_tracker = True", "cfg.rng.te_rng_tracker = True")) == [(2, "GS801")]
    assert py("config = TransformerConfig(num_layers=2,\n    enable_cuda_graph=True)\n") == [(2, "GS801")]
    assert py("config = TransformerConfig(enable_cuda_graph=True, use_te_rng_tracker=True)\n") == []
    assert py('overrides = {"cuda_graph_impl": "local"}\n') == [(1, "GS801")]
    assert py('overrides = {"cuda_graph_impl": "local", "use_te_rng_tracker": True}\n') == []
    # only the RNG config's flag set: lenient (Bridge documents setting both)
    assert py(without(TE_OK, "cfg.model.use_te_rng_tracker = True")) == []


def test_te_rng_tracker_launcher_defaults():
    # Megatron-LM turns it on itself for the (default) TE transformer implementation
    assert sh("torchrun pretrain_gpt.py --cuda-graph-impl local\n") == []
    assert sh("torchrun pretrain_gpt.py --transformer-impl local --cuda-graph-impl local\n") == [(1, "GS801")]
    assert sh("torchrun pretrain_gpt.py --transformer-impl local --cuda-graph-impl local --te-rng-tracker\n") == []
    msg = messages("torchrun pretrain_gpt.py --transformer-impl local --enable-cuda-graph\n", "launch.sh")[0]
    assert "`--enable-cuda-graph`" in msg and "add `--te-rng-tracker`" in msg


def test_graphs_off_or_unknown_is_silent():
    assert py('cfg.model.cuda_graph_impl = "none"\n') == []
    assert py("cfg.model.cuda_graph_impl = args.impl\n") == []
    assert sh('torchrun pretrain_gpt.py --transformer-impl local --cuda-graph-impl "$IMPL"\n') == []


# ---------------------------------------------------------------------------- GS802 / GS803
def test_full_iteration_needs_local_impl():
    assert py(FULL_OK.replace('"local"', '"transformer_engine"')) == [(3, "GS802")]
    assert sh("python pretrain_gpt.py --cuda-graph-impl transformer_engine --cuda-graph-scope full_iteration\n") == [(1, "GS802")]
    msg = messages(FULL_OK.replace('"local"', '"transformer_engine"'), "recipe.py")[0]
    assert 'set `cfg.model.cuda_graph_impl = "local"`' in msg


def test_full_iteration_nan_check_python():
    unset = without(FULL_OK, "cfg.rerun_state_machine.check_for_nan_in_loss = False")
    assert py(unset) == [(3, "GS803")]
    assert "`cfg.rerun_state_machine.check_for_nan_in_loss = False`" in messages(unset, "recipe.py")[0]
    assert py(FULL_OK.replace("check_for_nan_in_loss = False", "check_for_nan_in_loss = True")) == [(7, "GS803")]
    assert py(FULL_OK.replace("check_for_nan_in_grad = False", "check_for_nan_in_grad = True")) == [(8, "GS803")]
    # a bare Megatron-Core config does not own the training loop's NaN check
    assert py('config = TransformerConfig(cuda_graph_impl="local", cuda_graph_scope=["full_iteration"], use_te_rng_tracker=True)\n') == []


def test_full_iteration_nan_check_launcher():
    base = "python pretrain_gpt.py --cuda-graph-impl local --cuda-graph-scope full_iteration"
    assert sh(base + "\n") == [(1, "GS803")]
    assert sh(base + " --no-check-for-nan-in-loss-and-grad\n") == []
    assert sh(base + " --fp16\n") == []  # dynamic loss scaling: Megatron-LM turns the check off
    assert sh(base + " --fp16 --loss-scale 1024\n") == [(1, "GS803")]
    assert sh(base + " --check-for-nan-in-loss-and-grad\n") == [(1, "GS803")]
    assert sh(base.replace("local", "none") + "\n") == []


# ---------------------------------------------------------------------------- GS804 / GS805
def test_scope_combinations():
    assert py('cfg.model.cuda_graph_scope = ["moe", "moe_router"]\n') == [(1, "GS804")]
    assert py('cfg.model.cuda_graph_scope = ["attn", "moe_preprocess"]\n') == [(1, "GS804")]
    assert py('cfg.model.cuda_graph_scope = ["moe_router", "moe_preprocess"]\n') == []
    assert sh("python pretrain_gpt.py --cuda-graph-scope attn,moe,moe_router\n") == [(1, "GS804")]
    assert sh("python pretrain_gpt.py --cuda-graph-scope=moe_preprocess\n") == [(1, "GS804")]


def test_unknown_values_suggest_the_closest():
    msgs = messages('cfg.model.cuda_graph_impl = "transformer-engine"\ncfg.model.use_te_rng_tracker = True\n', "recipe.py")
    assert len(msgs) == 1 and "did you mean `transformer_engine`?" in msgs[0]
    msgs = messages("python pretrain_gpt.py --cuda-graph-scope attn moe_routr mlp\n", "launch.sh")
    assert len(msgs) == 1 and "`moe_routr`" in msgs[0] and "did you mean `moe_router`?" in msgs[0]
    assert sh("python pretrain_gpt.py --cuda-graph-scope full\n") == []  # the older MCore default
    # the newest MCore's impl spelling of the local full-iteration graph: valid, and checked as one
    assert sh("python pretrain_gpt.py --cuda-graph-impl full_iteration\n") == [(1, "GS803")]
    assert sh("python pretrain_gpt.py --cuda-graph-impl full_iteration --no-check-for-nan-in-loss-and-grad\n") == []
    assert py('cfg.model.cuda_graph_scope = ["mamba", "attn"]\n') == []


# ---------------------------------------------------------------------------- GS806
def test_expandable_segments():
    env = 'import os\nos.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"\n'
    assert py(env + TE_OK) == [(2, "GS806")]
    assert py(env + 'os.environ["NCCL_GRAPH_REGISTER"] = "0"\n' + TE_OK) == []
    assert py(env + 'cfg.model.cuda_graph_impl = "none"\n') == []
    assert sh("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\ntorchrun pretrain_gpt.py --cuda-graph-impl local\n") == [(1, "GS806")]
    assert sh("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True NCCL_GRAPH_REGISTER=0 torchrun x.py --cuda-graph-impl local\n") == []
    msg = messages("export PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True'\ntorchrun x.py --cuda-graph-impl local\n", "launch.sh")[0]
    assert "`export NCCL_GRAPH_REGISTER=0`" in msg


# ---------------------------------------------------------------------------- GS807–GS810
def test_cpu_offloading():
    assert py(TE_OK + "cfg.model.cpu_offloading = True\n") == [(6, "GS807")]
    assert py(TE_OK + "cfg.model.cpu_offloading = False\ncfg.optimizer.optimizer_cpu_offload = True\n") == []
    assert sh("torchrun x.py --cuda-graph-impl transformer_engine --cpu-offloading\n") == [(1, "GS807")]
    assert sh("torchrun x.py --cuda-graph-impl transformer_engine --cpu-offloading-num-layers 0\n") == []


def test_full_recompute():
    assert py(TE_OK + 'cfg.model.recompute_granularity = "full"\n') == [(6, "GS808")]
    assert py(TE_OK + 'cfg.model.recompute_granularity = "selective"\n') == []
    assert py(FULL_OK + 'cfg.model.recompute_granularity = "full"\n') == []
    assert sh("torchrun x.py --cuda-graph-impl local --cuda-graph-scope attn --recompute-granularity full\n") == [(1, "GS808")]


def test_packed_sequences_with_te_graphs():
    assert py("cfg = llama3_8b_finetune_config(packed_sequence=True)\n" + without(TE_OK, "cfg = pretrain_config()")) == [(1, "GS809")]
    assert py("cfg = llama3_8b_finetune_config(packed_sequence=False)\n" + without(TE_OK, "cfg = pretrain_config()")) == []
    # packing with a local full-iteration graph is not this rule's business
    assert py(FULL_OK + "cfg.dataset.packed_sequence_specs = PackedSequenceSpecs(packed_sequence_size=2048)\n") == []
    assert py(TE_OK + "cfg.dataset.packed_sequence_specs = specs if packed else None\n") == []
    assert sh("torchrun finetune.py model.cuda_graph_impl=transformer_engine model.use_te_rng_tracker=true "
              "dataset.packed_sequence_specs.packed_sequence_size=4096\n") == [(1, "GS809")]


def test_variable_shapes():
    assert py(TE_OK + "cfg.model.variable_seq_lengths = True\n") == [(6, "GS810")]
    assert py("cfg.model.variable_seq_lengths = True\n") == []
    assert sh("torchrun x.py --cuda-graph-impl transformer_engine --variable-seq-lengths\n") == [(1, "GS810")]


# ---------------------------------------------------------------------------- GS811
def test_warmup_minimum_per_mode():
    assert py(FULL_OK.replace("warmup_steps = 3", "warmup_steps = 0")) == [(4, "GS811")]
    assert py(FULL_OK.replace("warmup_steps = 3", "warmup_steps = 1")) == []
    assert py(TE_OK + "cfg.model.cuda_graph_warmup_steps = 0\n") == []
    assert py(TE_OK + "cfg.model.cuda_graph_warmup_steps = -2\n") == [(6, "GS811")]
    assert sh("torchrun x.py --cuda-graph-impl transformer_engine --fine-grained-activation-offloading "
              "--cuda-graph-warmup-steps=0\n") == [(1, "GS811")]


# ---------------------------------------------------------------------------- Python collection details
def test_recipes_are_per_function_and_module_env_is_shared():
    source = """
        import os
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
        BASE = {"cuda_graph_impl": "local", "use_te_rng_tracker": True}


        def graphs_on():
            cfg = pretrain_config()
            cfg.model.cuda_graph_impl = "transformer_engine"
            cfg.model.use_te_rng_tracker = True
            return cfg


        def no_tracker():
            cfg = pretrain_config()
            cfg.model.cpu_offloading = True
            return cfg
    """
    # the env applies to every recipe; BASE's tracker does not leak into a function, nor
    # no_tracker's offloading into graphs_on
    assert py(source) == [(2, "GS806")]


def test_megatron_core_enum_values():
    source = ('from megatron.core.transformer.enums import CudaGraphScope\n'
              'config = TransformerConfig(cuda_graph_impl="transformer_engine", use_te_rng_tracker=True,\n'
              '    cuda_graph_scope=[CudaGraphScope.moe, CudaGraphScope.moe_router])\n')
    assert py(source) == [(3, "GS804")]


def test_docstrings_and_fstrings_are_not_settings():
    assert py('"""Run with --cuda-graph-impl local --transformer-impl local."""\n') == []
    assert py('cmd = f"torchrun x.py --transformer-impl local --cuda-graph-impl {impl}"\n') == []
    assert py('cmd = "torchrun x.py --transformer-impl local --cuda-graph-impl local"\n') == [(1, "GS801")]


def test_python_argument_list_points_at_the_flag():
    source = 'ARGS = [\n    "--transformer-impl", "local",\n    "--cuda-graph-impl", "local",\n]\n'
    result = check_source(source, "launch.py", Settings())
    assert [(d.start.line, d.start.column, d.code) for d in result.diagnostics] == [(3, 4, "GS801")]


# ---------------------------------------------------------------------------- shell scanning
def test_shell_positions_arrays_variables_and_heredocs():
    source = """
        #!/bin/bash
        # --cuda-graph-impl in a comment is not a flag
        ARGS=(
            --transformer-impl local   # the TE RNG tracker is not turned on by itself
            --cuda-graph-impl local
        )
        FLAGS="--cuda-graph-scope attn,moe_routr"
        python - <<'PY'
        print("--cuda-graph-scope bogus; don't")
        PY
        torchrun --nproc-per-node 8 pretrain_gpt.py "${ARGS[@]}" $FLAGS
    """
    result = check_source(textwrap.dedent(source).lstrip("\n"), "launch.sh", Settings())
    got = [(d.start.line, d.start.column, d.code) for d in result.diagnostics]
    assert got == [(5, 4, "GS801"), (7, 7, "GS805")]  # the flag inside FLAGS="..."


def test_shell_lexer_quotes_and_continuations():
    items, continued = lex("a 'b c' \"d \\\"e\\\"\" f\\ g \\\n  h # comment\nnext")
    words = [w.text if w is not None else ";" for w in items]
    assert words == ["a", "b c", 'd "e"', "f g", "h", ";", "next", ";"]
    assert continued == [(1, 2)]
    assert items[4].span().start.line == 2


def test_flags_inside_a_quoted_command_and_bridge_list_overrides():
    assert sh('srun bash -c "python pretrain_gpt.py --transformer-impl local --enable-cuda-graph"\n') == [(1, "GS801")]
    assert sh("torchrun run.py model.cuda_graph_scope=[attn,moe,moe_router]\n") == [(1, "GS804")]
    assert sh("torchrun run.py model.cuda_graph_scope='[attn,moe_router]'\n") == []


def test_each_program_in_a_script_is_its_own_recipe():
    source = """
        torchrun pretrain_gpt.py --cuda-graph-impl local --cuda-graph-scope full_iteration --no-check-for-nan-in-loss-and-grad
        torchrun pretrain_gpt.py --cuda-graph-impl transformer_engine --cuda-graph-scope attn
    """
    assert sh(source) == []


def test_noqa_in_shell():
    assert sh("torchrun x.py --transformer-impl local --cuda-graph-impl local  # noqa: GS801\n") == []
    assert sh("torchrun x.py --transformer-impl local --cuda-graph-impl local  # noqa: GS802\n") == [(1, "GS801")]
    # a comment cannot follow a backslash continuation: a noqa on the command's last line covers it
    continued = "torchrun x.py --transformer-impl local \\\n    --cuda-graph-impl local \\\n    --bf16  # noqa: GS801\n"
    assert sh(continued) == []
    assert sh(continued.replace("  # noqa: GS801", "")) == [(2, "GS801")]
    assert sh("ARGS=(\n  --transformer-impl local\n  --enable-cuda-graph  # noqa\n)\ntorchrun x.py\n") == []


def test_select_ignore_and_per_file_ignores_apply_to_shell():
    script = "torchrun x.py --transformer-impl local --cuda-graph-impl local --cpu-offloading\n"
    assert sh(script) == [(1, "GS801"), (1, "GS807")]
    assert sh(script, select=("GS807",)) == [(1, "GS807")]
    assert sh(script, ignore=("GS8",)) == []
    assert sh(script, per_file_ignores=(("*.sh", ("GS801",)),)) == [(1, "GS807")]


# ---------------------------------------------------------------------------- the engine and CLI on .sh files
def test_bad_shell_files_get_one_gs000(tmp_path):
    unterminated = "torchrun x.py --cuda-graph-impl 'local\n"
    result = check_source(unterminated, "launch.sh", Settings())
    assert [(d.code, d.start.line) for d in result.diagnostics] == [("GS000", 1)]
    assert "unterminated single quote" in result.diagnostics[0].message
    (tmp_path / "binary.sh").write_bytes(b"#!/bin/sh\n--cuda-graph-impl \xff\xfe\n")
    result = check_paths([tmp_path / "binary.sh"], Settings(root=tmp_path), use_cache=False)
    assert [d.code for d in result.diagnostics] == ["GS000"]
    # a script that never mentions CUDA graphs is not even lexed
    assert check_source("echo 'unterminated\n", "other.sh", Settings()).diagnostics == []


def test_discovery_walks_shell_scripts_and_keeps_module_names_apart(tmp_path):
    (tmp_path / "train.py").write_text("import os\n")
    (tmp_path / "train.sh").write_text("torchrun train.py --transformer-impl local --enable-cuda-graph\n")
    (tmp_path / "notes.txt").write_text("--enable-cuda-graph\n")
    files = discover([tmp_path], root=tmp_path)
    assert [f.name for f in files] == ["train.py", "train.sh"]
    assert module_name(tmp_path / "train.sh")[0] != module_name(tmp_path / "train.py")[0]
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False)
    assert [(Path(d.path).name, d.code) for d in result.diagnostics] == [("train.sh", "GS801")]


def test_shell_facts_are_cached(tmp_path):
    (tmp_path / "launch.sh").write_text("torchrun x.py --transformer-impl local --enable-cuda-graph\n")
    settings = Settings(root=tmp_path)
    first = check_paths([tmp_path], settings, cache_dir=tmp_path / ".cache")
    second = check_paths([tmp_path], settings, cache_dir=tmp_path / ".cache")
    assert second.cached == 1 and second.diagnostics == first.diagnostics != []


def test_cli_on_a_shell_path(tmp_path):
    script = tmp_path / "launch.sh"
    script.write_text("#!/bin/bash\nARGS=(\n  --cuda-graph-impl local\n  --cuda-graph-scope full_iteration\n)\ntorchrun pretrain_gpt.py \"${ARGS[@]}\"\n")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-m", "graphsafe", "check", str(script), "--no-cache"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120, check=False)
    assert run.returncode == 1, run.stderr
    assert "launch.sh:4:3: GS803" in run.stdout and "--no-check-for-nan-in-loss-and-grad" in run.stdout
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("name", ["train_gpt_te.sh", "train_moe_full_iter.sh", "llama3_te_graphs.py", "full_iteration_pretrain.py"])
def test_correct_corpus_recipes_are_silent(name):
    path = ROOT / "corpus" / "megatron_recipes" / name
    assert check_source(path.read_text(), str(path), Settings()).diagnostics == []
