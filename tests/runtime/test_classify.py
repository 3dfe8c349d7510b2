"""Failure classification from recorded error texts (as torch 2.11 raises them on an H100/H200,
see corpus/_probes/RESULTS.md) and from real exceptions raised on the CPU."""

from __future__ import annotations

import os

import pytest

from graphsafe.runtime.classify import (
    RULE_NAMES,
    FailureRecord,
    Frame,
    LibraryFilter,
    classify,
    classify_exception,
    code_from_source,
    record_exception,
)

TORCH = "/opt/torch/.venv/lib/python3.12/site-packages/torch"
USER = "/home/me/project/train.py"
GRAPHSAFE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                         "graphsafe", "runtime", "capture.py")

E901 = ("CUDA error: operation failed due to a previous error during capture\n"
        "Search for `cudaErrorStreamCaptureInvalidated' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
        "group__CUDART__TYPES.html for more information.\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
        "incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")
E900 = ("CUDA error: operation not permitted when stream is capturing\n"
        "Search for `cudaErrorStreamCaptureUnsupported' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
        "group__CUDART__TYPES.html for more information.\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
        "incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n")
PINNED = ("Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor is pinned. "
          "Please use tensor.pin_memory() or allocate the tensor with pin_memory=True.")

CAPTURE_FRAMES = (
    Frame(GRAPHSAFE, 380, "_CudaBackend.capture", "with torch.cuda.graph(graph, pool=pool, stream=stream):"),
    Frame(f"{TORCH}/cuda/graphs.py", 265, "graph.__exit__", "self.cuda_graph.capture_end()"),
    Frame(f"{TORCH}/cuda/graphs.py", 112, "CUDAGraph.capture_end", "super().capture_end()"),
)


def user_frames(line: int, source: str, function: str = "train_step", *inner: Frame) -> tuple[Frame, ...]:
    return (Frame(GRAPHSAFE, 381, "_CudaBackend.capture", "output = fn()"),
            Frame(USER, line, function, source), *inner)


def sync_record(line: int, source: str, *inner: Frame) -> FailureRecord:
    """What `torch.cuda.graph` raises for a sync: 901 at the capture's end, the 900 on __context__."""
    return FailureRecord.of(("AcceleratorError", E901, CAPTURE_FRAMES),
                            ("AcceleratorError", E900, user_frames(line, source, "train_step", *inner)))


@pytest.mark.parametrize("source, code", [
    ("dead = (h <= 0).all(dim=0).float().mean().item()", "GS101"),
    ("print('loss', loss.item())", "GS101"),
    ("ids = topk.indices.tolist()", "GS102"),
    ("arr = logits.cpu().numpy()", "GS103"),
    ("torch.cuda.synchronize()", "GS106"),
    ("if torch.equal(a, b):", "GS109"),
    ("keep = (scores > 0).nonzero()", "GS107"),
    ("rows = torch.where(mask)[0]", "GS107"),
    ("u = torch.unique(idx)", "GS107"),
    ("s = f'{x.sum():.4f}'", "GS104"),
    ("log.info('len {} best {}'.format(self.cur_len, top[:, 0]))", "GS104"),
    ("if x.sum() > 0:", "GS201"),
    ("assert idx.max() < self.config.vocab_size, 'token id out of range'", "GS201"),
    ("scale = float(x.sum())", "GS105"),
    ("for i in range(idx.max()):", "GS105"),
    ("y[y < 0] = x[0, 0]", "GS108"),
    ("torch.nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)", "GS110"),
])
def test_sync_in_capture_is_named_from_the_users_line(source, code):
    failure = classify(sync_record(42, source), LibraryFilter())
    assert failure.code == code, failure
    assert failure.name == RULE_NAMES[code]
    assert (failure.file, failure.line, failure.function) == (USER, 42, "train_step")
    assert failure.cuda_error == 900
    assert failure.error_class == ("cudaErrorStreamCaptureInvalidated (901) <- "
                                   "cudaErrorStreamCaptureUnsupported (900)")
    assert failure.message.startswith("AcceleratorError: CUDA error: operation failed due to a previous error")
    assert failure.root_message == "CUDA error: operation not permitted when stream is capturing"
    assert failure.phase == "capture"


