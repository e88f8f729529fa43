"""The one currency of shapelint: a Finding, from the static pass, the harness or both.

Every reporter reads a list of Findings; nothing downstream recomputes them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

#: Statuses a finding moves through once the harness has run.
PREDICTED = "predicted"
CONFIRMED = "confirmed"
NOT_SEEN = "not-seen"
UNPREDICTED = "unpredicted"

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True, order=True)
class Location:
    """A span in a file; lines and columns are 1-based, end inclusive of the last char."""

    path: str
    line: int
    column: int = 1
    end_line: int = 0
    end_column: int = 0

    def __post_init__(self) -> None:
        if not self.end_line:
            object.__setattr__(self, "end_line", self.line)
        if not self.end_column:
            object.__setattr__(self, "end_column", self.column)


@dataclass
class Finding:
    """A predicted (static) or observed (dynamic) compile hazard at one location."""

    rule: str
    name: str
    location: Location
    message: str
    severity: str = "warning"
    symbol: str = ""
    evidence: Tuple[str, ...] = ()
    hint: str = ""
    registry_ids: Tuple[str, ...] = ()
    status: str = PREDICTED
    evidence_events: List[Dict[str, Any]] = field(default_factory=list)
    source_line: str = ""

    @property
    def path(self) -> str:
        return self.location.path

    @property
    def line(self) -> int:
        return self.location.line

    @property
    def column(self) -> int:
        return self.location.column

    def sort_key(self) -> Tuple[Any, ...]:
        loc = self.location
        return (loc.path, loc.line, loc.column, self.rule)

    def to_json(self) -> Dict[str, Any]:
        """The JSON contract documented in the README (keys are stable)."""
        loc = self.location
        data: Dict[str, Any] = {
            "rule": self.rule,
            "name": self.name,
            "path": loc.path,
            "line": loc.line,
            "column": loc.column,
            "end_line": loc.end_line,
            "end_column": loc.end_column,
            "severity": self.severity,
            "message": self.message,
            "symbol": self.symbol,
            "evidence": list(self.evidence),
            "hint": self.hint,
        }
        if self.source_line:  # the line as read: reports re-rendered from JSON quote it too
            data["source_line"] = self.source_line
        if self.registry_ids:
            data["registry_ids"] = list(self.registry_ids)
        if self.status != PREDICTED or self.evidence_events:
            data["status"] = self.status
            data["evidence_events"] = self.evidence_events
        return data

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Finding":
        loc = Location(data["path"], data["line"], data.get("column", 1),
                       data.get("end_line", 0), data.get("end_column", 0))
        return cls(rule=data["rule"], name=data.get("name", ""), location=loc,
                   message=data.get("message", ""), severity=data.get("severity", "warning"),
                   symbol=data.get("symbol", ""), evidence=tuple(data.get("evidence", ())),
                   hint=data.get("hint", ""), registry_ids=tuple(data.get("registry_ids", ())),
                   status=data.get("status", PREDICTED),
                   evidence_events=list(data.get("evidence_events", [])),
                   source_line=data.get("source_line", ""))

    def replace(self, **changes: Any) -> "Finding":
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class FileError:
    """A file that could not be read or parsed; the rest of the run goes on."""

    path: str
    line: int
    column: int
    message: str

    def to_json(self) -> Dict[str, Any]:
        return {"path": self.path, "line": self.line, "column": self.column,
                "message": self.message}


@dataclass
class CheckResult:
    """What one static run produced."""

    findings: List[Finding] = field(default_factory=list)
    errors: List[FileError] = field(default_factory=list)
    files_checked: int = 0
    unused_suppressions: List[Finding] = field(default_factory=list)
    #: rules that raised (a bug in the rule, not in the analysed code): exit status 2
    rule_errors: List[FileError] = field(default_factory=list)

    def all_findings(self) -> List[Finding]:
        return sorted(self.findings + self.unused_suppressions, key=Finding.sort_key)


def shape_text(shape: Optional[Dict[str, Any]]) -> str:
    """``batch=8 seq_len=16`` for a replayed shape (or a label a test gave it)."""
    if not shape:
        return "?"
    if "label" in shape:
        return str(shape["label"])
    text = f"batch={shape.get('batch')}"
    if shape.get("seq_len") is not None:
        text += f" seq_len={shape['seq_len']}"
    return text


def relpath(path: str, start: Optional[str] = None) -> str:
    """Path relative to the working directory when under it, else absolute."""
    import os

    start = start or os.getcwd()
    ab = os.path.abspath(path)
    try:
        rel = os.path.relpath(ab, start)
    except ValueError:
        return ab
    return ab if rel.startswith("..") else rel
