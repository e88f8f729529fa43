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
#: the harness ran the file but never reached the finding's line (coverage of the replay)
NOT_REACHED = "not-reached"
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


# =============================================================================================
# Harness results (``shapelint run``): what the replay of one target saw, typed.
# =============================================================================================

#: what torch did, one kind per event; a finding's ``evidence`` names the kinds that confirm it
RECOMPILE, SPECIALIZATION, GRAPH_BREAK, COMPILE_ERROR, FALLBACK = (
    "recompile", "specialization", "graph-break", "compile-error", "fallback")
EVENT_KINDS = (RECOMPILE, SPECIALIZATION, GRAPH_BREAK, COMPILE_ERROR, FALLBACK)
#: the per-kind lists of the dict view older readers use (``result["recompiles"]``)
_LEGACY_LISTS = {"recompiles": RECOMPILE, "specializations": SPECIALIZATION,
                 "graph_breaks": GRAPH_BREAK, "compile_errors": COMPILE_ERROR,
                 "fallbacks": FALLBACK}


class _DictView:
    """``obj["field"]`` and ``obj.get("field")`` for readers written against the dict results
    of earlier versions (bench/zoo.py, tests replaying rule examples)."""

    def __getitem__(self, key: str) -> Any:
        try:
            return self._view(key)
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self._view(key)
        except AttributeError:
            return default

    def __contains__(self, key: str) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def _view(self, key: str) -> Any:
        return getattr(self, key)


_MISSING = object()


@dataclass
class Event(_DictView):
    """One thing torch did during a replay, blamed on a source line when it can be.

    ``kind`` is one of EVENT_KINDS and ``detail`` says how it was blamed (``shape-guard``,
    ``value-guard``, ``input-dynamic``, ``size-one``, ``attribute-write``, ``recompile-limit``,
    ...). ``path`` is the path shown (relative to the working directory of the run), ``abspath``
    the file; ``also`` holds more blamed places ({path, abspath, line, why}). A recompile holds
    every failed guard of every cache entry in ``guards`` ({entry, detail, guard, text, path,
    abspath, line, framework}); ``note`` says why there is no line, or what torch did."""

    kind: str
    shape: Dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    detail: str = ""
    path: Optional[str] = None
    abspath: Optional[str] = None
    line: Optional[int] = None
    note: str = ""
    frame: str = ""
    compile_id: str = ""
    guards: List[Dict[str, Any]] = field(default_factory=list)
    also: List[Dict[str, Any]] = field(default_factory=list)
    registry_id: Optional[str] = None
    #: a guard torch itself adds in framework code (CPU convolution's batch < 16, a kernel's
    #: spatial-size guard): not a hazard a user line caused
    framework: bool = False
    #: a specialization of a size or value that never varied across the replayed shapes
    benign: bool = False
    symbol: Optional[str] = None
    value: Optional[str] = None
    sources: List[str] = field(default_factory=list)
    #: filled in for reports: the blamed source line and the rules that predicted it
    source: str = ""
    confirms: List[str] = field(default_factory=list)

    @property
    def guard(self) -> Optional[str]:
        """The first failed guard expression (recompiles)."""
        return next((g.get("guard") for g in self.guards if g.get("guard")), None)

    @property
    def message(self) -> str:  # what a compile error says (the dict view's name for it)
        return self.reason

    def locations(self, callers: bool = True) -> List[Tuple[str, int]]:
        """Every blamed (abspath, line): the event's own, its failed guards', and with
        ``callers`` the places in ``also`` (the calls in a value guard's stack)."""
        out: List[Tuple[str, int]] = []
        more = self.also if callers else []
        for item in [{"abspath": self.abspath, "line": self.line}] + self.guards + more:
            ab, line = item.get("abspath"), item.get("line")
            if ab and line and (ab, int(line)) not in out:
                out.append((ab, int(line)))
        return out

    def to_json(self) -> Dict[str, Any]:
        data = dataclasses.asdict(self)
        return {k: v for k, v in data.items() if v not in (None, "", [], False) or k in
                ("kind", "shape", "path", "line", "reason")}

    @classmethod
    def from_json(cls, data: Dict[str, Any], kind: Optional[str] = None) -> "Event":
        """An event as ``to_json`` wrote it, or an entry of an older per-kind list (whose
        ``kind`` was the detail), given the list's ``kind``."""
        data = dict(data)
        if kind is not None and data.get("kind") != kind:
            data.setdefault("detail", data.get("kind") or "")
            data["kind"] = kind
        if "message" in data and not data.get("reason"):
            data["reason"] = data["message"]
        names = {f.name for f in dataclasses.fields(cls)}
        ev = cls(**{k: v for k, v in data.items() if k in names})
        if ev.path and not ev.abspath:
            import os

            ev.abspath = os.path.abspath(ev.path)
        return ev

    def legacy(self) -> List[Dict[str, Any]]:
        """The dicts of the per-kind lists of earlier versions: one per blamed line, ``kind``
        being the detail."""
        base = {"shape": self.shape, "reason": self.reason, "note": self.note, "frame": self.frame,
                "compile_id": self.compile_id, "registry_id": self.registry_id,
                "benign": self.benign, "framework": self.framework, "sources": self.sources,
                "symbol": self.symbol, "value": self.value, "source": self.source,
                "confirms": self.confirms, "message": self.reason}
        rows = []
        places = [dict(g, kind=g.get("detail") or self.detail) for g in self.guards
                  if g.get("abspath") and g.get("line")]
        if self.kind != RECOMPILE or not places:
            places.insert(0, {"path": self.path, "abspath": self.abspath, "line": self.line,
                              "kind": self.detail, "guard": self.guard})
        for p in places + [dict(a, kind=self.detail) for a in self.also]:
            row = dict(base, kind=p.get("kind") or self.detail, path=p.get("path"),
                       abspath=p.get("abspath"), line=p.get("line"), guard=p.get("guard"))
            if not any(r["abspath"] == row["abspath"] and r["line"] == row["line"] for r in rows):
                rows.append(row)
        return rows