@pytest.mark.parametrize("inner, code", [
    (Frame(f"{TORCH}/_tensor.py", 568, "Tensor.__format__", "return self.item().__format__(format_spec)"), "GS104"),
    (Frame(f"{TORCH}/_tensor_str.py", 700, "_str", "return _str_intern(self, tensor_contents=tensor_contents)"),
     "GS104"),
    (Frame(f"{TORCH}/cuda/streams.py", 98, "Stream.synchronize", "super().synchronize()"), "GS106"),
    (Frame(f"{TORCH}/nn/utils/clip_grad.py", 100, "_clip_grads_with_norm_", "if error_if_nonfinite and ..."),
     "GS110"),
    (Frame(f"{TORCH}/distributions/distribution.py", 70, "Distribution.__init__", "if not valid.all():"), "GS111"),
    (Frame(f"{TORCH}/amp/grad_scaler.py", 380, "GradScaler._maybe_opt_step", "if not sum(v.item() for v in ...)"),
     "GS703"),
])
def test_torch_frames_under_the_user_line_name_the_op(inner, code):
    failure = classify(sync_record(7, "helper(x)", inner), LibraryFilter())
    assert failure.code == code
    assert failure.line == 7 and failure.file == USER  # still the user's line, not torch's


def test_sync_the_line_does_not_name_falls_back_to_explicit_sync_with_a_hint():
    failure = classify(sync_record(9, "m = self.mlist[idx]"), LibraryFilter())
    assert failure.code == "GS106"
    assert "graphsafe trace" in failure.cause


def test_901_without_its_cause_points_at_the_capture():
    record = FailureRecord.of(("AcceleratorError", E901, (Frame(USER, 30, "main", "with torch.cuda.graph(g):"),
                                                          *CAPTURE_FRAMES[1:])))
    failure = classify(record, LibraryFilter())
    assert failure.cuda_error == 901
    assert failure.error_class == "cudaErrorStreamCaptureInvalidated (901)"
    assert failure.line == 30


@pytest.mark.parametrize("source, code", [
    ("t_batch = torch.tensor([t] * x.shape[0], device=x.device)", "GS402"),
    ("return x + cpu_t.to('cuda')", "GS402"),
    ("last = v[:, [-1]]", "GS402"),
    ("ids = out.tolist()", "GS102"),
    ("arr = out.cpu()", "GS103"),
])
def test_pageable_copies(source, code):
    record = FailureRecord.of(("RuntimeError", PINNED, user_frames(45, source)))
    failure = classify(record, LibraryFilter())
    assert failure.code == code
    assert failure.error_class == "pageable host copy during capture"
    assert failure.line == 45
    assert failure.cuda_error is None
    if "[-1]" in source:
        assert "list used as an index" in failure.cause


def test_pageable_copy_inside_a_distribution_constructor_is_a_host_copy_not_a_branch():
    # HalfNormal(scale) -> broadcast_all(0, scale) -> torch.tensor(0, device=scale.device)
    inner = Frame(f"{TORCH}/distributions/utils.py", 50, "broadcast_all", "torch.tensor(v, **options)")
    record = FailureRecord.of(("RuntimeError", PINNED, user_frames(34, "sigma = dist.HalfNormal(one)", "model",
                                                                    inner)))
    failure = classify(record, LibraryFilter())
    assert failure.code == "GS402"
    assert failure.line == 34


def test_pinned_copy_followed_by_an_invalidated_capture_keeps_the_copy_as_cause():
    record = FailureRecord.of(("AcceleratorError", E901, CAPTURE_FRAMES),
                              ("RuntimeError", PINNED, user_frames(12, "w = torch.tensor([1.0, 2.0], device='cuda')")))
    failure = classify(record, LibraryFilter())
    assert failure.code == "GS402" and failure.line == 12


