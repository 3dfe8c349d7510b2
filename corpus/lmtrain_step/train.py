"""Pre-training loop: Fabric-style set-up, graphed transformer blocks and a captured optimizer step."""

from __future__ import annotations

import os
from contextlib import nullcontext

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

from config import TrainConfig
from fabric_utils import LocalFabric
from module import LitGPT, total_grad_norm


class TokenChunks(Dataset):
    def __init__(self, data: torch.Tensor, block_size: int):
        self.data, self.block_size = data, block_size

    def __len__(self) -> int:
        return (len(self.data) - 1) // self.block_size

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        chunk = self.data[i * self.block_size : (i + 1) * self.block_size + 1]
        return chunk[:-1], chunk[1:]


class Trainer:
    def __init__(self, cfg: TrainConfig, fabric: LocalFabric, out_dir: str):
        self.cfg = cfg
        self.fabric = fabric
        self.out_dir = out_dir
        self.device = fabric.device
        self.module = LitGPT(cfg).to(self.device)
        self.module.fabric = fabric
        self.model = self.module.model
        self.opt_graph: torch.cuda.CUDAGraph | None = None
        self.static_grad_norm: torch.Tensor | None = None
        if dist.is_available() and dist.is_initialized():
            os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"  # expect: GS705
            self.model = DDP(self.model, device_ids=[self.device.index])  # expect: GS704

    def make_loader(self, tokens: torch.Tensor) -> DataLoader:
        ds = TokenChunks(tokens, self.cfg.model.block_size)
        return DataLoader(ds, batch_size=self.cfg.batch_size, shuffle=False, num_workers=0, pin_memory=True, drop_last=True)

    def graph_blocks(self, sample: torch.Tensor) -> None:
        with torch.no_grad():
            h = self.module.model.embed(sample).detach().requires_grad_(True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):  # expect: GS702
            for i, block in enumerate(self.module.model.blocks):
                block.register_forward_hook(self.module.activation_hook)  # expect: GS706
                self.module.model.blocks[i] = torch.cuda.make_graphed_callables(block, (h,))

    def capture_optimizer_step(self) -> None:
        grad_norm_fn = torch.compile(total_grad_norm, dynamic=False)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # expect: GS704
                self.module.optimizer_step()
        torch.cuda.current_stream().wait_stream(side)
        self.opt_graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.opt_graph):  # expect: GS708
            self.module.optimizer_step()
            self.static_grad_norm = grad_norm_fn(self.module.model.parameters())  # expect: GS709

    def fit(self, tokens: torch.Tensor, max_iters: int) -> list[float]:
        loader = self.make_loader(tokens)
        batches = iter(loader)
        losses: list[float] = []
        use_cuda = self.device.type == "cuda"
        for it in range(max_iters):
            total = torch.zeros((), device=self.device)
            for micro_step in range(self.cfg.gradient_accumulation_steps):
                x, y = (self.fabric.to_device(t) for t in next(batches))
                if it == 0 and micro_step == 0 and use_cuda and self.cfg.graph_blocks:
                    self.graph_blocks(x)
                sync_ctx = self.model.no_sync() if isinstance(self.model, DDP) and micro_step < self.cfg.gradient_accumulation_steps - 1 else nullcontext()
                with sync_ctx:
                    total += self.module.training_step((x, y), micro_step)
            if use_cuda and self.cfg.graph_optimizer:
                if self.opt_graph is None:
                    self.capture_optimizer_step()
                self.opt_graph.replay()
            else:
                self.module.optimizer_step()
            losses.append(total.item())
            if it % self.cfg.log_interval == 0:
                self.fabric.log_dict({"train/loss_accum": losses[-1], "iter": it})
            if (it + 1) % self.cfg.ckpt_interval == 0:
                torch.save({"model": self.module.model.state_dict(), "iter_num": self.module.iter_num}, os.path.join(self.out_dir, "ckpt.pt"))
        return losses
