"""Suppression comments: ``# noqa: SL101``, ``# shapelint: ignore[SL101]``, and a file-level
``# shapelint: noqa``. Each suppression remembers whether it suppressed anything, so unused
ones can be reported (SL001)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z0-9]+(?:[\s,]+[A-Za-z0-9]+)*))?", re.I)
IGNORE = re.compile(r"#\s*shapelint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?")
#: a comment that can suppress or name a shapelint code, as a superset of what NOQA, IGNORE
#: and FILE_NOQA read: a blanket noqa (no code list right after it, "noqa : E501" included), a
#: noqa list with a code that a known code starts with (``S``, ``SL``, ``SL1``, ``SL101``; a
#: user rule's ``CU001`` once its rules are loaded, see :func:`know_codes`), a ``shapelint:``
#: directive. Files with none (only noqa lists of other tools' codes such as E501, common in
#: large trees) skip the tokenizer, which finds the real comments.
_PREFIXES = {"SL"}


def _may_matter(prefixes) -> "re.Pattern[str]":
    def nested(p: str) -> str:  # S, SL, SL1, SL101 for SL: each letter optional after the first
        return re.escape(p[0]) + (f"(?:{nested(p[1:])})?" if len(p) > 1 else r"\w*")

    alternatives = "|".join(nested(p.lower()) for p in sorted(prefixes))
    return re.compile(r"#\s*noqa(?!:[^\S\n]*[A-Za-z0-9])"
                      rf"|#\s*noqa:[^\n]*(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])"
                      r"|#\s*shapelint:", re.I)


MAY_MATTER = _may_matter(_PREFIXES)


def know_codes(codes) -> None:
    """Make the pre-filter read ``# noqa`` lists naming these rule codes (a user's rule from
    ``rule-paths`` may use any letters, ``CU001``)."""
    global MAY_MATTER
    new = {m.group(0) for m in (re.match(r"[A-Za-z]+", c) for c in codes) if m}
    if not new <= _PREFIXES:
        _PREFIXES.update(p.upper() for p in new)
        MAY_MATTER = _may_matter(_PREFIXES)


FILE_NOQA = re.compile(r"^\s*#\s*shapelint:\s*noqa\b(?::\s*(?P<codes>[A-Za-z0-9, ]+))?", re.M)


@dataclass
class Suppression:
    line: int
    column: int
    codes: Optional[Tuple[str, ...]]  # None: every code
    used: Set[str] = field(default_factory=set)

    def covers(self, code: str) -> bool:
        return self.codes is None or any(code.startswith(c) for c in self.codes)


def _comments(text: str) -> List[Tuple[int, int, str]]:
    """(line, 1-based column, text) of every real comment (not ``#`` inside a string)."""
    import io
    import tokenize

    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.start[1] + 1, tok.string))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def _codes(raw: Optional[str]) -> Optional[Tuple[str, ...]]:
    if not raw:
        return None
    return tuple(c.upper() for c in re.split(r"[\s,]+", raw.strip()) if c)


class Suppressions:
    """All suppressions of one file."""

    def __init__(self, text: str) -> None:
        self.by_line: Dict[int, List[Suppression]] = {}
        self.file_level: List[Suppression] = []
        if not MAY_MATTER.search(text):
            return
        for lineno, col, comment in _comments(text):
            m = FILE_NOQA.match(comment)
            if m:
                self.file_level.append(Suppression(lineno, col, _codes(m.group("codes"))))
                continue
            for rx in (NOQA, IGNORE):
                m = rx.search(comment)
                if m:
                    self.by_line.setdefault(lineno, []).append(
                        Suppression(lineno, col + m.start(), _codes(m.group("codes"))))

    def suppresses(self, code: str, line: int) -> bool:
        hit = False
        for s in self.file_level + self.by_line.get(line, []):
            if s.covers(code):
                s.used.add(code)
                hit = True
        return hit

    def unused(self, enabled: Set[str]) -> List[Tuple[Suppression, List[str]]]:
        """Suppressions naming enabled rule codes (built-in or a user's) that suppressed nothing."""
        out = []
        for sups in self.by_line.values():
            for s in sups:
                if s.codes is None:
                    continue
                ours = [c for c in s.codes if c in enabled]
                idle = [c for c in ours if c not in s.used]
                if idle:
                    out.append((s, idle))
        return out
