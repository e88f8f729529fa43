"""Saved JSON reports read back, and several merged into one (``shapelint report a.json
b.json``): the shards of one ``shapelint run`` across a CI matrix become one report.

Findings are keyed by rule, place and message; a finding several shards report keeps the
strongest status any of them gave it (confirmed > unpredicted > not-seen > not-reached >
predicted) and the evidence of all of them. Targets are concatenated in file order: the same
target saved twice (identical records) is kept once, and targets that only share a name (two
configs, or a shard of another run) are all kept, each named with its file, so a failed one is
never dropped; file errors are deduplicated."""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

from shapelint.finding import CheckResult, FileError, Finding, Report, TargetResult
from shapelint.schema import dump, load_file


def read_report(path: str) -> Tuple[CheckResult, List[TargetResult]]:
    """A saved ``--format json`` report, every field checked (shapelint.schema): a wrong type
    is one line naming the field, never a crash or a field printed as it came."""
    doc = load_file(Report, path, "shapelint JSON report")
    result = CheckResult(findings=doc.findings, errors=doc.errors, files_checked=doc.files_checked)
    return result, doc.targets


def merge(parts: List[Tuple[CheckResult, List[TargetResult]]],
          labels: Optional[Sequence[str]] = None) -> Tuple[CheckResult, List[TargetResult]]:
    """One report from several; ``labels`` (the files' names) tell apart targets of the same
    name."""
    if len(parts) == 1:
        return parts[0]
    findings: Dict[tuple, Finding] = {}
    errors: Dict[tuple, FileError] = {}
    targets: List[Tuple[TargetResult, str]] = []
    by_name: Dict[str, List[dict]] = {}
    files = 0
    for n, (result, ts) in enumerate(parts):
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
        label = labels[n] if labels is not None and n < len(labels) else f"report {n + 1}"
        for t in ts:
            record = dump(t)
            same = by_name.setdefault(t.name, [])
            if record not in same:  # the same target saved twice is one target
                same.append(record)
                targets.append((t, label))
    merged = CheckResult(findings=list(findings.values()), errors=list(errors.values()),
                         files_checked=files)
    return merged, [dataclasses.replace(t, name=f"{t.name} ({label})")
                    if len(by_name[t.name]) > 1 else t for t, label in targets]
