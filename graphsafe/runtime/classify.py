"""Why a trial capture failed: an exception (or its recorded text) → a rule code, a CUDA error
class, a plain-language cause and the user's file:line.

Pure Python, no torch import: the parent process of `graphsafe capture` classifies too, and
CPU tests feed it recorded error texts. Two steps, both plain data:

    record = record_exception(error)     # type, message, frames of the exception and its chain
    failure = classify(record)           # -> CaptureFailure (JSON-able)

What torch raises (measured on an H100/H200, torch 2.11, see DESIGN.md):
- a sync inside capture raises `cudaErrorStreamCaptureUnsupported` (900) at the user's line; the
  capture's end then raises `cudaErrorStreamCaptureInvalidated` (901, "operation failed due to a
  previous error during capture") with the 900 error on `__context__`. The 900 traceback holds
  the user's line; the source text of that line (and torch frames under it) names the op.
- pageable host<->device copies: "Cannot copy between CPU and CUDA tensors during CUDA graph
  capture unless the CPU tensor is pinned" (a RuntimeError, raised at the copy).
- a non-capturable Adam/AdamW/...: "Attempting CUDA graph capture of step() for an instance of
  AdamW but param_groups' capturable is False."

Streams, collectives and lazy initialisation (issue 23; texts as the public reports quote them):
- 904 prints as "capturing stream has unjoined work" (GS902; GS903 when the line waits on a handle);
  905 "dependency created on uncaptured work in another stream" likewise;
- a collective under capture: ProcessGroupNCCL's "NCCL error in: ..., unhandled cuda error"
  (DistBackendError), or a 900 with torch.distributed frames under the user's line (GS901;
  torch.distributed._symmetric_memory frames: GS712);
- Triton's autotuner (triton/runtime/autotuner.py) under a 900/901: GS710;
- during capture only: "CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`" (GS711),
  "Expected all tensors to be on the same device" or "The CUDA Graph is empty" (GS904), and out of
  memory, which is memory pressure (no rule code, its own sentence).
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import sysconfig
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

# --- the shared vocabulary ----------------------------------------------------------------------
# Names as in graphsafe/rules (the static analyzer); the runtime must not import those (libcst).
# tests/runtime/test_classify.py checks that both tables agree.
RULE_NAMES: dict[str, str] = {
    "GS101": "item-sync",
    "GS102": "tolist-sync",
    "GS103": "host-copy",
    "GS104": "tensor-format",
    "GS105": "tensor-to-python",
    "GS106": "explicit-sync",
    "GS107": "dynamic-shape-op",
    "GS108": "bool-mask-index",
    "GS109": "tensor-equality-sync",
    "GS110": "nonfinite-check-sync",
    "GS111": "distribution-validation",
    "GS201": "tensor-branch",
    "GS301": "python-scalar-input",
    "GS302": "python-counter-in-region",
    "GS401": "static-input-rebinding",
    "GS402": "host-data-tensor",
    "GS403": "dynamic-input-shape",
    "GS405": "allocator-call-in-region",
    "GS406": "pin-memory-in-region",
    "GS407": "graph-output-not-cloned",
    "GS502": "host-nondeterminism",
    "GS601": "unregistered-generator",
    "GS602": "seed-in-region",
    "GS603": "checkpoint-rng-state",
    "GS701": "optimizer-not-capturable",
    "GS702": "autocast-cache-enabled",
    "GS703": "grad-scaler-in-region",
    "GS710": "autotune-first-run-in-capture",
    "GS711": "capture-without-warmup",
    "GS712": "symmetric-memory-in-region",
    "GS901": "collective-in-region",
    "GS902": "unjoined-side-stream",
    "GS903": "async-collective-not-waited",
    "GS904": "capture-on-other-device",
}

# What the code means at capture time, and what to do instead (one sentence each).
_WHY: dict[str, tuple[str, str]] = {
    "GS101": ("`.item()` copies a tensor value to the host and waits for the GPU",
              "keep the value on the device (use the tensor in arithmetic or `torch.where`), or move the "
              "`.item()` out of the captured step"),
    "GS102": ("`.tolist()` copies a tensor to the host and waits for the GPU",
              "keep the tensor on the device, or read it after the step"),
    "GS103": ("a copy to the host (`.cpu()`, `.numpy()`, `.to('cpu')`) waits for the GPU",
              "read results after the step, from the graph's static output"),
    "GS104": ("printing or formatting a tensor copies it to the host and waits for the GPU",
              "log after the step, from a cloned output"),
    "GS105": ("a tensor used as a Python value (`bool()`, `int()`, `float()`, an index, a size or range bound) is read "
              "on the host",
              "keep it a tensor (`torch.where`, masks, `index_select`), or compute the bound outside the step"),
    "GS106": ("a host/device synchronization (`synchronize()`, stream or event `query()`/`synchronize()`)",
              "remove it from the captured step; synchronize after `replay()`"),
    "GS107": ("the op's output shape depends on the data (`nonzero`, `unique`, `masked_select`, one-argument "
              "`where`, `repeat_interleave` without `output_size`): the host waits to learn it",
              "use a fixed-shape form (`nonzero_static`, a mask with `torch.where`, `output_size=`)"),
    "GS108": ("boolean-mask indexing needs the mask's count on the host",
              "use `torch.where(mask, a, b)` or `masked_fill`"),
    "GS109": ("`torch.equal`/`allclose` return a Python bool: a device sync",
              "compare on the device: `(a == b).all()` kept as a tensor"),
    "GS110": ("`clip_grad_norm_(error_if_nonfinite=True)` reads the norm on the host",
              "pass `error_if_nonfinite=False` and check the returned norm after the step"),
    "GS111": ("a torch.distributions distribution checks its arguments or a sample on the host (`validate_args` "
              "defaults to on)",
              "pass `validate_args=False`, or call `Distribution.set_default_validate_args(False)` before capture"),
    "GS201": ("a Python branch on a tensor value (`if`/`while`/`assert`/`and`/`not`) reads it on the host; "
              "replay would always take the branch taken at capture",
              "use `torch.where`"),
    "GS301": ("a Python number that changes between steps is baked into the graph at capture",
              "keep it in a device tensor updated with `.fill_()`/`.copy_()` outside the step"),
    "GS302": ("a Python counter changes in eager steps but not on replay: Python code runs only at capture",
              "keep counters in device tensors (`self.step += 1` → `self.step.add_(1)`)"),
    "GS401": ("the step reads a tensor that is rebound between calls; the graph keeps reading the captured one",
              "copy new data into the static tensor with `.copy_()`"),
    "GS402": ("a tensor is made from host data (pageable memory) inside the step: the copy to the device is "
              "not allowed during capture, and replay would reuse the captured data",
              "create it once outside the step (or from pinned memory) and update it with `.copy_()`"),
    "GS403": ("an input's shape, dtype or device differs from the captured one",
              "pad to a fixed shape or capture one graph per shape (`graphsafe.runtime.graphed(buckets=...)`)"),
    "GS405": ("an allocator call (`empty_cache`, memory statistics) inside the captured step",
              "call it outside the step"),
    "GS406": ("pinning host memory inside the captured step",
              "pin buffers once, before capture"),
    "GS407": ("a graph output was read after a later replay overwrote it",
              "`.clone()` outputs you keep across steps"),
    "GS502": ("host randomness or time (`random`, `numpy.random`, CPU RNG, `time.time()`) runs once at capture",
              "draw random numbers on the device (`torch.rand(..., device='cuda')`)"),
    "GS601": ("a custom CUDA generator is used in the step but not registered with the graph",
              "call `graph.register_generator_state(generator)` before capture, or use the default generator"),
    "GS602": ("seeding or reading the CUDA RNG state inside the captured step",
              "seed before capture; the graph advances the registered generator's offset on every replay"),
    "GS603": ("activation checkpointing saves and restores the CUDA RNG state inside the captured step",
              "pass `preserve_rng_state=False` to `torch.utils.checkpoint.checkpoint`"),
    "GS701": ("the optimizer keeps its step count on the host (`capturable=False`)",
              "build it with `capturable=True` (its state then lives on the device)"),
    "GS702": ("autocast's weight cache is on: cached casts made at capture would be reused stale",
              "use `torch.autocast(..., cache_enabled=False)` around captured code"),
    "GS703": ("`GradScaler.step()` reads `found_inf` on the host",
              "unscale and skip on the device, or keep the scaler's step outside the graph"),
    "GS710": ("a Triton autotuned kernel ran its first launch during capture: the autotuner benchmarks its configs "
              "and synchronizes",
              "launch the kernel once eagerly with the capture's shapes before capturing"),
    "GS711": ("a library set itself up on first use during capture (cuBLAS handle or workspace, cuDNN algorithm "
              "search): the step was not warmed up",
              "run the step eagerly a few times on a side stream before capturing"),
    "GS712": ("symmetric memory was allocated or rendezvoused for the first time during capture (a handle exchange "
              "and a stream sync)",
              "allocate and rendezvous the buffer once before capture and reuse it in the step"),
    "GS901": ("a collective ran during capture on a process group not prepared for it (NCCL sets up communicators "
              "and buffers on first use; host-waiting collectives cannot be captured)",
              "warm the group up with eager steps on a side stream before capture and capture every rank alike, "
              "or move the collective after `replay()`"),
    "GS902": ("work forked onto another stream during capture was not joined back into the capturing stream",
              "make the side stream wait on the capturing stream before its work and the capturing stream wait on "
              "it after (`torch.cuda.current_stream().wait_stream(side)`)"),
    "GS903": ("the capturing stream waited on collective work that is not part of the capture (an async handle "
              "started before capture, or waited after it)",
              "start and `wait()` async collectives inside the same captured region"),
    "GS904": ("the capture ran on one GPU while the step's tensors live on another: their work is not captured",
              "capture inside `with torch.cuda.device(<the tensors' device>):`"),
}

# CUDA stream-capture errors: number, name, the runtime's message (what torch shows).
CUDA_CAPTURE_ERRORS: dict[int, tuple[str, str]] = {
    900: ("cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"),
    901: ("cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"),
    902: ("cudaErrorStreamCaptureMerge", "operation would result in a merge of separate capture sequences"),
    903: ("cudaErrorStreamCaptureUnmatched", "capture was not initiated in this stream"),
    904: ("cudaErrorStreamCaptureUnjoined", "capture sequence contains a fork that was not joined to the primary "
                                             "stream"),
    905: ("cudaErrorStreamCaptureIsolation", "dependency created on uncaptured work in another stream"),
    906: ("cudaErrorStreamCaptureImplicit", "operation would make the legacy stream depend on a capturing blocking "
                                             "stream"),
    907: ("cudaErrorCapturedEvent", "operation not permitted on an event last recorded in a capturing stream"),
    908: ("cudaErrorStreamCaptureWrongThread", "attempt to terminate a thread-local capture sequence from another "
                                                "thread"),
}

# cudaGetErrorString's wording, which torch prints ("CUDA error: capturing stream has unjoined work"),
# where it differs from the table above.
_CUDA_ERROR_ALIASES: dict[str, int] = {
    "capturing stream has unjoined work": 904,
    "operation not permitted when stream is capturing": 900,
}

_STREAM_CAUSES: dict[int, tuple[str | None, str]] = {
    902: (None, "work on two separately captured streams was joined: capture one sequence at a time"),
    903: (None, "the capture ended on a stream that did not begin it (a stream switch inside the step without "
                "switching back)"),
    904: ("GS902", "the step forked work onto another stream (a side stream, or NCCL's for an async collective) and "
                   "did not join it back before capture ended: make the capturing stream wait for it "
                   "(`torch.cuda.current_stream().wait_stream(side)`, or `work.wait()` inside the capture)"),
    905: ("GS902", "the step made the capturing stream wait on work that is not part of the capture (an event "
                   "recorded before capture, or a side stream that did not first wait on the capturing stream)"),
    906: ("GS106", "an operation on the legacy default stream would synchronize with the capturing stream "
                   "(a library call or copy that uses stream 0): run it on the current stream, or outside the step"),
    907: ("GS106", "an event recorded during capture was queried or synchronized (`Event.query()`, "
                   "`Event.synchronize()`, `elapsed_time`)"),
    908: (None, "a thread-local capture was ended from another thread"),
}


# --- plain records ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str
    source: str = ""


@dataclass(frozen=True)
class ErrorRecord:
    """One exception of a chain: its type, message and traceback frames (outermost first)."""

    type: str
    message: str
    frames: tuple[Frame, ...] = ()

    @staticmethod
    def from_json(data: dict[str, Any]) -> "ErrorRecord":
        return ErrorRecord(data["type"], data["message"], tuple(Frame(**f) for f in data.get("frames", ())))


@dataclass(frozen=True)
class FailureRecord:
    """The raised exception first, then its `__cause__`/`__context__` chain (innermost last)."""

    chain: tuple[ErrorRecord, ...]

    def to_json(self) -> dict[str, Any]:
        return {"chain": [asdict(e) for e in self.chain]}

    @staticmethod
    def from_json(data: dict[str, Any]) -> "FailureRecord":
        return FailureRecord(tuple(ErrorRecord.from_json(e) for e in data["chain"]))

    @staticmethod
    def of(*errors: tuple[str, str, Iterable[Frame]] | tuple[str, str]) -> "FailureRecord":
        """Build a record by hand (tests, recorded texts): `(type, message[, frames])` each."""
        return FailureRecord(tuple(ErrorRecord(e[0], e[1], tuple(e[2]) if len(e) > 2 else ()) for e in errors))


def record_exception(error: BaseException, max_chain: int = 6) -> FailureRecord:
    chain: list[ErrorRecord] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(chain) < max_chain:
        seen.add(id(current))
        chain.append(ErrorRecord(_type_name(current), _message(current), _frames(current.__traceback__)))
        current = current.__cause__ or current.__context__
    return FailureRecord(tuple(chain))


def _type_name(error: BaseException) -> str:
    cls = type(error)
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", "torch") else f"{module}.{cls.__qualname__}"


def _message(error: BaseException) -> str:
    try:
        text = str(error)
    except Exception:  # a broken __str__ must not hide the failure
        text = repr(error)
    return text[:4000]


def _frames(tb) -> tuple[Frame, ...]:
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        line = tb.tb_lineno
        source = linecache.getline(code.co_filename, line).strip()
        frames.append(Frame(code.co_filename, line, getattr(code, "co_qualname", code.co_name), source))
        tb = tb.tb_next
    return tuple(frames)


# --- where the user's code is -------------------------------------------------------------------


def _library_roots() -> tuple[str, ...]:
    roots = [os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep]  # graphsafe/
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec is not None and spec.origin:
            roots.append(os.path.realpath(os.path.dirname(spec.origin)) + os.sep)
    except (ImportError, ValueError):
        pass
    return tuple(roots)


def _stdlib_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple({os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if k in paths})


class LibraryFilter:
    """torch, graphsafe and the stdlib: frames looked through to reach the user's line."""

    def __init__(self, extra_roots: Iterable[str] = ()) -> None:
        self._roots = _library_roots() + tuple(os.path.realpath(r) + os.sep for r in extra_roots)
        self._stdlib = _stdlib_roots()
        self._known: dict[str, bool] = {}

    def __call__(self, filename: str) -> bool:
        known = self._known.get(filename)
        if known is None:
            known = self._known[filename] = self._classify(filename)
        return known

    def _classify(self, filename: str) -> bool:
        if filename.startswith("<"):
            return filename not in ("<stdin>", "<string>")
        path = os.path.realpath(filename)
        if path.startswith(self._roots) or f"{os.sep}torch{os.sep}" in path and "-packages" in path:
            return True
        if f"{os.sep}triton{os.sep}" in path and "-packages" in path:  # Triton's launcher and autotuner
            return True
        parts = path.split(os.sep)
        return path.startswith(self._stdlib) and "site-packages" not in parts and "dist-packages" not in parts