def test_non_capturable_optimizer():
    message = ("Attempting CUDA graph capture of step() for an instance of AdamW but param_groups' capturable is "
               "False.")
    frames = user_frames(51, "opt.step()") + (
        Frame(f"{TORCH}/optim/optimizer.py", 520, "Optimizer.profile_hook_step.wrapper", "out = func(*args, **kwargs)"),
        Frame(f"{TORCH}/optim/optimizer.py", 430, "Optimizer._cuda_graph_capture_health_check", "raise RuntimeError("),
    )
    failure = classify(FailureRecord.of(("RuntimeError", message, frames)), LibraryFilter())
    assert failure.code == "GS701" and failure.name == "optimizer-not-capturable"
    assert "AdamW" in failure.cause and "capturable=True" in failure.cause
    assert (failure.line, failure.source) == (51, "opt.step()")


@pytest.mark.parametrize("number, code", [(904, "GS902"), (906, "GS106"), (907, "GS106"), (905, "GS902")])
def test_other_stream_capture_errors(number, code):
    from graphsafe.runtime.classify import CUDA_CAPTURE_ERRORS

    name, text = CUDA_CAPTURE_ERRORS[number]
    record = FailureRecord.of(("AcceleratorError", f"CUDA error: {text}\nSearch for `{name}' in ...",
                               user_frames(3, "side.wait_stream(main)")))
    failure = classify(record, LibraryFilter())
    assert failure.code == code
    assert failure.error_class == f"{name} ({number})"
    assert failure.cuda_error == number
    assert failure.cause


def test_unjoined_work_as_torch_prints_it_is_an_unjoined_side_stream():
    """torch shows cudaGetErrorString's words for 904, not the table's long form."""
    record = FailureRecord.of(("AcceleratorError", "CUDA error: capturing stream has unjoined work\nSearch for "
                               "`cudaErrorStreamCaptureUnjoined' in ...", CAPTURE_FRAMES))
    failure = classify(record, LibraryFilter())
    assert (failure.code, failure.cuda_error) == ("GS902", 904)
    assert "wait_stream(side)" in failure.cause


def test_an_uncaptured_dependency_at_a_handle_wait_is_an_async_collective_waited_across_the_capture():
    text = "CUDA error: dependency created on uncaptured work in another stream"
    inner = Frame(f"{TORCH}/distributed/distributed_c10d.py", 4100, "Work.wait", "return self._work.wait()")
    record = FailureRecord.of(("AcceleratorError", E901, CAPTURE_FRAMES),
                              ("AcceleratorError", text, user_frames(14, "work.wait()", "capture", inner)))
    failure = classify(record, LibraryFilter())
    assert (failure.code, failure.cuda_error, failure.line) == ("GS903", 905, 14)


NCCL = ("NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3690, unhandled cuda error (run "
        "with NCCL_DEBUG=INFO for details), NCCL version 2.27.3\nncclUnhandledCudaError: Call to CUDA function "
        "failed.\nLast error:\nCuda failure 'operation not permitted when stream is capturing'")


def test_an_nccl_error_under_capture_is_a_collective_at_the_users_call():
    inner = Frame(f"{TORCH}/distributed/distributed_c10d.py", 2800, "all_reduce", "work = group.allreduce([tensor], opts)")
    record = FailureRecord.of(("AcceleratorError", E901, CAPTURE_FRAMES),
                              ("torch.distributed.DistBackendError", NCCL, user_frames(9, "dist.all_reduce(x)", "step",
                                                                                       inner)))
    failure = classify(record, LibraryFilter())
    assert (failure.code, failure.name) == ("GS901", "collective-in-region")
    assert failure.error_class == "NCCL error during capture"
    assert (failure.line, failure.source) == (9, "dist.all_reduce(x)")


def test_a_900_under_torch_distributed_is_a_collective_and_under_symmetric_memory_a_rendezvous():
    c10d = Frame(f"{TORCH}/distributed/distributed_c10d.py", 2800, "broadcast", "work = group.broadcast([t], opts)")
    symm = Frame(f"{TORCH}/distributed/_symmetric_memory/__init__.py", 1700, "rendezvous", "return _rdv(t, g)")
    assert classify(sync_record(5, "sync_params(x)", c10d), LibraryFilter()).code == "GS901"
    assert classify(sync_record(5, "h = make_handle(buf)", symm), LibraryFilter()).code == "GS712"


