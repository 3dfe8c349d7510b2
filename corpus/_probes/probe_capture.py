"""Capture probes behind the corpus labels: each snippet is warmed up on a side stream and then
captured with `torch.cuda.graph` in a fresh subprocess (a failed capture can poison a process).
Run on a CUDA machine: `python corpus/_probes/probe_capture.py > corpus/_probes/RESULTS.md`.
Not a corpus program (no run.py): it holds the snippets as strings only."""

from __future__ import annotations

import concurrent.futures as cf
import json
import subprocess
import sys
import textwrap

PROBES: dict[str, str] = {
    # name: body of `def step():` (state lives in module globals set up in SETUP)
    "baseline_matmul": "return x @ w",
    "list_index_v[:, [-1]]": "v, _ = torch.topk(x, 3); return v[:, [-1]]",
    "select_index_v[:, -1:]": "v, _ = torch.topk(x, 3); return v[:, -1:]",
    "bool_mask_setitem_scalar": "y = x.clone(); y[y < 0] = -float('inf'); return y",
    "bool_mask_setitem_tensor": "y = x.clone(); y[y < 0] = x[0, 0]; return y",
    "bool_mask_read": "return x[x > 0]",
    "masked_fill": "return x.masked_fill(x < 0, 0.0)",
    "where_3arg": "return torch.where(x > 0, x, torch.zeros_like(x))",
    "where_1arg": "return torch.where(x > 0)[0]",
    "nonzero": "return (x > 0).nonzero()",
    "nonzero_static": "return torch.nonzero_static(x > 0, size=4)",
    "multinomial": "return torch.multinomial(torch.softmax(x, -1), 1)",
    "topk": "return torch.topk(x, 2).indices",
    "categorical_default_validate": "d = torch.distributions.Categorical(logits=x); return d.sample()",
    "categorical_validate_false": "d = torch.distributions.Categorical(logits=x, validate_args=False); a = d.sample(); return d.log_prob(a)",
    "categorical_log_prob_validate": "d = torch.distributions.Categorical(logits=x, validate_args=False); d2 = torch.distributions.Categorical(logits=x); return d2.log_prob(idx[:8])",
    "normal_default_validate": "d = torch.distributions.Normal(x, x.exp()); return d.rsample()",
    "tensor_factory_scalar_cuda": "return x * torch.tensor(0.5, device='cuda')",
    "tensor_factory_list_cuda": "return x[:, :2] * torch.tensor([1.0, 2.0], device='cuda')",
    "tensor_cpu_scalar_mix": "return x * torch.tensor(0.5)",
    "cpu_to_cuda_copy": "return x + cpu_t.to('cuda')",
    "arange_python_bounds": "return x[:, :3] + torch.arange(2, 5, device='cuda')",
    "fstring_tensor_format": "s = f'{x.sum():.4f}'; return x",
    "print_tensor": "print(x.sum()); return x",
    "str_tensor": "s = str(x.sum()); return x",
    "item": "return x * x.sum().item()",
    "tolist": "l = x.tolist(); return x",
    "cpu": "c = x.cpu(); return x",
    "bool_if": "return x * 2 if x.sum() > 0 else x",
    "float_of_tensor": "return x * float(x.sum())",
    "one_hot_num_classes": "return torch.nn.functional.one_hot(idx, num_classes=16)",
    "one_hot_no_num_classes": "return torch.nn.functional.one_hot(idx)",
    "bincount_minlength": "return torch.bincount(idx, minlength=16)",
    "unique": "return torch.unique(idx)",
    "repeat_interleave_tensor": "return torch.repeat_interleave(counts)",
    "repeat_interleave_output_size": "return torch.repeat_interleave(counts, output_size=8)",
    "repeat_interleave_int": "return x.repeat_interleave(2, dim=0)",
    "masked_select": "return torch.masked_select(x, x > 0)",
    "equal_same_tensor": "b = torch.equal(x, x); return x",
    "equal_distinct_tensors": "b = torch.equal(x, buf); return x",
    "allclose": "b = torch.allclose(x, x); return x",
    "isfinite_all_no_branch": "ok = torch.isfinite(x).all(); return x * ok",
    "cuda_synchronize": "torch.cuda.synchronize(); return x",
    "event_query": "e = torch.cuda.Event(); e.record(); e.query(); return x",
    "event_synchronize": "e = torch.cuda.Event(); e.record(); e.synchronize(); return x",
    "sdpa_causal": "q = x.view(1, 1, 8, 16); return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)",
    "dropout": "return torch.nn.functional.dropout(x, 0.1, training=True)",
    "randn_like": "return x + torch.randn_like(x)",
    "cat_grow": "return torch.cat([x, x], 0)",
    "slice_assign_python_int": "buf[:, 3:4] = x[:, :1]; return buf",
    "index_with_long_tensor": "return x[idx[:4] % 8]",
    "scatter_add": "return torch.zeros(16, device='cuda').scatter_add_(0, idx, x[:, 0].repeat(2)[:idx.numel()])",
    "clip_grad_norm_default": "w.grad = None; (x @ w).sum().backward(); return torch.nn.utils.clip_grad_norm_([w], 1.0)",
    "clip_grad_norm_error_if_nonfinite": "w.grad = None; (x @ w).sum().backward(); return torch.nn.utils.clip_grad_norm_([w], 1.0, error_if_nonfinite=True)",
    "adamw_not_capturable": "opt_plain.zero_grad(set_to_none=True); (x @ w2).sum().backward(); opt_plain.step(); return w2",
    "adamw_capturable": "opt_cap.zero_grad(set_to_none=True); (x @ w3).sum().backward(); opt_cap.step(); return w3",
    "sgd_step": "opt_sgd.zero_grad(set_to_none=True); (x @ w4).sum().backward(); opt_sgd.step(); return w4",
    "logging_warning": "import logging; logging.getLogger('p').warning('hello %d', 3); return x",
    "python_counter": "global counter; counter += 1; return x * counter",
    "cross_entropy_label_smoothing": "return torch.nn.functional.cross_entropy(x, idx[:8], label_smoothing=0.1)",
    "cross_entropy_ignore_index": "return torch.nn.functional.cross_entropy(x, idx[:8], ignore_index=-1)",
    "embedding": "return emb(idx)",
    "argmax_eq_mean": "return (x.argmax(-1) == idx[:8]).float().mean()",
    "searchsorted": "return torch.searchsorted(torch.sort(x[0]).values, x[1])",
    "sort": "return torch.sort(idx).indices",
    "histc": "return torch.histc(x, bins=4)",
    "kthvalue": "return x.kthvalue(2, dim=-1).values",
    "median": "return x.median()",
    "clamp_tensor_bounds": "return x.clamp(min=x.min(), max=x.max())",
    "max_python_of_tensor_range": "for i in range(idx.max()): pass; return x",
    "gumbel_softmax": "return torch.nn.functional.gumbel_softmax(x, tau=1.0, hard=True)",
    "linspace": "return torch.linspace(0, 1, 8, device='cuda')",
    "to_cpu_nonblocking": "c = x.to('cpu', non_blocking=True); return x",
    "current_stream_synchronize": "torch.cuda.current_stream().synchronize(); return x",
    "tensor_lr_capturable_adamw": "opt_tlr.zero_grad(set_to_none=True); (x @ w5).sum().backward(); opt_tlr.step(); return w5",
    "float_lr_param_group_write": "opt_cap.param_groups[0]['lr'] = 0.5; opt_cap.zero_grad(set_to_none=True); (x @ w3).sum().backward(); opt_cap.step(); return w3",
    "bool_mask_setitem_python_float_var": "y = x.clone(); v = -1.0; y[y < 0] = v; return y",
    "index_put_long_idx_tensor_value": "y = buf.clone(); y[idx[:4] % 8] = x[:4]; return y",
    "isin": "return torch.isin(idx, counts)",
    "cumsum_argsort": "return torch.argsort(idx).cumsum(0)",
    "randperm": "return torch.randperm(8, device='cuda')",
    "quantile_python_q": "return torch.quantile(x.abs(), 0.9, dim=1)",
    "modulelist_index_with_tensor": "m = mlist[idx[:1] % 2]; return m(x)",
    "iterate_over_tensor": "s = 0\nfor r in x: s = s + r\nreturn s",
    "as_tensor_python_list_cuda": "return x[:, :2] + torch.as_tensor([[1.0, 2.0]], device='cuda')",
    "full_like_python_scalar": "return torch.full_like(x, 3.0)",
    "event_record_timing": "e = torch.cuda.Event(enable_timing=True); e.record(); return x * 2",
    "event_elapsed_time": "a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True); a.record(); y = x * 2; b.record(); t = a.elapsed_time(b); return y",
    "arange_tensor_bound": "return torch.arange(idx[0], device='cuda')",
    "pin_memory_copy": "return x + pinned.to('cuda', non_blocking=True)",
}