def _is_torch_frame(frame: Frame) -> bool:
    path = frame.file.replace("\\", "/")
    return "/torch/" in path and "/graphsafe/" not in path


def user_frame(frames: tuple[Frame, ...], is_library: Callable[[str], bool]) -> Frame | None:
    """The innermost frame that is the user's code."""
    for frame in reversed(frames):
        if not is_library(frame.file):
            return frame
    return None


# --- the result ---------------------------------------------------------------------------------


@dataclass
class CaptureFailure:
    """A classified capture failure: what the user sees."""

    code: str | None  # rule code, None when no rule describes it
    name: str | None  # rule name (kebab-case)
    error_class: str  # e.g. "cudaErrorStreamCaptureInvalidated (901) <- cudaErrorStreamCaptureUnsupported (900)"
    cause: str  # plain language: what happened and what to do
    message: str  # the first line of the raised error
    root_message: str | None = None  # the first line of the root cause, when different
    cuda_error: int | None = None  # the root CUDA error number, if any
    file: str | None = None
    line: int | None = None
    function: str | None = None
    source: str | None = None
    phase: str = "capture"  # warmup | capture | replay | compile | setup
    frames: list[dict[str, Any]] = field(default_factory=list)  # user frames, innermost last (short)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> "CaptureFailure":
        return CaptureFailure(**data)

    @property
    def where(self) -> str:
        if self.file is None:
            return "<unknown location>"
        return f"{_display(self.file)}:{self.line}"


