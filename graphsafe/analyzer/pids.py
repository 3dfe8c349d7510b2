"""Pending ids: the names the per-file walk gives values whose kind only the project knows.

Plain constants, shared by the walker, the return-kind solver (returns.py), the call graph
(callgraph.py) and run-time facts, so that none of them imports another for a prefix.
"""

ARG_PID = "arg:"  # pending id of a parameter: `arg:<function key>:<parameter name>`
# pending id asking whether a function of another file uses a parameter as a tensor, so that
# what is passed there is one: `uses:<dotted function>:<position or keyword>` (delegated_use.py)
USES_PID = "uses:"
FIELD_PID = "field:"  # pending id of an attribute of an instance: `field:<class>|<class>:<attribute>`
# pending id of an attribute of what a project call returns: `rfield:<attribute>|<call's pid>`
RETURNED_FIELD_PID = "rfield:"
# suffix of a wanted id that asks for the class of object a call returns (`O:cls`, `M:cls`
# slots, from return annotations): for the call graph, never for tensor kinds
OBJECT_PID = "!obj"
# an argument or return slot holding a function (`F:<dotted key>`): calling the value runs it
FUNCTION_SLOT = "F:"
# suffix of the pending id of an element of what the id names (`for m in batch_mask`, with
# `batch_mask` pending): rows of a tensor are tensors, of a mask masks; anything else unknown
ELEMENT = "#*"
# joins the pending ids of the operands of arithmetic or a comparison (`kinetic(r) + pe`): the
# result is a tensor when any one of them is, so each must be asked about, not only the first
EITHER = "||"


def either(*pids: str | None) -> str | None:
    """One pending id for values any one of which makes a tensor (None where none is pending)."""
    found = list(dict.fromkeys(p for pid in pids if pid is not None for p in pid.split(EITHER)))
    return EITHER.join(found) if found else None
