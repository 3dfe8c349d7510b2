import torch

from agent import IQLAgent
from config import IQLConfig


def make_dataset(cfg: IQLConfig, n: int, g: torch.Generator):
    obs = torch.randn(n, cfg.obs_dim, generator=g) * 2.0 + 1.0
    act = torch.tanh(torch.randn(n, cfg.act_dim, generator=g))
    rew = torch.randn(n, 1, generator=g)
    nxt = obs + 0.1 * torch.randn(n, cfg.obs_dim, generator=g)
    done = (torch.rand(n, 1, generator=g) < 0.1).float()
    return obs, act, rew, nxt, done


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = IQLConfig()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(seed)
    data = make_dataset(cfg, 256, g)
    agent = IQLAgent(cfg, device)
    agent.set_normalisation(data[0].to(device))
    batches = []
    for _ in range(steps):
        idx = torch.randint(0, 256, (cfg.batch,), generator=g)
        batches.append([t[idx].to(device) for t in data])
    if device.type == "cuda":
        agent.capture(batches[0], 0.5)
    return agent.train_on(batches, 0.5)


if __name__ == "__main__":
    print(run())