def _display(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


# --- classification -----------------------------------------------------------------------------

_CUDA_ERROR_TEXT = {**{text: number for number, (_, text) in CUDA_CAPTURE_ERRORS.items()}, **_CUDA_ERROR_ALIASES}
_PINNED = "Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor is pinned"
_CAPTURABLE = re.compile(r"Attempting CUDA graph capture of step\(\) for an instance of (\w+) but param_groups' "
                         r"capturable is False")
_AUTOCAST = "does not support the autocast caching"
_OVERWRITTEN = "accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run"
_POISONED = "Offset increment outside graph capture encountered unexpectedly"
_UNREGISTERED_GENERATOR = "Attempt to increase offset for a CUDA generator not in capture mode"
_GENERATOR_CALL = re.compile(r"Cannot call CUDAGeneratorImpl::(\w+)|CUDAGeneratorImpl::set_state_index")
_DEFAULT_STREAM = "CUDA graphs must be captured on a non-default stream"
# torch.compile(mode="reduce-overhead") records and replays its own graphs (cudagraph trees); run
# inside a manual capture it tries to replay one (measured on an H200, torch 2.11).
_NESTED_CUDAGRAPHS = "Cannot prepare for replay during capturing stage"
_OOM = re.compile(r"out of memory", re.IGNORECASE)
# NCCL failing inside a collective (ProcessGroupNCCL's "NCCL error in: ..., unhandled cuda error").
_NCCL = re.compile(r"\bNCCL error\b|ncclUnhandledCudaError|DistBackendError")
# A library creating its handle on first use: inside capture that means no warm-up ran.
_LAZY_LIBRARY = re.compile(r"CUBLAS_STATUS_NOT_INITIALIZED|cublas(Lt)?Create\(|CUDNN_STATUS_NOT_INITIALIZED|cudnnCreate\(")
# Tensors of two devices meeting in one op, or torch's warning that the capture recorded nothing:
# during capture both mean the capture ran on another device than the step's tensors.
_DEVICE_MISMATCH = re.compile(r"Expected all tensors to be on the same device|The CUDA Graph is empty")
# Triton's autotuner benchmarking a kernel's configs (it synchronizes), by frame path.
_AUTOTUNER_FRAMES = ("triton/runtime/autotuner.py", "triton/testing.py")

# Source-line patterns that name the op of a sync inside capture, most specific first.
_SYNC_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("GS110", re.compile(r"clip_grad_norm_?\(.*error_if_nonfinite\s*=\s*True")),
    ("GS712", re.compile(r"\brendezvous\(|\bsymm_mem\.empty\(")),
    ("GS901", re.compile(r"\b(all_reduce|all_gather\w*|reduce_scatter\w*|all_to_all\w*|broadcast|barrier|"
                         r"batch_isend_irecv|allreduce\w*|allgather\w*)\(")),
    ("GS101", re.compile(r"\.item\(\s*\)")),
    ("GS102", re.compile(r"\.tolist\(\s*\)")),
    ("GS103", re.compile(r"\.cpu\(\s*\)|\.numpy\(\s*\)|\.to\(\s*['\"]cpu|device\s*=\s*['\"]cpu")),
    ("GS106", re.compile(r"\bsynchronize\(|\.query\(\s*\)|elapsed_time\(")),
    ("GS109", re.compile(r"\bequal\(|\ballclose\(")),
    ("GS107", re.compile(r"\bnonzero\(|\bargwhere\(|\bunique(_consecutive)?\(|\bmasked_select\(|\brepeat_interleave\("
                         r"|\bbincount\(|\bwhere\(\s*[^,()]+(\([^()]*\))?\s*\)|\bone_hot\(\s*[^,()]+\)")),
    ("GS104", re.compile(r"\bprint\(|\b[rRbB]?[fF][rRbB]?['\"]|\.format\(|\bstr\(|\brepr\(|%\s*\(|"
                         r"\blog(ger|ging)?\.(info|debug|warning|warn|error|exception|critical|log)\(")),
    ("GS105", re.compile(r"\bbool\(")),  # an explicit `bool(t)`, also inside `if`: as the static rules name it
    ("GS201", re.compile(r"^\s*(if|elif|while|assert)\b|\bif\b.+\belse\b|\band\b|\bor\b|\bnot\b")),
    ("GS105", re.compile(r"\bfloat\(|\bint\(|\bround\(|\brange\(|\blen\(|\bcomplex\(")),
    ("GS108", re.compile(r"\[[^\]]*(mask|[<>]=?|==|!=|~)[^\]]*\]")),
)

