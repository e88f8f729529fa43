"""Join static findings with runtime events: confirmed, not-seen, unpredicted.

A finding is confirmed by an event blamed on a line it covers (with the shape that triggered
it and torch's reason as evidence); a finding in a file the harness exercised with no such
event is not-seen (with the shapes tried); an event on a line no finding covers becomes an
``unpredicted`` finding of a runtime-only rule (SL900-SL903)."""

from __future__ import annotations

import linecache
import os
import re
from typing import Any, Dict, Iterable, List, Tuple

from shapelint.finding import (CONFIRMED, NOT_SEEN, UNPREDICTED, Finding, Location, relpath,
                               shape_text)

EVENT_RULES = {"recompile": ("SL900", "unpredicted-recompile"),
               "graph-break": ("SL901", "unpredicted-graph-break"),
               "specialization": ("SL902", "unpredicted-specialization"),
               "compile-error": ("SL903", "unpredicted-compile-error")}


def events_of(target: Dict[str, Any]) -> Iterable[Dict[str, Any]]:
    """Every blamed event of a target with a user line, in one shape."""
    name = target.get("name")
    for r in target.get("recompiles", []):
        if r.get("abspath") and r.get("line"):
            yield {"kind": "recompile", "target": name, "abspath": r["abspath"], "line": r["line"],
                   "shape": r.get("shape"), "reason": r.get("reason"), "detail": r.get("kind"),
                   "guard": r.get("guard")}
    for s in target.get("specializations", []):
        if s.get("abspath") and s.get("line") and not s.get("benign"):
            yield {"kind": "specialization", "target": name, "abspath": s["abspath"], "line": s["line"],
                   "shape": s.get("shape"),
                   "reason": f"{', '.join(s.get('sources') or [])} specialized to {s.get('value')} "
                             f"({s.get('reason')})"}
    for g in target.get("graph_breaks", []):
        if g.get("abspath") and g.get("line"):
            yield {"kind": "graph-break", "target": name, "abspath": g["abspath"], "line": g["line"],
                   "shape": g.get("shape"), "reason": g.get("reason"),
                   "registry_id": g.get("registry_id")}
    for e in target.get("compile_errors", []):
        if e.get("abspath") and e.get("line"):
            yield {"kind": "compile-error", "target": name, "abspath": e["abspath"], "line": e["line"],
                   "shape": e.get("shape"), "reason": e.get("message")}


def _summary(ev: Dict[str, Any]) -> str:
    extra = f" [{ev['registry_id']}]" if ev.get("registry_id") else ""
    return f"{ev['kind']} at {shape_text(ev.get('shape') or {})} ({ev['target']}): {ev.get('reason', '')}{extra}"


STATE_ATTR = re.compile(r"`self\.(\w+)`")


def _guards_on_written_state(f: Finding, events: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """torch blames a guard on module state on the line that *reads* it; a state-mutation
    finding sits on the write, so it is confirmed by a recompile whose guard names the
    attribute (``self._seq_len_cached == 5``) in the same file."""
    if "recompile" not in f.evidence or f.rule != "SL302":
        return []
    m = STATE_ATTR.search(f.message)
    if not m:
        return []
    attr = re.compile(r"\b" + re.escape(m.group(1)) + r"\b")
    return [ev for ev in events if ev["kind"] == "recompile" and ev.get("detail") == "value-guard"
            and os.path.abspath(ev["abspath"]) == os.path.abspath(f.path)
            and attr.search(ev.get("reason") or "")]


def join(findings: List[Finding], targets: List[Dict[str, Any]],
         exercised: Iterable[str]) -> List[Finding]:
    """Statuses for ``findings`` plus unpredicted findings; ``exercised`` are the absolute
    paths the harness ran (a finding elsewhere keeps the status ``predicted``)."""
    exercised = {os.path.abspath(p) for p in exercised}
    events = [ev for t in targets for ev in events_of(t)]
    by_line: Dict[Tuple[str, int], List[Dict[str, Any]]] = {}
    for ev in events:
        by_line.setdefault((os.path.abspath(ev["abspath"]), int(ev["line"])), []).append(ev)
    tried = sorted({shape_text(s) for t in targets for s in t.get("shapes", [])})
    claimed = set()
    out: List[Finding] = []
    for f in findings:
        ab = os.path.abspath(f.path)
        hits = []
        for line in range(f.location.line, max(f.location.end_line, f.location.line) + 1):
            hits.extend(by_line.get((ab, line), []))
            if hits:
                claimed.add((ab, line))
        if not hits:
            hits = _guards_on_written_state(f, events)
        if hits:
            f = f.replace(status=CONFIRMED, evidence_events=[
                dict({k: v for k, v in ev.items() if k != "abspath"}, path=relpath(ev["abspath"]),
                     summary=_summary(ev)) for ev in hits])
        elif ab in exercised:
            f = f.replace(status=NOT_SEEN, evidence_events=[
                {"kind": "not-seen", "shapes": tried,
                 "summary": f"no event at this line at {', '.join(tried)}"}])
        out.append(f)
    seen_unpredicted = set()
    for ev in events:
        key = (os.path.abspath(ev["abspath"]), int(ev["line"]))
        if key in claimed:
            continue
        dedupe = key + (ev["kind"],)
        if dedupe in seen_unpredicted:
            continue
        seen_unpredicted.add(dedupe)
        code, name = EVENT_RULES[ev["kind"]]
        path = relpath(ev["abspath"])
        source = linecache.getline(ev["abspath"], int(ev["line"])).strip()
        related = [e for e in events if (os.path.abspath(e["abspath"]), int(e["line"])) == key
                   and e["kind"] == ev["kind"]]
        out.append(Finding(
            rule=code, name=name, location=Location(path, int(ev["line"]), 1),
            message=f"{ev['kind']} seen at run time that no static rule predicted: {ev.get('reason', '')}",
            severity="error" if ev["kind"] == "compile-error" else "warning",
            evidence=(ev["kind"],), status=UNPREDICTED, source_line=source,
            registry_ids=tuple(x for x in [ev.get("registry_id")] if x),
            evidence_events=[dict({k: v for k, v in e.items() if k != "abspath"}, path=path,
                                  summary=_summary(e)) for e in related]))
    return sorted(out, key=Finding.sort_key)


def annotate_targets(targets: List[Dict[str, Any]], findings: List[Finding]) -> None:
    """Add the blamed source line and the confirming rule to each target event (for reports)."""
    by_line: Dict[Tuple[str, int], List[str]] = {}
    for f in findings:
        if f.status != UNPREDICTED:
            for line in range(f.location.line, max(f.location.end_line, f.location.line) + 1):
                by_line.setdefault((os.path.abspath(f.path), line), []).append(f.rule)
    for t in targets:
        for key in ("recompiles", "specializations", "graph_breaks", "compile_errors"):
            for ev in t.get(key, []):
                if ev.get("abspath") and ev.get("line"):
                    ev["source"] = linecache.getline(ev["abspath"], int(ev["line"])).strip()
                    ev["confirms"] = sorted(set(by_line.get((os.path.abspath(ev["abspath"]),
                                                            int(ev["line"])), [])))
