#!/bin/bash
# GPT-3 style pretraining with Transformer Engine scoped CUDA graphs (a correct launch script).
# Megatron-LM turns --te-rng-tracker on by itself for --transformer-impl transformer_engine.
set -euo pipefail

export CUDA_DEVICE_MAX_CONNECTIONS=1
export PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"
export NCCL_GRAPH_REGISTER=0

GPUS_PER_NODE=8
CHECKPOINT_PATH=${1:-/checkpoints/gpt}

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes 1
)

GPT_MODEL_ARGS=(
    --num-layers 24
    --hidden-size 2048
    --num-attention-heads 16
    --seq-length 4096          # fixed: graphs replay one shape
    --max-position-embeddings 4096
    --transformer-impl transformer_engine
)

CUDA_GRAPH_ARGS=(
    --cuda-graph-impl transformer_engine
    --cuda-graph-scope attn mlp
    --cuda-graph-warmup-steps 3
    --recompute-granularity selective
)

torchrun "${DISTRIBUTED_ARGS[@]}" pretrain_gpt.py \
    "${GPT_MODEL_ARGS[@]}" \
    "${CUDA_GRAPH_ARGS[@]}" \
    --micro-batch-size 1 --global-batch-size 256 \
    --save "$CHECKPOINT_PATH" --load "$CHECKPOINT_PATH"