# Tests of Python objects never read a tensor: `x if mask is not None else y`, `if cache is None:`.
_NONE_TEST = re.compile(r"\b(if|elif|while|and|or)\s+(not\s+)?[\w.]+\s+is\s+(not\s+)?None\b")

# torch frames that name the op better than the user's line: (path suffix, function or "*") -> code.
_TORCH_ORIGINS: tuple[tuple[str, str, str], ...] = (
    ("nn/utils/clip_grad.py", "*", "GS110"),
    ("distributed/_symmetric_memory/", "*", "GS712"),
    ("distributed/", "*", "GS901"),
    ("amp/grad_scaler.py", "*", "GS703"),
    ("utils/checkpoint.py", "*", "GS603"),
    ("cuda/memory.py", "*", "GS405"),
    ("_tensor_str.py", "*", "GS104"),
    ("_tensor.py", "__repr__", "GS104"),
    ("_tensor.py", "__format__", "GS104"),
    ("_tensor.py", "__str__", "GS104"),
    ("_tensor.py", "unique", "GS107"),
    ("_tensor.py", "unique_consecutive", "GS107"),
    ("functional.py", "_unique_impl", "GS107"),
    ("functional.py", "unique", "GS107"),
    ("functional.py", "_return_output", "GS107"),
    ("functional.py", "_return_inverse", "GS107"),
    ("cuda/__init__.py", "synchronize", "GS106"),
    ("cuda/streams.py", "synchronize", "GS106"),
    ("cuda/streams.py", "query", "GS106"),
    ("cuda/streams.py", "elapsed_time", "GS106"),
    ("distributions/", "*", "GS111"),
)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return text.strip()


