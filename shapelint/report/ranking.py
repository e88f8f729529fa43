"""Which findings matter most, for channels that show only a few (GitHub annotations)."""

from __future__ import annotations

from typing import List

from shapelint.finding import Finding

STATUS_RANK = {"confirmed": 0, "unpredicted": 1, "predicted": 2, "not-seen": 3}
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def ranked(findings: List[Finding]) -> List[Finding]:
    """Confirmed before predicted, errors before warnings, then by place."""
    return sorted(findings, key=lambda f: (STATUS_RANK.get(f.status, 2),
                                           SEVERITY_RANK.get(f.severity, 1), f.sort_key()))
