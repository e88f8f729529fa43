"""``--format html``: one self-contained page (no network): findings grouped by file with source
excerpts, each target's compiles per shape as an inline SVG chart, reasons and evidence per line.
jinja2 autoescapes everything quoted from code or logs."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict, List

from shapelint import __version__
from shapelint.finding import (FALLBACK, GRAPH_BREAK, RECOMPILE, CheckResult, Finding, ShapeRow,
                               Status, TargetResult)


def _excerpt(f: Finding) -> List[Dict[str, Any]]:
    """The lines around a finding as saved with it (``Finding.snippet``): the page never reads
    a file, so a saved report naming ``/proc/self/environ`` as a path shows no secret, and a
    report rendered after an edit shows the code that was checked."""
    if f.snippet is not None:
        return [{"n": f.snippet.start + i, "text": text, "hit": f.snippet.start + i == f.line}
                for i, text in enumerate(f.snippet.lines)]
    return [{"n": f.line, "text": f.source_line, "hit": True}] if f.source_line else []


def _page_target(t: TargetResult) -> Dict[str, Any]:
    """What the page shows of a target (shapelint.finding.TargetResult)."""
    from shapelint.harness.remedy import describe

    return {"name": t.name, "compiles": t.compiles, "device": t.device or "?",
            "backend": t.backend or "?", "dynamic": t.dynamic or "?",
            "torch_version": t.torch_version or "?", "failed": t.failed, "problems": t.problems,
            "error": t.error, "per_shape": t.per_shape, "recompiles": t.of_kind(RECOMPILE),
            "graph_breaks": t.of_kind(GRAPH_BREAK), "fallbacks": t.of_kind(FALLBACK),
            "remedies": [describe(r) for r in t.remedies], "chart": _chart(t.per_shape)}


def _chart(rows: List[ShapeRow]) -> Dict[str, Any]:
    top = max([r.new_compiles for r in rows] + [1])
    width = max(40 * len(rows), 200)
    bars = []
    for i, r in enumerate(rows):
        h = 120 * r.new_compiles / top
        label = f"b{r.batch}" + (f"/s{r.seq_len}" if r.seq_len is not None else "")
        bars.append({"x": 40 * i + 8, "y": 130 - h, "h": h, "n": r.new_compiles, "label": label,
                     "error": r.error})
    return {"width": width, "bars": bars}


def render(result: CheckResult, *, rules, targets, color=False, statistics=False) -> str:
    try:
        import jinja2
    except ImportError as exc:  # pragma: no cover - jinja2 is a dependency
        raise RuntimeError("--format html needs jinja2 (pip install jinja2)") from exc
    from markupsafe import Markup

    from shapelint.report.escape import clean, defuse_commands

    def finalize(value: Any) -> Any:
        """Every value the page shows goes through clean() (report/escape.py), then
        autoescaping; an already escaped value (``|join`` of escaped parts) stays escaped."""
        if isinstance(value, Markup):
            return Markup(defuse_commands(clean(str(value))))
        return defuse_commands(clean(value)) if isinstance(value, str) else value

    env = jinja2.Environment(loader=jinja2.PackageLoader("shapelint", "report/templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, finalize=finalize)
    files: "OrderedDict[str, List[Dict[str, Any]]]" = OrderedDict()
    for f in result.all_findings():
        files.setdefault(f.path, []).append({"f": f, "excerpt": _excerpt(f)})
    return env.get_template("report.html.j2").render(
        version=__version__, result=result, files=files, rules=rules,
        targets=[_page_target(t) for t in targets],
        counts={s.value: sum(1 for f in result.all_findings() if f.status == s) for s in Status})
