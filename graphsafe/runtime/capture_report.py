"""The trial-capture report: plain data, JSON both ways, and its text form. No torch import:
the parent process of `graphsafe capture` reads the worker's JSON with it."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from graphsafe.runtime.classify import RULE_NAMES, CaptureFailure, exit_summary

STATUSES = ("ok", "mismatch", "failed", "error", "crashed", "timeout")
EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


@dataclass(frozen=True)
class Tolerance:
    rtol: float = 1e-4
    atol: float = 1e-5

    @staticmethod
    def parse(value: Any) -> "Tolerance":
        if value is None:
            return Tolerance()
        if isinstance(value, Tolerance):
            return value
        if value == "bitwise" or value == 0:
            return Tolerance(0.0, 0.0)
        if isinstance(value, (int, float)):
            if value < 0:
                raise ValueError(f"tolerance must be >= 0, got {value}")
            return Tolerance(float(value), float(value))
        if isinstance(value, dict):
            unknown = set(value) - {"rtol", "atol"}
            if unknown:
                raise ValueError(f"tolerance takes rtol and atol, not {sorted(unknown)}")
            return Tolerance(float(value.get("rtol", 0.0)), float(value.get("atol", 0.0)))
        if isinstance(value, (tuple, list)) and len(value) == 2:
            return Tolerance(float(value[0]), float(value[1]))
        raise ValueError(f"tolerance: expected 'bitwise', a number, (rtol, atol) or {{'rtol':, 'atol':}}, got {value!r}")

    @property
    def bitwise(self) -> bool:
        return self.rtol == 0 and self.atol == 0

    def describe(self) -> str:
        return "bitwise" if self.bitwise else f"rtol={self.rtol:g}, atol={self.atol:g}"


@dataclass
class Comparison:
    name: str
    kind: str
    ok: bool
    bitwise: bool
    max_abs: float | None = None
    max_rel: float | None = None
    note: str | None = None
    code: str | None = None  # the rule a mismatch of this kind points to

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("max_abs", "max_rel"):
            if data[key] is not None and not math.isfinite(data[key]):
                data[key] = str(data[key])
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Comparison":
        data = dict(data)
        for key in ("max_abs", "max_rel"):
            if isinstance(data.get(key), str):
                data[key] = float(data[key])
        return Comparison(**data)



@dataclass
class Timings:
    eager_ms: float | None = None
    replay_ms: float | None = None
    floor_ms: float | None = None  # kernel-only: union of device busy intervals per eager step
    capture_s: float | None = None
    eager_range_ms: tuple[float, float] | None = None  # min, max over samples
    replay_range_ms: tuple[float, float] | None = None
    samples: int = 0
    inner: int = 0
    method: str = "CUDA events around `inner` back-to-back calls, median of `samples`"

    @property
    def speedup(self) -> float | None:
        if self.eager_ms and self.replay_ms:
            return self.eager_ms / self.replay_ms
        return None

    @property
    def replay_over_floor(self) -> float | None:
        if self.replay_ms and self.floor_ms:
            return self.replay_ms / self.floor_ms
        return None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["speedup"] = self.speedup
        data["replay_over_floor"] = self.replay_over_floor
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Timings":
        data = {k: v for k, v in data.items() if k not in ("speedup", "replay_over_floor")}
        for key in ("eager_range_ms", "replay_range_ms"):
            if data.get(key) is not None:
                data[key] = tuple(data[key])
        return Timings(**data)


@dataclass
class PoolMemory:
    reserved_bytes: int | None
    active_bytes: int | None
    segments: int
    source: str  # how it was measured

    @property
    def reserved_mib(self) -> float | None:
        return None if self.reserved_bytes is None else self.reserved_bytes / 2**20

    @staticmethod
    def from_json(data: dict[str, Any]) -> "PoolMemory":
        return PoolMemory(**data)


@dataclass
class CaptureReport:
    target: str
    mode: str
    status: str  # ok | mismatch | failed | error | crashed | timeout
    device: str = ""
    torch_version: str = ""
    warmup: int = 0
    replays: int = 0
    tolerance: dict[str, float] = field(default_factory=dict)
    failure: CaptureFailure | None = None
    comparisons: list[Comparison] = field(default_factory=list)
    timings: Timings | None = None
    memory: PoolMemory | None = None
    state: list[str] = field(default_factory=list)  # what was tracked, one line each
    notes: list[str] = field(default_factory=list)
    process_usable: bool | None = None  # in-process trials: CUDA and its RNG still work afterwards
    output_tail: str | None = None  # a crashed worker's last output

    @property
    def captured(self) -> bool:
        return self.status in ("ok", "mismatch")

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def match(self) -> bool | None:
        return all(c.ok for c in self.comparisons) if self.comparisons else None

    @property
    def bitwise(self) -> bool | None:
        return all(c.bitwise for c in self.comparisons) if self.comparisons else None

    @property
    def mismatches(self) -> list[Comparison]:
        return [c for c in self.comparisons if not c.ok]

    @property
    def code(self) -> str | None:
        if self.failure is not None:
            return self.failure.code
        codes = [c.code for c in self.mismatches if c.code]
        return codes[0] if codes else None

    # JSON ----------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "mode": self.mode,
            "status": self.status,
            "captured": self.captured,
            "match": self.match,
            "bitwise": self.bitwise,
            "code": self.code,
            "device": self.device,
            "torch_version": self.torch_version,
            "warmup": self.warmup,
            "replays": self.replays,
            "tolerance": self.tolerance,
            "failure": self.failure.to_json() if self.failure else None,
            "comparisons": [c.to_json() for c in self.comparisons],
            "timings": self.timings.to_json() if self.timings else None,
            "memory": asdict(self.memory) if self.memory else None,
            "state": self.state,
            "notes": self.notes,
            "process_usable": self.process_usable,
            "output_tail": self.output_tail,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> "CaptureReport":
        return CaptureReport(
            target=data["target"],
            mode=data["mode"],
            status=data["status"],
            device=data.get("device", ""),
            torch_version=data.get("torch_version", ""),
            warmup=data.get("warmup", 0),
            replays=data.get("replays", 0),
            tolerance=data.get("tolerance") or {},
            failure=CaptureFailure.from_json(data["failure"]) if data.get("failure") else None,
            comparisons=[Comparison.from_json(c) for c in data.get("comparisons", ())],
            timings=Timings.from_json(data["timings"]) if data.get("timings") else None,
            memory=PoolMemory.from_json(data["memory"]) if data.get("memory") else None,
            state=list(data.get("state", ())),
            notes=list(data.get("notes", ())),
            process_usable=data.get("process_usable"),
            output_tail=data.get("output_tail"),
        )

    # text ----------------------------------------------------------------------------------------
    def to_text(self) -> str:
        where = f" on {self.device}" if self.device else ""
        lines = [f"graphsafe capture: {self.target} (mode {self.mode}){where}"
                 + (f", torch {self.torch_version}" if self.torch_version else "")]
        if self.failure is not None:
            f = self.failure
            verb = {"failed": "capture FAILED", "error": "the step FAILED before capture",
                    "crashed": "the trial process CRASHED", "timeout": "the trial TIMED OUT"}.get(self.status,
                                                                                               self.status)
            lines.append(f"  {verb} ({f.phase}): {f.error_class}")
            lines.append(f"  {exit_summary(f)}")
            if f.source:
                lines.append(f"      {f.source}")
            if f.phase != "worker":
                lines.append(f"  raised: {f.message}")
            if f.root_message:
                lines.append(f"  cause:  {f.root_message}")
        else:
            t = self.timings
            memory = ""
            if self.memory is not None and self.memory.reserved_bytes is not None:
                memory = (f"; graph pool {self.memory.reserved_bytes / 2**20:.1f} MiB reserved, "
                          f"{(self.memory.active_bytes or 0) / 2**20:.1f} MiB in use")
            capture = f"captured in {t.capture_s:.3f} s" if t and t.capture_s is not None else "captured"
            lines.append(f"  {capture}{memory}")
            counts = _count_kinds(self.comparisons)
            tol = Tolerance(**self.tolerance).describe() if self.tolerance else "default"
            if self.match:
                how = "bitwise" if self.bitwise else f"within {tol} (not bitwise)"
                lines.append(f"  replay matches eager over {self.replays} steps, {how}: {counts}")
            else:
                lines.append(f"  replay DIFFERS from eager over {self.replays} steps ({tol}): "
                             f"{len(self.mismatches)} of {len(self.comparisons)} values")
                for c in self.mismatches[:12]:
                    err = "" if c.max_abs is None else f" max abs {c.max_abs:.3g}, max rel {c.max_rel:.3g}"
                    code = f" [{c.code} {RULE_NAMES.get(c.code, '')}]" if c.code else ""
                    lines.append(f"    {c.name} ({c.kind}):{err}{' — ' + c.note if c.note else ''}{code}")
                if len(self.mismatches) > 12:
                    lines.append(f"    ... {len(self.mismatches) - 12} more")
            if t is not None and t.eager_ms is not None:
                text = f"  step time: eager {t.eager_ms:.3f} ms, replay {t.replay_ms:.3f} ms"
                if t.speedup:
                    text += f" ({t.speedup:.2f}x)"
                if t.floor_ms:
                    text += f", kernel-only floor {t.floor_ms:.3f} ms (replay/floor {t.replay_over_floor:.2f})"
                lines.append(text)
        if self.process_usable is False:
            lines.append("  this process can no longer use CUDA safely: run the trial with `graphsafe capture`")
        for note in self.notes:
            lines.append(f"  note: {note}")
        if self.output_tail:
            lines.append("  last output of the trial process:")
            lines.extend("    " + line for line in self.output_tail.splitlines()[-15:])
        return "\n".join(lines) + "\n"


def _count_kinds(comparisons: list[Comparison]) -> str:
    counts: dict[str, int] = {}
    for c in comparisons:
        counts[c.kind] = counts.get(c.kind, 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in counts.items())
