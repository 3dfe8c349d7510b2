import random

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

from config import ASRConfig
from model import CTCModel
from specaug import freq_mask, normalise, padding_mask, time_mask
from wer import greedy_errors


class CTCTrainer:
    def __init__(self, cfg: ASRConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = CTCModel(cfg.n_feats, cfg.dim, cfg.vocab).to(device)
        body = list(self.model.sub.parameters()) + list(self.model.rnn.parameters())
        self.opt = torch.optim.RMSprop(body, lr=cfg.lr)
        self.head_opt = torch.optim.Adagrad(self.model.head.parameters(), lr=cfg.lr)
        self.aug_gen = torch.Generator(device=device)
        self.warmup_factor = 0.0
        self.total_words = 0
        self.wer_log: list = []
        self.emissions = torch.zeros(0, cfg.vocab, device=device)
        self.loss_history: list = []
        self.graph = None

    def train_step(self, feats, feat_lens, targets, target_lens: list[int], label_seqs: list[torch.Tensor], lr: float):
        cfg = self.cfg
        if cfg.deterministic_aug:
            random.seed(cfg.seed)  # expect: GS602
        if cfg.stage_host:
            staged = torch.empty(feats.shape, pin_memory=True)  # expect: GS406
            staged.copy_(feats.detach().cpu())  # expect: GS103
        mask = padding_mask(feat_lens, feats.shape[1])
        feats = normalise(feats, mask)
        feats = freq_mask(feats, cfg.freq_mask)
        starts = torch.randint(0, cfg.max_frames - cfg.time_mask, (feats.shape[0],), generator=self.aug_gen, device=feats.device)  # expect: GS601
        widths = torch.randint(1, cfg.time_mask, (feats.shape[0],), device=feats.device)
        feats = time_mask(feats, starts, widths)
        log_probs = self.model(feats)
        out_lens = (feat_lens + 1) // 2
        tgt = targets[:, : max(target_lens)]  # expect: GS408
        refs = pad_sequence(label_seqs, batch_first=True)  # expect: GS408
        tl = torch.tensor(target_lens, device=feats.device)  # expect: GS402
        if (out_lens < tl).any():  # expect: GS201
            raise ValueError("utterance shorter than its transcript")
        loss = F.ctc_loss(log_probs.transpose(0, 1), tgt, out_lens, tl, blank=cfg.blank, reduction="mean", zero_infinity=True)
        loss = loss if torch.isfinite(loss) else torch.zeros_like(loss)  # expect: GS201
        self.opt.zero_grad(set_to_none=False)
        self.head_opt.zero_grad(set_to_none=False)
        loss.backward()
        for p in self.model.parameters():
            p.grad.mul_(self.warmup_factor)  # expect: GS301
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm, error_if_nonfinite=True)  # expect: GS110
        for g in self.opt.param_groups:
            g["lr"] = lr  # expect: GS301
        self.opt.step()  # expect: GS701
        self.head_opt.step()  # expect: GS701
        self.emissions = torch.cat([self.emissions, log_probs[0, :1].detach()])  # expect: GS404
        with torch.no_grad():
            ref_lists = [s.tolist() for s in label_seqs]  # expect: GS102
            best = log_probs.argmax(-1)
            errors = greedy_errors(best, out_lens, ref_lists, cfg.blank)
            self.last_best = best.cpu()  # expect: GS103
            self.wer_log.append(errors)  # expect: GS503
            self.total_words += sum(target_lens)  # expect: GS302
            agree = (refs[:, :1] == tgt[:, :1]).all() and (tl > 0).all()  # expect: GS201
        return loss.detach(), agree

    def capture(self, batch, lr: float) -> None:
        self.static = batch
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.amp.autocast():  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_loss = self.train_step(*batch, lr)[0]

    def fit(self, batches: list) -> dict:
        losses = []
        for step, batch in enumerate(batches):
            self.warmup_factor = min(1.0, (step + 1) / self.cfg.warmup_steps)
            lr = self.cfg.lr * self.warmup_factor
            if self.graph is not None:
                for dst, src in zip(self.static[:3], batch[:3]):
                    dst.copy_(src)
                self.graph.replay()
                self.loss_history.append(self.static_loss)  # expect: GS407
                losses.append(float(self.static_loss))
            else:
                loss, _ = self.train_step(*batch, lr)
                losses.append(float(loss))
        wer = sum(self.wer_log) / max(1, self.total_words)
        return {"loss": losses[-1], "mean_loss": sum(losses) / len(losses), "wer": float(wer)}