@dataclass
class TargetResult(_DictView):
    """The replay of one target: its settings, compile counts per shape, events, coverage,
    measured remedies, and its verdict (``problems``; failed when there is any)."""

    name: str
    model: str = ""
    torch_version: Optional[str] = None
    device: Optional[str] = None
    backend: str = ""
    dynamic: str = ""
    mode: Optional[str] = None
    fullgraph: bool = False
    trace_source: Optional[str] = None
    shapes: List[Dict[str, Any]] = field(default_factory=list)
    shapes_planned: List[Dict[str, Any]] = field(default_factory=list)
    compiles: int = 0
    per_shape: List[Dict[str, Any]] = field(default_factory=list)
    frames: List[Dict[str, Any]] = field(default_factory=list)
    events: List[Event] = field(default_factory=list)
    #: user lines the compiled region ran, {path: lines}
    executed: Dict[str, List[int]] = field(default_factory=dict)
    #: input sizes and int arguments that differed between shapes (``L['x'].size()[0]``)
    varying: List[str] = field(default_factory=list)
    max_compiles: Optional[int] = None
    #: why the target could not run to the end (timeout, crash, factory error)
    error: Optional[str] = None
    #: everything that fails it: the error, a budget exceeded, a fallback to eager, ...
    problems: List[str] = field(default_factory=list)
    seconds: float = 0.0
    remedies: List[Dict[str, Any]] = field(default_factory=list)
    #: what the worker printed (its last lines), for a target that failed
    output_tail: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.problems)

    @property
    def verdict(self) -> str:
        """``ok`` or ``failed: <problems>``: the one place a reporter gets it from."""
        return "failed: " + "; ".join(self.problems) if self.problems else "ok"

    def of_kind(self, kind: str) -> List[Event]:
        return [e for e in self.events if e.kind == kind]

    def _view(self, key: str) -> Any:
        if key in _LEGACY_LISTS:
            return [row for e in self.of_kind(_LEGACY_LISTS[key]) for row in e.legacy()]
        if key == "failed":
            return self.failed
        return getattr(self, key)

    def to_json(self) -> Dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["events"] = [e.to_json() for e in self.events]
        data["failed"] = self.failed
        return data

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "TargetResult":
        """A target as ``to_json`` wrote it; a dict of an older report (per-kind event lists)
        or a partial one (a test's) works too."""
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in data.items() if k in names and k != "events" and v is not None}
        kw.setdefault("name", str(data.get("name", "?")))
        events = [Event.from_json(e) for e in data.get("events") or []]
        for key, kind in _LEGACY_LISTS.items():
            events += [Event.from_json(e, kind) for e in data.get(key) or []]
        problems = list(data.get("problems") or [])
        if data.get("error") and data["error"] not in problems:
            problems.append(data["error"])
        if data.get("failed") and not problems:
            problems.append("failed")
        kw["problems"] = problems
        kw["error"] = data.get("error")
        return cls(**kw, events=events)


def as_target(t: Any) -> "TargetResult":
    return t if isinstance(t, TargetResult) else TargetResult.from_json(t)
