"""``--format markdown``: a pull-request summary for ``$GITHUB_STEP_SUMMARY`` or a comment.

Totals, a findings table with status, compile counts per target; long lists fold into
``<details>``. Everything quoted is escaped, and the document stays under GitHub's 1 MiB step
summary limit whatever the input (rows past the budget are counted, not shown)."""

from __future__ import annotations

import html
from collections import Counter
from typing import List

from shapelint.finding import CheckResult, Status, shape_text
from shapelint.report.escape import clean
from shapelint.report.ranking import ranked

LIMIT = 1024 * 1024
BUDGET = LIMIT - 64 * 1024  # room for the closing lines
FOLD_AFTER = 20


def cell(text: str, limit: int = 300) -> str:
    """Escape for a Markdown table cell inside HTML-capable Markdown."""
    text = clean(" ".join(str(text).split()))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return html.escape(text, quote=False).replace("|", "&#124;").replace("`", "&#96;") \
        .replace("*", "&#42;").replace("_", "&#95;").replace("[", "&#91;").replace("]", "&#93;")


def render(result: CheckResult, *, rules, targets, color=False, statistics=False) -> str:
    findings = ranked(result.all_findings())
    by_status = Counter(f.status for f in findings)
    out: List[str] = ["### shapelint", ""]
    holding = len({f.path for f in findings})
    parts = [f"**{len(findings)}** finding{'s' if len(findings) != 1 else ''} in "
             + (f"{holding} of " if findings else "")
             + f"{result.files_checked} file{'s' if result.files_checked != 1 else ''}"]
    for s in Status:
        if by_status.get(s):
            parts.append(f"{by_status[s]} {s.label}")
    if result.errors:
        parts.append(f"{len(result.errors)} file error(s)")
    out.append(", ".join(parts))
    out.append("")
    if targets:
        out += ["#### Targets", "",
                "| target | device | backend | dynamic | compiles | budget | result |",
                "|---|---|---|---|---|---|---|"]
        for t in targets:
            out.append(f"| {cell(t.name)} | {cell(t.device or '-')} | {cell(t.backend or '-')} | "
                       f"{cell(t.dynamic or '-')} | {t.compiles} | {t.max_compiles or '-'} | "
                       f"{cell(t.verdict)} |")
        out.append("")
        for t in targets:
            rows = [f"{cell(shape_text(r.shape))}: {r.new_compiles}" + (" (eager)" if r.eager else "")
                    for r in t.per_shape]
            if rows:
                out += [f"<details><summary>{cell(t.name)}: new compiles per shape</summary>", "",
                        "; ".join(rows), "", "</details>", ""]
            if t.remedies:
                from shapelint.harness.remedy import describe

                out += [f"<details><summary>{cell(t.name)}: remedies, measured</summary>", ""]
                out += [f"- {cell(describe(r), 600)}" for r in t.remedies]
                out += ["", "</details>", ""]
    if findings:
        out += ["#### Findings", ""]
        header = ["| status | rule | location | message |", "|---|---|---|---|"]
        rows = [f"| {f.status.label} | {cell(f.rule)} {cell(f.name)} | "
                f"{cell(f.path)}:{f.line}{' (library)' if f.library else ''} | {cell(f.message)} |"
                for f in findings]
        out += header + rows[:FOLD_AFTER]
        rest = rows[FOLD_AFTER:]
        size = sum(len(x) + 1 for x in out)
        if rest:
            out += ["", f"<details><summary>{len(rest)} more</summary>", ""] + header
            dropped = 0
            for row in rest:
                if size + len(row) + 1 > BUDGET:
                    dropped += 1
                    continue
                out.append(row)
                size += len(row) + 1
            out += ["", "</details>"]
            if dropped:
                out.append(f"\n{dropped} more finding(s) not shown (summary size limit); see the SARIF report.")
    if result.errors:
        out += ["", "<details><summary>file errors</summary>", ""]
        size = sum(len(x) + 1 for x in out)
        for e in result.errors:
            row = f"- {cell(e.path)}:{e.line}: {cell(e.message)}"
            if size + len(row) > BUDGET:
                out.append("- …")
                break
            out.append(row)
            size += len(row) + 1
        out += ["", "</details>"]
    text = "\n".join(out) + "\n"
    if len(text.encode()) > LIMIT:  # never exceed, whatever happened above
        text = text.encode()[: LIMIT - 200].decode("utf-8", "ignore") + "\n\n(truncated)\n"
    return text
