#!/bin/bash
# A launch script collecting the mistakes the GS8 rules catch.
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True  # expect: GS806

MODEL_ARGS=(
    --num-layers 32
    --transformer-impl local
    --variable-seq-lengths  # expect: GS810
    --cpu-offloading-num-layers 4  # expect: GS807
)

GRAPH_ARGS=(
    --enable-cuda-graph  # expect: GS801
    --cuda-graph-scope full_iteration  # expect: GS803
    --cuda-graph-warmup-steps 0  # expect: GS811
)

torchrun --nproc-per-node 8 pretrain_gpt.py "${MODEL_ARGS[@]}" "${GRAPH_ARGS[@]}" --bf16
