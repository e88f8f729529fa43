"""``--format github``: workflow commands that GitHub shows as pull-request annotations.

GitHub shows at most 10 annotations per level per step and 50 per job, so the most important
come first (confirmed, then unpredicted, then predicted; errors first) and a last line says how
many were left out."""

from __future__ import annotations

from typing import Dict, List

from shapelint.finding import CheckResult
from shapelint.report.escape import clean, defuse_commands
from shapelint.report.ranking import changed_lines_of_pull_request, ranked

PER_LEVEL = 10
LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    """A command's message: control characters cleaned (newlines kept), then GitHub's own
    escapes, so that nothing quoted can end the command or start another one."""
    text = defuse_commands(clean(text, keep_newlines=True))
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(result: CheckResult, *, rules, targets, color=False, statistics=False) -> str:
    lines: List[str] = []
    shown: Dict[str, int] = {"error": 0, "warning": 0, "notice": 0}
    left_out = 0
    library = [f for f in result.all_findings() if f.library]  # not in the repository
    for f in ranked([f for f in result.all_findings() if not f.library],
                    changed_lines_of_pull_request()):
        level = LEVEL.get(f.severity, "warning")
        if shown[level] >= PER_LEVEL:
            left_out += 1
            continue
        shown[level] += 1
        loc = f.location
        status = "" if f.status == "predicted" else f" [{f.status}]"
        title = f"shapelint {f.rule} ({f.name}){status}"
        body = f.message + (f"\nhelp: {f.hint}" if f.hint else "")
        for ev in f.evidence_events[:2]:
            body += f"\nseen: {ev.summary}"
        props = (f"file={escape_property(loc.path)},line={loc.line},col={loc.column},"
                 f"endLine={loc.end_line},endColumn={loc.end_column},title={escape_property(title)}")
        lines.append(f"::{level} {props}::{escape_data(body)}")
    for e in result.errors:
        lines.append(f"::error file={escape_property(e.path)},line={e.line},col={e.column},"
                     f"title=shapelint: file error::{escape_data(e.message)}")
    for t in targets:
        if t.failed:
            why = "; ".join(t.problems)
            lines.append(f"::error title={escape_property('shapelint run: ' + t.name)}::{escape_data(why)}")
    total = len(result.all_findings()) - len(library)
    if library:
        names = ", ".join(sorted({escape_data(f.path) for f in library})[:5])
        lines.append(f"shapelint: {len(library)} finding(s) in library code outside the repository "
                     f"({names}), not annotated; see the report.")
    if left_out:
        lines.append(f"shapelint: {left_out} of {total} findings not annotated (GitHub shows "
                     f"{PER_LEVEL} per level per step); see the SARIF or Markdown report for all.")
    else:
        lines.append(f"shapelint: {total} finding(s) annotated.")
    return "\n".join(lines) + "\n"
