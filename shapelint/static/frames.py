"""The frames Dynamo makes of one function, as the walk meets its graph breaks.

A graph break ends the graph; what follows runs in a *resume frame* that takes the function's
live Python numbers as new inputs and guards each again at its first read. A break inside a
loop cannot resume: Dynamo skips the frame (the entry, or the resume frame after an earlier
break) and runs it eagerly, so the findings of that whole frame but the break are taken back,
and what it calls is compiled as frames of their own. A function that breaks is a frame of its
own when called, its int arguments that differ between calls that frame's inputs. Before
Python 3.12 a comprehension is such a function too: a break inside it is no break in a loop
of the function around it. A break under a test (of data, of a varying size, of whether an
optional input was given) may not run: it starts no frame for sure.

:class:`Frames` keeps this bookkeeping for one :class:`~shapelint.static.flow.Walker`: the walker
tells it where the graph broke, what it binds and reads; it tells the walker (and the rules,
through ``NameUse`` sites) which reads are a frame's first read of an input.
"""

from __future__ import annotations

import ast
import sys
from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple, cast

import libcst as cst

from shapelint import api
from shapelint.values import NUMBERS, DimInfo, Kind, Tag, Value

if TYPE_CHECKING:  # pragma: no cover
    from shapelint.static.flow import Walker
    from shapelint.static.project import ClassInfo, FunctionInfo


#: before Python 3.12 (PEP 709) a comprehension runs as a function of its own: a break inside
#: it skips that function's frame, while the enclosing frame breaks at the comprehension and
#: resumes after it (Dynamo inlines the call and breaks at it, as for any callee)
COMPREHENSION_FRAMES = sys.version_info < (3, 12)
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