def test_the_autotuner_under_the_users_launch_names_autotune_and_keeps_the_users_line():
    triton = "/opt/torch/.venv/lib/python3.12/site-packages/triton"
    inner = (Frame(f"{triton}/runtime/jit.py", 330, "JITFunction.run", "return self.run(*args)"),
             Frame(f"{triton}/runtime/autotuner.py", 240, "Autotuner.run", "timings = {c: self._bench(c) ...}"),
             Frame(f"{triton}/testing.py", 120, "do_bench_cudagraph", "torch.cuda.synchronize()"),
             Frame(f"{TORCH}/cuda/__init__.py", 1000, "synchronize", "return torch._C._cuda_synchronize()"))
    failure = classify(sync_record(21, "add_kernel[grid](x, y, out, n)", *inner), LibraryFilter())
    assert (failure.code, failure.line, failure.file) == ("GS710", 21, USER)


@pytest.mark.parametrize("message, code", [
    ("CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`", "GS711"),
    ("Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!", "GS904"),
])
def test_first_use_and_device_errors_name_a_rule_only_during_capture(message, code):
    record = FailureRecord.of(("RuntimeError", message, user_frames(6, "y = model(x)")))
    assert classify(record, LibraryFilter(), phase="capture").code == code
    assert classify(record, LibraryFilter(), phase="warmup").code is None  # an eager bug, not a capture rule


def test_out_of_memory_during_capture_is_memory_pressure_with_its_own_sentence():
    oom = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB "
           "is free.")
    record = FailureRecord.of(("AcceleratorError", E901, CAPTURE_FRAMES),
                              ("torch.OutOfMemoryError", oom, user_frames(11, "logits = model(static_x)")))
    failure = classify(record, LibraryFilter(), phase="capture")
    assert failure.code is None and failure.error_class == "out of memory during capture (memory pressure)"
    assert "pool" in failure.cause and failure.line == 11
    eager = FailureRecord.of(("torch.OutOfMemoryError", oom, user_frames(11, "logits = model(static_x)")))
    assert classify(eager, LibraryFilter(), phase="warmup").error_class == "out of memory"


def test_event_query_in_capture():
    text = "CUDA error: operation not permitted on an event last recorded in a capturing stream"
    record = FailureRecord.of(("AcceleratorError", E901, CAPTURE_FRAMES),
                              ("AcceleratorError", text, user_frames(8, "e.query()")))
    failure = classify(record, LibraryFilter())
    assert failure.code == "GS106" and failure.cuda_error == 907


@pytest.mark.parametrize("message, inner, code", [
    ("Attempt to increase offset for a CUDA generator not in capture mode.", (), "GS601"),
    ("Cannot call CUDAGeneratorImpl::set_current_seed during CUDA graph capture. If you need this call to be "
     "captured, you must use the graph-safe API.", (), "GS602"),
    ("Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture.",
     (Frame(f"{TORCH}/utils/checkpoint.py", 250, "CheckpointFunction.forward", "ctx.fwd_gpu_state = get..."),),
     "GS603"),
    ("make_graphed_callables does not support the autocast caching. Please set `cache_enabled=False`.", (), "GS702"),
    ("Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run. Stack trace: ...",
     (), "GS407"),
])
def test_configuration_errors(message, inner, code):
    failure = classify(FailureRecord.of(("RuntimeError", message, user_frames(5, "out = model(x)", "step", *inner))),
                       LibraryFilter())
    assert failure.code == code
    assert failure.line == 5


def test_poisoned_process_is_told_apart():
    failure = classify(FailureRecord.of(("RuntimeError", "Offset increment outside graph capture encountered "
                                                         "unexpectedly.", user_frames(2, "x = torch.randn(3)"))))
    assert failure.code is None and failure.error_class == "poisoned RNG state"
    assert "fresh process" in failure.cause


