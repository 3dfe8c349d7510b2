import logging
import os
import time
import uuid

import torch
import torch.nn.functional as F

from config import RankerConfig
from encoder import ContextEncoder, slate_click_positions
from exploration import ExplorationSchedule, forgetting_factor
from posterior import DiagonalGaussianPosterior, expected_reward

logger = logging.getLogger("ranker")


class RankerService:
    def __init__(self, cfg: RankerConfig, device: torch.device, out_dir: str):
        self.cfg = cfg
        self.device = device
        self.out_dir = out_dir
        self.encoder = ContextEncoder(cfg.context_dim, cfg.dim).to(device)
        self.posterior = DiagonalGaussianPosterior(cfg.n_items, cfg.dim, cfg.prior_var, cfg.noise_var).to(device)
        self.encoder_opt = torch.optim.Adam(self.encoder.parameters(), lr=cfg.encoder_lr)
        self.reward_head = torch.nn.Linear(cfg.dim, 1).to(device)
        self.head_opt = torch.optim.SGD(self.reward_head.parameters(), lr=cfg.encoder_lr)
        self.schedule = ExplorationSchedule(cfg.explore_start, cfg.explore_end, cfg.explore_horizon)
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(cfg.seed)
        self.exploration = cfg.explore_start
        self.forget = cfg.forget_start
        self.requests_served = 0
        self.request_ids = [f"req-{i}" for i in range(cfg.requests_per_batch)]
        self.slate_cache = {}
        self.feature_cache = {}
        self.propensity_log = []
        self.ctr_ema = torch.zeros((), device=device)
        self.reward_log = torch.zeros(0, device=device)
        self.item_prior = [1.0 + 0.01 * i for i in range(cfg.n_items)]
        self.activation_norm = torch.zeros((), device=device)
        self.encoder.register_forward_hook(self._track_norm)  # expect: GS706
        R = cfg.requests_per_batch
        self.static_ctx = torch.zeros(R, cfg.context_dim, device=device)
        self.static_items = torch.zeros(R, dtype=torch.long, device=device)
        self.static_rewards = torch.zeros(R, device=device)
        self.static_props = torch.ones(R, device=device)
        self.serve_graph = None
        self.update_graph = None

    def _track_norm(self, module, inputs, output):
        self.activation_norm.copy_(output.detach().norm())

    def thompson_scores(self, feats: torch.Tensor) -> torch.Tensor:
        eps = torch.randn(self.cfg.n_items, self.cfg.dim, generator=self.gen, device=feats.device)  # expect: GS601
        theta = self.posterior.mean + self.exploration * self.posterior.std * eps  # expect: GS301
        prior = torch.as_tensor(self.item_prior, device=feats.device)  # expect: GS402
        return feats @ theta.t() * prior

    def serve_step(self, contexts: torch.Tensor, temperature: float):
        cached = self.feature_cache.get(contexts.data_ptr())  # expect: GS506
        feats = self.encoder(contexts) if cached is None else cached
        scores = self.thompson_scores(feats)
        if not torch.isfinite(scores).all():  # expect: GS201
            scores = torch.nan_to_num(scores)
        slate = scores.topk(self.cfg.slate_size, dim=-1).indices
        probs = torch.softmax(scores / temperature, -1)  # expect: GS301
        propensity = probs.gather(-1, slate)
        if (propensity < self.cfg.min_propensity).any():  # expect: GS201
            logger.warning("propensity floor hit after %d requests", self.requests_served)  # expect: GS501
        self.propensity_log.append(propensity.detach())  # expect: GS503
        for r, req_id in enumerate(self.request_ids):
            self.slate_cache[req_id] = slate[r]  # expect: GS503
        self.last_slates = slate.tolist()  # expect: GS102
        shown = torch.unique(slate)  # expect: GS107
        self.shown_items = shown
        trace_id = uuid.uuid4().hex  # expect: GS502
        served_at = time.time()  # expect: GS502
        self.requests_served += contexts.shape[0]  # expect: GS302
        greedy = expected_reward(feats, self.posterior.mean).argmax(-1)
        self.agreement = (greedy == slate[:, 0]).float().mean()
        self.trace = (trace_id, served_at)
        return slate, propensity.detach()

    def apply_feedback(self, contexts: torch.Tensor, items: torch.Tensor, rewards: torch.Tensor, props: torch.Tensor):
        if self.cfg.reseed_each_update:
            self.gen.manual_seed(self.cfg.seed)  # expect: GS602
        feats = self.encoder(contexts)
        weights = 1.0 / props.clamp(min=self.cfg.min_propensity)
        onehot = F.one_hot(items, num_classes=self.cfg.n_items)
        self.posterior.update(feats.detach(), onehot, rewards, weights, self.forget)
        pred = self.reward_head(feats).squeeze(-1)
        loss = (weights * (pred - rewards).pow(2)).mean()
        self.encoder_opt.zero_grad(set_to_none=False)
        self.head_opt.zero_grad(set_to_none=False)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.encoder.parameters(), 5.0)
        self.encoder_opt.step()  # expect: GS701
        self.head_opt.step()
        self.ctr_ema = 0.9 * self.ctr_ema + 0.1 * rewards.mean()  # expect: GS401
        self.reward_log = torch.cat((self.reward_log, rewards))  # expect: GS404
        clicked_props = props[rewards > 0]  # expect: GS108
        self.ips_clicks = clicked_props.reciprocal().sum()
        self.best_item = int(pred.argmax())  # expect: GS105
        self.click_positions = slate_click_positions(rewards.long())
        self.loss_value = loss.item()  # expect: GS101
        self.weights_host = weights.to("cpu")  # expect: GS103
        clicked_rows = torch.where(rewards > 0)  # expect: GS107
        self.n_clicked = clicked_rows[0]
        print(rewards)  # expect: GS104
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # expect: GS405
        if self.cfg.checkpoint_posterior:
            torch.save(self.posterior.state_dict(), os.path.join(self.out_dir, "posterior.pt"))  # expect: GS504
        return loss.detach()

    def capture(self):
        sample = torch.randn(self.cfg.requests_per_batch, self.cfg.context_dim, device=self.device)
        with torch.autocast("cuda", dtype=torch.float16):  # expect: GS702
            self.encoder = torch.cuda.make_graphed_callables(self.encoder, (sample,))
        self.serve_graph = torch.cuda.CUDAGraph()
        self.update_graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.serve_graph):
            self.static_slate, self.static_prop = self.serve_step(self.static_ctx, 1.0)
        with torch.cuda.graph(self.update_graph):
            self.static_loss = self.apply_feedback(self.static_ctx, self.static_items, self.static_rewards, self.static_props)

    def handle(self, contexts: torch.Tensor, temperature: float, feedback):
        self.exploration = self.schedule.value(self.requests_served)
        self.forget = forgetting_factor(self.requests_served, self.cfg.forget_start)
        if self.serve_graph is not None:
            self.static_ctx.copy_(contexts)
            self.serve_graph.replay()
            slate, prop = self.static_slate.clone(), self.static_prop.clone()
        else:
            slate, prop = self.serve_step(contexts, temperature)
        items, rewards = feedback(contexts, slate)
        chosen = prop[:, 0]
        if self.update_graph is not None:
            self.static_items.copy_(items)
            self.static_rewards.copy_(rewards)
            self.static_props.copy_(chosen)
            self.update_graph.replay()
            loss = self.static_loss
        else:
            loss = self.apply_feedback(contexts, items, rewards, chosen)
        return slate, loss
