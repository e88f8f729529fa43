"""Join static findings with runtime events: confirmed, not-seen, not-reached, unpredicted.

A finding is confirmed by an event blamed on a line it covers (with the shape that triggered
it and torch's reason as evidence); a finding the replay reached (coverage) with no such event
is not-seen (with the shapes tried); one in a file the replay ran but on lines it never reached
is not-reached; an event on a line no finding covers becomes an ``unpredicted`` finding of the
runtime-only rule whose evidence is the event's kind (SL900-SL903, found in the registry)."""

from __future__ import annotations

import linecache
import os
import re
from typing import Any, Dict, Iterable, Iterator, List, Optional, Set, Tuple

from shapelint.finding import (CONFIRMED, FALLBACK, NOT_REACHED, NOT_SEEN, RECOMPILE,
                               SPECIALIZATION, UNPREDICTED, Blame, Event, EventKind, Evidence,
                               Finding, Location, Severity, Snippet, TargetResult, relpath,
                               shape_text)

Place = Tuple[str, int]


def runtime_rules(rules: Optional[Dict[str, Any]] = None) -> Dict[EventKind, Tuple[str, str]]:
    """Event kind -> (code, name) of the runtime-only rule reporting it when no static rule
    predicted it (the rule whose ``evidence`` names the kind)."""
    if rules is None:
        from shapelint.registry import all_rules

        rules = all_rules()
    out: Dict[EventKind, Tuple[str, str]] = {}
    for code in sorted(rules):
        r = rules[code]
        if getattr(r, "runtime_only", False):
            for kind in r.evidence:
                out.setdefault(EventKind(kind), (r.code, r.name))
    return out


def joinable(t: TargetResult) -> Iterator[Event]:
    """Events that can meet a finding: with a line; not a benign specialization."""
    for ev in t.events:
        if ev.locations() and not (ev.kind == SPECIALIZATION and ev.benign):
            yield ev


def events_of(t: TargetResult) -> Iterator[Dict[str, Any]]:
    """Every blamed event of a target with a user line, flat: one dict per blamed line (what
    the benches and the tests that replay programs compare against torch's lines)."""
    for ev in joinable(t):
        for ab, line in ev.locations():
            yield {"kind": ev.kind, "target": t.name, "abspath": ab, "line": line,
                   "shape": ev.shape, "reason": ev.reason, "detail": ev.detail,
                   "guard": ev.guard, "registry_id": ev.registry_id, "framework": ev.framework}


def summary(ev: Event, target: str) -> str:
    extra = f" [{ev.registry_id}]" if ev.registry_id else ""
    fw = " (framework guard)" if ev.framework else ""
    return f"{ev.kind} at {shape_text(ev.shape)} ({target}): {ev.reason}{extra}{fw}"


def evidence(ev: Event, target: str, place: Optional[Place] = None) -> Evidence:
    """An event as a finding's evidence: kind, shape, reason, where."""
    ab, line = place or (ev.abspath, ev.line)
    return Evidence(kind=ev.kind, target=target, path=relpath(ab) if ab else None, line=line,
                    shape=dict(ev.shape), reason=ev.reason, detail=ev.detail,
                    summary=summary(ev, target), guard=ev.guard, registry_id=ev.registry_id,
                    framework=ev.framework)


STATE_ATTR = re.compile(r"`self\.(\w+)`")


def _guards_on_written_state(f: Finding, events: List[Tuple[Event, str]]) -> List[Tuple[Event, str, Place]]:
    """torch blames a guard on module state on the line that *reads* it; a state-mutation
    finding sits on the write, so it is confirmed by a recompile whose value guard names the
    attribute (``self._seq_len_cached == 5``) in the same file."""
    if "recompile" not in f.evidence or f.rule != "SL302":
        return []
    m = STATE_ATTR.search(f.message)
    if not m:
        return []
    attr = re.compile(r"\b" + re.escape(m.group(1)) + r"\b")
    out = []
    for ev, target in events:
        if ev.kind != RECOMPILE:
            continue
        for g in ev.guards:
            if g.detail in (Blame.VALUE_GUARD, Blame.ATTRIBUTE, Blame.ATTRIBUTE_WRITE) \
                    and g.abspath and g.line \
                    and os.path.abspath(g.abspath) == os.path.abspath(f.path) \
                    and attr.search(g.guard or g.text or ""):
                out.append((ev, target, (g.abspath, int(g.line))))
                break
    return out


def coverage_of(targets: List[TargetResult]) -> Dict[str, Set[int]]:
    """Every line any replay executed, by absolute path."""
    out: Dict[str, Set[int]] = {}
    for t in targets:
        for path, lines in t.executed.items():
            out.setdefault(os.path.abspath(path), set()).update(int(x) for x in lines)
    return out


