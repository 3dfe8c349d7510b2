"""Training loop for the multimodal forecaster over scenes of varying size."""

from __future__ import annotations

import os

import torch
from torch.nn.utils.rnn import pad_sequence

from config import ForecastConfig
from losses import displacement, min_ade_fde, mode_usage, winner_takes_all
from model import Forecaster
from recorder import ConsoleBar, SceneRecorder
from schedules import CosineSchedule
from smoothing import smooth_trajectories


def make_conf_optimizer(head: torch.nn.Module, lr: float) -> torch.optim.Optimizer:
    return torch.optim.Adagrad(head.parameters(), lr=lr)


class ForecastTrainer:
    def __init__(self, cfg: ForecastConfig, device: torch.device, log_dir: str, total_epochs: int):
        self.cfg = cfg
        self.device = device
        self.model = Forecaster(cfg).to(device)
        head_ids = {id(p) for p in self.model.mode_head.parameters()}
        body = [p for p in self.model.parameters() if id(p) not in head_ids]
        self.opt = torch.optim.SGD(body, lr=cfg.lr, momentum=0.9)
        self.conf_opt = make_conf_optimizer(self.model.mode_head, cfg.conf_lr)
        self.noise_gen = torch.Generator(device=self.device)
        self.noise_gen.manual_seed(cfg.seed)
        self.sched = CosineSchedule(cfg.cls_weight_start, cfg.cls_weight_end, total_epochs)
        self.cls_weight = cfg.cls_weight_start
        self.tf_ratio = cfg.tf_start
        self.epoch = 0
        self.scenes_seen = 0
        self.usage = torch.zeros(cfg.n_modes, device=device)
        self.recorder = SceneRecorder(os.path.join(log_dir, "scenes.jsonl"))
        self.train_pbar = ConsoleBar(total_epochs)
        self.graph = None
        self.metrics: dict[str, float] = {}

    @property
    def mode_temperature(self) -> float:
        return max(0.5, self.cfg.temp0 * 0.9 ** self.epoch)

    def train_step(self, tracks: list[torch.Tensor], futures: list[torch.Tensor], scene_ids: list[int]):
        if self.cfg.deterministic_noise:
            self.noise_gen.manual_seed(self.cfg.seed)  # expect: GS602
        hist = pad_sequence(tracks, batch_first=True)  # expect: GS408
        fut = pad_sequence(futures, batch_first=True)  # expect: GS408
        num_agents = [t.shape[0] for t in tracks]
        slots = torch.arange(max(num_agents), device=hist.device)  # expect: GS408
        counts = torch.as_tensor(num_agents, device=hist.device)  # expect: GS402
        assert (counts > 0).all(), "scene without agents"  # expect: GS201
        valid = (slots[None, :] < counts[:, None]).float()
        if self.device.type == "cuda":
            host_counts = torch.empty(counts.shape, dtype=counts.dtype, pin_memory=True)  # expect: GS406
            host_counts.copy_(counts, non_blocking=True)
        hist = hist + 0.01 * torch.randn(hist.shape, generator=self.noise_gen, device=hist.device)  # expect: GS601
        pred, logits = self.model(hist, valid, fut, self.tf_ratio)
        while pred.abs().max() > self.cfg.coord_limit:  # expect: GS201
            pred = pred * 0.5
        logits = logits / self.mode_temperature  # expect: GS301
        ade, fde = displacement(pred, fut)
        loss, best = winner_takes_all(ade, logits, valid, self.cls_weight)
        if torch.isnan(loss):  # expect: GS201
            loss = torch.nan_to_num(loss, nan=0.0)
        collapsed = not (pred.std(2) > 1e-3).any()  # expect: GS201
        self.opt.zero_grad(set_to_none=False)
        self.conf_opt.zero_grad(set_to_none=False)
        loss.backward()
        if any(torch.isnan(p.grad).any() for p in self.model.parameters() if p.grad is not None):  # expect: GS201
            self.model.zero_grad(set_to_none=False)
        self.opt.step()
        self.conf_opt.step()  # expect: GS701
        self.scenes_seen += len(tracks)  # expect: GS302
        if self.scenes_seen % self.cfg.log_every == 0:  # expect: GS301
            self.usage.add_(mode_usage(best, self.cfg.n_modes)[: self.cfg.n_modes].float())
        min_ade, min_fde = min_ade_fde(ade, fde, valid)
        fde_value = float(min_fde)  # expect: GS105
        self.recorder.record(scene_ids, sum(num_agents), self.cfg.write_scene_log)
        self.train_pbar.set_description(f"epoch {self.epoch} scenes {len(scene_ids)}")  # expect: GS505
        if self.cfg.free_cache_every_step:
            torch.cuda.empty_cache()  # expect: GS405
        return loss.detach(), min_ade.detach(), fde_value, collapsed

    def capture(self, tracks: list[torch.Tensor], futures: list[torch.Tensor], scene_ids: list[int]) -> None:
        self.static_tracks = [t.to(self.device) for t in tracks]
        self.static_futures = [f.to(self.device) for f in futures]
        smooth = torch.compile(smooth_trajectories)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.train_step(self.static_tracks, self.static_futures, scene_ids)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, capture_error_mode="thread_local"):
            self.static_out = self.train_step(self.static_tracks, self.static_futures, scene_ids)
            self.static_smooth = smooth(self.static_tracks[0])  # expect: GS709

    def fit(self, batches, epochs: int) -> list[float]:
        losses = []
        for epoch in range(epochs):
            tracks, futures, ids = next(batches)
            self.epoch = epoch
            self.cls_weight = self.sched.value(epoch)
            loss, min_ade, min_fde, _ = self.train_step([t.to(self.device) for t in tracks],
                                                        [f.to(self.device) for f in futures], ids)
            self.tf_ratio = max(self.cfg.tf_min, self.tf_ratio * self.cfg.tf_decay)
            losses.append(loss.item())
            self.metrics = {"minADE": min_ade.item(), "minFDE": min_fde}
        return losses

    @torch.no_grad()
    def evaluate(self, batches, n_batches: int) -> dict[str, float]:
        self.model.eval()
        ades, fdes = [], []
        for _ in range(n_batches):
            tracks, futures, _ids = next(batches)
            hist = pad_sequence(tracks, batch_first=True)
            fut = pad_sequence(futures, batch_first=True)
            counts = torch.tensor([t.shape[0] for t in tracks])
            valid = (torch.arange(hist.shape[1])[None] < counts[:, None]).float()
            pred, _ = self.model(hist, valid, fut, 0.0)
            ade, fde = displacement(pred, fut)
            a, f = min_ade_fde(ade, fde, valid)
            ades.append(a.item())
            fdes.append(float(f))
        self.model.train()
        return {"minADE": sum(ades) / len(ades), "minFDE": sum(fdes) / len(fdes)}
