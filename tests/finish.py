"""Hand-finished corpus programs: what a user still edits after `graphsafe fix --unsafe-fixes`.

`fix` applies only rewrites that keep eager semantics (or documented unsafe ones). What it leaves
(a Python counter that must become a device tensor, a log call that must leave the step, a
data-dependent shape that needs a fixed capacity) is restructuring a user does by hand, guided by
each diagnostic's rule text. A corpus program's `finish.diff` records those hand edits, applied on
top of `fix --unsafe-fixes`; tests/test_corpus_finish.py proves the result is check-clean and
computes the original's numbers on CPU, and bench/bench_corpus_capture.py (variant `finished`)
proves on a GPU that its step captures and replays equal to eager.

    python -m tests.finish --prepare NAME DIR   # DIR/corpus/NAME = original + fixes + finish.diff
    (edit the files under DIR/corpus/NAME)
    python -m tests.finish --record NAME DIR    # corpus/NAME/finish.diff = your edits
"""

from __future__ import annotations

import difflib
import re
import shutil
import sys
from pathlib import Path

from tests import golden_fix
from tests.golden import CORPUS

FINISH = "finish.diff"
# Programs that reach a capturable step through `graphsafe graph` alone, with no hand edit (their
# finish.diff is gone): the region `graph` splits (bench/graph_path.py --region, on a GPU).
GRAPHED = {"beam_search": "BeamSearch.beam_step", "decode_loop": "decode_step", "diffusion_sampler": "Sampler.denoise_step",
           "moe_router": "MoEModel.forward",
           "rl_policy": "Agent.act", "speech_eval": "eval_step", "train_loop": "Trainer.train_step"}
# Files of a program that are not part of its code (snapshots, goldens, the finish diff itself).
NOT_CODE = ("__pycache__", "*.pyc", "*.txt", "*.diff")


def programs() -> list[Path]:
    return sorted(p.parent for p in CORPUS.glob(f"*/{FINISH}"))


def fixed_copy(program: Path, root: Path) -> Path:
    """root/corpus/<name>: the program with every fix of `graphsafe fix --unsafe-fixes` applied."""
    target = root / "corpus" / program.name
    shutil.copytree(program, target, ignore=shutil.ignore_patterns(*NOT_CODE))
    golden_fix.fix_diff(root, program.name, unsafe=True, write=True)
    return target


def finished_copy(program: Path, root: Path) -> Path:
    """root/corpus/<name>: the fixed program with the hand edits of its finish.diff applied."""
    target = fixed_copy(program, root)
    patch = program / FINISH
    if patch.exists():
        try:
            apply_patch(patch.read_text(encoding="utf-8"), root)
        except PatchError as error:
            raise AssertionError(f"{program.name}/{FINISH} does not apply on top of `fix --unsafe-fixes` "
                                 f"(re-record it): {error}") from None
    return target


def graphed_copy(program: Path, root: Path):
    """root/corpus/<name> after `graphsafe graph . --region GRAPHED[name]`, and graph's plan (what
    it split, rewrote and still lists as blocking capture)."""
    from graphsafe.config import Settings
    from graphsafe.graph_command import plan

    target = root / "corpus" / program.name
    shutil.copytree(program, target, ignore=shutil.ignore_patterns(*NOT_CODE))
    result = plan([target], Settings(root=target), GRAPHED[program.name], use_cache=False)
    for path, (_old, new) in result.changed.items():
        Path(path).write_bytes(new)
    return target, result


class PatchError(Exception):
    pass


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_patch(text: str, root: Path) -> None:
    """Apply a unified diff written by `record` under root, exactly: every context and removed line
    must match where the hunk says (no fuzz; the GPU machine has no git or patch to rely on)."""
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        if not lines[i].startswith("--- "):
            i += 1
            continue
        old, new = lines[i][4:].strip(), lines[i + 1][4:].strip()
        i += 2
        path = root / (new[2:] if new != "/dev/null" else old[2:])
        source = [] if old == "/dev/null" else path.read_text(encoding="utf-8").splitlines(keepends=True)
        result, at = [], 0
        while i < len(lines) and lines[i].startswith("@@"):
            m = _HUNK.match(lines[i])
            if not m:
                raise PatchError(f"bad hunk header {lines[i]!r}")
            start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
            result += source[at:start]
            at = start
            i += 1
            while i < len(lines) and lines[i][:1] in (" ", "-", "+"):
                if lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
                    break
                tag, body = lines[i][0], lines[i][1:]
                if tag in " -":
                    if at >= len(source) or source[at] != body:
                        raise PatchError(f"{path.name}:{at + 1}: expected {body!r}, found "
                                         f"{source[at] if at < len(source) else 'end of file'!r}")
                    at += 1
                if tag in " +":
                    result.append(body)
                i += 1
        result += source[at:]
        if new == "/dev/null":
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(result), encoding="utf-8")


def code_files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".txt", ".diff")}


def record(name: str, edited_root: Path, scratch: Path) -> str:
    """The diff from the fixed program to the edited one, with the goldens' a/ b/ headers."""
    program = CORPUS / name
    fixed = code_files(fixed_copy(program, scratch))
    edited = code_files(edited_root / "corpus" / name)
    chunks = []
    for rel in sorted(set(fixed) | set(edited)):
        before, after = fixed.get(rel, ""), edited.get(rel, "")
        if before != after:
            path = f"corpus/{name}/{rel}"
            chunks.extend(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                               f"a/{path}" if rel in fixed else "/dev/null",
                                               f"b/{path}" if rel in edited else "/dev/null"))
    return "".join(chunks)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("--prepare", "--record"):
        print(__doc__)
        return 2
    command, name, where = argv[0], argv[1], Path(argv[2]).resolve()
    if not (CORPUS / name).is_dir():
        print(f"no corpus program {name!r}")
        return 2
    if command == "--prepare":
        if (where / "corpus" / name).exists():
            print(f"{where / 'corpus' / name} exists: choose an empty folder")
            return 2
        print(finished_copy(CORPUS / name, where))
        return 0
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        text = record(name, where, Path(scratch))
    (CORPUS / name / FINISH).write_text(text, encoding="utf-8")
    print(f"wrote corpus/{name}/{FINISH} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
