"""GS401: rebinding a tensor the graph reads, instead of copying into it."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from graphsafe.analyzer import step_loops, step_state
from graphsafe.analyzer.callgraph import REACHED_ANY, REBOUND_AFTER_REPLAY
from graphsafe.analyzer.nodes import children, is_number_literal, own_nodes
from graphsafe.analyzer.names import dotted
from graphsafe.analyzer.tensorness import CONCAT_FUNCTIONS, PARAM_TENSOR_METHODS
from graphsafe.model import Applicability, Consequence, Example, Principle
from graphsafe.rules.base import Callees, Rule


class _CarriedReported(set):
    """(loop unit, name) pairs already reported as carried (one diagnostic per name and loop)."""


@dataclass
class _Assignment:
    node: cst.CSTNode
    owner: str  # class key for `self.x`, function key for a local
    name: str
    function: str  # where the assignment is
    order: int
    in_init: bool
    place: object
    statement: cst.Assign


class StaticInputRebinding(Rule):
    """## What it does
    Flags binding a new tensor to a name or attribute that a captured graph reads
    (`static_x = batch`, `self.buf = f(self.buf)`), where an in-place copy
    (`static_x.copy_(batch)`) is needed.

    ## Why is this bad?
    A graph remembers the *addresses* of the tensors it read at capture. Binding a name to a
    new tensor does not change those addresses: on replay the graph keeps reading the old
    buffer (the new input is ignored, running statistics stop accumulating), with no error.

    ## Example
    ```python
    with torch.cuda.graph(g):
        out = model(static_x)
    for batch in loader:
        static_x = batch.cuda()
        g.replay()
    ```

    ## Use instead
    ```python
    for batch in loader:
        static_x.copy_(batch)
        g.replay()
    ```

    ## Fix safety
    Unsafe. `static.copy_(new)` computes the same values only when the new value has the
    buffer's shape, dtype and device and nothing else holds the old tensor, and none of that can
    be proven from the code: a value of another shape raises, except a smaller one that
    broadcasts, which is repeated; one of another dtype is cast to the buffer's dtype (a KV cache
    migrated with `self.k = self.k.to(k.dtype)` keeps its old dtype and the next `index_copy_`
    raises); a reference kept elsewhere (another module, a list, an optimizer) sees the new
    values where it saw the old ones. A conversion of the tensor itself (`self.mid =
    self.mid.to(device, dtype)`) gets no fix: `.copy_()` would keep the old dtype and device.
    The fix is offered only when the file binds the name to tensors and never to a number or
    None (`x.copy_` on those would raise), and, for state updated inside the region, when no
    reference to the old tensor can be kept (not in a loop; the attribute, or a view of it such
    as `old = self.buf[:, 0]`, not returned, bound to a name, put in a list or appended):
    `.copy_()` would change what such a reference sees; nor when the state is passed to a
    function outside torch (`self.trace = append_row(self.trace, x)`), which may return another
    shape. A rebinding between replays in another method gets no fix: such tables are often
    rebuilt at a new length.

    ## Precise semantics
    These cases are flagged:
    - outside the region, `static_x = new_batch` / `self.static_tokens = cur` for a tensor
      that a `torch.cuda.graph` block reads;
    - inside the region, `self.buf = f(self.buf)` for a tensor attribute (a buffer or running
      state) whose new value depends on the old one (a sliding window
      `torch.cat([self.buf[1:], x])` included). A buffer concatenated whole onto itself,
      `self.buf = torch.cat([self.buf, x])` (or `torch.stack`/`vstack`/`hstack`/`concat`/
      `concatenate`/`row_stack`/...), grows every step: that is GS404 only, not also GS401
      (one cause, one diagnostic);
    - inside the region, `self.prev = h` for an attribute the same method read above
      (`if self.prev is not None: h = h + self.prev`): state one step hands the next; not
      under a test of the attribute itself (`if self.cos is None: self.cos = make(n)`, a
      cache built on demand). The same for any place that outlives the call, an attribute or
      item of `self`, of a parameter or of a loop variable, bound to a new tensor after its old
      value is read (in the new value or above): `p.grad = torch.zeros_like(p.grad)`,
      `hyps.scores = scores` after `scores = hyps.scores + s`, `self.w.weight.data =
      torch.renorm(self.w.weight.data, ...)`, `self.center.data = self.center * m + c` (reading a
      tensor reads the storage its `.data =` replaces), a buffer registered again in a method
      that reads it (`self.register_buffer(name, getattr(self, name) * d + new * (1 - d))`),
      `x, state[i] = cell(x, state[i])` on a list,
      `self.n, self.mean = update(x, self.n, self.mean)` (an item of a tensor, `x[i] = v`, is
      written in place: not reported; GS503 leaves such a slot to GS401); `self.total +=
      t.sum()` where the class, or a base class in the file, starts `self.total` as a Python
      number (`self.total = 0` in `reset()`); and `self.prev = h` where
      another method reads `self.prev` before this one runs in a step (it calls this method
      after its read, or a method calls it first), when the region reaches that reader. A
      reader called after the rebinding (`self.x = x * 2` then `self.helper()`) reads this
      step's tensor: not reported. These get no fix;
    - in a loop region (`for ...:  # graphsafe: region`), `x = x + d * dt` for a tensor `x`
      bound before the loop that a pass reads before rebinding it: the next pass reads this
      pass's tensor, a graph of one pass the tensor of capture time. Reported once per name and
      loop, where the body first binds it to a tensor; not a name each pass binds before reading
      it, nor one bound to numbers. Also `running_loss += loss` there when the function starts
      `running_loss` as a number (`= 0`) and the body does not reset it on every pass: the
      first `+=` binds a new tensor the next pass reads;
    - outside the region, `self.sigmas = ...` in a method (`scheduler.set_timesteps()`) run
      from code that replays a graph (or from a driver that also calls a method that replays
      it: `session.reset(mask)` then `session.run()`), when captured code of the project reads
      that attribute (in any file, as `self.sigmas` or through an instance:
      `self.scheduler.sigmas`) and does not rebind it itself; not in `__init__`.

    Rebinding to a non-tensor (`self.buf = None`) is not reported, nor rebinding a name or
    attribute that the file binds to a Python number and never to a tensor (`self.momentum =
    cfg.momentum`, later `self.momentum = schedule(it)`): the graph read a number there (GS301's
    business), not a buffer.
    """
    fixable = True

    code = "GS401"
    name = "static-input-rebinding"
    principle = Principle.STATIC
    consequence = Consequence.SILENTLY_WRONG
    summary = "rebinding a tensor the graph reads (`x = new` where `x.copy_(new)` is needed)"
    message = "`{target}` {why}; rebinding it leaves the graph on the old tensor, use `{target}.copy_(...)`: {consequence}"
    valid = (
        Example(
            "class C(torch.nn.Module):\n    def forward(self, x: torch.Tensor):  # graphsafe: region\n"
            "        if self.cos is None or x.shape[1] > self.cos.shape[0]:\n"
            "            self.cos = torch.cos(torch.arange(x.shape[1], device=x.device))\n"
            "        return x * self.cos[: x.shape[1]]",
            module=True,
        ),
        "static = torch.zeros(2)\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = static * 2\nstatic.copy_(x)",
        "y = x * 2\ny = y + 1",
        # a number attribute (bound to a config value, then to a value of unknown kind) that the
        # capture block passes to the step: a Python number, not a buffer of the graph
        Example(
            "from sched import momentum_at\n\n\nclass Trainer:\n    def __init__(self, cfg):\n"
            "        self.momentum = cfg.base_momentum\n        self.static_x = torch.zeros(4)\n"
            "        self.g = torch.cuda.CUDAGraph()\n\n    def step(self, x: torch.Tensor, m: float):\n"
            "        return x * 2\n\n    def capture(self):\n        with torch.cuda.graph(self.g):\n"
            "            self.out = self.step(self.static_x, self.momentum)\n\n    def fit(self, xs):\n"
            "        for it, x in enumerate(xs):\n            self.momentum = momentum_at(it)\n"
            "            self.static_x.copy_(x)\n            self.g.replay()\n",
            module=True,
        ),
        # a log stacked onto itself grows: GS404 reports it, GS401 leaves it (one cause)
        Example(
            "class C(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.log = torch.zeros(0, 4)\n\n"
            "    def forward(self, x):  # graphsafe: region\n        self.log = torch.vstack([self.log, x[:1]])\n"
            "        return x\n",
            module=True,
        ),
    )
    invalid = (
        Example(
            "class C(torch.nn.Module):\n    def forward(self, x: torch.Tensor):  # graphsafe: region\n"
            "        h = x * 2\n        if self.prev is not None:\n            h = h + self.prev\n"
            "        self.prev = h.detach()\n        return h",
            module=True,
        ),
        "static = torch.zeros(2)\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = static * 2\nstatic = x",
        # the look-alike: an input that starts as None (not a number) and is rebound per batch
        Example(
            "from sched import momentum_at\n\n\nclass Trainer:\n    def __init__(self, cfg):\n"
            "        self.momentum = cfg.base_momentum\n        self.static_x = None\n"
            "        self.g = torch.cuda.CUDAGraph()\n\n    def step(self, x: torch.Tensor, m: float):\n"
            "        return x * 2\n\n    def capture(self):\n        with torch.cuda.graph(self.g):\n"
            "            self.out = self.step(self.static_x, self.momentum)\n\n    def fit(self, xs):\n"
            "        for it, x in enumerate(xs):\n            self.momentum = momentum_at(it)\n"
            "            self.static_x = x.cuda()\n            self.g.replay()\n",
            module=True,
        ),
        Example(
            "class Norm(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.register_buffer('mean', torch.zeros(3))\n\n"
            "    def forward(self, x):  # graphsafe: region\n        self.mean = 0.9 * self.mean + 0.1 * x.mean(0)\n"
            "        return x - self.mean\n",
            module=True,
        ),
        # a sliding window of fixed size (not a growing buffer: GS404 leaves it)
        Example(
            "class C(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.register_buffer('window', torch.zeros(8, 4))\n\n"
            "    def forward(self, x):  # graphsafe: region\n        self.window = torch.cat([self.window[1:], x[:1]])\n"
            "        return self.window.mean(0)\n",
            module=True,
        ),
        # a scheduler's tables, rebound per request by the loop that replays the graph
        Example(
            "class Sched:\n    def __init__(self):\n        self.sigmas = torch.ones(1)\n\n"
            "    def set_timesteps(self, n: int):\n        self.sigmas = torch.linspace(1.0, 0.0, n + 1)\n\n"
            "    def step(self, x: torch.Tensor):\n        return x * self.sigmas[0]\n\n\n"
            "class Pipe:\n    def __init__(self):\n        self.s = Sched()\n        self.g = torch.cuda.CUDAGraph()\n\n"
            "    def capture(self, x: torch.Tensor):\n        with torch.cuda.graph(self.g):\n"
            "            self.out = self.s.step(x)\n\n"
            "    def __call__(self, n: int):\n        self.s.set_timesteps(n)\n        self.g.replay()\n",
            module=True,
        ),
        # a mask rebound by `reset()`, which a driver calls before a method that replays
        Example(
            "class Session:\n    def __init__(self, mask: torch.Tensor):\n        self.mask = mask\n"
            "        self.g = torch.cuda.CUDAGraph()\n\n"
            "    def reset(self, mask: torch.Tensor):\n        self.mask = mask\n\n"
            "    def step(self, x: torch.Tensor):\n        return x.masked_fill(self.mask, 0.0)\n\n"
            "    def capture(self, x: torch.Tensor):\n        with torch.cuda.graph(self.g):\n"
            "            self.out = self.step(x)\n\n"
            "    def run(self):\n        self.g.replay()\n\n\n"
            "def serve(session: Session, masks: list):\n    for mask in masks:\n"
            "        session.reset(mask)\n        session.run()\n",
            module=True,
        ),
    )

    def __init__(self) -> None:
        self.self_reads: set[tuple[str, str, str]] = set()  # (class, attribute, function reading it)
        self.read_so_far: set[tuple[str, str, str]] = set()  # (class, attribute, function) read above here
        # `self.x = tensor` in a method other than __init__: decided project-wide (end_module)
        self.rebinds: list[tuple[cst.Attribute, str, str, str, object, cst.Assign]] = []
        self.reads: set[tuple[str, str]] = set()
        self.block_end: dict[str, int] = {}  # function key → last order seen inside its capture block
        # (function, owner, name) a capture block binds itself (`self.out = step(x)`): read after
        # that in the block, it is the graph's output, not an input fed from outside
        self.block_outputs: set[tuple[str, str, str]] = set()
        self.block_rebinds: set[tuple[str, str, str]] = set()  # (class, attribute, capture block unit)
        # `self.x = value` of unknown kind outside __init__: a rebinding between replays when the
        # class binds `self.x` to tensors only (decided in end_module, once all bindings are seen)
        self.unknown_rebinds: list[tuple[cst.Attribute, str, str, str, object, cst.Assign]] = []
        self.assignments: list[_Assignment] = []
        self.order = 0
        self.handed: list[tuple] = []  # (target, place, condition, message fields): state handed to the next step
        self.classes: dict[str, cst.ClassDef] = {}  # class name → its latest definition in the file
        self.class_facts: dict[str, tuple] = {}  # class name → _class_facts(), built on first use
        # what the file binds each name / self attribute to: "tensor", "number", "other" (None,
        # a string, a container) or "unknown". The `.copy_` fix needs tensors only; a read of a
        # name bound to numbers and never to a tensor reads a Python number, not a graph buffer.
        # One flat set of (owner, name, tag): a what-if run copies it in one C call.
        self.bound: set[tuple[str, str, str]] = set()

    def _note_binding(self, owner: str, name: str, kind, value: cst.BaseExpression, ctx) -> None:
        tag = ("tensor" if kind.is_tensor else "number" if _is_number(value, kind, ctx)
               else "other" if kind.not_tensor else "unknown")
        self.bound.add((owner, name, tag))

    def _number_only(self, owner: str, name: str) -> bool:
        bound = self.bound
        return (owner, name, "number") in bound and (owner, name, "tensor") not in bound

    def _holds_tensor(self, owner: str, name: str) -> bool:
        bound = self.bound
        return ((owner, name, "tensor") in bound and (owner, name, "number") not in bound
                and (owner, name, "other") not in bound)

    calls = Callees({"register_buffer"})

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "register_buffer" and ctx.is_self(func.value)
                and ctx.class_key and node.args):
            return
        if isinstance(node.args[0].value, cst.SimpleString):
            name = node.args[0].value.evaluated_value
            if isinstance(name, str):
                self.bound.add((ctx.class_key, name, "tensor"))
        self._buffer_registered_again(node, ctx)

    def _buffer_registered_again(self, node: cst.Call, ctx) -> None:
        """`self.register_buffer(name, value)` in a method (not `__init__`) that reads that buffer:
        the module's buffer is rebound to a new tensor (`value = old * d + new * (1 - d)`), the
        graph keeps the one of capture time."""
        function = ctx.function_node
        if function is None or ctx.function_name == "__init__" or ctx.in_capture_block() or len(node.args) < 2:
            return
        value = node.args[1].value
        if node.args[1].keyword is not None or _not_a_tensor(value, ctx) or ctx.kind(value).not_tensor:
            return
        key = node.args[0].value
        literal = key.evaluated_value if isinstance(key, cst.SimpleString) else None
        literal = literal if isinstance(literal, str) else None  # `f"{name}_avg"`: read by `getattr` only
        if not _reads_buffer(function, ctx.self_name, literal, ctx.code_for(key), ctx):
            return
        shown = f"self.{literal}" if literal is not None else f"getattr(self, {ctx.code_for(key)})"
        ctx.report(self, node, target=shown, why="holds state the graph reads (`register_buffer` binds a new tensor to it)")

    def visit_Name(self, node: cst.Name, ctx) -> None:
        self.order += 1
        if ctx.in_capture_block() and not ctx.is_store(node):
            kind = ctx.kind(node)
            function = ctx.function_key or "<module>"
            if (kind.is_tensor or kind.tag == "unknown") and (function, function, node.value) not in self.block_outputs:
                self.reads.add((function, node.value))
            self.block_end[ctx.function_key or "<module>"] = self.order

    def visit_Attribute(self, node: cst.Attribute, ctx) -> None:
        if ctx.class_key and ctx.function_key and not ctx.is_store(node) and ctx.is_self(node.value):
            self.self_reads.add((ctx.class_key, node.attr.value, ctx.unit_key))  # a capture block's own key
            self.read_so_far.add((ctx.class_key, node.attr.value, ctx.function_key))
        elif type(node.value) in (cst.Attribute, cst.Name) and ctx.function_key and not ctx.is_store(node):
            ctx.note_attribute_read(node)  # `self.scheduler.sigmas`: the class may be in another file
        if ctx.in_capture_block() and not ctx.is_store(node) and ctx.is_self(node.value) and ctx.class_key:
            kind = ctx.kind(node)
            output = (ctx.function_key or "<module>", ctx.class_key, node.attr.value) in self.block_outputs
            if (kind.is_tensor or kind.tag == "unknown") and not output:
                self.reads.add((ctx.class_key, node.attr.value))

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        value_kind = ctx.kind(node.value)
        for target in node.targets:
            pairs = [(target.target, value_kind, node.value)]
            if isinstance(target.target, cst.Tuple) and isinstance(node.value, cst.Tuple) and len(
                    target.target.elements) == len(node.value.elements):  # `self.a, self.b = x.clone(), y.clone()`
                pairs = [(t.value, ctx.kind(v.value), v.value) for t, v in zip(target.target.elements, node.value.elements)]
            for tgt, kind, value in pairs:
                if isinstance(tgt, cst.Attribute) and ctx.is_self(tgt.value) and ctx.class_key:
                    self._note_binding(ctx.class_key, tgt.attr.value, kind, value, ctx)
                elif isinstance(tgt, cst.Name):
                    self._note_binding(ctx.function_key or "<module>", tgt.value, kind, value, ctx)
        if ctx.in_capture_block():
            self._note_block_outputs(node, ctx)
            return  # binding the graph's outputs at the capture site is the normal pattern
        self._carried_rebinding(node, value_kind, ctx)
        handled = False  # reported by the cases below: the wider search for handed state stays out
        for target in node.targets:
            tgt = target.target
            if isinstance(tgt, cst.Attribute) and ctx.is_self(tgt.value) and ctx.class_key:
                growing = _concatenates_itself(node.value, tgt, ctx)  # GS404's, not a rebinding
                if ctx.kind(tgt).is_tensor and value_kind.is_tensor and _reads_attribute(node.value, tgt) and not growing:
                    # the attribute's kind is known before the walk (all of the class's bindings)
                    fix = None if (_old_value_may_be_kept(ctx.function_node, node, tgt)
                                   or _passed_to_project_call(node.value, tgt, ctx)) else _copy_fix(node, ctx)
                    ctx.report(self, tgt, fix=fix, target=f"self.{tgt.attr.value}",
                               why="holds state the graph reads and updates")
                    handled = True
                elif ((value_kind.is_tensor or _tensor_method_result(node.value)) and not growing
                      and not _reads_attribute(node.value, tgt)
                      and (ctx.class_key, tgt.attr.value, ctx.function_key) in self.read_so_far
                      and ctx.function_name != "__init__" and not _lazily_built(ctx.function_node, node, tgt)):
                    # `if self.prev is not None: h = h + self.prev` ... `self.prev = h`: state one step
                    # hands the next; replay reads the tensor bound at capture, never the new one
                    ctx.report(self, tgt, target=f"self.{tgt.attr.value}",
                               why="holds state the graph reads and updates")
                    handled = True
                if value_kind.not_tensor:
                    continue  # `self.static = None`: releasing it, not feeding the graph new values
                if ctx.function_name != "__init__" and ctx.function_key:
                    rebind = (tgt, ctx.class_key, tgt.attr.value, ctx.function_key, ctx.here(), node)
                    if value_kind.is_tensor:
                        self.rebinds.append(rebind)
                    else:  # `self.sigmas = make_sigmas(n).to(dev)`, defined elsewhere: decided in end_module
                        ctx.want_kind(node.value)
                        self.unknown_rebinds.append(rebind)
                self.assignments.append(_Assignment(
                    tgt, ctx.class_key, tgt.attr.value, ctx.function_key or "<module>", self.order,
                    ctx.function_name == "__init__", ctx.here(), node,
                ))
            elif isinstance(tgt, cst.Name) and not value_kind.not_tensor:
                function = ctx.function_key or "<module>"
                self.assignments.append(
                    _Assignment(tgt, function, tgt.value, function, self.order, False, ctx.here(), node)
                )
        if not handled and ctx.function_key and ctx.function_name != "__init__":
            self._handed_state(node, value_kind, ctx)

    def _carried_rebinding(self, node: cst.Assign, value_kind, ctx) -> None:
        """`x = x + d * dt` in a loop region, `x` bound before the loop: the next pass reads this
        pass's tensor, while a graph of one pass reads the tensor `x` was at capture. Reported once
        per name and loop (the first rebinding in the body); growth (`out = torch.cat((out, t))`)
        is GS404's."""
        if not (value_kind.is_tensor or _tensor_method_result(node.value)):
            return
        for target in node.targets:
            tgt = target.target
            if type(tgt) is not cst.Name:
                continue
            step = ctx.step_loop_carrying(tgt.value)
            if step is None or _joins_itself(node.value, tgt.value, ctx):
                continue
            seen = ctx.file_state(_CarriedReported)
            if (step.key, tgt.value) in seen:
                continue
            seen.add((step.key, tgt.value))
            ctx.report(self, tgt, target=tgt.value, condition=step.condition,
                       why=f"is carried to the next pass of the loop region `{step.header}`, which reads this pass's tensor")

    def _carried_sum(self, node: cst.AugAssign, ctx) -> None:
        """`running_loss += loss` in a loop region, `running_loss = 0` before the loop (or in a
        branch of the body, not on every pass): the first `+=` binds a new tensor that the next
        pass reads, while a graph of one pass adds to the tensor of capture time."""
        name = node.target.value
        step = ctx.step_loop_carrying(name)
        if step is None or not (ctx.kind(node.value).is_tensor or _tensor_method_result(node.value)):
            return
        function = ctx.function_node
        if function is None or not _bound_to_number(function, name) or _reset_every_pass(function, node, name):
            return
        seen = ctx.file_state(_CarriedReported)
        if (step.key, name) in seen:
            return
        seen.add((step.key, name))
        ctx.report(self, node.target, target=name, condition=step.condition,
                   why=f"starts as a Python number, so `+=` of a tensor binds a new tensor the next pass of the loop "
                   f"region `{step.header}` reads")

    def visit_ClassDef(self, node: cst.ClassDef, ctx) -> None:
        self.classes[node.name.value] = node  # for handed state: what its methods read and call
        self.class_facts.pop(node.name.value, None)

    def visit_AugAssign(self, node: cst.AugAssign, ctx) -> None:
        """`self.total += t.sum()` where the class starts `self.total` as a Python number
        (`self.total = 0` in `reset()`): the first `+=` binds a new tensor, which the next step
        reads; on replay the graph adds to the capture-time tensor and the attribute never moves."""
        tgt = node.target
        if type(tgt) is cst.Name and not ctx.in_capture_block():
            self._carried_sum(node, ctx)
            return
        if (ctx.in_capture_block() or not ctx.function_key or ctx.function_name == "__init__"
                or type(tgt) is not cst.Attribute or not ctx.is_self(tgt.value) or not ctx.class_key):
            return
        facts = self._class_facts(ctx)
        if facts is None or tgt.attr.value not in facts[1]:
            return  # (its kind may say tensor, `total: int | Tensor = 0`: the first `+=` still rebinds)
        if ctx.kind(node.value).is_tensor or _tensor_method_result(node.value):
            ctx.report(self, tgt, target=f"self.{tgt.attr.value}",
                       why="starts as a Python number, so `+=` of a tensor binds a new tensor the next step reads")

    def _class_facts(self, ctx) -> "tuple[step_state.ClassSteps, frozenset[str]] | None":
        """(what each method reads, binds and calls on `self`; attributes started as numbers)
        for the class being walked, built on first use."""
        name = (ctx.class_key or "").rpartition(".")[2]
        facts = self.class_facts.get(name)
        if facts is None and name in self.classes:
            node = self.classes[name]
            numbers: set[str] = set()
            for cls in self._with_bases(node):  # `reset()` of a base class in this file too
                numbers |= step_state.number_started(cls)
            facts = self.class_facts[name] = (step_state.ClassSteps(node), frozenset(numbers))
        return facts

    def _with_bases(self, node: cst.ClassDef) -> list[cst.ClassDef]:
        """`node` and the base classes this file defines, nearest first."""
        found = [node]
        for cls in found:
            for base in cls.bases:
                value = base.value
                if type(value) is cst.Name and value.value in self.classes and self.classes[value.value] not in found:
                    found.append(self.classes[value.value])
        return found

    def _handed_state(self, node: cst.Assign, value_kind, ctx) -> None:
        """State one step hands the next, beyond `self.x` read above in the same method: an
        attribute or item of `self`, a parameter or a loop variable (`p.grad`, `hyps.scores`,
        `self.dec.attn.prev`, `state[i]`) bound to a new tensor where the old value is read in
        the new one or above in the function; an attribute another method reads before this one
        rebinds it in a step. No fix: such places are often containers, `.grad` or objects
        passed in, where `.copy_()` is not proven to keep the values."""
        function = ctx.function_node
        reported = False
        for tgt, value, kind in _target_values(node, value_kind, ctx):
            root = step_state.outliving_root(tgt, function)
            key = step_state.place_key(tgt) if root is not None else None
            if key is None or (type(tgt) is cst.Subscript and not _container_outside_tensors(tgt.value, function, ctx)):
                continue  # `x[i] = v` on a tensor writes in place: not a rebinding
            # `self.center.data = ...`: reading the tensor `self.center` reads the storage rebound
            owner = step_state.place_key(tgt.value) if type(tgt) is cst.Attribute and tgt.attr.value == "data" else None
            keys = (key, owner) if owner is not None else (key,)
            if value is not None:
                if kind.not_tensor or _joins_itself(value, key, ctx) or not (kind.is_tensor or _tensor_method_result(value)):
                    continue
                read = any(step_state.reads_place(value, k) for k in keys)
            else:  # `a, self.mean, state[i] = update(..., self.mean, state[i])`
                if not (self._binds_tensor(tgt, ctx) if type(tgt) is cst.Attribute
                        else _holds_tensor_items(tgt.value, function, ctx)):
                    continue
                read = step_state.reads_place(node.value, key)
            read = read or any(step_state.read_above(function, node, k) and not step_state.guarded_by(function, node, k)
                               for k in keys)
            shown = ctx.code_for(tgt)
            if read:
                if type(tgt) is cst.Subscript:
                    ctx.file_state(step_state.HandedPlaces).add(id(tgt))
                if not reported:  # one diagnostic for the statement
                    self._defer_handed(node, tgt, ctx, None, target=shown,
                                       why="holds state the graph reads and updates (read before it here)")
                    reported = True
                continue
            if root == ctx.self_name and type(tgt.value) is cst.Name and value is not None and not reported:
                readers = self._handed_readers(node, tgt.attr.value, ctx)
                if readers:
                    shown_readers = ", ".join(f"`{r.rpartition('.')[2]}`" for r in readers)
                    self._defer_handed(node, tgt, ctx, (REACHED_ANY, *readers), target=shown,
                                       why=f"is read by {shown_readers} before this rebinding in a step (state the next step reads)")
                    reported = True

    def _defer_handed(self, statement: cst.Assign, bound: cst.BaseExpression, ctx, condition, **fields: str) -> None:
        """Reported in `end_module` on the statement (not its target, which the reports of
        rebindings outside the region may take): where the same assignment also feeds a capture
        block (`self.static_x = cur` before `replay()`), that report, with its fix, is the one kept."""
        if not ctx.in_what_if(self, statement):
            self.handed.append((statement, bound, ctx.here(), condition, fields))

    def _binds_tensor(self, target: cst.Attribute, ctx) -> bool:
        """A tensor attribute by its kind, or one the class binds to a tensor above
        (`self.mean = torch.empty(0)` in `__init__`, later also loaded from a state dict)."""
        if ctx.kind(target).is_tensor:
            return True
        return (ctx.is_self(target.value) and ctx.class_key is not None
                and (ctx.class_key, target.attr.value, "tensor") in self.bound)

    def _handed_readers(self, node: cst.Assign, attr: str, ctx) -> list[str]:
        """The unit keys of the class's methods that read `self.<attr>` before `node` (in the
        method being walked) rebinds it in a step."""
        facts = self._class_facts(ctx)
        method = ctx.function_name
        if facts is None or method is None or step_state.guarded_by(ctx.function_node, node, f"{ctx.self_name}.{attr}"):
            return []
        order = facts[0].order_of(method, node)
        if order is None:
            return []
        return [f"{ctx.class_key}.{reader}" for reader in facts[0].handed_readers(method, attr, order)]

    def _note_block_outputs(self, node: cst.Assign, ctx) -> None:
        """`self.static_logits = step(x)` in a capture block: the block's own output. A later read
        in the block (`pick(self.static_logits)`) reads what the graph wrote, and rebinding it
        eagerly elsewhere does not feed the graph (GS407 is about keeping such outputs)."""
        function = ctx.function_key or "<module>"
        targets = [t.target for t in node.targets]
        targets += [e.value for t in targets if isinstance(t, (cst.Tuple, cst.List)) for e in t.elements]
        for tgt in targets:  # `self.out, self.aux = step(x)` too
            if isinstance(tgt, cst.Attribute) and _reads_attribute(node.value, tgt) or (
                    isinstance(tgt, cst.Name) and _reads_name(node.value, tgt)):
                continue  # `self.buf = f(self.buf)`: reads the old value first
            if isinstance(tgt, cst.Attribute) and ctx.is_self(tgt.value) and ctx.class_key:
                self.block_outputs.add((function, ctx.class_key, tgt.attr.value))
                self.block_rebinds.add((ctx.class_key, tgt.attr.value, ctx.unit_key))
            elif isinstance(tgt, cst.Name):
                self.block_outputs.add((function, function, tgt.value))

    def end_module(self, ctx) -> None:
        inputs: set[int] = set()  # ids of the targets reported as a captured graph's inputs
        for a in self.assignments:
            if (a.owner, a.name) not in self.reads or a.in_init or self._number_only(a.owner, a.name):
                continue
            if a.function in self.block_end and a.order <= self.block_end[a.function]:
                continue  # bound before capturing, in the capturing function: creating the input
            shown = a.name if isinstance(a.node, cst.Name) else f"self.{a.name}"
            fix = _copy_fix(a.statement, ctx, a.place.statement) if self._holds_tensor(a.owner, a.name) else None
            ctx.report(self, a.node, always=True, at=a.place, fix=fix, target=shown,
                       why="is read by a captured graph")
            inputs.add(id(a.node))
        self._rebinds_between_replays(ctx)  # after the certain reports: a node is reported once
        for statement, target, place, condition, fields in self.handed:
            if id(target) not in inputs:
                ctx.report(self, statement, at=place, condition=condition, **fields)


    def _rebinds_between_replays(self, ctx) -> None:
        """`self.sigmas = ...` in `set_timesteps()`, read by `step()` that a graph captured, and
        run from code that replays the graph: reported when the project shows all three."""
        # a value of unknown kind (`self.g = batch["g"].to(dev)`, `self.feats = self.encoder(mel)`)
        # counts where the class binds the attribute to tensors only
        rebinds = self.rebinds + [r for r in self.unknown_rebinds if self._holds_tensor(r[1], r[2])]
        rebinders: dict[tuple[str, str], set[str]] = {}
        for _, class_key, attr, function, _, _ in rebinds:
            rebinders.setdefault((class_key, attr), set()).add(function)
        for class_key, attr, block in self.block_rebinds:  # captured code rebinding it itself
            rebinders.setdefault((class_key, attr), set()).add(block)
        readers: dict[tuple[str, str], set[str]] = {}
        for class_key, attr, function in self.self_reads:
            readers.setdefault((class_key, attr), set()).add(function)
        for tgt, class_key, attr, function, place, statement in rebinds:
            # reads in this function's own capture block: it creates the graph's inputs (the
            # order within the function is judged above)
            reading = {r for r in readers.get((class_key, attr), ()) if r != function and not r.startswith(function + ".<")}
            if _reads_attribute(statement.value, tgt):
                continue  # `self.buf = f(self.buf)`: state, reported above
            others = rebinders[(class_key, attr)] - {function}
            # readers through an instance (`self.scheduler.sigmas`, any file) join in the project
            condition = (REBOUND_AFTER_REPLAY, function, ",".join(sorted(reading)), ",".join(sorted(others)),
                         f"{class_key}::{attr}")
            # no fix: a per-request table often changes shape (`.copy_()` would raise)
            ctx.report(self, tgt, always=True, at=place, condition=condition, target=f"self.{attr}",
                       why="is read by a captured graph and rebound between replays")


