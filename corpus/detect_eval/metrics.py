"""Per-class precision/recall bookkeeping for detection evaluation."""

from __future__ import annotations

import torch

from boxes import box_iou


class DetectionMetrics:
    def __init__(self, num_classes: int, iou_thresh: float, device: torch.device):
        self.num_classes = num_classes
        self.iou_thresh = iou_thresh
        self.num_gt = torch.zeros(num_classes, dtype=torch.long, device=device)
        self.all_scores = torch.zeros(0, device=device)
        self.all_tp = torch.zeros(0, dtype=torch.bool, device=device)
        self.all_labels = torch.zeros(0, dtype=torch.long, device=device)
        self.per_class_dets: dict[int, int] = {}
        self.verbose = False

    def update(self, boxes: torch.Tensor, scores: torch.Tensor, labels: torch.Tensor, gt_boxes: torch.Tensor, gt_labels: torch.Tensor) -> None:
        valid = gt_labels >= 0
        gt_boxes, gt_labels = gt_boxes[valid], gt_labels[valid]  # expect: GS108
        self.num_gt += torch.bincount(gt_labels, minlength=self.num_classes)  # expect: GS107
        if boxes.shape[0] == 0:
            return
        if gt_boxes.shape[0] == 0:  # expect: GS201
            tp = torch.zeros_like(scores, dtype=torch.bool)
        else:
            best_iou, best_gt = box_iou(boxes, gt_boxes).max(1)
            tp = (best_iou >= self.iou_thresh) & (labels == gt_labels[best_gt])
        self.all_scores = torch.cat([self.all_scores, scores.float()])  # expect: GS404
        self.all_tp = torch.cat([self.all_tp, tp])  # expect: GS404
        self.all_labels = torch.cat([self.all_labels, labels])  # expect: GS404
        for c in labels.unique().tolist():  # expect: GS102, GS107
            self.per_class_dets[c] = self.per_class_dets.get(c, 0) + 1  # expect: GS503
        if self.verbose and tp.any():  # expect: GS201
            print(f"matched {int(tp.sum())} of {tp.numel()} detections")  # expect: GS105, GS501

    def compute(self) -> dict[str, float]:
        out = {}
        aps = []
        for c in range(self.num_classes):
            sel = self.all_labels == c
            scores, tp = self.all_scores[sel], self.all_tp[sel]
            n_gt = int(self.num_gt[c])
            if n_gt == 0:
                continue
            order = scores.argsort(descending=True)
            tp_cum = tp[order].float().cumsum(0)
            precision = tp_cum / torch.arange(1, tp_cum.numel() + 1, device=tp_cum.device)
            recall = tp_cum / n_gt
            ap = float((precision * torch.diff(recall, prepend=recall.new_zeros(1))).sum()) if tp_cum.numel() else 0.0
            out[f"AP/{c}"] = ap
            aps.append(ap)
        out["mAP"] = sum(aps) / max(1, len(aps))
        return out
