"""Score `graphsafe check` against labelled lines of real PyPI packages.

    python bench/real/score.py                 # development part (the default)
    python bench/real/score.py --part test     # the held-out part: once per change, see README
    python bench/real/score.py --part all --json out.json --show-misses

For each package in bench/real/labels/*.jsonl: download its pinned wheel with pip (hash checked),
unpack it into a cache directory, verify every label's line text, run `graphsafe check` on the
package with the labelled regions, and compare the diagnostics with the labels by kind. The
package's own dependencies (pinned in deps.lock.json) are unpacked into a scratch site that check
searches for libraries (`--no-deps`: without them). See bench/real/README.md for the labels, the
protocol and how matches are counted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))  # loaded by path (tests, differential.py): its sibling modules

import deps  # noqa: E402
KINDS = ("sync", "branch", "scalar", "alloc", "cpu_effect", "rng", "config", "stream")


def kinds_of(code: str) -> frozenset[str]:
    """The label kinds a rule code answers for (GS302 counters and GS502 host randomness sit
    between two kinds, so either label is matched by them; GS703 is a configuration rule whose
    hazard is a host read: `GradScaler.step` waits for `found_inf`; GS107 and GS108 report ops
    whose output shape depends on the data, which both wait for the GPU and change shape
    between steps, the brief's sync and alloc)."""
    special = {"GS302": {"scalar", "cpu_effect"}, "GS502": {"cpu_effect", "rng"}, "GS703": {"config", "sync"},
               "GS107": {"sync", "alloc"}, "GS108": {"sync", "alloc"}}
    if code in special:
        return frozenset(special[code])
    family = {"GS1": "sync", "GS2": "branch", "GS3": "scalar", "GS4": "alloc", "GS5": "cpu_effect",
              "GS6": "rng", "GS7": "config", "GS8": "config", "GS9": "stream"}.get(code[:3])
    return frozenset({family}) if family else frozenset()


@dataclass
class Package:
    name: str
    version: str
    wheel: str
    sha256: str
    labels: list[dict] = field(default_factory=list)

    @property
    def regions(self) -> list[str]:
        return sorted({label["region"] for label in self.labels})


def load_labels(labels_dir: Path) -> dict[str, Package]:
    packages: dict[str, Package] = {}
    for path in sorted(labels_dir.glob("*.jsonl")):
        for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not raw.strip():
                continue
            label = json.loads(raw)
            pin = (label["version"], label["wheel"], label["sha256"])
            package = packages.setdefault(label["package"], Package(label["package"], *pin))
            if (package.version, package.wheel, package.sha256) != pin:
                raise SystemExit(f"{path.name}:{number}: {label['package']} pinned twice ({pin} vs {package.version})")
            package.labels.append(label)
    return packages


def packages_of(part: str) -> dict[str, Package]:
    """The labelled packages of a part of split.json (`all`: every one), by name."""
    packages = load_labels(HERE / "labels")
    if part == "all":
        return packages
    split = json.loads((HERE / "split.json").read_text())
    return {name: packages[name] for name in sorted(packages) if name in split[part]}


def fetch(package: Package, cache: Path) -> Path:
    """Download the pinned wheel (pip checks the hash), unpack it once; returns the source root.
    A package that PyPI ships only as a source archive (`*.tar.gz`, e.g. encodec) is downloaded
    the same way, and its root is the archive's top folder."""
    sdist = package.wheel.endswith(".tar.gz")
    archive = download_pinned(package.name, package.version, package.sha256, cache / "wheels", sdist=sdist)
    if archive.name != package.wheel:
        raise SystemExit(f"{package.name}: pip produced {archive.name}, the labels pin {package.wheel}")
    root = cache / "src" / f"{package.name}-{package.version}"
    stamp = root / ".unpacked-from"
    if not (stamp.is_file() and stamp.read_text() == package.sha256):
        root.mkdir(parents=True, exist_ok=True)
        if sdist:
            with tarfile.open(archive) as tar:
                tar.extractall(root, filter="data")
        else:
            with zipfile.ZipFile(archive) as zipped:
                zipped.extractall(root)
        # An empty project file: graphsafe must not pick up any configuration above the cache.
        (source_root(root, package) / "pyproject.toml").write_text("")
        stamp.write_text(package.sha256)
    return source_root(root, package)


def download_pinned(name: str, version: str, sha256: str, archives: Path, *, sdist: bool = False,
                    pip_options: tuple[str, ...] = ()) -> Path:
    """The archive of `name==version` whose SHA-256 is `sha256`, downloaded with pip into
    `archives` (`--require-hashes`) unless a file there already has that hash. `pip_options`
    pick another interpreter or platform (`--python-version 3.12 --platform ...`)."""
    found = _archive_with_hash(archives, name, sha256)
    if found is not None:
        return found
    archives.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
        req.write(f"{name}=={version} --hash=sha256:{sha256}\n")
    binary = "--no-binary=:all:" if sdist else "--only-binary=:all:"
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", binary, *pip_options,
                               "--require-hashes", "-r", req.name, "-d", str(archives)], capture_output=True, text=True)
    finally:
        os.unlink(req.name)
    if done.returncode != 0:
        raise deps.DownloadFailed(f"{name} {version}: pip could not download the archive pinned to sha256 {sha256} "
                                  f"({deps._last_error(done.stderr)})")
    found = _archive_with_hash(archives, name, sha256)
    if found is None:
        raise deps.DownloadFailed(f"{name} {version}: pip left no archive with sha256 {sha256} in {archives}")
    return found


