"""Reporters: each turns the same findings (and harness targets) into one output format."""

from __future__ import annotations

import importlib
import json
from collections import Counter
from typing import Any, Dict, List, Optional

from shapelint.finding import CheckResult, TargetResult

FORMATS = ("text", "concise", "json", "github", "sarif", "markdown", "junit", "html")
#: the formats a human reads in a terminal: ``--quiet`` leaves only the findings there
QUIET_FORMATS = ("text", "concise")


def render(fmt: str, result: CheckResult, *, rules: Dict[str, Any],
           targets: Optional[List[TargetResult]] = None, color: bool = False,
           statistics: bool = False, quiet: bool = False) -> str:
    """Render ``result`` in ``fmt``; ``targets`` are harness results (``shapelint run``).
    ``statistics``: only the count per rule, as ruff prints it (a JSON list with ``json``);
    ``quiet``: only the findings (and failed targets), no summary (text and concise)."""
    if statistics:
        return statistics_table(result, as_json=fmt == "json")
    mod = importlib.import_module(f"shapelint.report.{fmt}_format")
    extra = {"quiet": quiet} if fmt in QUIET_FORMATS else {}
    return mod.render(result, rules=rules, targets=list(targets or []), color=color, **extra)


def statistics_table(result: CheckResult, as_json: bool = False) -> str:
    """``--statistics``: the findings counted per rule, most frequent first, and nothing else."""
    from shapelint.report.escape import clean

    counts = Counter((f.rule, f.name) for f in result.all_findings()).most_common()
    if as_json:
        return json.dumps([{"code": c, "name": n, "count": k} for (c, n), k in counts],
                          indent=2) + "\n"
    return "".join(f"{k:5d}  {clean(c)}  {clean(n)}\n" for (c, n), k in counts)


def summary_line(result: CheckResult, targets: List[TargetResult]) -> str:
    """The last line of a text report: findings, the files holding them of those checked,
    file errors, failed targets (``Found 3 findings in 2 of 14 files.``)."""
    findings = result.all_findings()
    n, checked = len(findings), result.files_checked
    failed = [t for t in targets if t.failed]
    if not (n or result.errors or failed):
        return (f"All checks passed ({checked} file{'s' if checked != 1 else ''}"
                + (f", {len(targets)} target{'s' if len(targets) != 1 else ''}" if targets else "")
                + ").")
    with_findings = len({f.path for f in findings})
    text = f"Found {n} finding{'s' if n != 1 else ''} in {with_findings} of {checked} file" \
           f"{'s' if checked != 1 else ''}"
    if result.errors:
        text += f"; {len(result.errors)} file error{'s' if len(result.errors) != 1 else ''}"
    if failed:
        text += f"; {len(failed)} of {len(targets)} target{'s' if len(targets) != 1 else ''} failed"
    return text + "."