def cuda_error_number(message: str) -> int | None:
    for text, number in _CUDA_ERROR_TEXT.items():
        if text in message:
            return number
    match = re.search(r"\berror (?:code )?(9\d\d)\b", message)
    return int(match.group(1)) if match else None


def _error_label(number: int) -> str:
    return f"{CUDA_CAPTURE_ERRORS[number][0]} ({number})"


def code_from_torch_frames(frames: tuple[Frame, ...]) -> str | None:
    """The most specific code named by torch frames under the user's line (innermost wins)."""
    for frame in reversed(frames):
        if not _is_torch_frame(frame):
            continue
        path = frame.file.replace("\\", "/")
        function = frame.function.rsplit(".", 1)[-1]
        for suffix, name, code in _TORCH_ORIGINS:
            if (path.endswith(suffix) or suffix.endswith("/") and f"/{suffix}" in path) and name in ("*", function):
                return code
    return None


def code_from_source(source: str) -> str | None:
    text = source.split("#", 1)[0] if "'" not in source and '"' not in source else source
    text = _NONE_TEST.sub(" ", text)
    for code, pattern in _SYNC_PATTERNS:
        if pattern.search(text):
            return code
    return None


def _pinned_code(source: str) -> str:
    if re.search(r"\.tolist\(\s*\)", source):
        return "GS102"
    if re.search(r"\.cpu\(\s*\)|\.numpy\(\s*\)|\.to\(\s*['\"]cpu|device\s*=\s*['\"]cpu|\.item\(", source):
        return "GS103"
    return "GS402"