def _copy_fix(assign: cst.Assign, ctx, statement: cst.CSTNode | None = None):
    """`x = value` → `x.copy_(value)`: the graph keeps its buffer, the values arrive (one target
    only). Callers offer it only for a target bound to tensors alone: `self.lr = self.lr_at(it)`
    with `self.lr = cfg.lr` in `__init__`, or `self.hidden` starting as None, would raise at
    `.copy_` (found on held-out programs)."""
    if len(assign.targets) != 1 or _not_a_tensor(assign.value, ctx):
        return None  # `x.copy_(None)` or `x.copy_(3)` would not do what `x = ...` did
    target = assign.targets[0].target
    if _converts_itself(assign.value, target, ctx):
        return None  # `self.mid = self.mid.to(device, dtype)`: `.copy_` would keep the old dtype/device
    call = cst.Call(func=cst.Attribute(value=target, attr=cst.Name("copy_")), args=[cst.Arg(value=assign.value)])
    title = f"Copy into `{ctx.code_for(target)}` with `.copy_()` instead of rebinding it"
    return (title, [(assign, ctx.code_for(cst.Expr(call), at=statement or ctx.statement))], Applicability.UNSAFE,
            "the new value may differ in shape, dtype or device, and other references to the old tensor would see it")


_CONVERSIONS = frozenset("to type float double half bfloat16 int long bool cuda cpu".split())