SETUP = """
import torch
torch.manual_seed(0)
x = torch.randn(8, 16, device='cuda')
w = torch.randn(16, 4, device='cuda', requires_grad=True)
w2 = torch.nn.Parameter(torch.randn(16, 4, device='cuda'))
w3 = torch.nn.Parameter(torch.randn(16, 4, device='cuda'))
w4 = torch.nn.Parameter(torch.randn(16, 4, device='cuda'))
opt_plain = torch.optim.AdamW([w2], lr=1e-3)
opt_cap = torch.optim.AdamW([w3], lr=1e-3, capturable=True)
opt_sgd = torch.optim.SGD([w4], lr=1e-3, momentum=0.9)
idx = torch.randint(0, 16, (16,), device='cuda')
counts = torch.tensor([1, 2, 0, 5], device='cuda')
buf = torch.zeros(8, 16, device='cuda')
cpu_t = torch.randn(8, 16)
pinned = torch.randn(8, 16).pin_memory()
emb = torch.nn.Embedding(16, 4).cuda()
counter = 0
mlist = torch.nn.ModuleList([torch.nn.Linear(16, 16), torch.nn.Linear(16, 16)]).cuda()
w5 = torch.nn.Parameter(torch.randn(16, 4, device='cuda'))
opt_tlr = torch.optim.AdamW([w5], lr=torch.tensor(1e-3, device='cuda'), capturable=True)
"""