def classify(record: FailureRecord, is_library: Callable[[str], bool] | None = None,
             phase: str = "capture") -> CaptureFailure:
    """Name the failure: the most specific error in the chain decides the class and the code."""
    is_library = is_library or LibraryFilter()
    chain = record.chain or (ErrorRecord("Exception", "unknown error"),)
    top = chain[0]
    messages = [e.message for e in chain]
    numbers = [cuda_error_number(m) for m in messages]

    # The error whose traceback reaches the user's code: for 901, the 900 on __context__.
    origin = _origin(chain, numbers, is_library)
    frame = user_frame(origin.frames, is_library) if origin is not None else None
    source = frame.source if frame is not None else ""
    torch_code = code_from_torch_frames(origin.frames) if origin is not None else None

    code: str | None
    error_class: str
    detail: str
    root_number = next((n for n in reversed(numbers) if n is not None), None)

    if any(_POISONED in m for m in messages):
        code, error_class = None, "poisoned RNG state"
        detail = ("the CUDA generator was left in capture mode by an earlier failed capture in this process; run the "
                  "trial in a fresh process (`graphsafe capture` always does)")
    elif any(_UNREGISTERED_GENERATOR in m for m in messages):
        code, error_class = "GS601", "unregistered generator"
        detail = _sentence("GS601")
    elif (match := next((_GENERATOR_CALL.search(m) for m in messages if _GENERATOR_CALL.search(m)), None)):
        code = torch_code if torch_code == "GS603" else "GS602"
        error_class = f"generator call during capture ({match.group(1) or 'set_state'})"
        detail = _sentence(code)
    elif (match := next((_CAPTURABLE.search(m) for m in messages if _CAPTURABLE.search(m)), None)):
        code, error_class = "GS701", "non-capturable optimizer"
        why, fix = _WHY["GS701"]
        detail = f"{match.group(1)} was built with capturable=False: {why}; {fix}"
    elif any(_PINNED in m for m in messages):
        # a copy is never a validation: torch.distributions' frames name GS111 for their checks only
        code = _pinned_code(source) if torch_code in (None, "GS104", "GS111") else torch_code
        error_class = "pageable host copy during capture"
        if code == "GS402" and re.search(r"\[[^\]]*\[", source):
            detail = ("a Python list used as an index is copied to the device as a tensor at every call: "
                      + _sentence("GS402", why=False))
        elif code == "GS402" and source and not re.search(r"tensor\(|as_tensor\(|asarray\(|\.to\(|\.cuda\(|device",
                                                          source):
            detail = ("an op on this line copies host data to the device (an index list, a host tensor argument, or "
                      "an op that builds a host tensor): " + _sentence("GS402", why=False))
        else:
            detail = _sentence(code)
    elif any(_AUTOCAST in m for m in messages):
        code, error_class = "GS702", "autocast cache enabled"
        detail = _sentence("GS702")
    elif any(_OVERWRITTEN in m for m in messages):
        code, error_class = "GS407", "graph output overwritten"
        detail = _sentence("GS407")
    elif any(_NESTED_CUDAGRAPHS in m for m in messages):
        code, error_class = None, "CUDA graphs of torch.compile inside a capture"
        detail = ("a function compiled with `torch.compile(mode=\"reduce-overhead\")` records and replays its own "
                  "CUDA graphs and cannot run inside another capture: capture the uncompiled function, or compile "
                  "it with a mode without CUDA graphs (`\"default\"`, `\"max-autotune-no-cudagraphs\"`)")
    elif any(_DEFAULT_STREAM in m for m in messages):
        code, error_class = None, "capture on the default stream"
        detail = "capture must run on a side stream (`torch.cuda.graph` picks one; do not pass the default stream)"
    elif any(_OOM.search(m) for m in messages) and phase == "capture":
        code, error_class = None, "out of memory during capture (memory pressure)"
        detail = ("memory pressure, not an unsafe op: the device ran out of memory while this graph's private pool "
                  "was filled (memory cached for eager steps and other graphs' pools cannot be reused by it); free "
                  "memory before capturing, share one pool between graphs captured in sequence (`pool=`), or "
                  "capture a smaller step")
    elif any(_NCCL.search(m) or "DistBackendError" in e.type for m, e in zip(messages, chain)):
        code, error_class = "GS901", "NCCL error during capture"
        detail = _sentence("GS901")
    elif any(_LAZY_LIBRARY.search(m) for m in messages) and phase == "capture":
        code, error_class = "GS711", "library initialised during capture"
        detail = _sentence("GS711")
    elif any(_DEVICE_MISMATCH.search(m) for m in messages) and phase == "capture":
        code, error_class = "GS904", "capture on another device"
        detail = _sentence("GS904")
    elif top.type.endswith("HostReadNotBaked"):  # graphed()'s guards could not bake a host read (host_read_guards.py)
        code = torch_code or code_from_source(source) or "GS106"
        error_class = "host read not baked"
        detail = _first_line(top.message)
    elif root_number in (900, 901) and _autotuner_ran(chain):
        code, error_class = "GS710", _chain_label(numbers)
        detail = _sentence("GS710")
    elif root_number in (900, 901):
        error_class = _chain_label(numbers)
        if root_number == 901:  # no root cause recorded: something earlier invalidated the capture
            code = torch_code or code_from_source(source)
            detail = (_sentence(code) if code else
                      "the capture was invalidated by an earlier error whose cause was not recorded; run "
                      "`graphsafe trace` on the step to find the synchronizing op")
        else:
            code = torch_code or code_from_source(source)
            if code is None:
                code = "GS106"
                detail = ("a host/device synchronization that is not allowed while the stream is capturing (the "
                          "line does not say which op; `graphsafe trace` on the step names it)")
            else:
                detail = _sentence(code)
    elif root_number in _STREAM_CAUSES:
        error_class = _chain_label(numbers)
        code, detail = _STREAM_CAUSES[root_number]
        if code == "GS106" and torch_code == "GS106":
            detail = _sentence("GS106")
        elif root_number in (904, 905) and _waits_on_collective(source, origin):
            code, detail = "GS903", _sentence("GS903")
    elif any(_OOM.search(m) for m in messages):  # outside capture (warm-up, replay)
        code, error_class = None, "out of memory"
        detail = "the device ran out of memory while the graph's pool was being filled: capture a smaller step"
    elif "torch._dynamo" in top.type or "torch._inductor" in top.type or "BackendCompilerFailed" in top.type:
        code, error_class = None, "torch.compile error"
        detail = "torch.compile failed on the step; its message is below"
    else:
        code, error_class = None, top.type
        detail = f"the step raised {top.type} ({'during ' + phase if phase else ''}); this is not a capture rule"
        if phase == "warmup":
            detail = f"the step raised {top.type} in eager warm-up, before any capture: fix the step first"

    root = _first_line(chain[-1].message) if len(chain) > 1 else None
    user_frames = [asdict(f) for f in (origin.frames if origin is not None else ()) if not is_library(f.file)][-4:]
    return CaptureFailure(
        code=code,
        name=RULE_NAMES.get(code) if code else None,
        error_class=error_class,
        cause=detail,
        message=f"{top.type}: {_first_line(top.message)}",
        root_message=root if root and root != _first_line(top.message) else None,
        cuda_error=root_number,
        file=frame.file if frame else None,
        line=frame.line if frame else None,
        function=frame.function if frame else None,
        source=source or None,
        phase=phase,
        frames=user_frames,
    )


