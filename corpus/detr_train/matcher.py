import torch

from box_ops import box_cxcywh_to_xyxy, generalized_box_iou


def greedy_assignment(cost: list[list[float]]) -> tuple[list[int], list[int]]:
    rows, cols, used = [], [], set()
    n_tgt = len(cost[0]) if cost else 0
    for j in range(n_tgt):
        best = min((r for r in range(len(cost)) if r not in used), key=lambda r: cost[r][j])
        used.add(best)
        rows.append(best)
        cols.append(j)
    return rows, cols


class HungarianMatcher:
    def __init__(self, cost_class: float, cost_bbox: float, cost_giou: float):
        self.cost_class = cost_class
        self.cost_bbox = cost_bbox
        self.cost_giou = cost_giou

    @torch.no_grad()
    def __call__(self, outputs: dict, targets: list[dict]):
        bs, nq = outputs["pred_logits"].shape[:2]
        prob = outputs["pred_logits"].flatten(0, 1).softmax(-1)
        out_bbox = outputs["pred_boxes"].flatten(0, 1)
        tgt_ids = torch.cat([t["labels"] for t in targets])
        tgt_bbox = torch.cat([t["boxes"] for t in targets])
        if (tgt_bbox[:, 2:] <= 0).any():  # expect: GS201
            raise ValueError("degenerate target boxes")
        cost = (self.cost_bbox * torch.cdist(out_bbox, tgt_bbox, p=1)
                - self.cost_class * prob[:, tgt_ids]
                - self.cost_giou * generalized_box_iou(box_cxcywh_to_xyxy(out_bbox), box_cxcywh_to_xyxy(tgt_bbox)))
        host_cost = cost.view(bs, nq, -1).tolist()  # expect: GS102
        sizes = [len(t["boxes"]) for t in targets]
        indices, start = [], 0
        for i, n in enumerate(sizes):
            block = [row[start:start + n] for row in host_cost[i]]
            rows, cols = greedy_assignment(block)
            indices.append((torch.as_tensor(rows, dtype=torch.int64), torch.as_tensor(cols, dtype=torch.int64)))  # expect: GS402
            start += n
        return indices