def _archive_with_hash(archives: Path, name: str, sha256: str) -> Path | None:
    """A file of `archives` named for the project `name` (any of its spellings) with that hash."""
    prefix = re.sub(r"[-_.]+", "_", name).lower() + "-"
    for path in sorted(archives.glob("*")) if archives.is_dir() else ():
        if (path.is_file() and re.sub(r"[-_.]+", "_", path.name.split("-")[0]).lower() + "-" == prefix
                and hashlib.sha256(path.read_bytes()).hexdigest() == sha256):
            return path
    return None


def source_root(root: Path, package: Package) -> Path:
    top = root / package.wheel.removesuffix(".tar.gz")
    return top if package.wheel.endswith(".tar.gz") else root


def verify(package: Package, root: Path) -> list[str]:
    problems = []
    lines: dict[str, list[str]] = {}
    for label in package.labels:
        path = label["path"]
        if path not in lines:
            try:
                lines[path] = (root / path).read_text(encoding="utf-8").splitlines()
            except OSError as error:
                problems.append(f"{package.name}: {path}: {error}")
                lines[path] = []
        text = lines[path][label["line"] - 1].strip() if 0 < label["line"] <= len(lines[path]) else None
        if text != label["text"]:
            problems.append(f"{package.name}: {path}:{label['line']}: label says {label['text']!r}, wheel has {text!r}")
    return problems


def default_cache() -> Path:
    return Path(os.environ.get("GS_REAL_CACHE", Path.home() / ".cache/graphsafe-real"))


def resolve_dependencies(package: Package, cache: Path, depth: int = 1) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Pins for the package's dependencies, chosen now (network), and why any could not be: see deps.resolve."""
    archive = download_pinned(package.name, package.version, package.sha256, cache / "wheels",
                              sdist=package.wheel.endswith(".tar.gz"))
    return deps.resolve(archive, cache / "deps" / "wheels", depth)


def download_dependency(name: str, version: str, sha256: str, folder: Path) -> Path:
    return download_pinned(name, version, sha256, folder, pip_options=(*deps.PIP_TARGET, *deps.PIP_PATIENCE))


def dependency_site(package: Package, cache: Path, lock: dict, refresh: bool,
                    download: deps.Downloader = download_dependency) -> tuple[Path | None, list[str]]:
    """The scratch site with the package's locked dependencies, and notes on what could not be had.
    They are resolved first when `refresh` or when the lock has no entry for the package; a new
    entry is kept only if every dependency was resolved, and a refresh keeps the old pin of one
    it could not resolve (an offline refresh changes nothing). Never raises for the network."""
    notes: list[str] = []
    old = lock.get(package.name)
    pins = old
    if refresh or old is None:
        try:
            pins, failed = resolve_dependencies(package, cache)
        except deps.DownloadFailed as error:
            pins, failed = None, {"": str(error)}
        notes += [f"{package.name}: dependency not resolved: {why}" for why in failed.values()]
        if pins is None:
            pins = old or {}
        else:
            pins.update({dep: pin for dep, pin in (old or {}).items() if dep in failed})
            if refresh or not failed:
                lock[package.name] = pins
    site, missing = deps.scratch_site(package.name, pins, cache, download)
    notes += missing
    if site is None and pins:
        notes.append(f"{package.name}: no dependency could be had; checked without them")
    return site, notes


