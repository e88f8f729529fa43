"""Saved JSON reports read back, and several merged into one (``shapelint report a.json
b.json``): the shards of one ``shapelint run`` across a CI matrix become one report.

Findings are keyed by rule, place and message; a finding several shards report keeps the
strongest status any of them gave it (confirmed > unpredicted > not-seen > not-reached >
predicted) and the evidence of all of them. Targets are concatenated in file order (a target
in two files is kept once, from the first); file errors are deduplicated."""

from __future__ import annotations

from typing import Dict, List, Tuple

from shapelint.finding import CheckResult, FileError, Finding, Report, TargetResult
from shapelint.schema import load_file


def read_report(path: str) -> Tuple[CheckResult, List[TargetResult]]:
    """A saved ``--format json`` report, every field checked (shapelint.schema): a wrong type
    is one line naming the field, never a crash or a field printed as it came."""
    doc = load_file(Report, path, "shapelint JSON report")
    result = CheckResult(findings=doc.findings, errors=doc.errors, files_checked=doc.files_checked)
    return result, doc.targets


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
            status = max((old.status, f.status), key=lambda s: s.strength)
            events = list(old.evidence_events)
            if f.status == old.status:
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
