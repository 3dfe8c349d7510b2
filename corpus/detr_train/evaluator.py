import torch


class APAccumulator:
    def __init__(self, iou_threshold: float = 0.5):
        self.iou_threshold = iou_threshold
        self.scores: list = []
        self.all_scores = torch.zeros(0)
        self.n_gt = 0
        self.confident_counts: list[int] = []

    def update(self, logits: torch.Tensor, targets: list[dict]) -> None:
        top = logits.softmax(-1)[..., :-1].amax(-1)
        self.scores.append(top.flatten().cpu())  # expect: GS103, GS503
        self.all_scores = torch.cat([self.all_scores, top.flatten().detach()])  # expect: GS404
        n_confident = int((top > 0.5).sum())  # expect: GS105
        self.confident_counts.append(n_confident)  # expect: GS503
        self.n_gt += sum(len(t["labels"]) for t in targets)  # expect: GS302

    def summarize(self) -> dict[str, float]:
        if not self.scores:
            return {"mean_score": 0.0, "n_gt": 0.0}
        s = torch.cat(self.scores)
        return {"mean_score": s.mean().item(), "n_gt": float(self.n_gt)}
