"""Which findings matter most, for channels that show only a few (GitHub annotations)."""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Set

from shapelint.finding import Finding, Severity

SEVERITY_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


def changed_lines_of_pull_request() -> Optional[Dict[str, Set[int]]]:
    """Lines a pull request changed, when running in GitHub Actions (``GITHUB_BASE_REF``)."""
    base = os.environ.get("GITHUB_BASE_REF")
    if not base:
        return None
    from shapelint.config import ConfigError
    from shapelint.gitdiff import changed_lines

    for ref in (f"origin/{base}", base):
        try:
            return changed_lines(ref)
        except ConfigError:
            continue
    return None


def ranked(findings: List[Finding], changed: Optional[Dict[str, Set[int]]] = None) -> List[Finding]:
    """By status (shapelint.finding.Status: confirmed first, predicted last), lines the pull
    request changed first, errors before warnings, then by place."""
    from shapelint.gitdiff import is_changed

    def key(f: Finding):
        touched = 0 if changed is None or is_changed(changed, f.path, f.line) else 1
        return (-f.status.strength, touched, SEVERITY_RANK.get(f.severity, 1), f.sort_key())

    return sorted(findings, key=key)
