import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from box_ops import box_cxcywh_to_xyxy, generalized_box_iou


class SetCriterion(nn.Module):
    def __init__(self, num_classes: int, matcher, weight_dict: dict, eos_coef: float):
        super().__init__()
        self.num_classes = num_classes
        self.matcher = matcher
        self.weight_dict = weight_dict
        empty_weight = torch.ones(num_classes + 1)
        empty_weight[-1] = eos_coef
        self.register_buffer("empty_weight", empty_weight)

    @staticmethod
    def _src_permutation_idx(indices):
        batch_idx = torch.cat([torch.full_like(src, i) for i, (src, _) in enumerate(indices)])
        src_idx = torch.cat([src for (src, _) in indices])
        return batch_idx, src_idx

    def loss_labels(self, outputs, targets, indices):
        src_logits = outputs["pred_logits"]
        idx = self._src_permutation_idx(indices)
        target_classes_o = torch.cat([t["labels"][J] for t, (_, J) in zip(targets, indices)])
        target_classes = torch.full(src_logits.shape[:2], self.num_classes, dtype=torch.int64,
                                    device=src_logits.device)
        target_classes[idx] = target_classes_o
        return F.cross_entropy(src_logits.transpose(1, 2), target_classes, self.empty_weight)

    def loss_boxes(self, outputs, targets, indices, num_boxes: float):
        idx = self._src_permutation_idx(indices)
        src_boxes = outputs["pred_boxes"][idx]
        target_boxes = torch.cat([t["boxes"][i] for t, (_, i) in zip(targets, indices)], dim=0)
        loss_bbox = F.l1_loss(src_boxes, target_boxes, reduction="none").sum() / num_boxes
        giou = torch.diag(generalized_box_iou(box_cxcywh_to_xyxy(src_boxes), box_cxcywh_to_xyxy(target_boxes)))
        return loss_bbox, (1 - giou).sum() / num_boxes

    def forward(self, outputs: dict, targets: list[dict]) -> dict:
        num_boxes = sum(len(t["labels"]) for t in targets)
        if num_boxes == 0:
            warnings.warn("batch without annotated objects")  # expect: GS501
        num_boxes = torch.as_tensor([float(num_boxes)], device=outputs["pred_logits"].device)  # expect: GS402
        num_boxes = torch.clamp(num_boxes, min=1).item()  # expect: GS101
        losses = {}
        for i, out in enumerate([outputs] + outputs["aux_outputs"]):
            indices = self.matcher(out, targets)
            suffix = "" if i == 0 else f"_{i - 1}"
            losses["loss_ce" + suffix] = self.loss_labels(out, targets, indices)
            losses["loss_bbox" + suffix], losses["loss_giou" + suffix] = self.loss_boxes(out, targets, indices, num_boxes)
        return losses
