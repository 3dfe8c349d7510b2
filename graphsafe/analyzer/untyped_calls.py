"""Calls on an object of no known class: `self.memory.sample_batch(n)` where the user hands the
memory in, `helper.record_step(x)` on an unannotated parameter, `preprocessor.transform_input(obs)`
built by a config factory. Nothing in the code says which class the object has, but when the
method's name is distinctive (a few of the project's class hierarchies define it, and it is not a
name the objects of torch, numpy or Python answer to) the call runs one of those classes' methods.

The call graph follows such a call to the project's methods of that name (CallRef kind "untyped"),
of classes in different packages those nearest the calling code; a name that a followed library's
classes define too is not followed. The diagnostic's chain shows the call and the method taken.
"""

from __future__ import annotations

from graphsafe.analyzer.facts import CallRef

# More hierarchies than this defining the name (a base and the subclasses overriding it count
# once: they implement one interface): the name says too little about the object.
MAX_DEFINING_METHODS = 3
# More methods of the name than this in all (an interface many classes implement, a base
# method every adapter overrides): following them all would run most of the program.
MAX_IMPLEMENTATIONS = 8

# Methods that tensors, modules, optimizers, schedulers, distributions, containers, strings,
# files and loggers answer to: an unknown object called with one of these is as likely to be
# one of them as an instance of the project's class of the same method.
LIBRARY_METHOD_NAMES = frozenset(
    """forward backward step zero_grad state_dict load_state_dict parameters named_parameters
    buffers named_buffers modules named_modules children named_children train eval to cuda cpu
    half float double bfloat16 apply register_buffer register_parameter add_module
    register_forward_hook register_forward_pre_hook register_full_backward_hook requires_grad_
    add_param_group get_lr get_last_lr sample rsample log_prob entropy cdf icdf mean variance
    stddev expand get get_or keys values items pop popitem update setdefault clear copy append
    extend insert remove index count sort reverse add discard union intersection difference
    format join split strip lower upper replace startswith endswith encode decode read write
    readline close flush open seek tell info debug warning warn error exception critical log
    print item tolist numpy size dim view reshape sum max min abs all any round clone detach
    fill_ zero_ copy_ add_ mul_ sub_ div_ squeeze unsqueeze permute transpose contiguous flatten
    type_as new_zeros new_ones new_full new_empty masked_fill gather scatter index_select norm
    exp log sqrt pow matmul softmax long int bool repeat chunk cat stack argmax argmin topk
    record wait synchronize query put send recv start stop run call reset compute result type empty
    select set share_memory_
    __call__ __init__ __enter__ __exit__ __iter__ __next__ __len__ __getitem__ __setitem__""".split()
)


# Methods of Python's values (numbers, strings, containers), which tensor-ness reads as non-tensor
# values; a call of any other method on such a value shows it is an object after all.
_VALUE_METHODS = frozenset(name for kind in (int, float, complex, bool, str, bytes, tuple, list, dict, set)
                           for name in dir(kind))


def not_a_value_method(name: str) -> bool:
    """Whether no Python number, string or container has a method `name` (nor `torch.device`,
    `torch.dtype` or `torch.Size`, whose methods are those of tuples or a few of their own)."""
    return name not in _VALUE_METHODS and name not in ("type", "index", "is_floating_point", "is_complex",
                                                       "is_signed", "to_real", "to_complex", "numel")


def refs(name: str, module: str) -> list[CallRef]:
    """The call refs of `obj.name(...)` on an object of no known class, in code of `module` (none
    for a library name: `h.sum()` on an unknown `h` is left to tensor-ness)."""
    return [] if _library_name(name) else [CallRef("untyped", f"{module}::{name}")]


def _library_name(name: str) -> bool:
    """A name library objects answer to, or a special method: it says nothing of the object."""
    return name in LIBRARY_METHOD_NAMES or (name.startswith("__") and name.endswith("__"))


def distinctive(name: str, roots: list[str], defining: list[str]) -> bool:
    """Whether a call of `name` on an object of unknown class can be taken to run the project's
    `defining` methods of that name (`roots`: those no base class of theirs defines)."""
    return 0 < len(roots) <= MAX_DEFINING_METHODS and len(defining) <= MAX_IMPLEMENTATIONS and not _library_name(name)


def nearest(defining: list[str], near: str) -> list[str]:
    """Of the methods `defining`, those whose modules share the most package names with module
    `near` (`skrl.agents.torch.dqn` calls `skrl.models.torch.base`'s, not `skrl.models.jax.base`'s)."""
    parts = set(near.split("."))
    shared = {key: len(parts & set(key.split("."))) for key in defining}
    best = max(shared.values())
    return [key for key in defining if shared[key] == best]