def _converts_itself(value: cst.BaseExpression, target: cst.BaseExpression, ctx) -> bool:
    """`x = x.to(dtype)` / `x.float()` / `x.cuda()`: the point is the new dtype or device, which
    `x.copy_(...)` would cast back to the old one (a float64 table kept for float32 work)."""
    func = value.func if type(value) is cst.Call else None
    return (type(func) is cst.Attribute and func.attr.value in _CONVERSIONS
            and ctx.code_for(func.value) == ctx.code_for(target))


_KEEPERS = frozenset("append extend insert add appendleft put".split())


def _passed_to_project_call(value: cst.BaseExpression, attribute: cst.Attribute, ctx) -> bool:
    """`self.trace = append_row(self.trace, x)`: a helper outside torch may return another shape
    (it concatenates), and `.copy_()` of a longer row into the old, empty tensor broadcasts to
    nothing instead of growing it (found on a held-out program). torch functions and tensor
    methods (`torch.roll(self.buf, 1)`, `self.buf.mul(2)`) are judged by the rule as before."""
    stack: list[cst.CSTNode] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and any(_is_attribute_or_view(a.value, attribute) for a in node.args):
            name = ctx.resolve(node.func) or ""
            if not name.startswith("torch."):
                return True
        stack.extend(children(node))
    return False


