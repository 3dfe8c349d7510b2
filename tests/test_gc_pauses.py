"""The cycle collector's pauses: around one file's walk, and around a project's lasting facts."""

from __future__ import annotations

import gc
import threading

from graphsafe.analyzer.parsing import lasting_objects, no_cyclic_gc


def test_lasting_objects_are_frozen_and_the_collector_resumes():
    gc.unfreeze()
    try:
        with lasting_objects():
            assert not gc.isenabled()
            made = [[i] for i in range(1000)]  # lists are tracked by the collector
        assert gc.isenabled()
        assert gc.get_freeze_count() >= len(made)  # later collections never traverse them
    finally:
        gc.unfreeze()


def test_a_paused_collector_stays_paused_and_nothing_is_frozen():
    gc.unfreeze()
    with no_cyclic_gc():
        with lasting_objects():
            made = [[i] for i in range(100)]
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    assert gc.isenabled() and made


def test_without_freeze_the_collector_only_pauses():
    gc.unfreeze()
    with lasting_objects(freeze=False):
        assert not gc.isenabled()
        made = [[i] for i in range(100)]
    assert gc.isenabled() and gc.get_freeze_count() == 0 and made


def test_an_in_process_index_freezes_nothing(tmp_path):
    # The language server indexes small projects in its own process; it freezes its index
    # itself after a full collection, so collecting facts there must leave gc.freeze alone.
    from graphsafe.lsp.index import IndexJob

    (tmp_path / "step.py").write_text("def step(x):\n    return x.item()\n")
    gc.unfreeze()
    try:
        facts = IndexJob([tmp_path / "step.py"], tmp_path, None, jobs=1).run(threading.Event())
        assert list(facts) == [str(tmp_path / "step.py")]
        assert gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