class Frames:
    """Where one function's graph broke, and the ints that crossed each break."""

    def __init__(self, walker: "Walker", args: Dict[str, Value], own_frame: bool) -> None:
        self.w = walker
        #: called from eagerly run code: a frame Dynamo compiles on its own, whose arguments
        #: are its inputs even if it never breaks the graph
        self.own_frame = own_frame
        #: the graph broke inside a loop: the rest of this frame runs eagerly
        self.eager = False
        #: where (in the journal of reports) the frame under way began, and where the frame
        #: Dynamo skipped began (its sites' findings are taken back; None: none skipped)
        self.frame_mark = 0
        self.skipped_from: Optional[int] = None
        #: the calls the frame under way made that were traced inline (callee, arguments,
        #: under a settings test, instance): when Dynamo skips the frame they run eagerly
        self.frame_calls: List[Tuple["FunctionInfo", Dict[str, Value], bool, Optional["ClassInfo"]]] = []
        #: where the graph first broke in this function (None: it did not), and last
        self.broke_at: Optional[cst.CSTNode] = None
        self.last_break: Optional[cst.CSTNode] = None
        #: how many breaks the walk has met, and how many of them would make Dynamo skip a
        #: loop's frame (an arm of an ``if`` that broke counts one more)
        self.count = 0
        self.hard_count = 0
        #: the statement the last break is in, and each break's (by id): a break's line is
        #: then found from its statement, not by indexing every node of the function
        self.break_stmt: Optional[cst.CSTNode] = None
        self._break_stmts: Dict[int, cst.CSTNode] = {}
        #: dims the frame under way pinned to their value (an f-string or ``range()`` of the
        #: size): Dynamo replaced the symbol with a constant, so later uses guard nothing more
        #: (each with the count of pins made before it: an expression's own pin does not
        #: change its own value, only what later expressions read)
        self.pinned: Dict[DimInfo, int] = {}
        self.pins_made = 0
        #: a break here happens whatever the sizes (not only once they are dynamic)
        self.hard_break = False
        #: a break that runs on every call reached (not under a test of an optional input,
        #: of data or of a varying size): what follows it is a resume frame for sure
        self.sure_break = False
        #: a break here that does not hang on whether an optional input was given or on data:
        #: the function is a frame of its own when called, and its caller breaks at the call
        self.breaks_caller = False
        #: the statement whose call broke the graph in a callee (what it binds crossed too)
        self.returned_across: Optional[cst.CSTNode] = None
        #: varying lists held inside the live locals at a break, or inside what a call that
        #: broke returned (``outputs["image"]``'s ``.pooler_output``): inputs of the resumed
        #: frame, by identity, until their first read
        self.held_across: Dict[int, Value] = {}
        #: names holding Python numbers that crossed a graph break, until their first read
        self.crossed: Dict[str, cst.CSTNode] = {}
        #: a Size input read only to hand its ints on (``b, t, c = shape``): that statement,
        #: the break it crossed (if any) and whether it is a parameter not read before, so the
        #: names it binds are inputs in its place
        self.unpacking: Optional[Tuple[cst.CSTNode, Optional[cst.CSTNode], bool]] = None
        #: per-instance attributes already read after the graph break
        self.read_after_break: Set[str] = set()
        #: per crossed size, the locals holding the tensors it was read from (see
        #: ``carried_across``), and the names the function mentions, with their lines
        self.carriers: Dict[str, Optional[List[set]]] = {}
        self._names: Optional[List[Tuple[str, int]]] = None
        #: parameters holding ints that differ between calls (sizes, data, a loop index over
        #: modules), until their first read; and those first reads (see ``frame_inputs``)
        ctx = walker.ctx
        self.params_unread: Dict[str, Value] = {
            name: v for name, v in args.items() if varies_between_calls(v)} \
            if ctx.root != ctx.qualname else {}
        self.param_reads: List[Tuple[cst.Name, Value, Optional[cst.CSTNode], bool]] = []
        #: submodules whose class differs between instances, at their first read in the
        #: function (see ``read_instance_module``)
        self.module_reads: Dict[str, Tuple[cst.Attribute, Value, Optional[cst.CSTNode]]] = {}

    # -- the walk begins and ends -------------------------------------------------------------
    def begin(self) -> None:
        journal = self.w.a.journal
        self.frame_mark = journal.mark() if journal is not None else 0

    def end(self) -> None:
        """Take back the findings of a frame Dynamo skipped."""
        if self.eager:
            self.w.a.eager -= 1
            journal = self.w.a.journal
            if journal is not None and self.skipped_from is not None:
                journal.retract(self.skipped_from, self.w.mod.path, self.w.ctx.symbol)

    @property
    def broke(self) -> int:
        """What a caller learns: 0 no break, 1 a break only dynamic sizes cause, 2 a break.
        A function called under a test of settings tells its caller of none (it may not run)."""
        if self.broke_at is None or self.w.inherited_flag or not self.breaks_caller:
            return 0
        return 2 if self.hard_break else 1

    def pin(self, dim: DimInfo) -> None:
        """A size of ``dim`` was specialized here: a constant for the rest of the frame."""
        self.pinned.setdefault(dim, self.pins_made)
        self.pins_made += 1

    def pinned_before(self, dim: Optional[DimInfo], pins: int) -> bool:
        """Whether ``dim`` was pinned before the ``pins``-th pin of this walk."""
        return dim is not None and self.pinned.get(dim, pins) < pins

    # -- breaks -----------------------------------------------------------------------------------
    def line_of(self, brk: cst.CSTNode) -> int:
        """The line of a break this walk met."""
        return self.w.ctx.position(brk, self._break_stmts.get(id(brk)))[0]

    def graph_break(self, node: cst.CSTNode, skips_loop: bool = True) -> None:
        """The graph ends here: what follows runs in a new frame, which takes this function's
        Python numbers as inputs (those computed from sizes or data before it).
        ``skips_loop``: inside a loop the break makes Dynamo skip the frame (False for a break
        only dynamic sizes cause: the static first compile traces the frame whole)."""
        w = self.w
        first = self.broke_at is None
        if first:
            self.broke_at = node
        self.count += 1
        self.hard_count += skips_loop
        self.last_break = node
        self.break_stmt = w.ctx.stmt
        self.pinned = {}  # the resumed frame takes the tensors as inputs again
        if w.ctx.stmt is not None:
            self._break_stmts.setdefault(id(node), w.ctx.stmt)
        # a break under a test of whether an optional input was given runs on the calls that
        # give it: on the others the frame goes on past it, so it starts no frame for sure
        maybe = w.presence_guards > 0 or w.data_guards > 0 or w.size_guards > 0
        after_sure = self.sure_break
        self.sure_break = self.sure_break or not maybe
        # a caller breaks at the call unless every break here hangs on how the model is
        # called or on data (a size test, `if padding_len > 0:`, runs for most lengths)
        self.breaks_caller = self.breaks_caller or not (w.presence_guards or w.data_guards)
        # a break under a test of data may not run: the frame is traced whole when it does not
        skips_loop = skips_loop and w.data_guards == 0
        self.hard_break = self.hard_break or skips_loop
        journal = w.a.journal
        if w.try_marks and not self.eager and not w.a.eager and skips_loop:
            # inside a `try:` body Dynamo cannot resume (torch 2.13: "Encountered graph break
            # that we cannot resume from"): it compiles up to the `try` and runs the rest of
            # the function eagerly, what it calls as frames of their own
            self.eager = True
            w.a.eager += 1
            self.skipped_from = w.try_marks[0]
            return
        if w.loops > (w.comprehensions if COMPREHENSION_FRAMES else 0) and not self.eager \
                and skips_loop:
            # a graph break inside a loop: Dynamo skips the frame and runs it eagerly, so
            # nothing after it in this function is traced (what it calls runs as frames of
            # their own). Nor is what came before it in the same frame: the frame is this
            # function when it is the entry, or the resume frame after its last break. (A
            # callee with no break before the loop was first traced inline by its caller,
            # whose guards from that attempt stay.)
            self.eager = True
            w.a.eager += 1
            if w.ctx.root == w.ctx.qualname or after_sure:
                self.skipped_from = self.frame_mark
                self._calls_become_frames()
        elif not maybe:
            if journal is not None:
                self.frame_mark = journal.mark()  # what follows runs in a resume frame
            self.frame_calls = []
        w.a.add_graph_inputs(w.env.values())  # its inputs: the live locals
        if w.in_module_init():
            return  # "Uninitialized nn.Module": no resume frame, the rest runs eagerly
        if w.data_guards or w.size_guards:
            # it may not run: `if is_global_attn:` was False in every longformer call, and a
            # table grows under `if seq_len > self.weights.size(0):` only for a longer input
            return
        # each resume frame takes the live ints as new inputs and guards them again at its
        # first read of each (longformer: seq_len after each of two breaks, lines 828/847)
        for name, v in w.env.items():
            shape = api.varying_shape_dim(v) is not None  # `shape = x.shape`: its ints
            if (v.is_size and v.varies) or shape or (Tag.DATA in v.tags and not v.is_tensor):
                # (one not read since an earlier break is an input of this frame now: the
                # frame in between never read it)
                self.crossed[name] = node
                self.carriers[name] = self.carrier_names(v) if v.is_size or shape else None
            self.hold(v)

    def _calls_become_frames(self) -> None:
        """Dynamo skips the frame under way (a graph break in a loop) and runs it eagerly,
        from its start: each call it made before the loop was a frame of its own too, its
        arguments that frame's inputs (qwen2.5-VL's vision tower: the ``seq_len`` it hands
        ``permute_input_for_window_attn`` before its blocks' loop breaks is guarded there).
        Those calls were walked inline; walk them again as frames."""
        w = self.w
        calls, self.frame_calls = self.frame_calls, []
        broke = w.a.callee_broke
        try:
            for target, bound, flagged, instance in calls:
                w.a.call(w.ctx, target, bound, flagged, instance)
        finally:
            w.a.callee_broke = broke

    def callee_broke(self, stmt: cst.CSTNode, hard: bool, returned: Value) -> None:
        """The graph broke inside a callee: this frame resumes after the call, taking what
        the call ``returned`` as an input too."""
        self.graph_break(stmt, skips_loop=hard)
        self.returned_across = self.w.ctx.stmt
        self.hold(returned)

    def carrier_names(self, size: Value) -> Optional[List[set]]:
        """For each tensor ``size`` was read from, the locals bound to it now (None if one is
        not bound: it does not cross the break)."""
        carriers = size.carriers
        if carriers is None and size.elems is not None:  # a tuple of sizes: its varying ones'
            found = [c for e in size.elems if e.is_size and e.varies for c in e.carriers or ()]
            carriers = tuple(c for i, c in enumerate(found) if not any(c is o for o in found[:i]))
        if not carriers:
            return None
        out = []
        for tensor in carriers:
            names = {n for n, v in self.w.env.items() if v is tensor}
            if not names:
                return None
            out.append(names)
        return out

    def carried_across(self, name: str, brk: cst.CSTNode) -> bool:
        """Whether the resumed frame reads every tensor the int ``name`` (or the Size) was read
        from, after the break at ``brk``. That tensor is then an input of the frame whose dim
        changes whenever the int does; torch checks the frame's guards in their sort order,
        not in the order the frame reads its inputs, so when the tensor's name sorts first its
        guard fails first: a recompile torch makes itself (automatic dynamic shapes), in which
        the int turns dynamic as well, and the int costs nothing more (longformer 828 and 1352,
        cases r13 and r23: never blamed; a Size read before a tensor named ``residuals``, the
        MoE blocks of DeepSeek-V3 and its kin: measured, torch names the tensor). An int whose
        name sorts first is named by torch (examples/decoder.py line 44, longformer 538).
        The reads counted run to the function's end: a read after a later break, in another
        frame, is counted too, which errs towards not reporting."""
        carriers = self.carriers.pop(name, None)
        if not carriers:
            return False
        ctx = self.w.ctx
        if self._names is None:
            self._names = _names_in(ctx.info.tree)
        start = self.line_of(brk)
        seen = {n for n, ln in self._names if start < ln}
        # torch checks a frame's guards in Guard.sort_key order (torch/_guards.py: the source
        # name's length, then the name): the tensor's size guard fails first only if its
        # name sorts first (`x` before `z`; `n` before `x`, and `n == 2` is blamed: measured)
        first = (len(name), name)
        return all(any((len(t), t) < first for t in names & seen) for names in carriers)

    # -- names bound and read -----------------------------------------------------------------
    def bound(self, name: str, v: Value) -> None:
        """``name`` holds a fresh value: traced in the new frame, unless it is a Python number
        computed from data after a break, or returned by a call that broke (a tensor such a
        call returns is an input of the resumed frame)."""
        self.crossed.pop(name, None)
        self.carriers.pop(name, None)
        # returned by a call that broke the graph at this statement
        returned = self.returned_across is not None and self.returned_across is self.w.ctx.stmt
        if returned and v.is_tensor:
            # a tensor a callee that broke returns: it ran as a frame of its own and hands the
            # resumed frame a real tensor, an input there (Longformer's
            # `max_num_global_attn_indices`, a 0-d tensor read as a size without a break)
            self.w.a.add_graph_inputs([v])
        if self.unpacking is not None and self.unpacking[0] is self.w.ctx.stmt:
            _, where, param = self.unpacking
            if v.is_size and v.varies:  # an int of a Size handed on: an input in its place
                if where is not None:
                    self.crossed[name] = where
                    self.carriers[name] = self.carrier_names(v)
                if param:
                    self.params_unread[name] = v
            return
        if self.broke_at is not None and not v.is_tensor and v.kinds and not v.kinds - NUMBERS \
                and (Tag.DATA in v.tags or (returned and v.is_size and v.varies)):
            self.crossed[name] = self.last_break  # type: ignore[assignment]
        elif self.broke_at is not None and v.is_varying_list and (
                (self.break_stmt is self.w.ctx.stmt and self._handed_over(self.w.ctx.stmt))
                or self.held_across.pop(id(v), None) is not None):
            # `sizes = t.tolist()` breaks the graph; the resumed frame takes the list as an
            # input and guards its length where it first reads it (a list the resumed frame
            # makes of it, `torch.split(x, sizes)`, is no input). So with a list the call
            # that broke returned inside an output (`out["image"].pooler_output`)
            self.crossed[name] = self.last_break  # type: ignore[assignment]

    def _handed_over(self, stmt: Optional[cst.CSTNode]) -> bool:
        """``stmt``, the statement that broke, assigns what the break itself hands the resumed
        frame: the breaking call's result, a callee's that broke, or a comprehension's (a frame
        of its own before Python 3.12). Not a value the resumed frame computes from it:
        ``parts = torch.split(x, t.tolist())`` splits in the resumed frame, where the pieces
        are no input and get no length guard (measured: only the split's line is blamed)."""
        value = getattr(stmt, "value", None)
        brk = self.last_break
        if value is None or brk is None or value is brk or (
                COMPREHENSION_FRAMES and isinstance(value, _COMPREHENSIONS)):
            return True
        return not _contains(value, brk)

    def hold(self, v: Value) -> None:
        """``v`` is an input of the frame that resumes: note the varying lists it holds (a
        list kept in a dict or an output, read back later)."""
        for item in _held(v):
            if item.is_varying_list:
                self.held_across[id(item)] = item

    def read_held(self, v: Value) -> Optional[cst.CSTNode]:
        """A read of a stored item or field (``outputs["image"].pooler_output``): where the
        break it crossed is when it is a varying list the resumed frame reads first here."""
        if self.held_across.pop(id(v), None) is None:
            return None
        return self.last_break

    def read(self, node: cst.Name, v: Value) -> Optional[cst.CSTNode]:
        """A read of a name: where the break it crossed is when this is a frame's first read
        of that input (None otherwise). A Size read only to hand its ints on (``b, t, c =
        shape``, ``t = shape[1]``) installs no guard: the frame guards each int where it is
        used (torch 2.13: ``shape[1] == 5`` at the ``view(b, t, c)`` after the unpack), so the
        names it binds take its place as inputs (see ``bound``)."""
        w = self.w
        stmt = w.ctx.stmt
        if self.unpacking is not None and self.unpacking[0] is not stmt:
            self.unpacking = None  # (its names were bound as the statement ended)
        unpack = api.varying_shape_dim(v) is not None and isinstance(stmt, cst.Assign) and (
            stmt.value is node or (isinstance(stmt.value, cst.Subscript) and stmt.value.value is node))
        param = self.params_unread.pop(node.value, None) is not None
        if param and not unpack:
            self.param_reads.append((node, v, stmt, w._passthrough))
            if w._passthrough and w._passed is not None:
                w._passed.append((node, v, None))
        where = self.crossed.pop(node.value, None)
        if where is not None and self.carried_across(node.value, where):
            where = None
        if unpack and (param or where is not None):
            self.unpacking = (cast(cst.CSTNode, stmt), where, param)
            return None
        return where

    def read_attribute(self, attr: str) -> bool:
        """A per-instance attribute read: True at its first read after a break (the resumed
        frame guards its value there)."""
        if self.broke_at is None or attr in self.read_after_break:
            return False
        self.read_after_break.add(attr)
        return True

    def read_instance_module(self, node: cst.Attribute, attr: str, v: Value) -> None:
        """A read of ``self.<attr>``, a submodule of one class in some instances and another
        in others: Dynamo guards its type in each frame that reads it (``___check_type_id(
        self._modules['mlp'])``), so a frame shared by the instances recompiles for the other
        class. Its first read after a break is reported now; its first read in the function
        when the function turns out to be a frame of its own (see ``frame_inputs``)."""
        w = self.w
        if self.broke_at is None:  # (in the function's first frame)
            self.module_reads.setdefault(attr, (node, v, w.ctx.stmt))
        elif self.read_attribute(attr):
            w.emit("on_name_use", api.NameUse(node, v, w.ctx, name=f"self.{attr}",
                                              after_break=True,
                                              break_line=self.line_of(self.broke_at)))

    def frame_inputs(self) -> None:
        """The graph broke in this function (not the entry), or eager code called it: it runs
        as a frame of its own, its arguments are that frame's inputs, and each int among them
        that differs between calls is guarded by value at its first read. A read that only
        hands the int on to a callee counts when that callee breaks too (the call is where
        this frame breaks, guarding it); one traced inline reads it, and guards it, inside."""
        w = self.w
        if (not self.breaks_caller and not self.own_frame) or self.eager or w.a.eager \
                or w.in_module_init():  # a module's __init__ that breaks runs eagerly
            return
        reads: List[Tuple[cst.CSTNode, str, Value, Optional[cst.CSTNode]]] = [
            (node, node.value, v, stmt) for node, v, stmt, passthrough in self.param_reads
            if not passthrough]  # (one handed on is reported by _guard_passed, if at all)
        reads += [(node, f"self.{attr}", v, stmt) for attr, (node, v, stmt)
                  in self.module_reads.items()]
        # (no break here: its caller runs eagerly, a frame Dynamo skipped)
        break_line = self.line_of(self.broke_at) if self.broke_at is not None else 0
        for node, name, v, stmt in reads:
            saved, w.ctx.stmt = w.ctx.stmt, stmt
            try:
                w.emit("on_name_use", api.NameUse(
                    node, v, w.ctx, name=name, after_break=True,
                    break_line=break_line, frame_input=True))
            finally:
                w.ctx.stmt = saved