def _old_value_may_be_kept(function: cst.FunctionDef | None, assign: cst.Assign, attribute: cst.Attribute) -> bool:
    """`self.h = cell(x, self.h)` becomes `self.h.copy_(...)`: any reference to the old tensor
    kept elsewhere would then see the new values (measured on a held-out RNN: `outs.append(self.h)`
    in the loop made every output the last one). So no fix inside a loop, or when the function
    keeps `self.h` itself or a view of it (`oldest = self.buf[:, :, 0]` before `self.buf =
    torch.roll(self.buf, ...)`): returned, yielded, bound to a name, put in a list/tuple, appended."""
    if function is None:
        return True
    stack: list[tuple[cst.CSTNode, bool]] = [(function.body, False)]
    while stack:
        node, in_loop = stack.pop()
        if node is assign:
            if in_loop:
                return True
            continue
        kept = None
        if isinstance(node, (cst.Return, cst.Yield)):
            kept = node.value
        elif isinstance(node, cst.Assign) and node is not assign:
            kept = node.value
        elif isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            if any(_is_attribute_or_view(e.value, attribute) for e in node.elements):
                return True
        elif (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _KEEPERS
              and any(_is_attribute_or_view(a.value, attribute) for a in node.args)):
            return True
        if kept is not None and _is_attribute_or_view(kept, attribute):
            return True
        loop = in_loop or isinstance(node, (cst.For, cst.While))
        stack.extend((child, loop) for child in children(node))
    return False


