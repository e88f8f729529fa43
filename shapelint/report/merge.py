"""Saved JSON reports read back, and several merged into one (``shapelint report a.json
b.json``): the shards of one ``shapelint run`` across a CI matrix become one report.

Findings are keyed by rule, place and message; a finding several shards report keeps the
strongest status any of them gave it (confirmed > unpredicted > not-seen > not-reached >
predicted) and the evidence of all of them. Targets are concatenated in file order (a target
in two files is kept once, from the first); file errors are deduplicated."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from shapelint.finding import (CONFIRMED, NOT_REACHED, NOT_SEEN, PREDICTED, UNPREDICTED,
                               CheckResult, FileError, Finding, TargetResult)

STRENGTH = {CONFIRMED: 4, UNPREDICTED: 3, NOT_SEEN: 2, NOT_REACHED: 1, PREDICTED: 0}


def read_report(doc: Dict[str, Any]) -> Tuple[CheckResult, List[TargetResult]]:
    result = CheckResult(findings=[Finding.from_json(f) for f in doc["findings"]],
                         errors=[FileError(**e) for e in doc.get("errors", [])],
                         files_checked=int(doc.get("files_checked", 0)))
    return result, [TargetResult.from_json(t) for t in doc.get("targets", [])]


def merge(parts: List[Tuple[CheckResult, List[TargetResult]]]) -> Tuple[CheckResult, List[TargetResult]]:
    if len(parts) == 1:
        return parts[0]
    findings: Dict[tuple, Finding] = {}
    errors: Dict[tuple, FileError] = {}
    targets: Dict[str, TargetResult] = {}
    files = 0
    for result, ts in parts:
        files = max(files, result.files_checked)
        for f in result.findings:
            key = (f.rule, f.path, f.location.line, f.location.column, f.message)
            old = findings.get(key)
            if old is None:
                findings[key] = f
                continue
            status = max((old.status, f.status), key=lambda s: STRENGTH.get(s, 0))
            events = list(old.evidence_events)
            if STRENGTH.get(f.status, 0) == STRENGTH.get(old.status, 0):
                events += [e for e in f.evidence_events if e not in events]
            elif status == f.status:
                events = list(f.evidence_events)
            findings[key] = old.replace(status=status, evidence_events=events)
        for e in result.errors:
            errors.setdefault((e.path, e.line, e.column, e.message), e)
        for t in ts:
            targets.setdefault(t.name, t)
    merged = CheckResult(findings=list(findings.values()), errors=list(errors.values()),
                         files_checked=files)
    return merged, list(targets.values())
