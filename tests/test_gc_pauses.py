"""The cycle collector's pauses: around one file's walk, and around a project's lasting facts."""

from __future__ import annotations

import gc

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