# Tensor methods and attributes that may return a view sharing the receiver's memory.
_VIEWS = frozenset(
    """view view_as reshape flatten unflatten unsqueeze squeeze expand expand_as permute transpose t
    narrow select diagonal movedim unbind split chunk detach as_strided T mT H mH data real imag""".split()
)


def _is_attribute_or_view(expr: cst.CSTNode | None, attribute: cst.Attribute) -> bool:
    """`self.buf`, `self.buf[:, 0]`, `self.buf.view(-1)`, `self.buf.T`: share `self.buf`'s memory
    (an indexed read may be a copy; taken as a view, so that no fix changes what it holds)."""
    while True:
        if _is_same_attribute(expr, attribute):
            return True
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _VIEWS:
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value in _VIEWS:
            expr = expr.value
        else:
            return False


def _binds_number(node: cst.CSTNode, name: str) -> bool:
    """Is `node` `name = <number literal>` (`running_loss = 0`)?"""
    return (type(node) is cst.Assign and is_number_literal(node.value)
            and any(type(t.target) is cst.Name and t.target.value == name for t in node.targets))


def _bound_to_number(function: cst.FunctionDef, name: str) -> bool:
    """Does `function` bind `name` to a number literal anywhere?"""
    return any(_binds_number(node, name) for node in own_nodes(function.body))


