"""The one currency of shapelint: a Finding, from the static pass, the harness or both, and the
harness's typed results (an Event per thing torch did, a TargetResult per replayed target).

Every reporter reads these records; nothing downstream recomputes them. Each is a dataclass
whose kinds are enums (:class:`Status`, :class:`EventKind`, :class:`Blame`,
:class:`RemedyKind`); JSON is read back only through :func:`shapelint.schema.load`, which checks
every field against these annotations, so an event kind added later touches one enum.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

from shapelint.schema import dump, flatten, load


class StrEnum(str, enum.Enum):
    """An enum whose members are their string values (JSON, comparisons, f-strings)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Status(StrEnum):
    """Where a finding stands once the harness has run; the order is their strength (a finding
    several shards report keeps its strongest status)."""

    CONFIRMED = "confirmed"
    UNPREDICTED = "unpredicted"
    NOT_SEEN = "not-seen"
    NOT_REACHED = "not-reached"
    PREDICTED = "predicted"

    @property
    def strength(self) -> int:
        return len(Status) - list(Status).index(self)

    @property
    def label(self) -> str:
        return self.value.replace("-", " ")


PREDICTED, CONFIRMED, NOT_SEEN, NOT_REACHED, UNPREDICTED = (
    Status.PREDICTED, Status.CONFIRMED, Status.NOT_SEEN, Status.NOT_REACHED, Status.UNPREDICTED)


class EventKind(StrEnum):
    """What torch did, one kind per event; a rule's ``evidence`` names the kinds that confirm
    its findings."""

    RECOMPILE = "recompile"
    SPECIALIZATION = "specialization"
    GRAPH_BREAK = "graph-break"
    COMPILE_ERROR = "compile-error"
    FALLBACK = "fallback"

    @property
    def label(self) -> str:
        return {"graph-break": "graph break", "compile-error": "compile error",
                "fallback": "fell back to eager"}.get(self.value, self.value)


RECOMPILE, SPECIALIZATION, GRAPH_BREAK, COMPILE_ERROR, FALLBACK = tuple(EventKind)


class DynamicMode(StrEnum):
    """A target's ``dynamic`` setting: what ``torch.compile`` is asked to do with sizes."""

    AUTO = "auto"  # torch's default: static first, dynamic after a size changes
    TRUE = "true"  # dynamic=True
    FALSE = "false"  # dynamic=False: every new size compiles a new graph
    MARK = "mark"  # mark_dynamic on dim 0 of every tensor input

    @classmethod
    def of(cls, value: Union[str, bool]) -> "DynamicMode":
        """The mode a config value names (``true``/``false`` may be TOML booleans)."""
        return cls({True: "true", False: "false"}[value] if isinstance(value, bool) else value)


class Blame(StrEnum):
    """How an event, or one failed guard of a recompile, was blamed (harness/blame.py)."""

    # recompiles: the failed guard of a cache entry
    SHAPE_GUARD = "shape-guard"          # a symbolic-shape guard, re-evaluated false
    VALUE_GUARD = "value-guard"          # an int/attribute value guard with a user stack
    INPUT_DYNAMIC = "input-dynamic"      # an input compiled static changed (torch's own step)
    SIZE_ONE = "size-one"                # a size-1 input after a dynamic compile (0/1)
    DIM_MARKING = "dim-marking"          # mark_dynamic after graphs compiled without it
    DUCK_SIZING = "duck-sizing"          # two inputs shared a symbol and now differ
    HARNESS = "harness"                  # the same code compiled for another backend
    ATTRIBUTE = "attribute"              # a tensor attribute changed; no write of it ran
    ATTRIBUTE_WRITE = "attribute-write"  # a tensor attribute changed: blamed on its write
    BACKEND = "backend"                  # a guard AOTAutograd/Inductor added (no user stack)
    UNKNOWN = "unknown"                  # torch gave no reason
    # other kinds of event
    SPECIALIZATION = "specialization"
    GRAPH_BREAK = "graph-break"
    UNHANDLED = "unhandled"              # a graph break Dynamo cannot resume from
    COMPILE_ERROR = "compile-error"
    RECOMPILE_LIMIT = "recompile-limit"
    ACCUMULATED_RECOMPILE_LIMIT = "accumulated-recompile-limit"
    UNHANDLED_GRAPH_BREAK = "unhandled-graph-break"
    COMPILE_FAILED = "compile-failed"
    NONE = ""