def join(findings: List[Finding], targets: List[TargetResult], exercised: Iterable[str],
         rules: Optional[Dict[str, Any]] = None, unpredicted: bool = True) -> List[Finding]:
    """Statuses for ``findings`` plus unpredicted findings. ``exercised`` are the absolute
    paths the harness ran (a finding elsewhere keeps the status ``predicted``); with
    ``unpredicted=False`` (no static pass ran) events are not turned into findings."""
    covered = coverage_of(targets)
    exercised = {os.path.abspath(p) for p in exercised} | set(covered)
    events = [(ev, t.name) for t in targets for ev in joinable(t)]
    by_line: Dict[Place, List[Tuple[Event, str]]] = {}
    for ev, name in events:
        if ev.kind == FALLBACK:
            continue  # a consequence (the frame ran eagerly); its cause is the event that confirms
        for place in ev.locations():
            by_line.setdefault((os.path.abspath(place[0]), place[1]), []).append((ev, name))
    tried = sorted({shape_text(s) for t in targets for s in t.shapes})
    claimed: Set[Place] = set()
    out: List[Finding] = []
    for f in findings:
        ab = os.path.abspath(f.path)
        lines = f.location.lines
        hits: List[Evidence] = []
        for line in lines:
            for ev, name in by_line.get((ab, line), []):
                hits.append(evidence(ev, name, (ab, line)))
            if by_line.get((ab, line)):
                claimed.add((ab, line))
        if not hits:
            hits = [evidence(ev, name, place) for ev, name, place in _guards_on_written_state(f, events)]
        if hits:
            f = f.replace(status=CONFIRMED, evidence_events=hits)
        elif ab in covered and not any(line in covered[ab] for line in lines):
            f = f.replace(status=NOT_REACHED, evidence_events=[Evidence(
                kind=NOT_REACHED, shapes=tried,
                summary=f"the replay never ran this line (at {', '.join(tried)}): no compiled "
                        f"call reached it")])
        elif ab in exercised:
            f = f.replace(status=NOT_SEEN, evidence_events=[Evidence(
                kind=NOT_SEEN, shapes=tried,
                summary=f"no event at this line at {', '.join(tried)}")])
        out.append(f)
    if unpredicted:
        out.extend(_unpredicted(events, claimed, runtime_rules(rules)))
    return sorted(out, key=Finding.sort_key)


def _unpredicted(events: List[Tuple[Event, str]], claimed: Set[Place],
                 kinds: Dict[EventKind, Tuple[str, str]]) -> List[Finding]:
    """One finding per (line, kind) of events no finding claimed, of the runtime-only rule
    for the kind; framework guards (torch's own, see Event.framework) are not the user's."""
    groups: Dict[Tuple[str, int, EventKind], List[Tuple[Event, str]]] = {}
    for ev, name in events:
        if ev.kind not in kinds or ev.framework:
            continue
        for ab, line in ev.locations(callers=False):  # a call site alone is not the cause
            key = (os.path.abspath(ab), line)
            if key in claimed:
                continue
            groups.setdefault(key + (ev.kind,), []).append((ev, name))
    out = []
    for (ab, line, kind), evs in groups.items():
        code, rname = kinds[kind]
        first = evs[0][0]
        path = relpath(ab)
        text = linecache.getlines(ab)
        out.append(Finding(
            rule=code, name=rname, location=Location(path, line, 1),
            message=f"{kind.label} seen at run time that no static rule predicted: {first.reason}",
            severity=Severity.ERROR if kind == EventKind.COMPILE_ERROR else Severity.WARNING,
            evidence=(kind.value,), status=UNPREDICTED,
            source_line=text[line - 1].strip() if 0 < line <= len(text) else "",
            snippet=Snippet.around(text, line) if text else None,
            registry_ids=tuple(x for x in [first.registry_id] if x),
            evidence_events=[evidence(ev, name, (ab, line)) for ev, name in evs]))
    return out


def annotate_targets(targets: List[TargetResult], findings: List[Finding]) -> None:
    """Add the blamed source line and the confirming rules to each target event (reports)."""
    by_line: Dict[Place, List[str]] = {}
    for f in findings:
        if f.status != UNPREDICTED:
            for line in f.location.lines:
                by_line.setdefault((os.path.abspath(f.path), line), []).append(f.rule)
    for t in targets:
        for ev in t.events:
            rules = set()
            for place in ev.locations():
                rules.update(by_line.get((os.path.abspath(place[0]), place[1]), []))
            items: List[Any] = [ev, *ev.guards, *ev.also]  # each has abspath, line, source
            for item in items:
                if item.abspath and item.line:
                    item.source = linecache.getline(item.abspath, int(item.line)).strip()
            ev.confirms = sorted(rules)
