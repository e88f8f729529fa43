"""``--format text``: ruff-style lines, one per finding, with the why and the fix."""

from __future__ import annotations

from collections import Counter
from typing import List

from shapelint.finding import CheckResult

STATUS_MARK = {"confirmed": " [confirmed]", "not-seen": " [not seen]", "unpredicted": " [unpredicted]"}


def _c(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


def render(result: CheckResult, *, rules, targets, color=False, statistics=False) -> str:
    lines: List[str] = []
    findings = result.all_findings()
    for f in findings:
        loc = f"{f.path}:{f.line}:{f.column}:"
        mark = STATUS_MARK.get(f.status, "")
        lines.append(f"{_c(loc, '1', color)} {_c(f.rule, '31;1', color)} [{f.name}]{mark} {f.message}")
        if f.source_line:
            lines.append(f"    | {f.source_line}")
        if f.hint:
            lines.append(f"    = help: {f.hint}")
        for ev in f.evidence_events[:3]:
            lines.append(f"    = seen: {ev.get('summary', ev.get('kind', ''))}")
    for e in result.errors:
        lines.append(f"{_c(f'{e.path}:{e.line}:{e.column}:', '1', color)} "
                     f"{_c('error', '31;1', color)} {e.message}")
    if statistics and findings:
        lines.append("")
        for (code, name), n in Counter((f.rule, f.name) for f in findings).most_common():
            lines.append(f"{n:5d}  {code}  {name}")
    for t in targets:
        lines.append("")
        lines.extend(_target_lines(t))
    n = len(findings)
    summary = f"Found {n} finding{'s' if n != 1 else ''} in {result.files_checked} file" \
              f"{'s' if result.files_checked != 1 else ''}"
    if result.errors:
        summary += f"; {len(result.errors)} file error{'s' if len(result.errors) != 1 else ''}"
    lines.append(summary + "." if n or result.errors else
                 f"All checks passed ({result.files_checked} files).")
    return "\n".join(lines) + "\n"


def _target_lines(t) -> List[str]:
    out = [f"target {t['name']}: {t.get('compiles', '?')} compiles on {t.get('device', '?')}, "
           f"backend {t.get('backend', '?')}, dynamic {t.get('dynamic', '?')}, "
           f"torch {t.get('torch_version', '?')}"]
    if t.get("error"):
        out.append(f"  error: {t['error']}")
    for row in t.get("per_shape", []):
        shape = f"batch={row['batch']}" + (f" seq_len={row['seq_len']}" if row.get("seq_len") is not None else "")
        status = f" error: {row['error']}" if row.get("error") else ""
        out.append(f"  {shape:<24} new compiles: {row['new_compiles']}{status}")
    for r in t.get("recompiles", []):
        where = f"{r['path']}:{r['line']}" if r.get("path") else "(no user line)"
        out.append(f"  recompile at {r['shape']}: {where}  {r['reason']}")
    for s in t.get("specializations", []):
        out.append(f"  specialization: {s['path']}:{s['line']}  {s.get('symbol', '')} = "
                   f"{s.get('value', '')} ({s.get('reason', '')})")
    for g in t.get("graph_breaks", []):
        out.append(f"  graph break: {g['path']}:{g['line']}  {g['reason']} "
                   f"{'(' + g['registry_id'] + ')' if g.get('registry_id') else ''}")
    return out
