"""pyro-ppl: one SVI step, `loss = svi.step(x, y)`, of a Bayesian linear regression.

Trace_ELBO with an AutoNormal guide and pyro.optim.Adam, as the labellers assumed. The guide
is called once in build so that its parameters exist before the first step (pyro creates them
lazily). Pyro's parameter store is process-global: a second build clears it, so build one
step object at a time.
"""
import torch

from bench.real_e2e.step_api import Built

PACKAGE = "pyro-ppl"
KIND = "train"
REGION = "pyro/infer/svi.py::SVI.step"
# pyro-api is not in the GPU image; opt-einsum, tqdm and numpy are. The CPU side needs (CPU_DEPS)
# numpy and: opt_einsum 3.4.0 69bb92469f86a1565195ece4ac0323943e83477171b91d24c35afe028a90d7cd,
#            tqdm 4.70.1      c293e525e6fef9c20e8728fd4612df02a0aa31bb5fe91ecd93e123b1b7bffa73
EXTRA = [("pyro-api", "0.1.2", "10e0e42e9e4401ce464dab79c870e50dfb4f413d326fa777f3582928ef9caf8f")]

BATCH, FEATURES = 64, 8


def build(device: str, seed: int) -> Built:
    import pyro
    import pyro.distributions as dist
    from pyro.infer import SVI, Trace_ELBO
    from pyro.infer.autoguide import AutoNormal

    zero, one = torch.zeros((), device=device), torch.ones((), device=device)

    def model(x, y):
        w = pyro.sample("w", dist.Normal(zero, one).expand([FEATURES]).to_event(1))
        b = pyro.sample("b", dist.Normal(zero, 10 * one))
        sigma = pyro.sample("sigma", dist.HalfNormal(one))
        with pyro.plate("data", x.shape[0]):
            pyro.sample("obs", dist.Normal(x @ w + b, sigma), obs=y)

    def inputs(i: int) -> tuple:
        gen = torch.Generator().manual_seed(seed * 1_000_003 + i)
        x = torch.randn(BATCH, FEATURES, generator=gen)
        y = x.sum(1) + 0.1 * torch.randn(BATCH, generator=gen)
        return x.to(device), y.to(device)

    pyro.clear_param_store()
    pyro.set_rng_seed(seed)
    guide = AutoNormal(model)
    guide(*inputs(-1))  # creates the guide's parameters in the store
    svi = SVI(model, guide, pyro.optim.Adam({"lr": 0.01}), loss=Trace_ELBO())
    store = pyro.get_param_store()

    def state() -> dict:
        return {name: value.detach() for name, value in store.named_parameters()}

    return Built(step=svi.step, inputs=inputs, state=state)
