#!/bin/bash
# Mixtral-style MoE with a local full-iteration CUDA graph (a correct launch script).
export NCCL_GRAPH_REGISTER=0

python pretrain_gpt.py \
    --num-layers 16 --hidden-size 4096 --num-attention-heads 32 \
    --num-experts 8 --moe-router-topk 2 --moe-token-dispatcher-type alltoall \
    --cuda-graph-impl local \
    --cuda-graph-scope full_iteration \
    --cuda-graph-warmup-steps=3 \
    --te-rng-tracker \
    --no-check-for-nan-in-loss-and-grad \
    --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 \
    --bf16
