"""Host draws: calls whose value is new on every call (Python's and numpy's random numbers, the
clock, uuids). Inside a region each runs once, at capture (GS502 reports the call), and a number
computed from one is a per-step value wherever it enters device work (GS301)."""

from __future__ import annotations

import libcst as cst

HOST_RNG_FACTORIES = frozenset(
    """random.Random random.SystemRandom numpy.random.default_rng numpy.random.RandomState
    numpy.random.Generator""".split()
)

TIME_FUNCTIONS = frozenset(
    """time.time time.time_ns time.perf_counter time.perf_counter_ns time.monotonic
    time.monotonic_ns time.process_time time.process_time_ns time.thread_time timeit.default_timer
    datetime.datetime.now datetime.datetime.utcnow datetime.datetime.today datetime.date.today
    uuid.uuid1 uuid.uuid4 os.urandom""".split()
)
# Seeding is GS602; building an RNG object draws nothing (its draws are reported).
NOT_DRAWS = frozenset(
    """random.seed random.getstate random.setstate numpy.random.seed numpy.random.get_state
    numpy.random.set_state numpy.random.SeedSequence numpy.random.PCG64 numpy.random.MT19937
    numpy.random.Philox numpy.random.SFC64 numpy.random.BitGenerator""".split()
) | HOST_RNG_FACTORIES


def is_host_draw(name: str | None) -> bool:
    """Is the resolved dotted `name` a host draw (`numpy.random.beta`, `random.random`, `time.time`)?"""
    return name is not None and name not in NOT_DRAWS and (
        name.startswith(("random.", "numpy.random.")) or name in TIME_FUNCTIONS)


# numpy draws whose positional arguments are a shape (`np.random.rand(3, 4)`) and Python's that
# give a sequence or nothing
_SHAPED_BY_POSITION = frozenset("rand randn random random_sample ranf sample".split())
_NOT_NUMBERS = frozenset("random.sample random.choices random.shuffle numpy.random.shuffle numpy.random.permutation".split())


def draws_a_number(name: str | None, call, none_defaults: frozenset[str] = frozenset()) -> bool:
    """Is the call `name(...)` a host draw of one number (`np.random.beta(a, a)`, `random.random()`,
    `time.time()`), not an array of them (`size=`, `np.random.rand(8)`, `np.random.randint(0, n, 8)`)?
    `size=count` of a parameter in `none_defaults` (`count=None`) draws one number as written."""
    if not is_host_draw(name) or name in _NOT_NUMBERS:
        return False
    if not name.startswith("numpy.random."):
        return True
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "size":
            value = arg.value
            return type(value) is cst.Name and (value.value == "None" or value.value in none_defaults)
    positional = sum(1 for arg in call.args if arg.keyword is None)
    short = name.rpartition(".")[2]
    if short in _SHAPED_BY_POSITION:
        return positional == 0
    return positional <= (2 if short != "choice" else 1)
