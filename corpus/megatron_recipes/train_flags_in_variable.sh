#!/bin/bash
# Flags collected in a variable are read too; each is reported at its own column.
CG_FLAGS="--cuda-graph-impl transformer_engine --cuda-graph-scope attn,moe_rooter"  # expect: GS805
torchrun --nproc-per-node 8 pretrain_gpt.py $CG_FLAGS --bf16
