import torch
import torch.nn.functional as F

from config import T5Config
from metrics import TokenMetrics
from model import TinyT5
from noising import corrupt_spans, shift_right
from optim import AdafactorLite
from packing import document_mask, pack_documents, position_ids
from schedule import RelativeStep, inverse_sqrt

try:
    from tqdm import tqdm
except ImportError:
    tqdm = None


def make_embedding_optimizer(embedding: torch.nn.Module, cfg: T5Config):
    return torch.optim.Adam(embedding.parameters(), lr=cfg.base_lr, eps=1e-8)


class T5Trainer:
    def __init__(self, cfg: T5Config, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = TinyT5(cfg).to(device)
        body = [p for n, p in self.model.named_parameters() if not n.startswith("shared")]
        self.opt = AdafactorLite(body, lr=cfg.max_rel_step)
        self.emb_opt = make_embedding_optimizer(self.model.shared, cfg)
        self.scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda")
        self.sched = RelativeStep(cfg.warmup_steps, cfg.max_rel_step)
        self.metrics = TokenMetrics(cfg.pad_id, cfg.vocab_size)
        self.sentinels = list(range(cfg.vocab_size - 1, cfg.vocab_size - 1 - cfg.n_sentinels, -1))
        self.sentinel_cache = {}
        self.updates = 0
        self.tokens_seen = 0
        self.acc_sum = 0.0
        self.loss_ema = torch.zeros((), device=device)
        self.length_trace = torch.zeros(0, dtype=torch.long, device=device)
        self.pbar = tqdm(total=cfg.total_steps, disable=True) if tqdm is not None else None
        if device.type == "cuda":
            self.step_fn = torch.compile(self.train_step, mode="reduce-overhead")
        else:
            self.step_fn = self.train_step

    def sentinel_table(self, tokens: torch.Tensor) -> torch.Tensor:
        key = id(tokens)  # expect: GS506
        if key not in self.sentinel_cache:
            self.sentinel_cache[key] = torch.tensor(self.sentinels, device=tokens.device)  # expect: GS402, GS503
        return self.sentinel_cache[key]

    def train_step(self, docs: list[torch.Tensor], noise_density: float) -> torch.Tensor:
        cfg = self.cfg
        torch.manual_seed(cfg.seed + 7)  # expect: GS602
        tokens = pack_documents(docs, cfg.rows, cfg.seq_len, cfg.eos_id, cfg.pad_id)
        lens = torch.tensor([len(d) for d in docs], device=tokens.device)  # expect: GS402
        self.length_trace = torch.cat([self.length_trace, lens])  # expect: GS404
        doc_tokens = document_mask(docs, cfg.pad_id).sum()
        enc_in, targets, n_spans = corrupt_spans(tokens, noise_density, self.sentinel_table(tokens), cfg.pad_id)
        dec_in = shift_right(targets, cfg.pad_id)
        pos = position_ids([enc_in.shape[1], dec_in.shape[1]], tokens.device)
        logits = self.model(enc_in, dec_in, pos)

        valid = targets != cfg.pad_id
        ce = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), ignore_index=cfg.pad_id)
        lse = torch.logsumexp(logits.float(), -1)
        z_loss = cfg.z_loss * lse.pow(2)[valid].mean()  # expect: GS108
        if lse.max() > 50.0:  # expect: GS201
            z_loss = z_loss * 2.0
        loss = ce + z_loss
        assert torch.isfinite(loss), "span-corruption loss diverged"  # expect: GS201

        self.scaler.scale(loss).backward()
        lr = inverse_sqrt(self.updates, cfg.warmup_steps, cfg.base_lr)
        for group in self.emb_opt.param_groups:
            group["lr"] = lr  # expect: GS301
        self.emb_opt.step()  # expect: GS701
        rel = self.sched.value(self.updates)
        for group in self.opt.param_groups:
            group.update(lr=rel)  # expect: GS301
        self.scaler.step(self.opt)  # expect: GS703
        self.scaler.update()
        self.opt.zero_grad(set_to_none=False)
        self.emb_opt.zero_grad(set_to_none=False)

        self.loss_ema = 0.98 * self.loss_ema + 0.02 * loss.detach()  # expect: GS401
        acc = self.metrics.update(logits, targets)
        self.acc_sum += acc.item()  # expect: GS101
        self.tokens_seen += int(valid.sum())  # expect: GS105
        self.doc_token_frac = doc_tokens / tokens.numel()
        self.updates += 1  # expect: GS302
        if self.pbar is not None:
            self.pbar.update(1)  # expect: GS505
        if self.updates % cfg.log_every == 0:
            print("step", self.updates, "spans", n_spans, "lr", lr)  # expect: GS501
        return loss.detach()

    def fit(self, batches: list, densities: list[float]) -> list[float]:
        out = []
        for docs, density in zip(batches, densities):
            loss = self.step_fn([d.to(self.device) for d in docs], density)
            out.append(loss.item())
        return out
