"""``--format text``: ruff-style lines, one per finding, with the why and the fix."""

from __future__ import annotations

from collections import Counter
from typing import List

from shapelint.finding import CheckResult, shape_text
from shapelint.report.escape import clean, defuse_commands

STATUS_MARK = {"confirmed": " [confirmed]", "not-seen": " [not seen]", "unpredicted": " [unpredicted]"}


def _c(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


def render(result: CheckResult, *, rules, targets, color=False, statistics=False) -> str:
    lines: List[str] = []
    findings = result.all_findings()
    # every field quoted from code or from a target is cleaned (see report/escape.py); the
    # only escape sequences printed are the colours added here
    for f in findings:
        loc = f"{clean(f.path)}:{f.line}:{f.column}:"
        mark = STATUS_MARK.get(f.status, "")
        lines.append(f"{_c(loc, '1', color)} {_c(clean(f.rule), '31;1', color)} [{clean(f.name)}]{mark} "
                     f"{clean(f.message)}")
        if f.source_line:
            lines.append(f"    | {clean(f.source_line)}")
        if f.hint:
            lines.append(f"    = help: {clean(f.hint)}")
        for ev in f.evidence_events[:3]:
            lines.append(f"    = seen: {clean(ev.get('summary', ev.get('kind', '')))}")
    for e in result.errors:
        lines.append(f"{_c(f'{clean(e.path)}:{e.line}:{e.column}:', '1', color)} "
                     f"{_c('error', '31;1', color)} {clean(e.message)}")
    if statistics and findings:
        lines.append("")
        for (code, name), n in Counter((f.rule, f.name) for f in findings).most_common():
            lines.append(f"{n:5d}  {clean(code)}  {clean(name)}")
    for t in targets:
        lines.append("")
        lines.extend(clean(line) for line in _target_lines(t))
    n = len(findings)
    summary = f"Found {n} finding{'s' if n != 1 else ''} in {result.files_checked} file" \
              f"{'s' if result.files_checked != 1 else ''}"
    if result.errors:
        summary += f"; {len(result.errors)} file error{'s' if len(result.errors) != 1 else ''}"
    lines.append(summary + "." if n or result.errors else
                 f"All checks passed ({result.files_checked} files).")
    return defuse_commands("\n".join(lines)) + "\n"


def _target_lines(t) -> List[str]:
    out = [f"target {t['name']}: {t.get('compiles', '?')} compiles on {t.get('device', '?')}, "
           f"backend {t.get('backend', '?')}, dynamic {t.get('dynamic', '?')}, "
           f"torch {t.get('torch_version', '?')}"]
    if t.get("error"):
        out.append(f"  error: {t['error']}")
    for row in t.get("per_shape", []):
        status = f"  error: {row['error']}" if row.get("error") else ""
        graphs = f", CUDA graph recordings: {row['cudagraph_recordings']}" \
            if row.get("cudagraph_recordings") is not None else ""
        out.append(f"  {shape_text(row):<24} new compiles: {row['new_compiles']}{graphs}{status}")
    for r in t.get("recompiles", []):
        where = f"{r['path']}:{r['line']}" if r.get("path") else r.get("note") or "(no user line)"
        frame = f" in {r['frame']}" if r.get("frame") else ""
        confirms = f"  [predicted by {', '.join(r['confirms'])}]" if r.get("confirms") else ""
        out.append(f"  recompile at {shape_text(r.get('shape'))}{frame}: {r['reason']}")
        out.append(f"      -> {where}{confirms}")
        if r.get("source"):
            out.append(f"         | {r['source']}")
    benign = [s for s in t.get("specializations", []) if s.get("benign")]
    if benign:
        out.append(f"  {len(benign)} benign specialization(s) of sizes and values that never varied "
                   f"(constant feature dims, float attributes)")
    for s in t.get("specializations", []):
        if s.get("benign"):
            continue
        out.append(f"  specialization at {shape_text(s.get('shape'))}: "
                   f"{', '.join(s.get('sources') or [])} = {s.get('value', '')} ({s.get('reason', '')})")
        out.append(f"      -> {s.get('path')}:{s.get('line')}")
    for g in t.get("graph_breaks", []):
        rid = f" ({g['registry_id']})" if g.get("registry_id") else ""
        confirms = f"  [predicted by {', '.join(g['confirms'])}]" if g.get("confirms") else ""
        out.append(f"  graph break at {shape_text(g.get('shape'))}: {g['reason']}{rid}")
        out.append(f"      -> {g.get('path')}:{g.get('line')}{confirms}")
        if g.get("source"):
            out.append(f"         | {g['source']}")
    for e in t.get("compile_errors", []):
        out.append(f"  compile error at {shape_text(e.get('shape'))}: {e['message']}")
        if e.get("path"):
            out.append(f"      -> {e['path']}:{e['line']}")
    if t.get("problems"):
        out.append(f"  FAILED: {'; '.join(t['problems'])}")
    return out