#: recompile causes that are torch's own steps to dynamic shapes, not a line of the code: an
#: input compiled static made dynamic (automatic dynamic), the size-1 specialization, a
#: mark_dynamic added later, duck sizing undone, and the harness's own backend switch
TORCH_STEPS = frozenset({Blame.INPUT_DYNAMIC, Blame.SIZE_ONE, Blame.DIM_MARKING,
                         Blame.DUCK_SIZING, Blame.HARNESS})


class RemedyKind(StrEnum):
    MARK_DYNAMIC = "mark-dynamic"
    MAYBE_MARK_DYNAMIC = "maybe-mark-dynamic"
    MARK_UNBACKED = "mark-unbacked"
    DYNAMIC_SOURCES = "dynamic-sources"
    DYNAMIC_TRUE = "dynamic-true"
    CAPTURE_SCALAR_OUTPUTS = "capture-scalar-outputs"
    #: the change a confirmed finding's rule describes (not measured: the code is the user's)
    CODE_CHANGE = "code-change"


class RemedyVerdict(StrEnum):
    HELPS = "helps"
    NO_CHANGE = "no change"
    WORSE = "worse"
    BREAKS_GRAPH = "breaks the graph"
    FAILS = "fails"


#: a rule code (built-in ``SL101`` or a user's ``CU001``): capital letters then digits, as
#: a noqa comment reads it
RULE_CODE = r"[A-Z]{1,8}[0-9]{1,6}"
#: what a replayed shape or a labelled call holds: ``{"batch": 8, "seq_len": 16}``
Shape = Dict[str, Union[int, str, None]]


# =============================================================================================
# Findings (the static pass, then the join)
# =============================================================================================

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

    @property
    def lines(self) -> range:
        return range(self.line, max(self.end_line, self.line) + 1)


@dataclass(frozen=True)
class Snippet:
    """Source lines around a finding, saved when it was made: a report rendered later (from
    JSON, after an edit) shows the code that was checked and never reads a file itself."""

    start: int
    lines: Tuple[str, ...] = ()

    @classmethod
    def around(cls, text_lines: List[str], line: int, context: int = 2) -> "Snippet":
        first = max(1, line - context)
        return cls(first, tuple(s.rstrip("\r\n") for s in text_lines[first - 1:line + context]))


@dataclass
class Evidence:
    """What a finding's status rests on: an event torch blamed on its line (``kind`` is the
    event's), or the shapes the replay tried (``not-seen``, ``not-reached``)."""

    kind: str
    summary: str = ""
    target: str = ""
    path: Optional[str] = None
    line: Optional[int] = None
    shape: Shape = field(default_factory=dict)
    reason: str = ""
    detail: str = ""
    guard: Optional[str] = None
    registry_id: Optional[str] = None
    framework: bool = False
    shapes: List[str] = field(default_factory=list)

    def to_json(self) -> Dict[str, Any]:
        return {k: v for k, v in dump(self).items()
                if v not in (None, "", [], {}, False) or k in ("kind", "summary")}


@dataclass
class Finding:
    """A predicted (static) or observed (dynamic) compile hazard at one location."""

    rule: str = field(metadata={"pattern": RULE_CODE})
    name: str
    location: Location = field(metadata=flatten())
    message: str
    severity: Severity = Severity.WARNING
    symbol: str = ""
    evidence: Tuple[str, ...] = ()
    hint: str = ""
    registry_ids: Tuple[str, ...] = ()
    status: Status = Status.PREDICTED
    evidence_events: List[Evidence] = field(default_factory=list)
    source_line: str = ""
    snippet: Optional[Snippet] = None
    #: in a library outside the project (``shapelint run``): its path is the library's
    library: bool = False

    def __post_init__(self) -> None:  # rules give their severity as a string
        self.severity = Severity(self.severity)
        self.status = Status(self.status)

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
        """The JSON contract documented in the README (keys are stable; empty optional keys
        are left out)."""
        data = dump(self)
        data["evidence_events"] = [e.to_json() for e in self.evidence_events]
        for key in ("source_line", "registry_ids", "snippet", "library"):
            if not data[key]:
                del data[key]
        if self.status == Status.PREDICTED and not self.evidence_events:
            del data["status"], data["evidence_events"]
        return data

    @classmethod
    def from_json(cls, data: Any, where: str = "") -> "Finding":
        return load(cls, data, where)

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
        return dump(self)


