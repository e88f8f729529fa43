"""torch's internal names, in the user's words.

torch names what it guards by its own bookkeeping: ``___stack0`` is a value that was on
Python's stack when the graph broke and that the resumed frame took as an input,
``L['x']`` a local of the frame, ``torch_dynamo_resume_in_forward_at_36`` the frame Dynamo
made for what follows a graph break at line 36, and ``inner`` / ``wrapped_func`` the wrapper a
decorator put around a function. None of it is in the user's code. This module maps them back
from the source (no torch needed, so recorded traces read the same):

- a resume frame is "``forward``, resumed after the graph break at line 36";
- ``___stack0`` of a resume frame whose break line assigns one name the result of the call
  that broke (``longest = int(mask.sum(1).max())``) is that name: "``longest`` (line 36),
  carried across the graph break at line 36"; any other stack value is "the value computed at
  line 36";
- a frame is named by the function that holds the blamed line (``Classifier.forward``), not by
  the wrapper torch compiled.
"""

from __future__ import annotations

import ast
import linecache
import re
from functools import lru_cache
from typing import Optional, Tuple

RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>\w+?)_at_(?P<line>\d+)$")
STACK = re.compile(r"\b___stack(?P<n>\d+)\b")
LOCAL = re.compile(r"\bL\['(?P<name>[A-Za-z_]\w*)'\]")


def resume_of(frame: str) -> Optional[Tuple[str, int]]:
    """(function, break line) of a resume frame's name, or None."""
    m = RESUME.match(frame or "")
    return (m.group("fn"), int(m.group("line"))) if m else None


@lru_cache(maxsize=64)
def _tree(path: str) -> Optional[ast.Module]:
    text = "".join(linecache.getlines(path))
    if not text:
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def enclosing_function(path: str, line: int) -> Optional[Tuple[str, bool]]:
    """(``Class.method`` or ``function``, whether it is a closure: a def inside a def, as a
    decorator's wrapper is) of the innermost def holding ``line`` of ``path``."""
    tree = _tree(path)
    if tree is None:
        return None
    best: Optional[Tuple[str, bool]] = None

    def visit(node: ast.AST, prefix: str, in_def: bool) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                end = getattr(child, "end_lineno", None) or child.lineno
                if child.lineno <= line <= end:
                    name = f"{prefix}{child.name}"
                    is_def = not isinstance(child, ast.ClassDef)
                    if is_def:
                        best = (name, in_def)
                    visit(child, name + ".", in_def or is_def)

    visit(tree, "", False)
    return best


def _statement(path: str, line: int) -> Optional[ast.stmt]:
    tree = _tree(path)
    if tree is None:
        return None
    found: Optional[ast.stmt] = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For,
                       ast.While, ast.With, ast.Try)) \
                and node.lineno <= line <= (getattr(node, "end_lineno", None) or node.lineno):
            found = node
    return found


def stack_name(path: str, break_line: int, n: int) -> Optional[str]:
    """The name ``___stack<n>`` of the frame resumed after a break at ``break_line`` is
    stored to: the one name the statement there assigns the result of its call (the call
    that broke; its result is the only value on the stack)."""
    stmt = _statement(path, break_line)
    if n != 0 or stmt is None:
        return None
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target, value = stmt.targets[0], stmt.value
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
        target, value = stmt.target, stmt.value
    else:
        return None
    if isinstance(target, ast.Name) and isinstance(value, ast.Call):
        return target.id
    return None


class Names:
    """Maps torch's names in the guards and frames of events (see the module)."""

    def frame(self, co_name: str, co_file: Optional[str], co_line: Optional[int],
              path: Optional[str] = None, line: Optional[int] = None) -> str:
        """What a frame is called in a report: its function (``Classifier.forward``), with the
        break it resumed after; a decorator's wrapper (a closure) by the function holding
        the blamed line ``path:line`` instead."""
        resumed = resume_of(co_name)
        own = enclosing_function(co_file, co_line) if co_file and co_line else None
        name = own[0] if own else (resumed[0] if resumed else co_name)
        if (own is None or own[1]) and path and line:  # a wrapper: the user's function
            held = enclosing_function(path, line)
            name = held[0] if held else name
        if resumed:
            return f"{name}, resumed after the graph break at line {resumed[1]}"
        return name

    def guard(self, text: str, co_name: str, path: Optional[str]) -> Tuple[str, str]:
        """(the guard in the user's names, a note on the names it replaced). ``path`` is the
        file of the frame's code (the break line's file)."""
        text = LOCAL.sub(lambda m: m.group("name"), text)
        resumed = resume_of(co_name)
        if not resumed or "___stack" not in text:
            return text, ""
        fn, line = resumed
        notes = []

        def name_of(m: "re.Match[str]") -> str:
            n = int(m.group("n"))
            name = stack_name(path, line, n) if path else None
            if name is not None:
                note = f"`{name}` (line {line}) is carried across the graph break at line {line}"
            else:
                name = f"<the value computed at line {line}>"
                note = (f"{name[1:-1]} is carried across the graph break there into the frame "
                        f"that resumes `{fn}`")
            if note not in notes:
                notes.append(note)
            return name

        return STACK.sub(name_of, text), "; ".join(notes)
