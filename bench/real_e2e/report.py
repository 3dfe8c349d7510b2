"""The real end-to-end benchmark's table and one-line summary, from its rows (plain dicts)."""

from __future__ import annotations

import math
from collections import Counter

# A fixed variant's eager numbers count as the original's when they differ by at most this much
# (GPU kernels with atomics need not be bitwise reproducible).
SAME_AS_ORIG_ATOL = 1e-4


def _fmt(value, digits: int = 3, suffix: str = "") -> str:
    return "—" if value is None else f"{value:.{digits}f}{suffix}"


def same_as_orig(comparison: dict | None) -> bool | None:
    if not comparison:
        return None
    if comparison.get("identical_source"):
        return True
    max_abs = comparison.get("max_abs")
    return bool(comparison.get("exact")) or (max_abs is not None and max_abs <= SAME_AS_ORIG_ATOL)


def agreement(comparison: dict | None) -> str:
    if not comparison:
        return "—"
    if comparison.get("error"):
        return "error"
    if comparison.get("identical_source"):
        return "same source"
    if comparison.get("exact"):
        return "bitwise"
    return f"max abs {comparison['max_abs']:.2g}" if comparison.get("max_abs") is not None else "DIFFERS"


def fixes_cell(row: dict) -> str:
    fixed = row.get("static", {}).get("fixed", {})
    return "/".join("?" if fixed.get(v) is None else str(fixed[v]) for v in ("fixed", "unsafe")) if fixed else "—"


def codes_cell(row: dict) -> str:
    static = row.get("static")
    if static is None:
        return "—"
    codes = static.get("codes") or {}
    if static.get("errors"):
        return "error"
    return f"{static.get('diagnostics', 0)} (" + ", ".join(f"{c}×{n}" for c, n in codes.items()) + ")" if codes else "0"


# --- graph: did graphsafe's automatic path give a correct graph? -------------------------------------


def package_path(path: str) -> str:
    """`.../scratch/<step>/fixed/torchdiffeq/_impl/x.py` → `torchdiffeq/_impl/x.py`: the line in
    the package, not in this run's scratch copy."""
    parts = path.replace("\\", "/").split("/")
    if "scratch" in parts:
        rest = parts[parts.index("scratch") + 3:]  # scratch/<step>/<variant>/...
        if rest:
            return "/".join(rest)
    return path


def graph_status(row: dict) -> tuple[bool, str]:
    """(correct graph?, what the table says): captured, replay equal to eager with the inputs
    changing, and the fixed eager numbers equal to the original's."""
    fixed = row.get("gpu_fixed") or {}
    if row.get("error"):
        return False, "error: " + row["error"][:80]
    if fixed.get("error"):
        return False, "worker: " + fixed["error"][:80]
    trial = fixed.get("trial")
    if not trial:
        return False, "—"
    if not trial.get("captured"):
        failure = trial.get("failure") or {}
        code = failure.get("code") or failure.get("error_class") or trial.get("status")
        where = f" at {package_path(failure['file'])}:{failure['line']}" if failure.get("file") else ""
        return False, f"{trial.get('status')}: {code}{where}"
    changing = fixed.get("changing_inputs") or {}
    if trial.get("status") != "ok":
        return False, f"replay ≠ eager: {trial.get('code') or 'mismatch'}"
    if not changing.get("match"):
        failure = changing.get("failure")
        if failure:
            return False, f"changing inputs: {failure.get('code') or failure.get('error_class')}"
        return False, "replay ≠ eager with changing inputs"
    same = same_as_orig(fixed.get("vs_orig"))
    if same is None:
        return False, "no orig eager numbers to compare with"
    if not same:
        return False, "fixed eager ≠ orig eager"
    return True, "correct"


