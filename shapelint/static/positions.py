"""Line and column of a libcst node, at the cost of one statement rather than one file.

libcst computes positions by generating the code of the whole tree it is given, which cost
more than parsing. Here ``ast`` (already parsed for the summary) says where each statement of
a function starts; libcst's PositionProvider then runs on a module made of that one statement
(a compound statement keeps its header and gets a ``pass`` body), and the two are added up.
Where the two trees do not pair up statement by statement, positions come from the function's
own parsed lines instead (exact, and still a fraction of the file).
"""

from __future__ import annotations

import ast
import re
from typing import Any, Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

Position = Tuple[int, int, int, int]  # line, column (1-based), end line, end column (inclusive)

_STUB = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Pass()])])
_BODY_FIELDS = frozenset({"body", "orelse", "handlers", "finalbody", "cases"})
_PAIRS: Dict[type, Tuple[Any, ...]] = {
    cst.If: (ast.If,), cst.For: (ast.For, ast.AsyncFor), cst.While: (ast.While,),
    cst.With: (ast.With, ast.AsyncWith), cst.Try: (ast.Try,),
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef), cst.ClassDef: (ast.ClassDef,),
}
if hasattr(cst, "TryStar") and hasattr(ast, "TryStar"):
    _PAIRS[cst.TryStar] = (ast.TryStar,)



_NEWLINE = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> List[str]:
    """The lines of a source file as Python numbers them: ``str.splitlines`` also breaks at
    form feeds and other separators, which would shift every line after them."""
    lines = _NEWLINE.split(text) if "\r" in text else text.split("\n")  # (10x faster)
    if lines and lines[-1] == "":
        lines.pop()
    return lines

class _Mismatch(Exception):
    """The libcst and ast statements of a function do not pair up."""


