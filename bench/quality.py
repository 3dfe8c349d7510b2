"""Precision and recall of `graphsafe check` per rule family over the labelled corpus.

Labels are the `# expect: GSxxx` comments in corpus/ (written with the programs, before the
rules were tuned). A reported (file, line, code) is a true positive when labelled.
Recall is given over all labels of the family, including labels of rules not implemented yet.

    python bench/quality.py [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import golden  # noqa: E402

FAMILIES = {
    "GS1": "sync-free", "GS2": "control flow", "GS3": "Python scalars", "GS4": "static memory",
    "GS5": "GPU-only", "GS6": "RNG", "GS7": "configuration", "GS8": "Megatron/TE",
}


def measure(heldout: bool) -> dict:
    os.chdir(ROOT)
    counts: dict[str, dict[str, int]] = defaultdict(lambda: {"tp": 0, "fp": 0, "fn": 0})
    negatives_flagged = 0
    programs = [p for p in golden.programs() if golden.is_heldout(p) == heldout]
    for program in programs:
        labels = golden.labels(program)
        reported = golden.reported(program)
        if program.name == "negatives":
            negatives_flagged += len(reported)
        for item in reported:
            counts[item[2][:3]]["tp" if item in labels else "fp"] += 1
        for item in labels - reported:
            counts[item[2][:3]]["fn"] += 1
    rows = {}
    for family in sorted(counts):
        c = counts[family]
        precision = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else None
        recall = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else None
        rows[family] = {**c, "precision": precision, "recall": recall}
    return {"families": rows, "negatives_flagged": negatives_flagged, "programs": [p.name for p in programs]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the numbers as JSON")
    args = parser.parse_args()
    fmt = lambda v: "–" if v is None else f"{v:.2f}"  # noqa: E731
    results = {}
    for heldout, title in ((False, "tuning set (rules were developed against these labels)"),
                           (True, "held-out set (labels written independently; rules never tuned on it)")):
        result = measure(heldout)
        results["heldout" if heldout else "tuning"] = result
        print(f"\n{title}: {', '.join(result['programs']) or 'none'}")
        if not result["programs"]:
            print("(no programs: write a new held-out set before quoting a generalisation figure)")
            continue
        print("| family | TP | FP | FN | precision | recall |")
        print("|---|---|---|---|---|---|")
        for family, row in result["families"].items():
            name = FAMILIES.get(family, family)
            print(f"| {family} {name} | {row['tp']} | {row['fp']} | {row['fn']} | {fmt(row['precision'])} | {fmt(row['recall'])} |")
        if not heldout:
            print(f"look-alike negatives flagged: {result['negatives_flagged']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
