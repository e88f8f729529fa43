"""From trace events to blamed facts: which user line caused each recompile, specialization,
graph break and compile error (the algorithm of torch-signals.md §2.4).

- ``tensor 'x' size mismatch``: automatic dynamic promoted an input; no user line is at fault.
- a reason with a ``User stack trace:`` block: a value guard (int argument or attribute).
- anything else: a symbolic-shape guard; re-evaluate the failed entry's ``guard_added_fast``
  expressions against the new inputs and blame each guard that is now false. If none is, an
  implicit range guard failed: the size-1 (0/1) specialization.
- guards with an empty user stack were added by the backend (AOTAutograd/Inductor).

Runs inside the worker, where the current inputs are at hand.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

from shapelint.harness.trace import Collector, Event

FILE_LINE = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)')
SHORT_LOC = re.compile(r"#\s*(?P<path>[^\s#()]+\.py):(?P<line>\d+) in (?P<fn>\w+)")
GB_AT = re.compile(r"Graph break(?: \([^)]*\))? in user code at (?P<path>.+):(?P<line>\d+)")
GB_ID = re.compile(r"/gb/gb(\d{4})\.html")
REASON_HEAD = re.compile(r"^(?P<frame>\d+)/(?P<compile>\d+): (?P<text>.*)$", re.S)
ERROR_LINE = re.compile(r"^[\w.]*(?:Error|Exception|Unsupported)\b.*:")
INPUT_REASONS = ("size mismatch", "stride mismatch", "rank mismatch", "dtype mismatch",
                 "device mismatch", "requires_grad mismatch", "dispatch key set mismatch")


def _torch_dir() -> str:
    try:
        import torch

        return os.path.dirname(os.path.abspath(torch.__file__))
    except Exception:  # noqa: BLE001
        return "/nonexistent-torch"


class Recorder:
    """Consumes trace events during a run and keeps blamed, JSON-ready records."""

    def __init__(self, collector: Collector, locals_fn: Callable[[], Dict[str, Any]]) -> None:
        self.c = collector
        self.locals_fn = locals_fn
        self.torch_dir = _torch_dir()
        self.shape: Dict[str, Any] = {}
        self.compiles = 0
        self.frames: Dict[Tuple, Dict[str, Any]] = {}
        self.frame_names: Dict[int, str] = {}
        self.guards: Dict[Tuple[int, int], List[Event]] = {}
        self.symbols: Dict[Tuple[int, int], Dict[str, str]] = {}
        self.recompiles: List[Dict[str, Any]] = []
        self.specializations: List[Dict[str, Any]] = []
        self.graph_breaks: List[Dict[str, Any]] = []
        self.compile_errors: List[Dict[str, Any]] = []
        self._gb_seen: set = set()
        self._spec_seen: set = set()
        self._recompile_seen: set = set()
        self.varying: Callable[[], set] = set

    # -- helpers ----------------------------------------------------------------------------------
    def is_user(self, path: Optional[str]) -> bool:
        if not path or path.startswith("<"):
            return False
        ab = os.path.abspath(path)
        return not ab.startswith(self.torch_dir + os.sep) and "/site-packages/torch/" not in ab

    def user_frame(self, stack: Any) -> Optional[Tuple[str, int, str]]:
        """Innermost user frame of a structured ``user_stack``."""
        if not isinstance(stack, list):
            return None
        for fr in reversed(stack):
            if not isinstance(fr, dict):
                continue
            path = self.c.filename(fr.get("filename"))
            if self.is_user(path):
                return os.path.abspath(path), int(fr.get("line") or 0), str(fr.get("name", ""))
        return None

    def text_frame(self, text: str) -> Optional[Tuple[str, int, str]]:
        """Innermost user frame named in a traceback-like text (absolute paths)."""
        best = None
        for m in FILE_LINE.finditer(text):
            if self.is_user(m.group("path")):
                best = (os.path.abspath(m.group("path")), int(m.group("line")), m.group("fn"))
        return best

    def short_frame(self, text: str) -> Optional[Tuple[str, int, str]]:
        """A frame from reason text, whose paths torch shortened (``mp/a/b.py``): match by
        suffix against the files this process has seen."""
        known = self.c.known_paths()
        for m in SHORT_LOC.finditer(text):
            short = m.group("path")
            for full in known:
                if full.endswith(short) and self.is_user(full):
                    return os.path.abspath(full), int(m.group("line")), m.group("fn")
        return None

    # -- events -----------------------------------------------------------------------------------
    def on_event(self, ev: Event) -> None:
        kind = ev["kind"]
        key = (ev.get("frame_id"), ev.get("frame_compile_id"))
        md = ev.get("md") or {}
        if kind == "compilation_metrics":
            self._metrics(md)
        elif kind == "guard_added_fast":
            self.guards.setdefault(key, []).append(ev)
        elif kind == "create_symbol":
            self.symbols.setdefault(key, {})[str(md.get("symbol"))] = str(md.get("source"))
        elif kind == "symbolic_shape_specialization":
            self._specialization(md)
        elif kind == "artifact" and md.get("name") == "recompile_reasons":
            self._recompile(ev)
        elif kind == "artifact" and md.get("name") == "dynamo_graph_break_reason":
            self._graph_break(ev.get("payload") or "")
        elif kind == "artifact" and md.get("name") == "dynamo_error":
            self._error(ev.get("payload") or "")

    def _metrics(self, md: Dict[str, Any]) -> None:
        self.compiles += 1
        name, path, line = md.get("co_name"), md.get("co_filename"), md.get("co_firstlineno")
        k = (name, path, line)
        fr = self.frames.setdefault(k, {"name": name, "path": path, "line": line, "compiles": 0})
        fr["compiles"] += 1
        cid = str(md.get("compile_id") or "")
        if "/" in cid and name:
            try:
                self.frame_names[int(cid.split("/")[0].split("-")[-1])] = str(name)
            except ValueError:
                pass
        if md.get("fail_type") and md.get("fail_reason") and "recompile limit" not in str(md.get("fail_reason")):
            where = self.text_frame(str(md.get("fail_reason")))
            self._add_error(str(md.get("fail_type")) + ": " + str(md.get("fail_reason")).split("\n")[0],
                            where)

    def _add_error(self, message: str, where: Optional[Tuple[str, int, str]]) -> None:
        """One record per shape: torch reports a failed compile several ways (the
        dynamo_error artifact, compilation_metrics, the exception); keep the most telling
        message and the first user line any of them names."""
        shape = dict(self.shape)
        for rec in self.compile_errors:
            if rec["shape"] == shape:
                if rec["path"] is None and where:
                    rec["path"], rec["line"] = where[0], where[1]
                if ERROR_LINE.match(message) and not ERROR_LINE.match(rec["message"]):
                    rec["message"] = message[:500]
                return
        self.compile_errors.append({"shape": shape, "message": message[:500],
                                    "path": where[0] if where else None,
                                    "line": where[1] if where else None})

    def _error(self, payload: str) -> None:
        lines = [ln.strip() for ln in payload.strip().splitlines() if ln.strip()]
        errors = [ln for ln in lines if ERROR_LINE.match(ln)]
        self._add_error(errors[-1] if errors else (lines[-1] if lines else "compile error"),
                        self.text_frame(payload))

    def _specialization(self, md: Dict[str, Any]) -> None:
        where = self.user_frame(md.get("user_stack"))
        sources = [str(x) for x in md.get("sources") or []]
        rec = {"shape": dict(self.shape), "symbol": md.get("symbol"), "value": md.get("value"),
               "reason": md.get("reason"), "sources": sources,
               "path": where[0] if where else None, "line": where[1] if where else None,
               "benign": False}
        key = (rec["path"], rec["line"], str(rec["sources"]), rec["value"])
        if key not in self._spec_seen:
            self._spec_seen.add(key)
            self.specializations.append(rec)

    def _graph_break(self, payload: str) -> None:
        m = GB_AT.search(payload)
        gb = GB_ID.search(payload)
        reason = ""
        for ln in payload.splitlines():
            if ln.startswith("Graph Break Reason:"):
                reason = ln.split(":", 1)[1].strip()
                break
        if not reason:
            reason = payload.strip().splitlines()[1].strip() if payload.count("\n") else payload.strip()
        path = os.path.abspath(m.group("path")) if m else None
        line = int(m.group("line")) if m else None
        if path and not self.is_user(path):
            where = self.text_frame(payload)
            path, line = (where[0], where[1]) if where else (path, line)
        rid = f"GB{gb.group(1)}" if gb else None
        key = (rid, path, line)
        if key in self._gb_seen:
            return
        self._gb_seen.add(key)
        self.graph_breaks.append({"shape": dict(self.shape), "path": path, "line": line,
                                  "reason": reason[:300], "registry_id": rid})

    # -- recompiles -------------------------------------------------------------------------------
    def _recompile(self, ev: Event) -> None:
        payload = ev.get("payload") or ""
        try:
            reasons = json.loads(payload) if payload.lstrip().startswith("[") else [payload]
        except ValueError:
            reasons = [payload]
        new_id = f"{ev.get('frame_id')}/{ev.get('frame_compile_id')}"
        frame = self.frame_names.get(ev.get("frame_id"), "")
        for text in reasons:
            for rec in self._blame(str(text)):
                rec.update({"shape": dict(self.shape), "compile_id": new_id, "frame": frame})
                key = (str(rec["shape"]), rec.get("path"), rec.get("line"), rec["reason"], frame)
                if key not in self._recompile_seen:
                    self._recompile_seen.add(key)
                    self.recompiles.append(rec)

    def _blame(self, text: str) -> List[Dict[str, Any]]:
        head = REASON_HEAD.match(text.strip())
        entry = (int(head.group("frame")), int(head.group("compile"))) if head else None
        body = head.group("text") if head else text
        summary = body.split("\n")[0].split("  #")[0].strip()
        base = {"reason": summary[:300], "failed_entry": f"{entry[0]}/{entry[1]}" if entry else None,
                "path": None, "line": None}
        if any(k in body for k in INPUT_REASONS):
            return [dict(base, kind="input-dynamic",
                         note="input promoted to dynamic (automatic dynamic shapes); no user line")]
        if "_has_dynamo_dim_marking" in body or "BACKEND_MATCH" in body:
            return [dict(base, kind="harness", note="caused by how the harness marked inputs")]
        if "duck sizing" in body:
            return [dict(base, kind="duck-sizing", note="two inputs shared a size (duck sizing)")]
        if "User stack trace:" in body:
            where = self.text_frame(body.split("User stack trace:", 1)[1])
            return [dict(base, kind="value-guard", path=where[0] if where else None,
                         line=where[1] if where else None)]
        out = self._reevaluate(entry) if entry else None
        if out:
            return [dict(base, **o) for o in out]
        if out == [] and re.search(r"\b2 <= ", body):
            return [dict(base, kind="size-one",
                         note="a size-1 input after a dynamic compile (0/1 specialization)")]
        where = self.short_frame(body)
        if where and "0/1 specialization" in body and "2 <= " in body.split("#")[0] \
                and "<=" not in body.split("#")[0].split("2 <=", 1)[1]:
            return [dict(base, kind="size-one", path=where[0], line=where[1],
                         note="0/1 specialization; the line is the first use of the size")]
        return [dict(base, kind="shape-guard", path=where[0] if where else None,
                     line=where[1] if where else None)]

    def _reevaluate(self, entry: Tuple[int, int]) -> Optional[List[Dict[str, Any]]]:
        """Guards of the failed entry that are false for the current inputs; None if they
        cannot be evaluated (a resume frame, unbacked symbols)."""
        guards = self.guards.get(entry)
        symbols = self.symbols.get(entry, {})
        if not guards:
            return None
        try:
            import sympy
            import torch.utils._sympy.functions as tf

            loc = {n: getattr(tf, n) for n in dir(tf)
                   if isinstance(getattr(tf, n), type) and issubclass(getattr(tf, n), sympy.Basic)}
            loc.update(Eq=sympy.Eq, Ne=sympy.Ne, And=sympy.And, Or=sympy.Or, Not=sympy.Not)
            f_locals = self.locals_fn()
            failed: List[Dict[str, Any]] = []
            evaluated = 0
            for g in guards:
                md = g.get("md") or {}
                expr = sympy.sympify(str(md.get("expr")), locals=loc)
                if any(str(s) not in symbols for s in expr.free_symbols):
                    continue
                raw = {s: eval(symbols[str(s)], {"L": f_locals}) for s in expr.free_symbols}  # noqa: S307
                if any(isinstance(v, float) for v in raw.values()):
                    continue  # a float symbol (zf...): its guard prints a rounded constant
                vals = {s: sympy.Integer(int(v)) for s, v in raw.items()}
                evaluated += 1
                if bool(expr.xreplace(vals)):
                    continue
                where = self.user_frame(md.get("user_stack"))
                if not md.get("user_stack"):
                    failed.append({"kind": "backend", "guard": str(md.get("expr")),
                                   "note": "guard added by the backend (AOTAutograd/Inductor)"})
                else:
                    failed.append({"kind": "shape-guard", "guard": str(md.get("expr")),
                                   "path": where[0] if where else None,
                                   "line": where[1] if where else None})
            if evaluated == 0:
                return None
            # one record per blamed line
            seen, out = set(), []
            for f in failed:
                k = (f.get("path"), f.get("line"), f["kind"])
                if k not in seen:
                    seen.add(k)
                    out.append(f)
            return out
        except Exception:  # noqa: BLE001 - fall back to the reason text
            return None

    def mark_benign(self) -> None:
        """A specialization is benign when none of its sources is an input size that varied
        across the replayed shapes: a constant feature dim (nn.Linear's 32 under dynamic=True)
        or a float attribute (``eps``) pinned to the value it always has."""
        varying = self.varying()
        for rec in self.specializations:
            rec["benign"] = not any(src in varying for src in rec["sources"])

    # -- summary ----------------------------------------------------------------------------------
    def summary(self) -> Dict[str, Any]:
        self.mark_benign()
        return {"compiles": self.compiles, "frames": list(self.frames.values()),
                "recompiles": self.recompiles, "specializations": self.specializations,
                "graph_breaks": self.graph_breaks, "compile_errors": self.compile_errors}