def test_reduce_overhead_function_inside_a_manual_capture():
    """Measured on an H200 (torch 2.11): a @torch.compile(mode="reduce-overhead") step captured by
    torch.cuda.graph raises this from inductor's generated code."""
    message = ("Cannot prepare for replay during capturing stage. during CUDA graph capture. If you need this "
               "call to be captured, please file an issue. Current cudaStreamCaptureStatus: "
               "cudaStreamCaptureStatusActive")
    failure = classify(FailureRecord.of(("RuntimeError", message, user_frames(4, "out = eval_step(model, x)"))),
                       phase="capture")
    assert failure.code is None and "torch.compile" in failure.error_class
    assert "uncompiled function" in failure.cause and failure.line == 4


def test_an_ordinary_exception_is_not_a_capture_rule():
    failure = classify(FailureRecord.of(("KeyError", "'logits'", user_frames(3, "y = out['logits']"))),
                       phase="warmup")
    assert failure.code is None and failure.error_class == "KeyError"
    assert "warm-up" in failure.cause
    assert failure.phase == "warmup"


def test_json_round_trip():
    failure = classify(sync_record(42, "x.item()"), LibraryFilter())
    from graphsafe.runtime.classify import CaptureFailure

    assert CaptureFailure.from_json(failure.to_json()) == failure
    assert FailureRecord.from_json(sync_record(1, "a").to_json()) == sync_record(1, "a")


# --- real exceptions ------------------------------------------------------------------------------


def _raise_chain():
    try:
        raise RuntimeError(E900)  # the user's line: what the sync raised
    except RuntimeError:
        raise RuntimeError(E901)  # what the end of capture raises, with the cause on __context__


def test_record_exception_walks_the_context_chain_to_the_users_line():
    try:
        _raise_chain()
    except RuntimeError as error:
        record = record_exception(error)
    assert [cuda for cuda in (e.message.splitlines()[0] for e in record.chain)] == [
        "CUDA error: operation failed due to a previous error during capture",
        "CUDA error: operation not permitted when stream is capturing"]
    failure = classify(record)
    assert failure.file == __file__
    assert failure.source == "raise RuntimeError(E900)  # the user's line: what the sync raised"
    assert failure.function == "_raise_chain"


def test_frames_inside_torch_are_looked_through():
    import torch

    layer = torch.nn.Linear(2, 2)
    try:
        layer(torch.zeros(3))  # the user's line; the error comes from inside torch.nn
    except RuntimeError as error:
        failure = classify_exception(error, phase="warmup")
    assert failure.file == __file__
    assert "layer(torch.zeros(3))" in failure.source


def test_source_heuristics_ignore_comments_and_prefer_the_sync():
    assert code_from_source("y = x * 2  # not .item() here") is None
    assert code_from_source("if x.sum().item() > 0:") == "GS101"
    assert code_from_source("y = x + 1") is None


def test_tests_of_python_objects_are_not_tensor_branches():
    # seen on an H100: make_graphed_callables of corpus/moe_router failed on this line, in the mask
    # indexing; `flat[keep]` alone cannot tell a mask from a tensor index into a list: no guess
    assert code_from_source("tokens = flat[keep] if keep is not None else flat  # expect: GS108") is None
    assert code_from_source("tokens = flat[keep > 0] if keep is not None else flat") == "GS108"
    assert code_from_source("y = a if flag is None else b") is None
    assert code_from_source("y = x if x.sum() > 0 else -x") == "GS201"
    assert code_from_source("if mask is not None and mask.any():") == "GS201"


def test_rule_names_agree_with_the_static_analyzer():
    pytest.importorskip("libcst")
    from graphsafe.rules import BY_CODE

    runtime_only = {"GS403"}  # dynamic-input-shape: seen only when the step runs (also by the tracer)
    for code, name in RULE_NAMES.items():
        if code in runtime_only:
            assert code not in BY_CODE or BY_CODE[code].name == name
            continue
        assert code in BY_CODE, code
        assert BY_CODE[code].name == name, code