def _autotuner_ran(chain: tuple[ErrorRecord, ...]) -> bool:
    """Triton's autotuner is on the stack of an error in the chain (it benchmarks, and syncs)."""
    return any(f.file.replace("\\", "/").endswith(_AUTOTUNER_FRAMES) for e in chain for f in e.frames)


def _waits_on_collective(source: str, origin: ErrorRecord | None) -> bool:
    """The failing line waits on a collective's handle (`work.wait()`), or torch.distributed's
    `wait` is under it."""
    if re.search(r"\.wait\(\s*\)", source):
        return True
    return origin is not None and any("/distributed/" in f.file.replace("\\", "/") and f.function.endswith("wait")
                                      for f in origin.frames)


def classify_exception(error: BaseException, phase: str = "capture",
                       is_library: Callable[[str], bool] | None = None) -> CaptureFailure:
    return classify(record_exception(error), is_library, phase)


def _origin(chain: tuple[ErrorRecord, ...], numbers: list[int | None],
            is_library: Callable[[str], bool]) -> ErrorRecord | None:
    """The error to attribute: the root CUDA error if one is in the chain, else the innermost
    error whose traceback reaches user code, else the first."""
    for error, number in zip(reversed(chain), reversed(numbers)):
        if number is not None and number != 901 and any(not is_library(f.file) for f in error.frames):
            return error
    for error in chain:  # the raised one first: its frames are the closest to what failed
        if any(not is_library(f.file) for f in error.frames) and not _only_capture_exit(error, is_library):
            return error
    for error in reversed(chain):
        if any(not is_library(f.file) for f in error.frames):
            return error
    return chain[0] if chain else None


