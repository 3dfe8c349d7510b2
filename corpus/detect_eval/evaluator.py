"""Evaluation loop: captured inference + post-processing step, replayed per batch."""

from __future__ import annotations

import time
from collections import Counter

import torch
from torch.utils.data import DataLoader, Dataset

from boxes import batched_nms, decode_boxes
from config import DetectorConfig
from metrics import DetectionMetrics
from model import Detector


class SyntheticBoxes(Dataset):
    """Images with a few bright rectangles; targets padded to `max_gt` with label -1."""

    def __init__(self, cfg: DetectorConfig, n: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        s = cfg.image_size
        self.images = torch.rand(n, 3, s, s, generator=g) * 0.1
        self.boxes = torch.full((n, cfg.max_gt, 4), 0.0)
        self.labels = torch.full((n, cfg.max_gt), -1, dtype=torch.long)
        for i in range(n):
            k = int(torch.randint(1, cfg.max_gt + 1, (1,), generator=g))
            for j in range(k):
                x0, y0 = torch.randint(0, s - 10, (2,), generator=g).tolist()
                w, h = torch.randint(6, 10, (2,), generator=g).tolist()
                c = int(torch.randint(0, cfg.num_classes, (1,), generator=g))
                self.images[i, c, y0 : y0 + h, x0 : x0 + w] += 0.8
                self.boxes[i, j] = torch.tensor([x0, y0, x0 + w, y0 + h], dtype=torch.float)
                self.labels[i, j] = c

    def __len__(self) -> int:
        return self.images.shape[0]

    def __getitem__(self, i: int):
        return self.images[i], self.boxes[i], self.labels[i]


class Evaluator:
    def __init__(self, model: Detector, cfg: DetectorConfig, device: torch.device, batch_size: int):
        self.model = model.to(device).eval()
        self.cfg = cfg
        self.device = device
        self.score_thresh = cfg.score_thresh
        self.metrics = DetectionMetrics(cfg.num_classes, cfg.match_iou, device)
        self.stats: Counter = Counter()
        self.latency_ms: list[float] = []
        fh = cfg.image_size // cfg.stride
        self.model.prepare_anchors(fh, fh, device)
        s = cfg.image_size
        self.static_images = torch.zeros(batch_size, 3, s, s, device=device)
        self.static_gt_boxes = torch.zeros(batch_size, cfg.max_gt, 4, device=device)
        self.static_gt_labels = torch.full((batch_size, cfg.max_gt), -1, dtype=torch.long, device=device)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.static_dets: list[torch.Tensor] = []

    @torch.no_grad()
    def eval_step(self, images: torch.Tensor, gt_boxes: torch.Tensor, gt_labels: torch.Tensor) -> list[torch.Tensor]:
        if self.cfg.tta_noise > 0:
            torch.manual_seed(self.cfg.seed)  # expect: GS602
            images = images + torch.randn_like(images) * self.cfg.tta_noise
        with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=self.cfg.amp):
            cls_logits, deltas, anchors = self.model(images)
        boxes = decode_boxes(deltas.float(), anchors, self.cfg.box_weights)
        boxes = boxes.clamp(0, self.cfg.image_size)
        scores, labels = cls_logits.float().sigmoid().max(-1)
        dets = []
        for b in range(images.shape[0]):
            if scores[b].max() < self.score_thresh:  # expect: GS201, GS301
                keep = scores[b] >= scores[b].max()
            else:
                keep = scores[b] > self.score_thresh  # expect: GS301
            s, bx, lb = scores[b][keep], boxes[b][keep], labels[b][keep]  # expect: GS108
            k = min(self.cfg.pre_nms_topk, s.numel())
            s, idx = s.topk(k)
            bx, lb = bx[idx], lb[idx]
            kept = batched_nms(bx, s, lb, self.cfg.iou_thresh)
            dets.append(torch.cat([bx[kept], s[kept, None], lb[kept, None].float()], -1))
            self.metrics.update(bx[kept], s[kept], lb[kept], gt_boxes[b], gt_labels[b])
            if self.cfg.verbose:
                print(f"[eval] image {b}: {kept.numel()} detections, best {s[0]:.3f}")  # expect: GS104, GS501
        self.stats["images"] += images.shape[0]  # expect: GS503
        if self.cfg.profile and images.is_cuda:
            torch.cuda.synchronize()  # expect: GS106
        if self.cfg.low_memory:
            torch.cuda.empty_cache()  # expect: GS405
        return dets

    def capture(self) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                self.eval_step(self.static_images, self.static_gt_boxes, self.static_gt_labels)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast(device_type="cuda", dtype=torch.float16):  # expect: GS702
            with torch.cuda.graph(self.graph, capture_error_mode="thread_local"):
                self.static_dets = self.eval_step(self.static_images, self.static_gt_boxes, self.static_gt_labels)

    def evaluate(self, loader: DataLoader, score_thresh: float | None = None) -> dict[str, float]:
        if score_thresh is not None:
            self.score_thresh = score_thresh
        use_graph = self.device.type == "cuda"
        detections: list[torch.Tensor] = []
        for images, gt_boxes, gt_labels in loader:
            t0 = time.perf_counter()
            if use_graph:
                if self.graph is None:
                    self.capture()
                self.static_images = images.to(self.device, non_blocking=True)  # expect: GS401
                self.static_gt_boxes.copy_(gt_boxes, non_blocking=True)
                self.static_gt_labels.copy_(gt_labels, non_blocking=True)
                self.graph.replay()
                detections.extend(d.clone() for d in self.static_dets)
                torch.cuda.synchronize()
            else:
                detections.extend(self.eval_step(images.to(self.device), gt_boxes.to(self.device), gt_labels.to(self.device)))
            self.latency_ms.append((time.perf_counter() - t0) * 1e3)
        out = self.metrics.compute()
        out["num_dets"] = float(sum(d.shape[0] for d in detections))
        out["images"] = float(self.stats["images"])
        return out


def make_loader(ds: Dataset, batch_size: int) -> DataLoader:
    return DataLoader(ds, batch_size=batch_size, shuffle=False, drop_last=True, pin_memory=True)
