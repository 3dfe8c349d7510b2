"""A method's own imports decide what its names mean, even for names the class pre-pass (which
collects `self.x` kinds with the module's imports only) has already looked at."""

from __future__ import annotations

import textwrap

from tests.helpers import diagnostics

SHADOWED = textwrap.dedent('''\
    from helpers import item_of as read


    class Step:
        def __call__(self, x):  # graphsafe: region
            from torch import cuda as read
            self.total = read.synchronize()
            return x
    ''')


def test_a_method_import_shadows_the_module_import_in_self_assignments():
    [found] = diagnostics(SHADOWED)
    assert found.code == "GS106" and found.start.line == 7
    assert "`torch.cuda.synchronize()`" in found.message  # resolved through the method's import
