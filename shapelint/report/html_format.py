"""``--format html``: one self-contained page (no network): findings grouped by file with source
excerpts, each target's compiles per shape as an inline SVG chart, reasons and evidence per line.
jinja2 autoescapes everything quoted from code or logs."""

from __future__ import annotations

import linecache
import os
from collections import OrderedDict
from typing import Any, Dict, List

from shapelint import __version__
from shapelint.finding import CheckResult


def _excerpt(path: str, line: int, context: int = 2) -> List[Dict[str, Any]]:
    ab = os.path.abspath(path)
    out = []
    for n in range(max(1, line - context), line + context + 1):
        text = linecache.getline(ab, n)
        if not text and n > line:
            break
        out.append({"n": n, "text": text.rstrip("\n"), "hit": n == line})
    return out


def _page_target(t) -> Dict[str, Any]:
    """What the page shows of a target (shapelint.finding.TargetResult)."""
    from shapelint.harness.remedy import describe

    return {"name": t.name, "compiles": t.compiles, "device": t.device or "?",
            "backend": t.backend or "?", "dynamic": t.dynamic or "?",
            "torch_version": t.torch_version or "?", "failed": t.failed, "problems": t.problems,
            "error": t.error, "per_shape": t.per_shape, "recompiles": t.of_kind("recompile"),
            "graph_breaks": t.of_kind("graph-break"), "fallbacks": t.of_kind("fallback"),
            "remedies": [describe(r) for r in t.remedies], "chart": _chart(t.per_shape)}


def _chart(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    top = max([r.get("new_compiles") or 0 for r in rows] + [1])
    width = max(40 * len(rows), 200)
    bars = []
    for i, r in enumerate(rows):
        n = r.get("new_compiles") or 0
        h = 120 * n / top
        label = f"b{r.get('batch')}" + (f"/s{r['seq_len']}" if r.get("seq_len") is not None else "")
        bars.append({"x": 40 * i + 8, "y": 130 - h, "h": h, "n": n, "label": label,
                     "error": r.get("error")})
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
        files.setdefault(f.path, []).append({"f": f, "excerpt": _excerpt(f.path, f.line)})
    return env.get_template("report.html.j2").render(
        version=__version__, result=result, files=files, rules=rules,
        targets=[_page_target(t) for t in targets],
        counts={s: sum(1 for f in result.all_findings() if f.status == s)
                for s in ("confirmed", "unpredicted", "predicted", "not-seen", "not-reached")})
