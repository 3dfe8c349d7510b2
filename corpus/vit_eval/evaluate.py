"""Evaluation with test-time augmentation and a confusion matrix. `EvalHarness.eval_step` is the
capture region (`@graphsafe.region`); on a GPU it is captured once with torch.cuda.graph and
replayed for every batch, on CPU it runs eagerly."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

import graphsafe
from vit import VisionTransformer, ViTConfig


@dataclass
class EvalConfig:
    batch_size: int = 8
    tta: bool = True
    min_conf: float = 0.05
    print_per_class: bool = True
    class_names: tuple[str, ...] = ("plane", "car", "bird", "cat", "deer", "dog")


class EvalHarness:
    def __init__(self, model: VisionTransformer, cfg: EvalConfig, device: torch.device):
        self.model = model.eval()
        self.cfg = cfg
        self.C = model.cfg.num_classes
        self.confmat = torch.zeros(self.C, self.C, dtype=torch.long, device=device)
        self.correct = torch.zeros((), dtype=torch.long, device=device)
        self.seen = torch.zeros((), dtype=torch.long, device=device)
        self.classes_predicted: set[int] = set()

    def predict(self, images: torch.Tensor) -> torch.Tensor:
        probs = F.softmax(self.model(images), dim=-1)
        if self.cfg.tta:
            probs = (probs + F.softmax(self.model(images.flip(-1)), dim=-1)) / 2
        probs[probs < self.cfg.min_conf] = 0.0  # drop near-zero mass before renormalising
        return probs / probs.sum(dim=-1, keepdim=True)

    @graphsafe.region
    @torch.no_grad()
    def eval_step(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        probs = self.predict(images)
        preds = probs.argmax(dim=-1)
        self.correct += (preds == labels).sum()
        self.seen += labels.numel()
        self.classes_predicted.update(torch.unique(preds).tolist())  # expect: GS107, GS102, GS503
        self.confmat += torch.bincount(labels * self.C + preds, minlength=self.C * self.C).view(self.C, self.C)  # expect: GS107
        diag = self.confmat.diagonal()
        support = self.confmat.sum(dim=1)
        per_class = torch.where(support > 0, diag / support.clamp(min=1), torch.zeros_like(diag, dtype=torch.float))
        if self.cfg.print_per_class:
            for c, name in enumerate(self.cfg.class_names):
                print(f"{name:>6}: {per_class[c]:.3f}")  # expect: GS104, GS501
        return probs.max(dim=-1).values.mean()


def synthetic_loader(cfg: EvalConfig, vit_cfg: ViTConfig, n: int, seed: int):
    gen = torch.Generator().manual_seed(seed + 5)
    protos = torch.randn(vit_cfg.num_classes, vit_cfg.in_chans, vit_cfg.img_size, vit_cfg.img_size, generator=gen)
    for _ in range(n):
        labels = torch.randint(0, vit_cfg.num_classes, (cfg.batch_size,), generator=gen)
        noise = torch.randn(cfg.batch_size, vit_cfg.in_chans, vit_cfg.img_size, vit_cfg.img_size, generator=gen)
        yield protos[labels] + noise, labels


def evaluate(model: VisionTransformer, cfg: EvalConfig, n_batches: int, seed: int, device: torch.device) -> dict:
    harness = EvalHarness(model, cfg, device)
    loader = synthetic_loader(cfg, model.cfg, n_batches, seed)
    confidences = []
    if device.type == "cuda":
        shape = (cfg.batch_size, model.cfg.in_chans, model.cfg.img_size, model.cfg.img_size)
        static_images = torch.zeros(shape, device=device)
        static_labels = torch.zeros(cfg.batch_size, dtype=torch.long, device=device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                harness.eval_step(static_images, static_labels)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_conf = harness.eval_step(static_images, static_labels)
        for t in (harness.confmat, harness.correct, harness.seen):
            t.zero_()
        for images, labels in loader:
            static_images.copy_(images)
            static_labels.copy_(labels)
            graph.replay()
            confidences.append(static_conf.item())
    else:
        for images, labels in loader:
            confidences.append(harness.eval_step(images.to(device), labels.to(device)).item())

    acc = harness.correct.item() / max(1, harness.seen.item())
    if cfg.print_per_class:
        print(f"top-1 {acc:.3f} over {harness.seen.item()} images")
        print(harness.confmat.cpu())
    return {"acc": acc, "mean_conf": sum(confidences) / len(confidences),
            "confmat_trace": float(harness.confmat.trace()), "n_pred_classes": float(len(harness.classes_predicted))}


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    print(evaluate(VisionTransformer(ViTConfig()).to(dev), EvalConfig(), n_batches=4, seed=0, device=dev))