@dataclass
class CheckResult:
    """What one static run produced."""

    findings: List[Finding] = field(default_factory=list)
    errors: List[FileError] = field(default_factory=list)
    files_checked: int = 0
    unused_suppressions: List[Finding] = field(default_factory=list)
    #: rules that raised (a bug in the rule, not in the code checked): exit status 2
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

def _compact(record: Any, keep: Tuple[str, ...] = ()) -> Dict[str, Any]:
    """A record's JSON without its empty fields (but those in ``keep``)."""
    return {k: v for k, v in dump(record).items() if v not in (None, "", [], {}, False) or k in keep}


@dataclass
class Place:
    """One more line an event is blamed on: a call in a value guard's stack, a write of the
    module state a guard read. ``path`` is the path shown, ``abspath`` the file."""

    abspath: Optional[str] = None
    line: Optional[int] = None
    path: Optional[str] = None
    why: str = ""
    #: the source line, filled in for reports
    source: str = ""

    def to_json(self) -> Dict[str, Any]:
        return _compact(self)


@dataclass
class Guard:
    """One failed guard of a recompile (one per cache entry torch tried, or more when several
    of an entry's guards fail): how it was blamed and where."""

    detail: Blame = Blame.UNKNOWN
    #: torch's reason line for the entry
    text: str = ""
    #: the guard expression (``s0 <= 8``, ``L['n'] == 4``)
    guard: Optional[str] = None
    #: the cache entry (``frame/compile``)
    entry: Optional[str] = None
    abspath: Optional[str] = None
    path: Optional[str] = None
    line: Optional[int] = None
    note: str = ""
    #: torch's own guard in framework code (CPU convolution's batch < 16)
    framework: bool = False
    #: failed too, beside the one torch's reason names (re-checked by the worker)
    also: bool = False
    attribute: Optional[str] = None
    input: Optional[str] = None
    dim: Optional[int] = None
    #: the calls in a value guard's user stack (moved to the event's ``also`` places)
    callers: List[Place] = field(default_factory=list)
    source: str = ""

    def __post_init__(self) -> None:
        self.detail = Blame(self.detail)

    def to_json(self) -> Dict[str, Any]:
        return _compact(self, keep=("detail",))


@dataclass
class Event:
    """One thing torch did during a replay, blamed on a source line when it can be.

    ``detail`` says how it was blamed. ``path`` is the path shown (relative to the working
    directory of the run), ``abspath`` the file; ``also`` holds more blamed places. A recompile
    holds every failed guard of every cache entry in ``guards``; ``note`` says why there is no
    line, or what torch did."""

    kind: EventKind
    shape: Shape = field(default_factory=dict)
    reason: str = ""
    detail: Blame = Blame.NONE
    path: Optional[str] = None
    abspath: Optional[str] = None
    line: Optional[int] = None
    note: str = ""
    frame: str = ""
    compile_id: str = ""
    guards: List[Guard] = field(default_factory=list)
    also: List[Place] = field(default_factory=list)
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

    def __post_init__(self) -> None:  # a kind given as its string
        self.kind = EventKind(self.kind)
        self.detail = Blame(self.detail)

    @property
    def guard(self) -> Optional[str]:
        """The first failed guard expression (recompiles)."""
        return next((g.guard for g in self.guards if g.guard), None)

    @property
    def cause(self) -> List[Guard]:
        """The failed guards of the newest cache entry: why this recompile happened. Every
        older entry of the frame failed before (that is why the newer one exists), so its
        guard failing again is old news."""
        newest = max((_entry_index(g.entry) for g in self.guards), default=-1)
        return [g for g in self.guards if _entry_index(g.entry) == newest]

    @property
    def torch_step(self) -> bool:
        """A recompile whose cause is one of torch's own steps (automatic dynamic...)."""
        return self.kind == RECOMPILE and all(
            d in TORCH_STEPS for d in ([g.detail for g in self.cause] or [self.detail]))

    def locations(self, callers: bool = True) -> List[Tuple[str, int]]:
        """Every blamed (abspath, line): the event's own, its failed guards', and with
        ``callers`` the places in ``also`` (the calls in a value guard's stack)."""
        out: List[Tuple[str, int]] = []
        items: List[Any] = [self] + list(self.guards) + (list(self.also) if callers else [])
        for item in items:
            if item.abspath and item.line and (item.abspath, int(item.line)) not in out:
                out.append((item.abspath, int(item.line)))
        return out

    def to_json(self) -> Dict[str, Any]:
        data = _compact(self, keep=("kind", "shape", "path", "line", "reason"))
        if self.guards:
            data["guards"] = [g.to_json() for g in self.guards]
        if self.also:
            data["also"] = [p.to_json() for p in self.also]
        return data

    @classmethod
    def from_json(cls, data: Any, where: str = "") -> "Event":
        ev = load(cls, data, where)
        if ev.path and not ev.abspath:
            ev.abspath = os.path.abspath(ev.path)
        return ev


