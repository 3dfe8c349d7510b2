"""Results table."""

from __future__ import annotations


def format_table(rows: list[dict]) -> str:
    header = f"{'task':<10}{'acc':>8}{'n':>6}{'early':>7}"
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(f"{r['task']:<10}{r['acc']:>8.3f}{r['n']:>6d}{'yes' if r['early'] else 'no':>7}")
    return "\n".join(lines)
