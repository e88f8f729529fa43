"""``--format concise``: one line per finding, ``path:line:col: CODE message`` (ruff's concise
output), for editors, grep and problem matchers; then one line per target and the summary."""

from __future__ import annotations

from typing import List

from shapelint.finding import PREDICTED, CheckResult
from shapelint.report.escape import clean, defuse_commands


def render(result: CheckResult, *, rules, targets, color=False, statistics=False,
           quiet=False) -> str:
    from shapelint.report import summary_line

    lines: List[str] = []
    for f in result.all_findings():
        status = "" if f.status == PREDICTED else f" [{f.status.label}]"
        lines.append(f"{clean(f.path)}:{f.line}:{f.column}: {clean(f.rule)}{status} "
                     f"{clean(f.message)}")
    for e in result.errors:
        lines.append(f"{clean(e.path)}:{e.line}:{e.column}: error {clean(e.message)}")
    for t in targets:
        if t.failed:
            lines.append(clean(f"target {t.name}: FAILED: {'; '.join(t.problems)}"))
        elif not quiet:
            lines.append(clean(f"target {t.name}: {t.compiles} compiles, ok"))
    if not quiet:
        lines.append(summary_line(result, targets))
    return defuse_commands("\n".join(lines)) + "\n" if lines else ""
