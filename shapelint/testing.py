"""Assertions for tests: does a model recompile? For pytest (through the plugin's fixture and
marker) and for unittest alike. Failure messages name every recompile with its shape, reason,
blamed ``file:line``, the source line and the static rule that predicted it.

torch is imported only when these are used."""

from __future__ import annotations

import linecache
import logging
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence

from shapelint.finding import shape_text
from shapelint.harness.target import DEFAULT_BATCHES, TargetSpec


class RecompileError(AssertionError):
    """A model compiled more often than allowed."""


def _predictions(paths: Iterable[str]) -> Dict[tuple, List[str]]:
    """(abspath, line) -> ['SL101 size-branch', ...] from the static pass (torch-free)."""
    paths = sorted({os.path.abspath(p) for p in paths if p and os.path.isfile(p)})
    if not paths:
        return {}
    from shapelint.config import Settings
    from shapelint.registry import all_rules
    from shapelint.static.engine import Engine

    rules = all_rules()
    enabled = [c for c, r in rules.items() if r.default_enabled]
    root = os.path.commonpath([os.path.dirname(p) for p in paths])
    result = Engine(rules, enabled, Settings()).check(paths, root=root, use_cache=False)
    out: Dict[tuple, List[str]] = {}
    for f in result.findings:
        for line in range(f.location.line, max(f.location.end_line, f.location.line) + 1):
            out.setdefault((os.path.abspath(f.path), line), []).append(f"{f.rule} {f.name}")
    return out


def explain(summary: Dict[str, Any], header: str) -> str:
    """The failure message: every recompile, graph break and compile error, with its line."""
    events = [("recompile", r) for r in summary.get("recompiles", [])] + \
             [("graph break", g) for g in summary.get("graph_breaks", [])] + \
             [("compile error", e) for e in summary.get("compile_errors", [])]
    paths = [(ev.get("abspath") or ev.get("path")) for _, ev in events]
    predicted = _predictions([p for p in paths if p])
    lines = [header]
    for kind, ev in events:
        reason = ev.get("reason") or ev.get("message") or ""
        gb = f" [{ev['registry_id']}]" if ev.get("registry_id") else ""
        lines.append(f"  {kind} at {shape_text(ev.get('shape'))}: {reason}{gb}")
        path = ev.get("abspath") or ev.get("path")
        if path and ev.get("line"):
            src = linecache.getline(os.path.abspath(path), int(ev["line"])).strip()
            rules = predicted.get((os.path.abspath(path), int(ev["line"])), [])
            pred = f"   [predicted by {', '.join(rules)}]" if rules else "   [no static rule predicted it]"
            lines.append(f"    {os.path.relpath(path) if not os.path.relpath(path).startswith('..') else path}:"
                         f"{ev['line']}: {src}{pred}")
        elif ev.get("note"):
            lines.append(f"    ({ev['note']})")
    return "\n".join(lines)


class CompileWatch:
    """Count compiles in this process while the ``with`` block runs.

    >>> with CompileWatch() as watch:
    ...     for b in (1, 2, 3, 8):
    ...         model(torch.randn(b, 16))
    >>> watch.assert_max_compiles(2)
    """

    def __init__(self, reset: bool = True) -> None:
        self.reset = reset
        self._collector = None
        self._recorder = None
        self._muted: List[logging.Handler] = []

    def __enter__(self) -> "CompileWatch":
        import torch._dynamo

        from shapelint.harness.blame import Recorder
        from shapelint.harness.trace import Collector, attach

        if self.reset:
            torch._dynamo.reset()
        # pytest's log capture also hooks this logger; the trace is data, not log lines
        trace_log = logging.getLogger("torch.__trace")
        self._muted = [h for h in trace_log.handlers if type(h).__module__.startswith("_pytest")]
        for h in self._muted:
            trace_log.removeHandler(h)
        self._collector = Collector()
        self._recorder = Recorder(self._collector, dict)
        self._collector.on_event = self._recorder.on_event
        attach(self._collector)
        return self

    def __exit__(self, *exc: Any) -> None:
        trace_log = logging.getLogger("torch.__trace")
        trace_log.removeHandler(self._collector)
        for h in self._muted:
            trace_log.addHandler(h)

    def label(self, text: str) -> None:
        """Name the next calls in failure messages (e.g. ``watch.label("batch=8")``)."""
        self._recorder.shape = {"label": text}

    @property
    def summary(self) -> Dict[str, Any]:
        s = self._recorder.summary()
        for key in ("recompiles", "graph_breaks", "compile_errors", "specializations"):
            for ev in s[key]:
                ev.setdefault("abspath", ev.get("path"))
        return s

    @property
    def compiles(self) -> int:
        return self._recorder.compiles

    @property
    def recompiles(self) -> List[Dict[str, Any]]:
        return self.summary["recompiles"]

    @property
    def graph_breaks(self) -> List[Dict[str, Any]]:
        return self.summary["graph_breaks"]

    def assert_max_compiles(self, n: int) -> None:
        if self.compiles > n:
            raise RecompileError(explain(self.summary, f"{self.compiles} compiles, more than the {n} allowed:"))

    def assert_no_recompiles(self) -> None:
        self.assert_max_compiles(max(1, len({(f["name"], f["path"]) for f in self.summary["frames"]})))

    def assert_no_graph_breaks(self) -> None:
        if self.graph_breaks:
            raise RecompileError(explain({"graph_breaks": self.graph_breaks},
                                         f"{len(self.graph_breaks)} graph break(s):"))


def assert_no_recompiles(model: str, inputs: str, batch_sizes: Sequence[int] = tuple(DEFAULT_BATCHES),
                         seq_lens: Optional[Sequence[int]] = None, max_compiles: int = 2,
                         dynamic: str = "auto", backend: str = "eager", device: str = "auto",
                         timeout: float = 300.0, base_dir: Optional[str] = None,
                         fullgraph: bool = False) -> Dict[str, Any]:
    """Replay ``model`` (a ``pkg.mod:factory`` or ``file.py:factory``) in a fresh process at
    the given shapes; raise RecompileError naming every recompile if it compiles more than
    ``max_compiles`` times (2 by default: batch 1 is always specialized, then one dynamic graph)."""
    from shapelint.harness.runner import run_target

    spec = TargetSpec(name=model.split(":")[-1], model=model, inputs=inputs,
                      batch_sizes=list(batch_sizes), seq_lens=list(seq_lens) if seq_lens else None,
                      dynamic=dynamic, backend=backend, device=device, max_compiles=max_compiles,
                      timeout=timeout, base_dir=base_dir or os.getcwd(), fullgraph=fullgraph)
    result = run_target(spec)
    if result.get("error"):
        raise RecompileError(explain(result, f"{spec.name}: {result['error']}"))
    if result["compiles"] > max_compiles or (fullgraph and result["graph_breaks"]):
        raise RecompileError(explain(result, f"{spec.name}: {result['compiles']} compiles at "
                                             f"{len(result['per_shape'])} shapes, more than the "
                                             f"{max_compiles} allowed:"))
    return result