RUNNER = """
import sys, json, traceback
{setup}
def step():
{body}
res = {{}}
try:
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    res['warmup'] = 'ok'
except BaseException as e:
    res['warmup'] = type(e).__name__ + ': ' + str(e).splitlines()[0][:200]
g = torch.cuda.CUDAGraph()
try:
    with torch.cuda.graph(g):
        out = step()
    g.replay(); g.replay(); torch.cuda.synchronize()
    res['capture'] = 'ok'
except BaseException as e:
    ctx = e.__context__
    res['capture'] = 'FAIL ' + type(e).__name__ + ': ' + str(e).splitlines()[0][:200]
    if ctx is not None:
        res['cause'] = type(ctx).__name__ + ': ' + str(ctx).splitlines()[0][:200]
print('RESULT' + json.dumps(res))
"""


def run_probe(name: str, body: str) -> tuple[str, dict]:
    src = RUNNER.format(setup=SETUP, body=textwrap.indent(body.replace("; ", "\n"), "    "))
    p = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=300)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT"):
            return name, json.loads(line[6:])
    return name, {"capture": "CRASH rc=%d" % p.returncode, "stderr": p.stderr[-400:]}


def main() -> None:
    import torch

    print(f"# capture probes: torch {torch.__version__}, {torch.cuda.get_device_name()}\n")
    print("| probe | warm-up (eager, side stream) | capture + 2 replays | cause |")
    print("|---|---|---|---|")
    with cf.ThreadPoolExecutor(max_workers=8) as ex:
        results = list(ex.map(lambda kv: run_probe(*kv), PROBES.items()))
    for name, r in results:
        cell = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
        print(f"| `{name}` | {cell(r.get('warmup', ''))} | {cell(r.get('capture'))} | {cell(r.get('cause', r.get('stderr', '')))} |")


if __name__ == "__main__":
    main()
