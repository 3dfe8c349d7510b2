"""Box coding and class-aware greedy suppression."""

from __future__ import annotations

import math

import torch

BBOX_XFORM_CLIP = math.log(1000.0 / 16)


def decode_boxes(deltas: torch.Tensor, anchors: torch.Tensor, weights: tuple[float, float, float, float]) -> torch.Tensor:
    w = torch.tensor(weights, dtype=deltas.dtype, device=deltas.device)  # expect: GS402
    d = deltas / w
    widths = anchors[:, 2] - anchors[:, 0]
    heights = anchors[:, 3] - anchors[:, 1]
    ctr_x = anchors[:, 0] + 0.5 * widths
    ctr_y = anchors[:, 1] + 0.5 * heights
    pred_ctr_x = d[..., 0] * widths + ctr_x
    pred_ctr_y = d[..., 1] * heights + ctr_y
    pred_w = torch.exp(d[..., 2].clamp(max=BBOX_XFORM_CLIP)) * widths
    pred_h = torch.exp(d[..., 3].clamp(max=BBOX_XFORM_CLIP)) * heights
    return torch.stack([pred_ctr_x - 0.5 * pred_w, pred_ctr_y - 0.5 * pred_h, pred_ctr_x + 0.5 * pred_w, pred_ctr_y + 0.5 * pred_h], -1)


def box_iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    area_a = (a[:, 2] - a[:, 0]).clamp(min=0) * (a[:, 3] - a[:, 1]).clamp(min=0)
    area_b = (b[:, 2] - b[:, 0]).clamp(min=0) * (b[:, 3] - b[:, 1]).clamp(min=0)
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    return inter / (area_a[:, None] + area_b[None, :] - inter).clamp(min=1e-6)


def batched_nms(boxes: torch.Tensor, scores: torch.Tensor, labels: torch.Tensor, iou_thresh: float, min_score: float = 0.0) -> torch.Tensor:
    if boxes.numel() == 0:
        return torch.zeros(0, dtype=torch.long, device=boxes.device)
    offsets = labels.to(boxes.dtype) * (boxes.max() + 1)
    shifted = boxes + offsets[:, None]
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0 and scores[order[0]] > min_score:  # expect: GS201
        i = order[0]
        keep.append(i)
        ious = box_iou(shifted[i : i + 1], shifted[order[1:]])[0]  # expect: GS105
        order = order[1:][ious <= iou_thresh]  # expect: GS108
    return torch.stack(keep) if keep else torch.zeros(0, dtype=torch.long, device=boxes.device)