def _entry_index(entry: Optional[str]) -> int:
    """The compile index of a cache entry ``frame/compile`` (-1 when unknown)."""
    try:
        return int(str(entry).rsplit("/", 1)[1])
    except (IndexError, ValueError):
        return -1


@dataclass
class ShapeRow:
    """One replayed shape: its new compiles, and whether the call failed or ran uncompiled."""

    batch: Optional[int] = None
    seq_len: Optional[int] = None
    new_compiles: int = 0
    seconds: float = 0.0
    error: Optional[str] = None
    #: the call ran uncompiled (torch gave up on the frame)
    eager: bool = False
    eager_why: str = ""
    cudagraph_recordings: Optional[int] = None

    @property
    def shape(self) -> Dict[str, Any]:
        return {"batch": self.batch, "seq_len": self.seq_len}


@dataclass
class Frame:
    """A code object torch compiled (a forward, a resume function, a helper it traced alone)."""

    name: str = ""
    path: Optional[str] = None
    line: Optional[int] = None
    compiles: int = 0


@dataclass
class Counts:
    """What a remedy is judged on, before and after it."""

    compiles: int = 0
    graph_breaks: int = 0
    errors: int = 0


@dataclass
class Remedy:
    """A remedy for this target's recompiles: the code to write, and once measured (a replay
    with it applied), the counts before and after and what it did."""

    kind: RemedyKind
    code: str = ""
    why: str = ""
    #: where the code goes (``in `model.py:inputs`, on the tensors it returns``; a line)
    where: str = ""
    #: (input name, dim) pairs to mark, for the mark_* remedies
    marks: List[Tuple[str, int]] = field(default_factory=list)
    #: TORCH_COMPILE_DYNAMIC_SOURCES' value, for dynamic-sources
    sources: str = ""
    before: Optional[Counts] = None
    after: Optional[Counts] = None
    verdict: Optional[RemedyVerdict] = None
    problem: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        return _compact(self, keep=("kind",))


@dataclass
class TargetResult:
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
    shapes: List[Shape] = field(default_factory=list)
    shapes_planned: List[Shape] = field(default_factory=list)
    compiles: int = 0
    per_shape: List[ShapeRow] = field(default_factory=list)
    frames: List[Frame] = field(default_factory=list)
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
    remedies: List[Remedy] = field(default_factory=list)
    #: what the worker printed (its last lines), for a target that failed
    output_tail: str = ""
    #: the files of the model and inputs callables, as the worker imported them
    sources: List[str] = field(default_factory=list)
    #: the mode its modules were compiled in (``eval``, ``train``, ``any`` where they differ;
    #: None for a function): the side of ``self.training`` the static pass walks for it
    module_mode: Optional[str] = None

    @property
    def failed(self) -> bool:
        return bool(self.problems)

    @property
    def verdict(self) -> str:
        """``ok`` or ``failed: <problems>``: the one place a reporter gets it from."""
        return "failed: " + "; ".join(self.problems) if self.problems else "ok"

    def of_kind(self, kind: EventKind) -> List[Event]:
        return [e for e in self.events if e.kind == kind]

    def to_json(self) -> Dict[str, Any]:
        data = dump(self)
        data["events"] = [e.to_json() for e in self.events]
        data["remedies"] = [r.to_json() for r in self.remedies]
        data["failed"] = self.failed
        return data

    @classmethod
    def from_json(cls, data: Any, where: str = "") -> "TargetResult":
        result = load(cls, data, where)
        for ev in result.events:
            if ev.path and not ev.abspath:
                ev.abspath = os.path.abspath(ev.path)
        return result


@dataclass
class Report:
    """A saved ``--format json`` report (``shapelint report`` reads it back)."""

    findings: List[Finding]
    version: str = ""
    files_checked: int = 0
    errors: List[FileError] = field(default_factory=list)
    targets: List[TargetResult] = field(default_factory=list)