def _only_capture_exit(error: ErrorRecord, is_library: Callable[[str], bool]) -> bool:
    """A 901 raised by `torch.cuda.graph.__exit__`: its user frame is the `with` line, not the cause."""
    return cuda_error_number(error.message) == 901 and any(f.function.endswith("__exit__") for f in error.frames)


def _chain_label(numbers: list[int | None]) -> str:
    seen: list[int] = []
    for number in numbers:
        if number is not None and number not in seen:
            seen.append(number)
    return " <- ".join(_error_label(n) for n in seen) if seen else "CUDA error"


def _sentence(code: str | None, why: bool = True) -> str:
    if code is None or code not in _WHY:
        return "see the error message"
    reason, fix = _WHY[code]
    return f"{reason}; {fix}" if why else fix


def fix_hint(code: str | None) -> str | None:
    return _WHY[code][1] if code in _WHY else None


def why(code: str | None) -> str | None:
    return _WHY[code][0] if code in _WHY else None


def exit_summary(failure: CaptureFailure) -> str:
    """`path:line: GS101 [item-sync] cause`, ruff-like."""
    label = f"{failure.code} [{failure.name}] " if failure.code else ""
    where = f"{failure.where}: " if failure.file is not None else ""
    return f"{where}{label}{failure.cause}"


if __name__ == "__main__":  # pragma: no cover - a manual check: classify a JSON record on stdin
    import json

    print(json.dumps(classify(FailureRecord.from_json(json.load(sys.stdin))).to_json(), indent=2))