def _reset_every_pass(function: cst.FunctionDef, node: cst.CSTNode, name: str) -> bool:
    """Does the loop region holding `node` bind `name` to a number at the top of its body (`n = 0`
    unconditionally on every pass): then no pass reads what the one before left."""
    for loop in own_nodes(function.body):
        if type(loop) not in (cst.For, cst.While) or not step_loops.is_region_loop(loop):
            continue
        if not any(n is node for n in own_nodes(loop.body)):
            continue
        for statement in loop.body.body if type(loop.body) is cst.IndentedBlock else ():
            if type(statement) is cst.SimpleStatementLine and any(_binds_number(small, name) for small in statement.body):
                return True
    return False


def _tensor_method_result(value: cst.BaseExpression) -> bool:
    """`attn.detach()`, `h.float()`: what a tensor-only method returns is a tensor, whatever
    computed its receiver (a module of another file)."""
    return (type(value) is cst.Call and type(value.func) is cst.Attribute
            and value.func.attr.value in PARAM_TENSOR_METHODS)


def _reads_buffer(function: cst.FunctionDef, self_name: str | None, name: str | None, key_code: str, ctx) -> bool:
    """Does `function` read the buffer: `self.<name>`, or `getattr(self, <key>)` with the same key?"""
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        tp = type(node)
        if (name is not None and tp is cst.Attribute and node.attr.value == name and type(node.value) is cst.Name
                and node.value.value == self_name and not ctx.is_store(node)):
            return True
        if (tp is cst.Call and type(node.func) is cst.Name and node.func.value == "getattr" and len(node.args) >= 2
                and type(node.args[0].value) is cst.Name and node.args[0].value.value == self_name
                and ctx.code_for(node.args[1].value) == key_code):
            return True
        stack.extend(children(node))
    return False


