"""Attributes a class reads on `self` but never sets: what a base class in another file holds.

Per-step values cross files through inheritance: a base class of the project advances a
number (`self.progress_remaining = 1.0 - done / total` before each training call) that a
subclass in another file reads in its region (`self.clip_range(self.progress_remaining)`).
The file cannot see the base, so such a read is a source decided project-wide, on the
(class, attribute) pair (callgraph.attr_is_varying follows the bases).
"""

from __future__ import annotations


def inherited_attr(class_key: str, attr: str, walker) -> bool:
    """Is `self.<attr>` in class `class_key` (of the file `walker` walks) neither set nor
    defined by the class itself, the class having a project base class in another file?"""
    return (class_key in walker._foreign_based
            and attr not in walker.class_attr_kinds.get(class_key, ())
            and f"{class_key}.{attr}" not in walker._class_methods)
