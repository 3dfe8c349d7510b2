"""Why is the profiler floor above the replay time on training steps? Print the device events."""
import collections, sys, torch
sys.path.insert(0, "bench")
import steps
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile
from graphsafe.runtime.capture import busy_time

for name in ("mlp_train", "gpt_decode"):
    t = steps.__dict__[name]()
    fn = lambda: t.step(*t.args)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
    ev = [e for e in prof.events() if e.device_type == DeviceType.CUDA]
    by = collections.defaultdict(lambda: [0, 0.0])
    for e in ev:
        by[e.name][0] += 1
        by[e.name][1] += e.time_range.end - e.time_range.start
    print(f"== {name}: {len(ev)} device events; union {busy_time([(e.time_range.start, e.time_range.end) for e in ev]) / 10 / 1000:.3f} ms/step; "
          f"sum {sum(v[1] for v in by.values()) / 10 / 1000:.3f} ms/step; span {(max(e.time_range.end for e in ev) - min(e.time_range.start for e in ev)) / 10 / 1000:.3f} ms/step")
    for k, (n, d) in sorted(by.items(), key=lambda kv: -kv[1][1])[:12]:
        print(f"   {d / 10 / 1000:.4f} ms/step  x{n:4d}  {k[:100]}")
    # kineto's own trace: kernel durations from the raw activity list
    try:
        ka = prof.profiler.kineto_results.events()
        dev = [(e.start_ns(), e.start_ns() + e.duration_ns()) for e in ka if e.device_type() == DeviceType.CUDA]
        print(f"   kineto raw: {len(dev)} device activities, union {busy_time(dev) / 10 / 1e6:.3f} ms/step")
    except Exception as error:
        print("   kineto raw: n/a", type(error).__name__, error)