def _held(root: Optional[Value], depth: int = 2) -> List[Value]:
    """The fields and stored items of ``root``, and theirs (what reading them back without
    computing anything gives)."""
    if root is None or (not root.keyed and not root.record):
        return []
    out = []
    for _, item in (root.keyed or ()) + (root.record or ()):
        out.append(item)
        if depth:
            out.extend(_held(item, depth - 1))
    return out


def varies_between_calls(v: Value) -> bool:
    """A Python int that can differ from one call of a function to the next within one
    forward: a size of a varying dim, a number read from tensor data, a loop index over a
    ModuleList's layers or a per-layer attribute (``layer_idx``); or a Size holding such a
    size, whose ints the frame guards each (``shape[1] == 5``)."""
    if api.varying_shape_dim(v) is not None:
        return True
    if Tag.INSTANCE in v.tags and v.kinds == {Kind.STR}:
        return True  # a per-layer setting (`self.pad_mode`): a constant, guarded by value
    if v.is_tensor or not v.kinds or v.kinds - NUMBERS:
        return False
    return (v.is_size and v.varies is True) or Tag.DATA in v.tags or \
        (Tag.INSTANCE in v.tags and Kind.INT in v.kinds)


def _names_in(tree: ast.AST) -> List[Tuple[str, int]]:
    """The names a function's body mentions, with their lines (reads and writes alike: an
    over-count of what is live, which errs towards taking an int as carried, so towards not
    reporting it). Read from the function's ``ast``: lines come with it, where a libcst node's
    line costs a position lookup."""
    return [(n.id, n.lineno) for n in ast.walk(tree) if isinstance(n, ast.Name)]


def _contains(root: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Whether ``node`` is ``root`` or lies inside it."""
    stack = [root]
    while stack:
        n = stack.pop()
        if n is node:
            return True
        stack.extend(n.children)
    return False