class FunctionPositions:
    """Positions of the nodes of one function's libcst tree."""

    def __init__(self, fn: cst.FunctionDef, tree: ast.AST, line_text: Callable[[int], str],
                 segment: Optional[Tuple[cst.Module, int]]) -> None:
        self._fn = fn
        self._tree = tree
        self._line_text = line_text
        self._segment = segment
        self._owner: Optional[Dict[int, cst.CSTNode]] = None  # id(node) -> its statement
        self._stmts: List[cst.CSTNode] = []  # every statement (and except clause), paired
        self._members: Dict[int, set] = {}  # id(statement) -> ids of its own nodes
        self._start: Dict[int, Tuple[int, int, int, int]] = {}  # id(statement) -> ast span
        self._tables: Dict[int, Tuple[object, cst.CSTNode]] = {}
        self._elifs: set = set()
        self._minis: Dict[int, cst.Module] = {}
        self._mini_code: Dict[int, List[str]] = {}  # ids of `elif` Ifs: their own module writes `if`, 2 shorter
        self._paired: Optional[bool] = None
        self._whole: Any = None  # PositionProvider over the function's lines, when pairing failed

    def position(self, node: cst.CSTNode, near: Optional[cst.CSTNode] = None) -> Optional[Position]:
        """``node``'s position, or None when it is not part of this function. ``near`` is the
        statement the walk was in when it met ``node``: checked first, it spares indexing
        every node of the function."""
        if self._paired is None:
            try:
                self._compound(self._fn, self._tree)
                self._paired = True
            except _Mismatch:
                self._paired = False
        if not self._paired:
            return self._from_whole(node)
        stmt = near if near is not None and self._holds(near, node) else None
        if stmt is None:
            stmt = self._owner_map().get(id(node))
        if stmt is None:
            return None
        line, col, end_line, end_col = self._start[id(stmt)]
        if node is stmt and not isinstance(stmt, cst.BaseSmallStatement):
            return (line, col + 1, end_line, max(end_col, 1))  # a whole compound statement
        table, ref = self._table(stmt)
        try:
            rng = table[node]
        except KeyError:
            return (line, col + 1, line, col + 1)
        base = table[ref].start
        if id(stmt) in self._elifs:
            col += 2

        def shift(pos) -> Tuple[int, int]:
            if pos.line == base.line:
                return line, pos.column - base.column + col
            # a continuation line: the statement's own module indents it by what libcst
            # keeps of it (all of it after a backslash, the part past the block's indent
            # inside brackets); the file by its own whitespace
            real = line + pos.line - base.line
            return real, pos.column - _indent(self._mini_line(stmt, pos.line)) + \
                _indent(self._line_text(real))

        sl, sc = shift(rng.start)
        el, ec = shift(rng.end)
        return (sl, sc + 1, el, max(ec, 1))

    # -- pairing the two trees -----------------------------------------------------------------
    def _block(self, stmts: Sequence[cst.CSTNode], trees: List[ast.stmt]) -> None:
        i = 0
        for s in stmts:
            smalls = s.body if isinstance(s, cst.SimpleStatementLine) else None
            for item in (smalls if smalls is not None else [s]):
                if i >= len(trees):
                    raise _Mismatch()
                if smalls is not None:
                    self._small(item, trees[i])
                else:
                    self._compound(item, trees[i])
                i += 1
        if i != len(trees):
            raise _Mismatch()

    def _suite(self, suite: cst.CSTNode, trees: List[ast.stmt]) -> None:
        if isinstance(suite, cst.IndentedBlock):
            self._block(suite.body, trees)
        elif isinstance(suite, cst.SimpleStatementSuite):
            if len(suite.body) != len(trees):
                raise _Mismatch()
            for small, tree in zip(suite.body, trees):
                self._small(small, tree)
        else:
            raise _Mismatch()

    def _span(self, node: cst.CSTNode, tree: ast.AST) -> None:
        self._start[id(node)] = (tree.lineno, tree.col_offset,  # type: ignore[attr-defined]
                                 getattr(tree, "end_lineno", None) or tree.lineno,  # type: ignore[attr-defined]
                                 getattr(tree, "end_col_offset", None) or 0)

    def _small(self, node: cst.CSTNode, tree: ast.stmt) -> None:
        self._span(node, tree)
        self._stmts.append(node)

    def _header(self, node: cst.CSTNode) -> None:
        self._stmts.append(node)

    def _holds(self, stmt: cst.CSTNode, node: cst.CSTNode) -> bool:
        """Is ``node`` part of ``stmt`` itself (a compound one's header)? The statement's
        position table, needed anyway, answers without walking the statement's nodes."""
        if id(stmt) not in self._start:
            return False
        if node is stmt:
            return True
        return node in self._table(stmt)[0]

    def _own(self, stmt: cst.CSTNode) -> set:
        """Ids of the nodes that belong to ``stmt`` itself (a compound one's header only)."""
        ids = self._members.get(id(stmt))
        if ids is None:
            if id(stmt) not in self._start:
                return set()
            if isinstance(stmt, cst.BaseSmallStatement):
                ids = {id(n) for n in walk(stmt)}
            else:
                ids = {id(stmt)}
                for part in child_nodes(stmt, skip=_BODY_FIELDS):
                    ids.update(id(n) for n in walk(part))
            self._members[id(stmt)] = ids
        return ids

    def _owner_map(self) -> Dict[int, cst.CSTNode]:
        if self._owner is None:
            self._owner = {}
            for stmt in self._stmts:
                for i in self._own(stmt):
                    self._owner[i] = stmt
        return self._owner

    def _compound(self, node: Any, tree: Any) -> None:  # a pair of _PAIRS: checked below
        kinds = _PAIRS.get(type(node))
        if kinds is None or not isinstance(tree, kinds):
            raise _Mismatch()
        self._span(node, tree)
        self._header(node)
        self._suite(node.body, tree.body)
        orelse = getattr(node, "orelse", None)
        if isinstance(orelse, cst.If):
            if len(tree.orelse) != 1:
                raise _Mismatch()
            self._elifs.add(id(orelse))
            self._compound(orelse, tree.orelse[0])
        elif isinstance(orelse, cst.Else):
            self._suite(orelse.body, tree.orelse)
        elif orelse is None and getattr(tree, "orelse", None):
            raise _Mismatch()
        handlers = getattr(node, "handlers", ())
        if len(handlers) != len(getattr(tree, "handlers", ())):
            raise _Mismatch()
        for h, th in zip(handlers, getattr(tree, "handlers", ())):
            self._span(h, th)
            self._header(h)
            self._suite(h.body, th.body)
        final = getattr(node, "finalbody", None)
        if final is not None:
            self._suite(final.body, tree.finalbody)

    # -- one statement's own module ------------------------------------------------------------
    def _mini_line(self, stmt: cst.CSTNode, number: int) -> str:
        table, ref = self._table(stmt)
        lines = self._mini_code.get(id(stmt))
        if lines is None:
            lines = self._mini_code[id(stmt)] = source_lines(self._minis[id(stmt)].code)
        return lines[number - 1] if 0 < number <= len(lines) else ""

    def _table(self, stmt: cst.CSTNode):
        cached = self._tables.get(id(stmt))
        if cached is None:
            if isinstance(stmt, cst.BaseSmallStatement):
                ref: cst.CSTNode = stmt
                mini = cst.Module(body=[cst.SimpleStatementLine(body=[stmt])])
            elif isinstance(stmt, cst.ExceptHandler):
                ref = stmt.with_changes(body=_STUB)
                mini = cst.Module(body=[cst.Try(body=_STUB, handlers=[ref])])
            else:
                changes: Dict[str, Any] = {"body": _STUB}
                if hasattr(stmt, "orelse"):
                    changes["orelse"] = None
                ref = stmt.with_changes(**changes)
                mini = cst.Module(body=[ref])  # type: ignore[list-item]  # a compound statement
            table = _positions_of(mini)
            self._minis[id(stmt)] = mini
            cached = self._tables[id(stmt)] = (table, ref)
        return cached

    def _from_whole(self, node: cst.CSTNode) -> Optional[Position]:
        if self._segment is None:
            return None
        module, offset = self._segment
        if self._whole is None:
            self._whole = _positions_of(module)
        try:
            rng = self._whole[node]
        except KeyError:
            return None
        return (rng.start.line + offset, rng.start.column + 1, rng.end.line + offset,
                max(rng.end.column, 1))


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _positions_of(module: cst.Module):
    """PositionProvider's table for ``module``: its code generation alone, without the
    MetadataWrapper, which also runs a visitor over every node (half the cost)."""
    try:
        from libcst.metadata.position_provider import PositionProvidingCodegenState

        provider = PositionProvider()
        state = PositionProvidingCodegenState(default_indent=module.default_indent,
                                              default_newline=module.default_newline,
                                              provider=provider)
        module._codegen(state)
        return provider._computed
    except (ImportError, AttributeError, TypeError):  # another libcst: the public way
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


def child_nodes(node: cst.CSTNode, skip: FrozenSet[str] = frozenset()) -> Iterator[cst.CSTNode]:
    """The nodes ``node``'s fields hold, fields named in ``skip`` left out (reads dataclass
    fields: libcst's ``children`` runs a visitor per node)."""
    for name in node.__dataclass_fields__:
        if name in skip:
            continue
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from (v for v in value if isinstance(v, cst.CSTNode))


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and everything under it."""
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(child_nodes(cur))
