"""Golden outputs of `graphsafe check` on the corpus: labels and snapshots.

Each corpus program labels its hazard lines with `# expect: GS101, GS501`. The golden test
checks that `check` reports exactly the labelled (line, code) pairs for every implemented
rule, and that the full text output matches `expected_check.txt` (chains included).

Regenerate the snapshots after a reviewed change:  python -m tests.golden --update
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from graphsafe.analyzer.engine import check_paths
from graphsafe.analyzer.grouping import each_use
from graphsafe.config import Settings
from graphsafe.report.formats import format_text
from graphsafe.rules import BY_CODE

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
LABEL = re.compile(r"#\s*expect:\s*(GS\d{3}(?:\s*,\s*GS\d{3})*)")
SNAPSHOT = "expected_check.txt"


# Files whose `# expect:` comments are read: Python programs and launch scripts (the
# Megatron configuration rules read `*.sh`; a shell comment has the same syntax).
LABELLED = ("*.py", "*.sh")


def _labelled_files(program: Path) -> list[Path]:
    return sorted(path for pattern in LABELLED for path in program.rglob(pattern))


def programs() -> list[Path]:
    return sorted(
        p for p in CORPUS.iterdir()
        if p.is_dir() and not p.name.startswith(("_", ".")) and any(any(p.glob(g)) for g in LABELLED)
    )


# Labelled hazards the analyzer is known to miss, with the reason; the golden test keeps this
# list honest (an entry that starts being reported must be removed from here).
KNOWN_MISSES = {
    # `valid` reaches the region root only through `update_minibatch(**self.static, ...)`, a
    # dict of tensors unpacked into keywords: a tensor (set 11), but of no known dtype; GS108
    # needs the index known to be a boolean tensor.
    ("corpus/ppo_update/ppo.py", 69, "GS108"): "a parameter filled by `**dict` unpacking is a tensor of unknown dtype",
    # set 11: `decode_step(..., presence_penalty=self.presence_penalty)` from the graph block
    # and the eager path, with `self.presence_penalty = 0.2` set only in `__init__`: the label
    # read "a number parameter of a captured function"; a function called from a capture block
    # is a callee, and a step-invariant argument does not count (GS301 docs now say so, VALID).
    ("corpus/kvquant_serving/engine.py", 75, "GS301"): "a callee's number parameter given a step-invariant attribute is not per-step",
    # set 11: `logits[full] = torch.finfo(logits.dtype).min` assigns a Python number through a
    # bool mask: torch runs masked_fill_ (no sync); the label cited `x[x > 0] = y` (a tensor
    # value). GS108's docs now name this case, with a VALID example.
    ("corpus/kvquant_serving/engine.py", 78, "GS108"): "a masked assignment of a Python number is masked_fill_ (no sync)",
    # `self.optimizer = self.model.configure_optimizers(...)` (nanoGPT): the AdamW is built in
    # model.py; GS701 pairs a `.step()` with a construction bound in the same file.
    # `v.to(self.device, non_blocking=True)` over a dict of pinned CPU rows: the docs name
    # `.to("cuda")`/`.to(device="cuda")`; a device variable on values of unknown kind (most often
    # device tensors already) is not reported, and dict values of a comprehension have no kind.
    ("corpus/sac_update/replay.py", 37, "GS402"): "`.to(device variable)` of values of unknown kind is not reported",
    # `self.loss_ema = 0.98 * self.loss_ema + 0.02 * loss.item()`: labelled GS101 + GS302 (set 4,
    # written when GS302's docs did not say); GS302 leaves an update that syncs to the sync's
    # report, as its docs now say and as mixup_train/train.py:54 (the same line) is labelled.
    ("corpus/ddpm_train/trainer.py", 75, "GS302"): "GS302 leaves an update that reads a tensor on the host to GS101/GS105 (one cause)",
    # `self.recent_preds = torch.cat([self.recent_preds, median])` (set 9): labelled GS404 and
    # GS401 because GS401's bullet `self.buf = f(self.buf)` also matched word for word; the
    # growth is one cause, reported once as GS404, as GS401's docs now say.
    ("corpus/ts_forecast/trainer.py", 68, "GS401"): "a buffer concatenated onto itself is GS404 only (one cause, one diagnostic)",
    # `x.repeat_interleave(group_size, dim=0)` with a Python int (set 9): labelled from GS107's
    # old text "`repeat_interleave` without `output_size`"; torch runs an int repeat as
    # unsqueeze/expand/clone (no sync: only a tensor of repeat counts dispatches
    # aten.repeat_interleave.Tensor). GS107's docs now say so, with a VALID example.
    ("corpus/grpo_train/advantages.py", 10, "GS107"): "an int repeat count does not sync (GS107 docs now say so)",
    ("corpus/grpo_train/advantages.py", 11, "GS107"): "an int repeat count does not sync (GS107 docs now say so)",
    ("corpus/grpo_train/trainer.py", 64, "GS107"): "an int repeat count does not sync (GS107 docs now say so)",
}

# Reported but not labelled, with the reason; kept honest the same way.
KNOWN_FALSE_ALARMS = {
    # `checkpoint(block, x, use_reentrant=False)` on a dropout-free block: stashing the RNG state
    # is harmless on torch >= 2.10 (measured by the program's author); GS603 does not look at
    # whether the checkpointed function draws random numbers. It is a warning.
    ("corpus/mixup_train/model.py", 37, "GS603"): "GS603 does not check for RNG use in the checkpointed function",
    # `self.records.append(...)` inside `MetricsLogger.log`, which the region calls (that call is
    # GS501). GS503's docs flag appends to a list attribute of self in code reached from a region,
    # and the same line in three earlier programs is labelled GS503 (clip_train/tracking.py:15,
    # nerf_render/logging_utils.py:14, speech_eval/evaluate.py:19); the labeller of this program
    # left it unlabelled (not in its README's hazards or silent lists).
    ("corpus/recsys_train/metrics.py", 13, "GS503"): "the logger's own append is GS503 as labelled in other programs; left unlabelled here",
    # `self.n += n` inside `ProgressMeter.update`, which the region calls as `self.pbar.update()`
    # (GS505). GS302's docs flag a number attribute updated in code the region runs, and say the
    # bar's own counter is reported besides the call's GS505; grpo_train/progress.py:16 and
    # lora_finetune's `StepBar.update` are labelled GS302 for the same shape. The labeller left it out.
    ("corpus/nmt_train/progress.py", 13, "GS302"): "the docs report a progress bar's own counter besides GS505",
    # the same shape (retire13): `CountingBar` is handed to `CFGPipeline(..., progress=bar)` and
    # kept as `self.pbar`; since objects given to a constructor are followed, the region's
    # `self.pbar.update(1)` (labelled GS505) runs `self.n += k`, which GS302's docs report too.
    # The runner file carries no labels.
    ("corpus/cfg_sampler/run.py", 24, "GS302"): "the docs report a progress bar's own counter besides GS505",
}


def is_heldout(program: Path) -> bool:
    """Held-out programs measure precision/recall honestly: rules are never tuned on them, so
    their labels are not required to match exactly (their snapshot still guards regressions)."""
    return program.name.startswith("heldout_")


def labels(program: Path) -> set[tuple[str, int, str]]:
    found = set()
    for path in _labelled_files(program):
        rel = path.relative_to(ROOT).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            m = LABEL.search(line)
            if m:
                for code in m.group(1).split(","):
                    found.add((rel, number, code.strip()))
    return found


def check(program: Path):
    """`graphsafe check corpus/<name>` from the repository root, analysed once per process for
    the program's current files (the label and the snapshot tests read the same result)."""
    files = tuple((p, p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(program.rglob("*")) if p.is_file())
    key = (program, files)
    if key not in _CHECKED:
        settings = Settings(root=ROOT)
        _CHECKED.clear()  # one program's result at a time: the tests of a program run one after another
        _CHECKED[key] = check_paths([program.relative_to(ROOT)], settings, use_cache=False, jobs=1)
    return _CHECKED[key]


_CHECKED: dict = {}


def reported(program: Path) -> set[tuple[str, int, str]]:
    """(file, line, code) of every use reported: a grouped hazard's other uses are labelled too."""
    return {(Path(d.path).as_posix(), d.start.line, d.code) for d in each_use(check(program).diagnostics)}


def implemented(items: set[tuple[str, int, str]]) -> set[tuple[str, int, str]]:
    return {item for item in items if item[2] in BY_CODE}


def snapshot_text(program: Path) -> str:
    return format_text(check(program).diagnostics)


def main(argv: list[str]) -> int:
    import os

    os.chdir(ROOT)
    if "--update" not in argv:
        print(__doc__)
        return 2
    for program in programs():
        (program / SNAPSHOT).write_text(snapshot_text(program), encoding="utf-8")
        print(f"wrote {program.relative_to(ROOT)}/{SNAPSHOT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