def speedups(row: dict) -> tuple[float | None, float | None]:
    """(graph, torch.compile) speedup over the original's eager step time."""
    eager = (row.get("gpu_orig") or {}).get("eager_ms")
    timings = ((row.get("gpu_fixed") or {}).get("trial") or {}).get("timings") or {}
    replay = timings.get("replay_ms")
    compiled = ((row.get("gpu_orig") or {}).get("compile") or {}).get("compiled_ms")
    graph = eager / replay if eager and replay else None
    comp = eager / compiled if eager and compiled else None
    return graph, comp


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def gpu_table(rows: list[dict]) -> str:
    head = ("| step | kind | package | diagnostics | fixes safe/unsafe | fixed = orig | eager ms | graphsafe graph "
            "| replay ms | speedup | replay/floor | pool MiB | compile ms | compile s | compile speedup "
            "| compile = eager |\n|---|---|---|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
    lines = []
    for row in rows:
        orig, fixed = row.get("gpu_orig") or {}, row.get("gpu_fixed") or {}
        trial = fixed.get("trial") or {}
        timings = trial.get("timings") or {}
        memory = trial.get("memory") or {}
        comp = orig.get("compile") or {}
        _, status = graph_status(row)
        graph_x, comp_x = speedups(row)
        floor = timings.get("floor_ms")
        replay = timings.get("replay_ms")
        compile_ok = ("—" if not comp else comp.get("status") if comp.get("status") != "ok"
                      else "yes" if comp.get("match") else "NO: " + "; ".join(comp.get("mismatches", [])[:1]))
        lines.append("| " + " | ".join([
            row["step"], row["kind"], f"{row['package']} {row.get('version', '')}", codes_cell(row), fixes_cell(row),
            agreement(fixed.get("vs_orig")), _fmt(orig.get("eager_ms")), status, _fmt(replay),
            _fmt(graph_x, 2, "x"), _fmt(replay / floor if replay and floor else None, 2),
            _fmt(memory["reserved_bytes"] / 2**20 if memory.get("reserved_bytes") is not None else None, 1),
            _fmt(comp.get("compiled_ms")) if comp.get("status") == "ok" else (comp.get("status") or "—"),
            _fmt(comp.get("compile_s"), 1), _fmt(comp_x, 2, "x"), compile_ok,
        ]) + " |")
    return head + "\n".join(lines) + "\n"


def gpu_summary(rows: list[dict]) -> str:
    correct = [row for row in rows if graph_status(row)[0]]
    graph_x = geomean([speedups(row)[0] for row in correct])
    compiled = [row for row in rows if ((row.get("gpu_orig") or {}).get("compile") or {}).get("match")]
    comp_x = geomean([speedups(row)[1] for row in compiled])
    comp_same = geomean([speedups(row)[1] for row in correct if row in compiled])
    return (f"graphsafe (check → fix → capture, automatic): a correct graph for {len(correct)}/{len(rows)} steps, "
            f"geomean speedup over eager {_fmt(graph_x, 2, 'x')} on those; torch.compile(mode=\"reduce-overhead\"): "
            f"results equal to eager on {len(compiled)}/{len(rows)} steps, geomean speedup {_fmt(comp_x, 2, 'x')} "
            f"on those ({_fmt(comp_same, 2, 'x')} on graphsafe's {len(correct)})")


# --- the one path: `graphsafe graph`, the core wired to graphed() ------------------------------------


def graph_path_status(row: dict) -> tuple[bool, str]:
    """(a correct graph?, what happened) for the graph variant."""
    summary, run = row.get("graph") or {}, row.get("gpu_graph") or {}
    if summary.get("error"):
        return False, "graph: " + summary["error"][:80]
    if not run:
        return False, "not run"
    if run.get("error") and not run.get("failure"):
        return False, "error: " + run["error"][:100]
    failure = run.get("failure")
    if failure:
        where = (f" at {package_path(failure.get('file') or failure.get('path') or '')}:{failure.get('line')}"
                 if failure.get("line") else "")
        return False, f"failed: {failure.get('code') or '?'}{where}"
    if run.get("match") and run.get("replays"):
        return True, "correct graph"
    if run.get("match"):
        return False, "ran eagerly (no replay)"
    return False, "replay ≠ eager: " + "; ".join(run.get("mismatches", [])[:1])[:100]


def graph_path_table(rows: list[dict]) -> str:
    head = ("| step | split | core | options | still blocking (static) | graph = orig (eager) | result | graph ms "
            "| eager ms | speedup | graph/floor |\n|---|---|---|---|---|---|---|---:|---:|---:|---:|\n")
    lines = []
    for row in rows:
        summary, run = row.get("graph") or {}, row.get("gpu_graph") or {}
        blocking = summary.get("blocking") or []
        codes = Counter(b["code"] for b in blocking)
        graph_ms, eager_ms, floor_ms = run.get("graph_ms"), run.get("eager_ms"), run.get("floor_ms")
        lines.append("| " + " | ".join([
            row["step"], "yes" if summary.get("split") else (summary.get("refusal") or "—")[:60],
            summary.get("core", "—"), ", ".join(f"{k}={v}" for k, v in (summary.get("options") or {}).items()) or "—",
            (f"{len(blocking)} (" + ", ".join(f"{c}×{n}" for c, n in sorted(codes.items())) + ")") if blocking else "0",
            agreement(run.get("vs_orig")), graph_path_status(row)[1], _fmt(graph_ms), _fmt(eager_ms),
            _fmt(eager_ms / graph_ms if graph_ms and eager_ms else None, 2, "x"),
            _fmt(graph_ms / floor_ms if graph_ms and floor_ms else None, 2),
        ]) + " |")
    return head + "\n".join(lines) + "\n"


def graph_path_summary(rows: list[dict]) -> str:
    correct = [row for row in rows if graph_path_status(row)[0]]
    ratios = [row["gpu_graph"]["eager_ms"] / row["gpu_graph"]["graph_ms"] for row in correct
              if row["gpu_graph"].get("graph_ms")]
    return (f"the one path (graphsafe graph → graphed(), no hand edit): a correct graph for {len(correct)}/{len(rows)} "
            f"steps, geomean speedup over eager {_fmt(geomean(ratios), 2, 'x')} on those")


# --- CPU: the eager numbers of the original and of the rewritten package ---------------------------


def cpu_table(rows: list[dict]) -> str:
    head = ("| step | kind | package | diagnostics | fixes safe/unsafe | deterministic | fixed = orig | unsafe = orig "
            "| graph = orig |\n|---|---|---|---|---:|---|---|---|---|\n")
    lines = []
    for row in rows:
        eager = row.get("cpu") or {}
        orig = eager.get("orig") or {}
        determinism = "error: " + (row.get("error") or orig.get("error", ""))[:80] if row.get("error") or orig.get("error") \
            else agreement(orig.get("determinism"))
        lines.append("| " + " | ".join([
            row["step"], row["kind"], f"{row['package']} {row.get('version', '')}", codes_cell(row), fixes_cell(row),
            determinism, _cpu_variant(eager.get("fixed")), _cpu_variant(eager.get("unsafe")),
            _cpu_variant(eager.get("graph")),
        ]) + " |")
    return head + "\n".join(lines) + "\n"


def _cpu_variant(result: dict | None) -> str:
    if not result:
        return "—"
    if result.get("error"):
        return "error: " + result["error"][:80]
    return agreement(result.get("vs_orig"))


def cpu_summary(rows: list[dict]) -> str:
    ran = [row for row in rows if "error" not in ((row.get("cpu") or {}).get("orig") or {"error": None})
           and ((row.get("cpu") or {}).get("fixed") or {}).get("vs_orig")]
    same = [row for row in ran if same_as_orig(row["cpu"]["fixed"]["vs_orig"])]
    return f"CPU: the safely fixed package computes the original's numbers on {len(same)}/{len(rows)} steps"