def _lazily_built(function: cst.FunctionDef | None, assign: cst.Assign, attribute: cst.Attribute) -> bool:
    """`if self.cos is None or n > self.cached: self.cos = make(n)`: a cache built on demand under
    a test of the attribute itself, not state handed from one step to the next."""
    if function is None:
        return False
    stack: list[tuple[cst.CSTNode, bool]] = [(function.body, False)]
    while stack:
        node, guarded = stack.pop()
        if node is assign:
            return guarded
        if type(node) is cst.If and _reads_attribute(node.test, attribute):
            guarded = True
        stack.extend((child, guarded) for child in children(node))
    return False


def _is_same_attribute(expr: cst.CSTNode | None, attribute: cst.Attribute) -> bool:
    return (isinstance(expr, cst.Attribute) and expr.attr.value == attribute.attr.value
            and isinstance(expr.value, cst.Name) and isinstance(attribute.value, cst.Name)
            and expr.value.value == attribute.value.value)


def _not_a_tensor(value: cst.BaseExpression, ctx) -> bool:
    literal = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
               cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp, cst.Lambda)
    if isinstance(value, literal) or (isinstance(value, cst.Name) and value.value in ("None", "True", "False")):
        return True
    return ctx.kind(value).not_tensor


def _is_number(value: cst.BaseExpression, kind, ctx) -> bool:
    """`0.99`, `-1`, `cfg.lr`, `lr` (a `float` parameter), `self.lr_at(it)` (`-> float`),
    `base * 0.5`: a Python number by its shape, not None, a string or a (maybe empty) container."""
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    if isinstance(value, (cst.Integer, cst.Float)):
        return True
    if isinstance(value, cst.Name):
        return ctx is not None and ctx.is_number_param(value.value)
    return kind.tag in ("scalar", "config") and isinstance(value, (cst.Attribute, cst.BinaryOperation, cst.Call))


