"""gpytorch: one minibatch training step of a sparse variational GP (SVGP).

ApproximateGP with VariationalStrategy(learn_inducing_locations=True) over a
CholeskyVariationalDistribution, ConstantMean, ScaleKernel(RBFKernel()), GaussianLikelihood;
the step is gpytorch's documented loop body: loss = -VariationalELBO(output, y), backward, Adam.
"""
import torch

from bench.real_e2e.step_api import Built

PACKAGE = "gpytorch"
KIND = "train"
REGION = "gpytorch/mlls/_approximate_mll.py::_ApproximateMarginalLogLikelihood.forward"
# linear-operator, jaxtyping and scipy are in the GPU image (there: linear_operator 0.6.1,
# jaxtyping 0.3.11). The CPU side needs (CPU_DEPS) scipy and, pure Python:
#   linear_operator 0.6.1 a5981c1fcda08df3a210dffb6e8019b4751f4afaf3ffc822c24eaaf56b11eed9
#   jaxtyping 0.3.11      8a4bedc4e3f963fa82df41bd13c7ebc2bad925601eb48614c65798f21329d4e3
#   wadler_lindig 0.1.8   8671e8c98449ae3f4e4ba720eccd63a502b3983042f8d112b49a9c6be49e8d92
EXTRA = []

BATCH, FEATURES, INDUCING, DATA = 128, 4, 32, 10_000


def build(device: str, seed: int) -> Built:
    import gpytorch
    from gpytorch.models import ApproximateGP
    from gpytorch.variational import CholeskyVariationalDistribution, VariationalStrategy

    class SVGP(ApproximateGP):
        def __init__(self, inducing_points):
            distribution = CholeskyVariationalDistribution(inducing_points.size(0))
            strategy = VariationalStrategy(self, inducing_points, distribution, learn_inducing_locations=True)
            super().__init__(strategy)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    torch.manual_seed(seed)  # the variational distribution's first draw
    inducing = torch.rand(INDUCING, FEATURES, generator=torch.Generator().manual_seed(seed))
    model = SVGP(inducing).to(device).train()
    likelihood = gpytorch.likelihoods.GaussianLikelihood().to(device).train()
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=DATA)
    optimizer = torch.optim.Adam([*model.parameters(), *likelihood.parameters()], lr=0.01)

    def inputs(i: int) -> tuple:
        gen = torch.Generator().manual_seed(seed * 1_000_003 + i)
        x = torch.rand(BATCH, FEATURES, generator=gen)
        y = torch.sin(6 * x).sum(1) + 0.1 * torch.randn(BATCH, generator=gen)
        return x.to(device), y.to(device)

    def step(x, y):
        optimizer.zero_grad()
        loss = -mll(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.detach()

    def state() -> dict:
        return {**{f"model.{k}": v for k, v in model.state_dict().items()},
                **{f"likelihood.{k}": v for k, v in likelihood.state_dict().items()}}

    return Built(step=step, inputs=inputs, state=state)
