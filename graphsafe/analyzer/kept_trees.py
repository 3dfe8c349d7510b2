"""Syntax trees of a first walk, kept for the second walk of the same file (returns.refine).

A file whose walk asked for other files' return kinds (`FileFacts.wanted`) is walked again
once the project knows them; parsing is ~60% of a walk, and the second walk parses the same
text. Where both walks run in this process (`--jobs 1`, few files), the first walk's tree
serves the second: a libcst tree is immutable and the walk reads it only. Trees cost ~70
bytes per source byte (measured on a 110 kB diffusers pipeline: 7.8 MB), so they are kept
up to a budget of source characters and only for files that may be walked again. A text the
CLI walks in a child process (limits.isolated: over 64 kB or deeply nested) keeps nothing: its
tree stays in the child, and its second walk parses again.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

# ~70 bytes of tree per source character: 6 M characters of source hold ~420 MB of trees
KEPT_SOURCE_CHARS = 6_000_000
# A large file's tree sets the memory peak (engine._BIG_FILE): not kept
LARGEST_KEPT = 200 * 1024


class KeptTrees:
    """Trees by file index: `keeping(i)` parses and keeps, `reusing(i)` hands the kept tree
    back (and forgets it) when the text is the one it was parsed from, else parses."""

    def __init__(self, budget_chars: int = KEPT_SOURCE_CHARS) -> None:
        self._budget = budget_chars
        self._used = 0
        self._trees: dict[int, tuple[str, cst.Module]] = {}

    def keeping(self, index: int) -> Callable[[str], cst.Module]:
        return _Keeping(self, index)

    def reusing(self, index: int) -> Callable[[str], cst.Module]:
        return _Reusing(self, index)

    def drop(self, index: int) -> None:
        """Forget the tree of a file that will not be walked again."""
        kept = self._trees.pop(index, None)
        if kept is not None:
            self._used -= len(kept[0])

    def clear(self) -> None:
        self._trees.clear()
        self._used = 0

    def __contains__(self, index: int) -> bool:
        return index in self._trees


class _Parser:
    """A parse function tied to one file's kept tree. Sent to a child process (a text the CLI
    analyses in isolation, limits.isolated) it is libcst's parser: the tree stays there."""

    def __init__(self, trees: KeptTrees, index: int) -> None:
        self.trees, self.index = trees, index

    def __reduce__(self):
        return _libcst_parser, ()


class _Keeping(_Parser):
    def __call__(self, text: str) -> cst.Module:
        tree = cst.parse_module(text)
        trees = self.trees
        if len(text) <= LARGEST_KEPT and trees._used + len(text) <= trees._budget and self.index not in trees._trees:
            trees._trees[self.index] = (text, tree)
            trees._used += len(text)
        return tree


class _Reusing(_Parser):
    def __call__(self, text: str) -> cst.Module:
        kept = self.trees._trees.get(self.index)
        if kept is not None and kept[0] == text:  # the file may have changed in between
            self.trees.drop(self.index)  # freed as soon as its walk ends
            return kept[1]
        return cst.parse_module(text)


def _libcst_parser() -> Callable[[str], cst.Module]:
    return cst.parse_module