def _reads_name(expr: cst.BaseExpression, name: cst.Name) -> bool:
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value == name.value:
            return True
        stack.extend(children(node))
    return False


def _reads_attribute(expr: cst.BaseExpression, attribute: cst.Attribute) -> bool:
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if _is_same_attribute(node, attribute):
            return True
        stack.extend(children(node))
    return False


def _concatenates_itself(value: cst.BaseExpression, target: cst.Attribute, ctx) -> bool:
    """`self.buf = torch.cat([self.buf, x])` grows (GS404); `torch.cat([self.buf[1:], x])`, a
    sliding window of fixed size, is an update of the old value like any other."""
    if type(value) is not cst.Call:
        return False
    namespace, _, func = (ctx.resolve(value.func) or "").rpartition(".")
    if namespace != "torch" or func not in CONCAT_FUNCTIONS:  # `torch.vstack([self.buf, x])` too
        return False
    first = next((a for a in value.args if a.keyword is None or a.keyword.value == "tensors"), None)
    if first is None or type(first.value) not in (cst.List, cst.Tuple):
        return True  # `torch.cat(parts)`: what it joins is not visible here
    shown = dotted(target)
    return any(not isinstance(e, cst.StarredElement) and dotted(e.value) == shown for e in first.value.elements)


def _target_values(node: cst.Assign, value_kind, ctx):
    """(target, its value, the value's kind) of each place an assignment binds; the value is None
    for an element unpacked from one expression (`a, self.m = update(...)`)."""
    for target in node.targets:
        tgt = target.target
        if type(tgt) in (cst.Tuple, cst.List):
            value = node.value
            if type(value) in (cst.Tuple, cst.List) and len(value.elements) == len(tgt.elements):
                for element, item in zip(tgt.elements, value.elements):
                    yield element.value, item.value, ctx.kind(item.value)
            else:
                for element in tgt.elements:
                    yield element.value, None, None
        else:
            yield tgt, node.value, value_kind


def _container_outside_tensors(container: cst.BaseExpression, function: cst.FunctionDef | None, ctx) -> bool:
    """A list or dict (not a tensor, where `c[i] = v` writes in place): known by its kind (not a
    tensor), or a
    name the function binds to a list or dict display (`state = [None] * n`)."""
    kind = ctx.kind(container)
    if kind.is_tensor:
        return False
    if kind.not_tensor:  # `state: list`, a dict of tensors
        return True
    if type(container) is not cst.Name or function is None:
        return False
    for node in _assignments(function):
        if any(type(t.target) is cst.Name and t.target.value == container.value for t in node.targets):
            value = node.value
            while type(value) is cst.BinaryOperation:  # `[None] * n_layer * 5`
                value = value.left
            if type(value) in (cst.List, cst.Dict, cst.ListComp, cst.DictComp):
                return True
    return False


def _holds_tensor_items(container: cst.BaseExpression, function: cst.FunctionDef | None, ctx) -> bool:
    """The function stores torch-made tensors into `container[...]` (`state[i] = torch.zeros(n)`):
    what is unpacked into its items elsewhere is a tensor too."""
    key = step_state.place_key(container)
    if function is None or key is None:
        return False
    for node in _assignments(function):
        value = node.value
        if not (_tensor_method_result(value) or (type(value) is cst.Call and (ctx.resolve(value.func) or "").startswith("torch."))):
            continue
        for target in node.targets:
            tgt = target.target
            if type(tgt) is cst.Subscript and step_state.place_key(tgt.value) == key:
                return True
    return False


def _assignments(function: cst.FunctionDef):
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        tp = type(node)
        if tp in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if tp is cst.Assign:
            yield node
        stack.extend(children(node))


def _joins_itself(value: cst.BaseExpression, key: str, ctx) -> bool:
    """`hyps.seq = torch.cat([hyps.seq, x])`: growth (GS404's), not a rebinding of the same size."""
    if type(value) is not cst.Call:
        return False
    namespace, _, func = (ctx.resolve(value.func) or "").rpartition(".")
    if namespace != "torch" or func not in CONCAT_FUNCTIONS:
        return False
    first = next((a for a in value.args if a.keyword is None or a.keyword.value == "tensors"), None)
    if first is None or type(first.value) not in (cst.List, cst.Tuple):
        return True
    return any(not isinstance(e, cst.StarredElement) and step_state.place_key(e.value) == key
               for e in first.value.elements)


RULES = (StaticInputRebinding,)
