#!/bin/bash
# Megatron-Bridge runs: recipe overrides (key=value) and the performance harness flags.

# Packed-sequence SFT with TE-scoped graphs: packed_seq_params cannot be graphed.
torchrun --nproc-per-node 8 examples/recipes/llama/finetune_llama3_8b.py \
    model.use_te_rng_tracker=true rng.te_rng_tracker=true \
    model.cuda_graph_impl=transformer_engine \
    dataset.packed_sequence_specs.packed_sequence_size=4096  # expect: GS809

# Full iteration through overrides, NaN check left at its default (on).
torchrun --nproc-per-node 8 examples/recipes/llama/pretrain_llama3_8b.py \
    model.cuda_graph_impl=local model.use_te_rng_tracker=true rng.te_rng_tracker=true \
    model.cuda_graph_scope=full_iteration  # expect: GS803

# The performance harness turns the TE RNG tracker on itself; the scope list is checked.
python scripts/performance/run_performance_workload.py \
    --cuda_graph_impl transformer_engine \
    --cuda_graph_scope attn moe moe_router  # expect: GS804
