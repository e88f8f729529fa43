"""Baselines: accept today's findings, report only new ones.

Keyed by rule, path and the normalized source line (whitespace collapsed), with a count per
key, so the baseline survives edits that shift lines."""

from __future__ import annotations

import json
from collections import Counter
from typing import Iterable, Tuple

from shapelint.config import ConfigError
from shapelint.finding import CheckResult, Finding
from shapelint.output import write_atomic


def key(f: Finding) -> Tuple[str, str, str]:
    return (f.rule, f.path.replace("\\", "/"), " ".join(f.source_line.split()))


def write(path: str, findings: Iterable[Finding], force: bool = False) -> None:
    counts = Counter(key(f) for f in findings)
    entries = [{"rule": r, "path": p, "source": s, "count": n} for (r, p, s), n in sorted(counts.items())]
    write_atomic(path, json.dumps({"version": 1, "findings": entries}, indent=1) + "\n", force)


def apply(path: str, result: CheckResult) -> CheckResult:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        budget = Counter({(e["rule"], e["path"], e["source"]): int(e.get("count", 1))
                          for e in data["findings"]})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: not a shapelint baseline ({exc})") from exc
    def new(findings):
        kept = []
        for f in findings:
            k = key(f)
            if budget[k] > 0:
                budget[k] -= 1
            else:
                kept.append(f)
        return kept

    # unused suppressions (SL001) are recorded like any finding, so they are accepted too
    result.findings = new(result.findings)
    result.unused_suppressions = new(result.unused_suppressions)
    return result
