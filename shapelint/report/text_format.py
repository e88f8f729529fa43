"""``--format text``: ruff-style lines, one per finding, with the why and the fix."""

from __future__ import annotations

from typing import List

from shapelint.finding import (COMPILE_ERROR, FALLBACK, GRAPH_BREAK, PREDICTED, RECOMPILE,
                               SPECIALIZATION, CheckResult, Guard, shape_text)
from shapelint.report.escape import clean, defuse_commands


def _c(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


def render(result: CheckResult, *, rules, targets, color=False, statistics=False,
           quiet=False) -> str:
    """Each finding with its source line, help and evidence; each target's replay; the summary.
    ``quiet``: the findings and the failed targets' one-line verdicts, nothing else."""
    from shapelint.report import summary_line

    lines: List[str] = []
    findings = result.all_findings()
    # every field quoted from code or from a target is cleaned (see report/escape.py); the
    # only escape sequences printed are the colours added here
    for f in findings:
        loc = f"{clean(f.path)}:{f.line}:{f.column}:"
        mark = ("" if f.status == PREDICTED else f" [{f.status.label}]") + (" [library]" if f.library else "")
        lines.append(f"{_c(loc, '1', color)} {_c(clean(f.rule), '31;1', color)} [{clean(f.name)}]{mark} "
                     f"{clean(f.message)}")
        if f.source_line:
            lines.append(f"    | {clean(f.source_line)}")
        if f.hint:
            lines.append(f"    = help: {clean(f.hint)}")
        for ev in f.evidence_events[:3]:
            lines.append(f"    = seen: {clean(ev.summary or ev.kind)}")
    for e in result.errors:
        lines.append(f"{_c(f'{clean(e.path)}:{e.line}:{e.column}:', '1', color)} "
                     f"{_c('error', '31;1', color)} {clean(e.message)}")
    for t in targets:
        if quiet:
            if t.failed:
                lines.append(clean(f"target {t.name}: FAILED: {'; '.join(t.problems)}"))
            continue
        lines.append("")
        lines.extend(clean(line) for line in _target_lines(t))
    if not quiet:
        lines.append(summary_line(result, targets))
    return defuse_commands("\n".join(lines)) + "\n" if lines else ""


def _header(t) -> str:
    if not t.torch_version:  # the worker never got as far as importing torch
        return (f"target {t.name}: no replay (torch never started), backend {t.backend or '?'}, "
                f"dynamic {t.dynamic or '?'}")
    replayed = f"{t.compiles} compiles" if t.per_shape or not t.error else "not replayed"
    # a module left in training mode (no `.eval()`) compiles the other side of `self.training`
    mode = {"train": ", modules in training mode",
            "any": ", modules in mixed train/eval modes"}.get(t.module_mode or "", "")
    return (f"target {t.name}: {replayed} on {t.device or '?'}, backend {t.backend or '?'}, "
            f"dynamic {t.dynamic or '?'}, torch {t.torch_version}{mode}")


def _where(item: Guard) -> str:
    return f"{item.path}:{item.line}"


def _target_lines(t) -> List[str]:
    from shapelint.harness.remedy import describe, within_budget

    out = [_header(t)]
    if t.error and t.error not in t.problems:  # else said once, on the FAILED line
        out.append(f"  error: {t.error}")
    for row in t.per_shape:
        status = f"  error: {row.error}" if row.error else ""
        eager = ("  ran uncompiled (eager" + (f": {row.eager_why}" if row.eager_why else "")
                 + ")") if row.eager and not row.error else ""
        graphs = f", CUDA graph recordings: {row.cudagraph_recordings}" \
            if row.cudagraph_recordings is not None else ""
        out.append(f"  {shape_text(row.shape):<24} new compiles: {row.new_compiles}{graphs}{eager}{status}")
    for ev in t.of_kind(RECOMPILE):
        frame = f" in {ev.frame}" if ev.frame else ""
        fw = "  (framework guard: torch's own, not your line)" if ev.framework else ""
        out.append(f"  recompile at {shape_text(ev.shape)}{frame}: {ev.reason}{fw}")
        placed = [g for g in ev.guards if g.path and g.line]
        cause = ev.cause
        for g in placed:
            confirms = f"  [predicted by {', '.join(ev.confirms)}]" if ev.confirms else ""
            why = f" ({g.guard})" if g.guard and g.guard != ev.reason else ""
            older = "" if g in cause else "  (an older graph's guard, failed again)"
            out.append(f"      -> {_where(g)}{why}{older}{confirms}")
            if g.source:
                out.append(f"         | {g.source}")
        if not placed:
            out.append(f"      -> {ev.path}:{ev.line}" if ev.path and ev.line else
                       f"      -> no line: {ev.note or 'torch gave none'}")
        for place in ev.also:  # the calls in a value guard's stack, the writes of module state
            if place.path and place.line:
                out.append(f"      -> {place.path}:{place.line} ({place.why})")
                if place.source:
                    out.append(f"         | {place.source}")
        unplaced = len(ev.guards) - len(placed)
        if placed and unplaced:
            out.append(f"      (+{unplaced} cache entr{'y' if unplaced == 1 else 'ies'} failed on inputs "
                       f"compiled static: no line)")
    specs = t.of_kind(SPECIALIZATION)
    benign = [s for s in specs if s.benign]
    if benign:
        out.append(f"  {len(benign)} benign specialization(s) of sizes and values that never varied "
                   f"(constant feature dims, float attributes)")
    for s in specs:
        if s.benign:
            continue
        fw = "  (framework)" if s.framework else ""
        out.append(f"  specialization at {shape_text(s.shape)}: {s.reason}{fw}")
        out.append(f"      -> {s.path}:{s.line}" if s.path else f"      -> no line: {s.note}")
    for g in t.of_kind(GRAPH_BREAK):
        rid = f" ({g.registry_id})" if g.registry_id else ""
        confirms = f"  [predicted by {', '.join(g.confirms)}]" if g.confirms else ""
        out.append(f"  graph break at {shape_text(g.shape)}: {g.reason}{rid}")
        out.append(f"      -> {g.path}:{g.line}{confirms}" if g.path else f"      -> no line: {g.note}")
        if g.source:
            out.append(f"         | {g.source}")
    for e in t.of_kind(COMPILE_ERROR):
        out.append(f"  compile error at {shape_text(e.shape)}: {e.reason}")
        out.append(f"      -> {e.path}:{e.line}" if e.path else f"      -> no line: {e.note}")
    for f in t.of_kind(FALLBACK):
        out.append(f"  FELL BACK TO EAGER at {shape_text(f.shape)}: {f.reason}")
        out.append(f"      -> {f.path}:{f.line}" if f.path else f"      -> no line: {f.note}")
    for r in t.remedies:
        out.append(f"  remedy: {describe(r)}")
    if within_budget(t) is False:
        out.append(f"  no measured knob brings it within max-compiles {t.max_compiles}: "
                   f"the code changes above do")
    if t.executed:
        n = sum(len(v) for v in t.executed.values())
        out.append(f"  coverage: {n} line(s) in {len(t.executed)} file(s) ran compiled")
    if t.problems:
        out.append(f"  FAILED: {'; '.join(t.problems)}")
    return out
