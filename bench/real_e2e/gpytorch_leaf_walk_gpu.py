"""Why gpytorch's loss region found no parameter on the GPU image (issue 20, gpyauto20): a check in < 60 s.

Hypothesis: graphed_autograd.outside_leaves marked visited autograd nodes by id() of their Python
wrappers without keeping them. torch up to 2.11 (the GPU image) makes a wrapper per access and frees
it with its last reference, so a dropped node's id() is soon another node's and the walk skipped it:
after the ELBO's Add/Sub nodes it stopped, and no parameter was found (torch 2.12+, the CPU machine,
keeps one wrapper per node alive, so the CPU never showed it). Prints, on this machine:
1. whether the node keeps its wrapper alive (no: ids can be reused);
2. leaves found on an ELBO-shaped graph by the walk as it was (copied below) and by graphsafe's;
3. gradients of graphed(ElboLike.forward) on CUDA against eager, for every parameter.

    PYTHONPATH=$PWD python bench/real_e2e/gpytorch_leaf_walk_gpu.py
"""

from __future__ import annotations

import sys

import torch


def walk_before_the_fix(outputs: list[torch.Tensor]) -> int:
    """outside_leaves' loop at 47bea25, leaves counted (no input excluded, no sequence check)."""
    found: dict[int, torch.Tensor] = {}
    stack = [o.grad_fn for o in outputs if o.grad_fn is not None]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            found.setdefault(id(variable), variable)
            continue
        stack.extend(next_node for next_node, _ in node.next_functions)
    return len(found)


def main() -> int:
    sys.path.insert(0, ".")
    from graphsafe.runtime import graphed
    from graphsafe.runtime.graphed_autograd import outside_leaves
    from tests.runtime.test_graphed_autograd import ElboLike

    print("torch", torch.__version__, "python", sys.version.split()[0])
    out = torch.ones(2, device="cuda", requires_grad=True).sum() * 2
    wrapper = out.grad_fn
    kept = sys.getrefcount(wrapper) > 2  # the name and getrefcount's argument; a third: the node's own
    print(f"1. the node keeps its Python wrapper alive: {kept} (False: freed wrappers' ids are reused)")
    del wrapper

    torch.manual_seed(0)
    model, elbo = torch.nn.Linear(3, 1).cuda(), ElboLike().cuda()
    x = torch.rand(8, 3, device="cuda")
    loss = elbo(model(x).squeeze(1), x.sum(1))
    print(f"2. leaves of an ELBO-shaped loss (4 expected: 2 of the model, raw_noise, variational): "
          f"walk before the fix {walk_before_the_fix([loss])}, graphsafe's {len(outside_leaves([loss], [], 0, 'elbo'))}")

    params = [*model.parameters(), *elbo.parameters()]
    names = ["weight", "bias", "raw_noise", "variational"]

    def run(loss_fn):
        grads = []
        for i in range(4):
            xi = torch.rand(8, 3, device="cuda", generator=torch.Generator("cuda").manual_seed(i))
            (-loss_fn(model(xi).squeeze(1), xi.sum(1))).backward()
            grads.append([None if p.grad is None else p.grad.clone() for p in params])
            for p in params:
                p.grad = None
        return grads

    expected = run(elbo)
    step = graphed(elbo.forward)
    got = run(step)
    ok = True
    for i, (want, have) in enumerate(zip(expected, got)):
        for name, w, h in zip(names, want, have):
            diff = "no gradient" if h is None else f"max abs diff {(h - w).abs().max().item():.3g}"
            ok &= h is not None and torch.allclose(h, w, rtol=1e-5, atol=1e-6)
            print(f"3. step {i} {name}: {diff}")
    print(f"extras found by graphed(): {len(step._autograd._extras)} (2 expected); stats {step.stats}")
    print("RESULT:", "every gradient as eager" if ok else "WRONG gradients")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