def loop_regions() -> dict[str, dict[str, list[int]]]:
    """Loops a labeller declared as the captured step (one pass of a decode or sampling loop),
    by package and file: bench/real/loop_regions.json."""
    path = HERE / "loop_regions.json"
    return json.loads(path.read_text())["packages"] if path.is_file() else {}


def with_loop_marks(root: Path, loops: dict[str, list[int]], scratch: Path) -> Path:
    """A copy of the package's sources under `scratch` with `# graphsafe: region` on the header
    line of each declared loop, as a user marks the loop whose body they capture (a trailing
    comment: no line moves). A declared line that is not a loop header stops the run."""
    import shutil

    copy = scratch / root.name
    shutil.copytree(root, copy, symlinks=True)
    for relative, lines in loops.items():
        path = copy / relative
        text = path.read_text(encoding="utf-8").split("\n")
        for line in lines:
            header = text[line - 1].rstrip() if 0 < line <= len(text) else ""
            if not (header.lstrip().startswith(("for ", "while ")) and header.endswith(":")):
                raise SystemExit(f"loop_regions.json: {relative}:{line} is not a one-line loop header: {header!r}")
            text[line - 1] = header + "  # graphsafe: region"
        path.write_text("\n".join(text), encoding="utf-8")
    return copy


def loop_functions(root: Path, loops: dict[str, list[int]]) -> set[str]:
    """`path::Class.method` of each function holding a declared loop: the loop's body is the
    region (one pass replayed), the code around it runs eagerly once, so the function itself
    is no region root."""
    import ast

    found = set()
    for relative, lines in loops.items():
        tree = ast.parse((root / relative).read_text(encoding="utf-8"))
        stack = [(tree, "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    stack.append((child, f"{prefix}{child.name}."))
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    own = [n for n in ast.walk(child) if isinstance(n, (ast.For, ast.While)) and n.lineno in lines]
                    if own:
                        found.add(f"{relative}::{prefix}{child.name}")
                    stack.append((child, f"{prefix}{child.name}."))
    return found


def run_check(package: Package, root: Path, jobs: int | None, unmatched: list[str],
              facts: Path | None = None, site: Path | None = None, skip: set[str] = frozenset()) -> list[dict]:
    """`graphsafe check` with the labelled regions, searching `site` (the package's dependencies)
    first for libraries. A region graphsafe finds no function for (an inherited method named on
    the subclass's file, say) is an error for the CLI: it is dropped, noted in `unmatched`, and
    its labels count as missed. `skip`: regions left out (functions whose declared loop is the region)."""
    regions = [r for r in package.regions if r not in skip]
    while True:
        command = [sys.executable, "-m", "graphsafe", "check", ".", "--format", "json", "--no-cache", "--exit-zero"]
        for region in regions:
            command += ["--region", region]
        if jobs:
            command += ["--jobs", str(jobs)]
        if facts is not None:
            command += ["--facts", str(facts)]  # what a traced run of the package's steps saw
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, env=deps.library_env(site, os.environ))
        found = re.search(r"--region pattern `([^`]+)` matches no function", done.stderr)
        if done.returncode == 2 and found and found.group(1) in regions:
            regions.remove(found.group(1))
            unmatched.append(f"{package.name} {found.group(1)}")
            continue
        break
    if done.returncode not in (0, 3):
        raise SystemExit(f"{package.name}: graphsafe check failed ({done.returncode}):\n{done.stderr[-2000:]}")
    diagnostics = json.loads(done.stdout or "[]")
    for d in diagnostics:
        d["relpath"] = (root / d["filename"]).resolve().relative_to(root.resolve()).as_posix()
    return diagnostics


@dataclass
class Tally:
    tp: int = 0       # positives found
    fn: int = 0       # positives missed
    fp: int = 0       # flags on labelled lines with no positive of that kind (a look-alike flagged)
    cross: int = 0    # flags on a line whose positives are of other kinds only (not counted either way)
    outside: int = 0  # flags on lines nobody labelled

    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    def precision(self, flagged_true: int) -> float | None:
        return flagged_true / (flagged_true + self.fp) if flagged_true + self.fp else None


def score(package: Package, diagnostics: list[dict], tallies: dict[str, Tally], flagged_true: dict[str, int],
          misses: list[str], false_alarms: list[str], outside: list[str]) -> None:
    flags: dict[tuple[str, int], set[str]] = defaultdict(set)
    codes: dict[tuple[str, int, str], str] = {}
    for d in diagnostics:
        rows = [d["location"]["row"], *(use["location"]["row"] for use in d.get("also", ()))]  # a hazard's every use
        for kind in kinds_of(d["code"]):
            for row in rows:
                key = (d["relpath"], row)
                flags[key].add(kind)
                codes.setdefault((*key, kind), d["code"])
    labelled: dict[tuple[str, int], list[dict]] = defaultdict(list)
    positive_lines: dict[tuple[str, int, str], bool] = {}
    for label in package.labels:
        labelled[(label["path"], label["line"])].append(label)
        if label["label"] == "positive":
            for line in [label["line"], *label.get("alt_lines", [])]:
                positive_lines[(label["path"], line, label["kind"])] = True
    # Recall: a positive is found when its kind is flagged on its line or one of its alternative lines.
    for label in package.labels:
        if label["label"] != "positive":
            continue
        lines = [label["line"], *label.get("alt_lines", [])]
        if any(label["kind"] in flags.get((label["path"], line), ()) for line in lines):
            tallies[label["kind"]].tp += 1
        else:
            tallies[label["kind"]].fn += 1
            misses.append(f"{package.name} {label['path']}:{label['line']} {label['kind']}: {label['text']}  # {label['reason']}")
    # Precision: every flagged (line, kind) that is labelled or is an alternative line of a positive.
    for (path, line), kinds in sorted(flags.items()):
        for kind in sorted(kinds):
            if positive_lines.get((path, line, kind)):
                flagged_true[kind] += 1
            elif (path, line) in labelled:
                if any(l["label"] == "positive" for l in labelled[(path, line)]):
                    tallies[kind].cross += 1
                else:
                    tallies[kind].fp += 1
                    text = labelled[(path, line)][0]["text"]
                    false_alarms.append(f"{package.name} {path}:{line} {codes[(path, line, kind)]} ({kind}): {text}")
            else:
                tallies[kind].outside += 1
                outside.append(f"{package.name} {path}:{line} {codes[(path, line, kind)]} ({kind})")


def table(tallies: dict[str, Tally], flagged_true: dict[str, int], positives: dict[str, int],
          negatives: dict[str, int]) -> str:
    fmt = lambda v: "  –  " if v is None else f"{v:5.2f}"  # noqa: E731
    rows = ["| kind | positives | negatives | found | missed | recall | look-alikes flagged | precision | cross-kind | outside labels |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    total = Tally()
    total_true = 0
    for kind in KINDS:
        t = tallies[kind]
        rows.append(f"| {kind} | {positives[kind]} | {negatives[kind]} | {t.tp} | {t.fn} | {fmt(t.recall())} | {t.fp} | "
                    f"{fmt(t.precision(flagged_true[kind]))} | {t.cross} | {t.outside} |")
        for name in ("tp", "fn", "fp", "cross", "outside"):
            setattr(total, name, getattr(total, name) + getattr(t, name))
        total_true += flagged_true[kind]
    rows.append(f"| **all** | {sum(positives.values())} | {sum(negatives.values())} | {total.tp} | {total.fn} | "
                f"{fmt(total.recall())} | {total.fp} | {fmt(total.precision(total_true))} | {total.cross} | {total.outside} |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("dev", "test", "all"), default="dev")
    parser.add_argument("--packages", help="comma-separated package names (within the part)")
    parser.add_argument("--cache", type=Path, default=default_cache())
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--json", type=Path, help="also write the figures and lists as JSON")
    parser.add_argument("--show-misses", action="store_true", help="list missed positives and flagged look-alikes")
    parser.add_argument("--show-outside", action="store_true", help="list flags on lines nobody labelled")
    parser.add_argument("--no-borderline", action="store_true",
                        help="score only the labels both labellers found clear (borderline ones left out)")
    parser.add_argument("--verify-only", action="store_true", help="download and verify the labels, run nothing")
    parser.add_argument("--facts-dir", type=Path, help="check with the run-time facts DIR/<package>.json where one "
                                                       "exists (written by bench/real/facts_from_steps.py)")
    parser.add_argument("--no-deps", action="store_true", help="check without each package's dependencies "
                                                              "(only what this interpreter has installed)")
    parser.add_argument("--resolve-deps", action="store_true", help="choose the dependencies' versions anew "
                                                                   "(network) and rewrite deps.lock.json for these packages")
    args = parser.parse_args()

    packages = load_labels(HERE / "labels")
    split = json.loads((HERE / "split.json").read_text())
    unsplit = set(packages) - set(split["dev"]) - set(split["test"])
    if unsplit:
        raise SystemExit(f"packages in neither part of split.json: {sorted(unsplit)}")
    chosen = sorted(packages) if args.part == "all" else sorted(p for p in packages if p in split[args.part])
    if args.packages:
        wanted = set(args.packages.split(","))
        chosen = [p for p in chosen if p in wanted]
    if args.part != "dev":
        print("note: the test part is measured once per change and never used to choose what to fix (README).\n")

    tallies: dict[str, Tally] = defaultdict(Tally)
    flagged_true: dict[str, int] = defaultdict(int)
    positives: dict[str, int] = defaultdict(int)
    negatives: dict[str, int] = defaultdict(int)
    misses: list[str] = []
    false_alarms: list[str] = []
    outside: list[str] = []
    problems: list[str] = []
    unmatched: list[str] = []
    per_package = {}
    lock = deps.read_lock() if not args.no_deps else {}
    locked = json.dumps(lock, sort_keys=True)
    dep_notes: list[str] = []
    loops = loop_regions()
    for name in chosen:
        package = packages[name]
        root = fetch(package, args.cache)
        problems += verify(package, root)
        if args.no_borderline:
            package.labels = [label for label in package.labels if not label["borderline"]]
        for label in package.labels:
            (positives if label["label"] == "positive" else negatives)[label["kind"]] += 1
        per_package[name] = {"version": package.version, "labels": len(package.labels),
                             "positives": sum(l["label"] == "positive" for l in package.labels),
                             "regions": package.regions}
        if args.verify_only or problems:
            continue
        site = None
        if not args.no_deps:
            site, notes = dependency_site(package, args.cache, lock, args.resolve_deps)
            dep_notes += notes
            per_package[name]["dependencies"] = {d: p["version"] for d, p in lock.get(name, {}).items()}
        facts = args.facts_dir / f"{name}.json" if args.facts_dir else None
        with tempfile.TemporaryDirectory() as scratch:
            checked = with_loop_marks(root, loops[name], Path(scratch)) if name in loops else root
            skip = loop_functions(root, loops[name]) if name in loops else set()
            diagnostics = run_check(package, checked, args.jobs, unmatched, facts if facts and facts.is_file() else None,
                                    site, skip)
        per_package[name]["diagnostics"] = len(diagnostics)
        per_package[name]["gs000"] = sum(d["code"] == "GS000" for d in diagnostics)
        score(package, diagnostics, tallies, flagged_true, misses, false_alarms, outside)
    if problems:
        print("\n".join(problems))
        print(f"\n{len(problems)} labels do not match their wheels")
        return 1
    print(f"part: {args.part}{' (borderline labels left out)' if args.no_borderline else ''}; packages: {', '.join(f'{n} {packages[n].version}' for n in chosen)}")
    print(f"labels: {sum(positives.values())} positives, {sum(negatives.values())} negatives")
    if json.dumps(lock, sort_keys=True) != locked:
        deps.write_lock({**deps.read_lock(), **lock})
        print(f"dependency versions written to {deps.LOCK.relative_to(HERE.parent.parent)}")
    print("dependencies: " + ("not searched (--no-deps)" if args.no_deps else
                              f"each package's own, from {deps.LOCK.name}, searched first (GRAPHSAFE_LIBRARY_PATH)"))
    for note in dep_notes:
        print(f"note: {note}")
    if args.verify_only:
        print("verified: every label's text matches its wheel")
        return 0
    print()
    print(table(tallies, flagged_true, positives, negatives))
    if unmatched:
        print("\nregions graphsafe found no function for (their labels count as missed):\n  " + "\n  ".join(unmatched))
    gs000 = sum(p.get("gs000", 0) for p in per_package.values())
    if gs000:
        print(f"\nGS000 (files not analysed): {gs000}")
    if args.show_misses:
        print("\nmissed positives:\n  " + "\n  ".join(misses or ["none"]))
        print("\nflagged look-alikes:\n  " + "\n  ".join(false_alarms or ["none"]))
    if args.show_outside:
        print("\nflags on unlabelled lines:\n  " + "\n  ".join(outside or ["none"]))
    if args.json:
        figures = {kind: {**vars(tallies[kind]), "flagged_true": flagged_true[kind], "positives": positives[kind],
                          "negatives": negatives[kind]} for kind in KINDS}
        args.json.write_text(json.dumps({"part": args.part, "packages": per_package, "kinds": figures,
                                         "unmatched_regions": unmatched, "misses": misses, "false_alarms": false_alarms, "outside": outside}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
