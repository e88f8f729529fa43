"""From trace events to blamed events: which line caused each recompile, specialization, graph
break, compile error and fallback to eager (the algorithm of torch-signals.md §2.4).

- One ``recompile_reasons`` artifact is one recompile: one :class:`Event` holding a failed
  guard per failed cache entry (the first guard torch names for it, or every guard that
  re-evaluates false for the new inputs).
- ``tensor 'x' size mismatch``: the input was compiled static; what happens next depends on the
  mode (automatic dynamic promotes it once, ``dynamic=False`` compiles one graph per size,
  ``dynamic=True`` still specializes sizes 0 and 1). No user line is at fault. A tensor
  *attribute* of the module (``tensor 'self.cache' size mismatch``) is module state: blamed on
  the attribute's writes that the replay ran.
- a reason with a ``User stack trace:`` block: a value guard (int argument or attribute).
- anything else: a symbolic-shape guard; re-evaluate the failed entry's ``guard_added_fast``
  expressions against the new inputs and blame each guard that is now false. If none is, an
  implicit range guard failed: the size-1 (0/1) specialization when a size it names is 0 or 1
  now, else a range guard at the line torch prints.
- a guard, specialization or graph break torch adds inside an installed library's code
  (transformers' masking_utils.py under ``self.encoder(...)``) is placed at the user's call into
  the library, the innermost frame outside library code (``scope.is_library``), with the
  library's line in its note; a library frame compiled on its own keeps its innermost frame.
- guards with an empty user stack were added by the backend (AOTAutograd/Inductor); guards
  torch adds inside its own modules and kernels (CPU convolution's ``batch < 16``) are marked
  ``framework``.
- a compile that fails (``fail_type``) while the call goes on is a fallback to eager: the
  recompile limit, an unhandled graph break, ``suppress_errors``.

The Recorder never imports torch itself and reads the inputs through callbacks (``values``,
``attribute_writes``), so recorded traces replay it without torch (tests/fixtures/traces).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple

from shapelint.finding import (COMPILE_ERROR, FALLBACK, GRAPH_BREAK, RECOMPILE, SPECIALIZATION,
                               TORCH_STEPS, Blame, Event, Guard, Place)
from shapelint.harness.names import Names
from shapelint.harness.scope import is_library, library_path
from shapelint.harness.trace import VALUE_GUARD

FILE_LINE = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)')
SHORT_LOC = re.compile(r"#\s*(?P<path>[^\s#()]+\.py):(?P<line>\d+) in (?P<fn>\w+)")
GB_AT = re.compile(r"Graph break(?: \([^)]*\))? in user code at (?P<path>.+):(?P<line>\d+)")
GB_ID = re.compile(r"/gb/gb(\d{4})\.html")
REASON_HEAD = re.compile(r"^(?P<frame>\d+)/(?P<compile>\d+): (?P<text>.*)$", re.S)
ERROR_LINE = re.compile(r"^[\w.]*(?:Error|Exception|Unsupported)\b.*:")
INPUT_MISMATCH = re.compile(
    r"tensor '(?P<name>.+?)' (?P<what>[a-z_ ]+?) mismatch(?: at index (?P<index>\d+))?"
    r"\.? ?(?:expected (?P<expected>[^,]+), actual (?P<actual>\S+))?")
INPUT_REASONS = ("size mismatch", "stride mismatch", "rank mismatch", "dtype mismatch",
                 "device mismatch", "device index mismatch", "requires_grad mismatch",
                 "dispatch key set mismatch")
#: an attribute of the module a guard reads (``self.seq_len_cached``, ``L['self'].step``)
STATE_ATTR = re.compile(r"(?:L\['self'\]|\bself)\.([A-Za-z_]\w*)\b(?!\s*\()")
#: a symbol of torch's ShapeEnv (``s2``, ``s53``; ``u0`` for unbacked), named by its source
SYMBOL = re.compile(r"\b[su]\d+\b")
#: a local torch names by its dict (``L['logits']``)
LOCAL_NAME = re.compile(r"\bL\['(\w+)'\]")
#: a size or a stack value a range guard's text names (``x.size()[0]``, ``___stack0``)
RANGE_SRC = re.compile(r"(L\['\w+'\][\w.]*\.size\(\)\[\d+\]|(?<![\w.\]'])[A-Za-z_][\w.]*\.size\(\)\[\d+\]"
                       r"|(?<![\w'])___stack\d+)")
LIMIT = re.compile(r"exceeding the (?P<kind>\w+) cache size limit \(currently set to (?P<n>\d+)\)")
UNHANDLED_BREAK = "Failed to handle graph break gracefully"
#: torch code that adds guards of its own inside a kernel (the user line only calls it)
FRAMEWORK_FILES = ("/torch/nn/modules/",)
FRAMEWORK_KERNELS = re.compile(r"conv|batch_norm|pool|cudnn|mkldnn|_norm\b")
KERNEL_FILES = ("torch/_subclasses/fake_impls.py", "torch/_meta_registrations.py", "torch/_decomp/")

Where = Tuple[str, int, str]


def torch_dir() -> str:
    try:
        import torch

        return os.path.dirname(os.path.abspath(torch.__file__))
    except Exception:  # noqa: BLE001
        return "/nonexistent-torch"


def is_torch_path(path: str, tdir: str) -> bool:
    ab = os.path.abspath(path)
    return ab.startswith(tdir + os.sep) or "/site-packages/torch/" in ab or "/dist-packages/torch/" in ab


def parse_reasons(payload: str) -> List[str]:
    """``recompile_reasons`` payload: one string, or a JSON list (most recent entry first)."""
    try:
        reasons = json.loads(payload) if payload.lstrip().startswith("[") else [payload]
    except ValueError:
        reasons = [payload]
    return [str(r) for r in reasons]


def mode_note(name: str, what: str, index: Optional[str], expected: Optional[str],
              actual: Optional[str], mode: str) -> str:
    """What torch did when an input compiled static changed, in the replay's dynamic mode."""
    where = f"`{name}`" + (f" dim {index}" if index is not None else "")
    change = f" ({expected} -> {actual})" if expected and actual else ""
    if what != "size":
        return f"{where}: {what} changed{change}; torch compiles a graph per {what}"
    if mode == "false":
        return f"{where} changed{change}; dynamic=False compiles one graph per size"
    if mode == "true":
        if expected in ("0", "1"):
            return (f"{where} was {expected} when compiled: dynamic=True still specializes sizes 0 "
                    f"and 1, so the next size recompiles with the dim symbolic")
        return (f"{where} was compiled static ({expected}) under dynamic=True (the code "
                f"specialized it); a new size{change} recompiles")
    if mode == "mark":
        if expected in ("0", "1") and index == "0":
            return (f"{where} was {expected} when compiled (mark_dynamic ignores a size-1 dim): "
                    f"the first marked call{change} recompiles")
        return (f"{where} is not marked dynamic (mode mark marks dim 0 of each input); automatic "
                f"dynamic makes it dynamic on this recompile{change}")
    return (f"{where} changed{change}: automatic dynamic makes the dim dynamic and recompiles "
            f"once (no user line is at fault)")


def mark_benign(events: Iterable[Event], varying: Set[str]) -> None:
    """A specialization is benign when none of its sources is an input size or value that
    varied across the replayed shapes: a constant feature dim (nn.Linear's 32 under
    dynamic=True, ``assert x.shape[1] == 12``) or a float attribute (``eps``) pinned to the
    value it always has."""
    for ev in events:
        if ev.kind == SPECIALIZATION:
            ev.benign = not any(src in varying for src in ev.sources)


def varying_sources(inputs: Iterable[Dict[str, Any]]) -> Set[str]:
    """Sources (``L['x'].size()[0]``, ``L['n']``) whose value differed between shapes."""
    seen: Dict[str, set] = {}
    for shape_inputs in inputs:
        for src, value in (shape_inputs or {}).items():
            seen.setdefault(src, set()).add(json.dumps(value, sort_keys=True, default=str))
    return {src for src, vals in seen.items() if len(vals) > 1}


def _unknown_value(source: str) -> Any:
    raise KeyError(source)


def _no_writes(path: str) -> List[Tuple[str, int]]:
    return []


class Recorder:
    """Consumes trace events during a replay and keeps blamed :class:`Event` objects.

    ``strings`` resolves interned file indices (a trace Collector); ``values(source)`` returns
    the value of a guard source (``L['x'].size()[0]``) for the current inputs, raising when it
    cannot; ``attribute_writes(path)`` returns the (file, line) of the writes of a module
    attribute (``self.cache``) that the replay ran."""

    def __init__(self, strings: Any, values: Optional[Callable[[str], Any]] = None, mode: str = "auto",
                 attribute_writes: Optional[Callable[[str], List[Tuple[str, int]]]] = None,
                 tdir: Optional[str] = None, library: Optional[Callable[[str], bool]] = None) -> None:
        self.c = strings
        self.values: Callable[[str], Any] = values or _unknown_value
        self.attribute_writes: Callable[[str], List[Tuple[str, int]]] = attribute_writes or _no_writes
        self.mode = mode
        self.names = Names()
        self.torch_dir = tdir or torch_dir()
        self.is_library: Callable[[str], bool] = library or is_library
        self.shape: Dict[str, Any] = {}
        self.compiles = 0
        self.frames: Dict[int, Dict[str, Any]] = {}
        #: per compile (frame id, compile id, as the trace gives them)
        self.guards: Dict[Tuple[Any, Any], List[Dict[str, Any]]] = {}
        self.symbols: Dict[Tuple[Any, Any], Dict[str, str]] = {}
        #: per compile, its guards on Python ints (``L['n'] == 8``) with the user line of each
        self.value_guards: Dict[Tuple[Any, Any], List[Dict[str, Any]]] = {}
        #: per frame, the value guards of its cache entries that failed along with the one
        #: torch's reason names (the worker re-checks them: ``shapelint_failed_guards``)
        self._also_failed: Dict[Any, List[Tuple[Tuple[int, int], str]]] = {}
        self.events: List[Event] = []
        self._emitted = 0
        self._gb_seen: set = set()
        self._spec_seen: set = set()
        self._pending: List[Dict[str, Any]] = []  # failed compiles of the current shape
        self._unhandled: Dict[Tuple[int, int], Event] = {}  # graph breaks Dynamo could not resume
        self._fallback_seen: set = set()
        # the shape of the call, from the inputs a compile describes (when no shape is set)
        self._described: Dict[Any, Any] = {}
        self._unlabelled: Dict[Tuple[Any, Any], List[Event]] = {}
        self._labels: Dict[Tuple[Any, Any], List[str]] = {}

    # -- paths ------------------------------------------------------------------------------------
    def is_user(self, path: Optional[str]) -> bool:
        if not path or path.startswith("<"):
            return False
        return not is_torch_path(path, self.torch_dir)

    def pick(self, frames: List[Where]) -> Tuple[Optional[Where], Optional[Where]]:
        """The place to blame among a stack's frames outside torch (outermost first), and the
        library frame under it: the innermost frame outside library code (scope.is_library),
        the user's call into the library where torch added the guard or broke the graph
        deeper, in the library's code (what the user can change: their call, its arguments,
        the sizes they pass); the innermost frame where every frame is a library's (a library
        model's own code, compiled on its own)."""
        if not frames:
            return None, None
        own = [f for f in frames if not self.is_library(f[0])]
        if not own:
            return frames[-1], None
        at = own[-1]
        inner = frames[-1] if frames[-1] is not at and self.is_library(frames[-1][0]) else None
        return at, inner

    @staticmethod
    def inside(inner: Optional[Where], what: str = "torch added the guard") -> str:
        """The note of a place that stands for a library frame under it."""
        if not inner:
            return ""
        return (f"{what} inside library code ({library_path(inner[0])}:{inner[1]} in {inner[2]}), "
                f"under this call")

    def stack_frames(self, stack: Any) -> List[Where]:
        """The frames outside torch of a structured ``user_stack``, outermost first."""
        out: List[Where] = []
        for fr in stack if isinstance(stack, list) else ():
            if not isinstance(fr, dict):
                continue
            path = self.c.filename(fr.get("filename"))
            if self.is_user(path):
                out.append((os.path.abspath(path), int(fr.get("line") or 0), str(fr.get("name", ""))))
        return out

    def user_frame(self, stack: Any) -> Optional[Where]:
        """The blamed frame of a structured ``user_stack`` (:meth:`pick`)."""
        return self.pick(self.stack_frames(stack))[0]

    def suppressed(self, md: Dict[str, Any]) -> bool:
        """A guard torch logged but did not install (``eval [guard suppressed]``: fake-tensor
        code evaluating under ``suppress_guards``). ``guard_added_fast`` carries no prefix,
        so read the line of torch's ShapeEnv that logged it from its framework stack."""
        import linecache

        for fr in md.get("stack") or []:
            if not isinstance(fr, dict):
                continue
            path = self.c.filename(fr.get("filename")) or ""
            if path.endswith("symbolic_shapes.py") and \
                    "guard suppressed" in linecache.getline(path, int(fr.get("line") or 0)):
                return True
        return False

    def framework_guard(self, md: Dict[str, Any]) -> bool:
        """A guard torch added in its own module or kernel code, the user line only calling
        into it: the innermost frame of the user stack is under torch/nn/modules (``self.conv(x)``
        inlined), or the guard was added by a convolution/normalization kernel's shape logic."""
        stack = md.get("user_stack")
        if isinstance(stack, list) and stack and isinstance(stack[-1], dict):
            last = self.c.filename(stack[-1].get("filename"))
            if last and any(part in os.path.abspath(last) for part in FRAMEWORK_FILES):
                return True
            if last and os.path.abspath(last).endswith("/torch/nn/functional.py") and \
                    FRAMEWORK_KERNELS.search(str(stack[-1].get("name", ""))):
                return True  # F.conv2d / F.batch_norm's own shape logic
        for fr in md.get("stack") or []:
            if not isinstance(fr, dict):
                continue
            path = self.c.filename(fr.get("filename")) or ""
            if any(k in path for k in KERNEL_FILES) and FRAMEWORK_KERNELS.search(str(fr.get("name", ""))):
                return True
        return False

    def text_frames(self, text: str) -> List[Where]:
        """The frames outside torch named in a traceback-like text (absolute paths), outermost
        first."""
        return [(os.path.abspath(m.group("path")), int(m.group("line")), m.group("fn"))
                for m in FILE_LINE.finditer(text) if self.is_user(m.group("path"))]

    def text_frame(self, text: str) -> Optional[Where]:
        """The blamed frame of a traceback-like text (:meth:`pick`)."""
        return self.pick(self.text_frames(text))[0]

    def short_frame(self, text: str) -> Optional[Where]:
        """A frame from reason text, whose paths torch shortened (``mp/a/b.py``): match by
        suffix against the files this process has seen; the first outside library code."""
        known = self.c.known_paths()
        found: List[Where] = []
        for m in SHORT_LOC.finditer(text):
            short = m.group("path")
            for full in known:
                if full.endswith(short) and self.is_user(full):
                    found.append((os.path.abspath(full), int(m.group("line")), m.group("fn")))
                    break
        # a merged range guard prints each part's location: the user's own first (a library's
        # location is not the line they can change)
        own = [f for f in found if not self.is_library(f[0])]
        return (own or found)[0] if found else None

    def frame_of(self, frame_id: Any) -> Dict[str, Any]:
        if isinstance(frame_id, int) and frame_id in self.frames:
            return self.frames[frame_id]
        return {"name": "", "path": None, "line": None, "compiles": 0}

    # -- shapes -----------------------------------------------------------------------------------
    def begin_shape(self, shape: Dict[str, Any]) -> None:
        self.shape = dict(shape)
        self._pending = []

    def end_shape(self, error: Optional[str] = None, where: Optional[Where] = None,
                  eager_frame: Optional[Dict[str, Any]] = None) -> List[Event]:
        """Close the current shape: ``error`` is what the call raised (a failed compile that
        raised is a compile error; one that did not fell back to eager). Returns the new
        events. (``eager_frame``, the entry frame when the call ran it uncompiled, is the
        worker's row flag; the fallback that caused it is its own event.)"""
        for p in self._pending:
            if error is not None:
                self._compile_error(p["message"], p["where"] or where)
            else:
                self._fallback(p)
        self._pending = []
        new = self.events[self._emitted:]
        self._emitted = len(self.events)
        return new

    # -- events -----------------------------------------------------------------------------------
    def on_event(self, ev: Dict[str, Any]) -> None:
        kind = ev["kind"]
        key = (ev.get("frame_id"), ev.get("frame_compile_id"))
        md = ev.get("md") or {}
        if kind in ("describe_tensor", "describe_source"):
            self._describe(kind, md, key)
        elif kind == "compilation_metrics":
            self._metrics(md, ev.get("frame_id"), ev.get("frame_compile_id"))
        elif kind == "guard_added_fast":
            if not self.suppressed(md):
                self.guards.setdefault(key, []).append(md)
        elif kind == "create_symbol":
            self.symbols.setdefault(key, {})[str(md.get("symbol"))] = str(md.get("source"))
        elif kind == "symbolic_shape_specialization":
            self._specialization(md, key)
        elif kind == "dynamo_cpp_guards_str":
            self.value_guards[key] = [
                {"code": m.group("code"), "where": self.short_frame(line)}
                for line in (ev.get("payload") or "").splitlines()
                for m in [VALUE_GUARD.search(line)] if m]
        elif kind == "artifact" and md.get("name") == "shapelint_failed_guards":
            self._failed_guards(ev.get("payload") or "")
        elif kind == "artifact" and md.get("name") == "recompile_reasons":
            self._recompile(ev)
        elif kind == "artifact" and md.get("name") == "dynamo_graph_break_reason":
            self._graph_break(ev.get("payload") or "", key)
        elif kind == "artifact" and md.get("name") == "dynamo_error":
            payload = ev.get("payload") or ""
            lines = [ln.strip() for ln in payload.strip().splitlines() if ln.strip()]
            errors = [ln for ln in lines if ERROR_LINE.match(ln)]
            message = errors[-1] if errors else (lines[-1] if lines else "compile error")
            for p in self._pending:
                if p["key"] == key:
                    p["where"] = p["where"] or self.text_frame(payload)
                    break
            else:
                self._pending.append({"key": key, "message": message, "where": self.text_frame(payload),
                                      "fail_type": None, "reason": message, "frame_id": key[0]})

    def _describe(self, kind: str, md: Dict[str, Any], key: Tuple[Any, Any]) -> None:
        """Sizes of a compile's inputs, by source: the label of events with no shape set."""
        if self.shape:
            return
        if kind == "describe_tensor":
            self._described[("t", md.get("describer_id"), md.get("id"))] = md.get("size")
            return
        src = str(md.get("source") or "")
        size = self._described.get(("t", md.get("describer_id"), md.get("id")))
        if size is None or not src.startswith("L['") or src.startswith("L['self']"):
            return
        label = self._labels.setdefault(key, [])
        name = src[3:-2] if src.endswith("']") else src
        label.append(f"{name}=({', '.join(str(s) for s in size)}{',' if len(size) == 1 else ''})")
        text: Dict[str, Any] = {"label": " ".join(label)}
        for ev in self._unlabelled.pop(key, []):
            ev.shape = text
        # an event of a compile that described no input (a break before the first use of
        # one) takes the inputs of the next compile: the resumed frame of the same call
        for k in [k for k in self._unlabelled if k != key]:
            for ev in self._unlabelled.pop(k):
                if not ev.shape:
                    ev.shape = text

    def _label(self, ev: Event, key: Tuple[Any, Any]) -> Event:
        """An event created with no shape set takes the sizes of its compile's inputs."""
        if not self.shape:
            if self._labels.get(key):
                ev.shape = {"label": " ".join(self._labels[key])}
            else:
                self._unlabelled.setdefault(key, []).append(ev)
        return ev

    def _metrics(self, md: Dict[str, Any], frame_id: Any, compile_id: Any) -> None:
        self.compiles += 1
        name, path, line = md.get("co_name"), md.get("co_filename"), md.get("co_firstlineno")
        if isinstance(frame_id, int):
            fr = self.frames.setdefault(frame_id, {"name": name, "path": path, "line": line, "compiles": 0})
            if name and not fr.get("name"):
                fr.update(name=name, path=path, line=line)
            fr["compiles"] += 1
        if not md.get("fail_type"):
            return
        reason = str(md.get("fail_reason") or md.get("fail_type"))
        key = (frame_id, compile_id)
        pending = next((p for p in self._pending if p["key"] == key), None)
        entry = {"key": key, "frame_id": frame_id, "fail_type": str(md.get("fail_type")),
                 "reason": reason, "where": self.text_frame(reason),
                 "message": str(md.get("fail_type")) + ": " + reason.split("\n")[0]}
        if pending is not None:  # a dynamo_error came first: keep its user line
            entry["where"] = entry["where"] or pending["where"]
            if ERROR_LINE.match(pending["message"]):
                entry["message"] = pending["message"]
            self._pending.remove(pending)
        self._pending.append(entry)

    def _compile_error(self, message: str, where: Optional[Where]) -> None:
        """One record per shape: torch reports a failed compile several ways (the
        dynamo_error artifact, compilation_metrics, the exception); keep the most telling
        message and the first user line any of them names."""
        for rec in self.events:
            if rec.kind == COMPILE_ERROR and rec.shape == self.shape:
                if rec.abspath is None and where:
                    rec.abspath, rec.path, rec.line = where[0], where[0], where[1]
                    rec.note = ""
                if ERROR_LINE.match(message) and not ERROR_LINE.match(rec.reason):
                    rec.reason = message[:500]
                return
        self.events.append(Event(
            kind=COMPILE_ERROR, shape=dict(self.shape), reason=message[:500], detail=Blame.COMPILE_ERROR,
            abspath=where[0] if where else None, path=where[0] if where else None,
            line=where[1] if where else None,
            note="" if where else "the traceback names no line outside torch"))

    def add_call_error(self, message: str, where: Optional[Where]) -> None:
        """The call raised: a compile error when torch's compile failed (pending), else the
        exception of the model itself (kept on the shape's row only)."""
        if self._pending:
            return  # end_shape turns the pending failures into compile errors
        self._compile_error(message, where)

    def _fallback(self, p: Dict[str, Any]) -> None:
        frame = self.frame_of(p.get("frame_id"))
        fname = self.names.frame(frame.get("name") or "", frame.get("path"), frame.get("line")) \
            or "the frame"
        reason = p["reason"]
        m = LIMIT.search(reason)
        unhandled = self._unhandled.get(p["key"])
        if m:
            detail, n = m.group("kind"), m.group("n")
            text = (f"hit torch._dynamo.config.{detail} ({n}): `{fname}` stops compiling; a call "
                    f"whose inputs fail its cached graphs runs eagerly (uncompiled)")
            where = (frame["path"], frame["line"]) if frame.get("path") else None
            note = "" if where else "torch names no frame for the limit"
            detail = Blame.RECOMPILE_LIMIT if detail == "recompile_limit" \
                else Blame.ACCUMULATED_RECOMPILE_LIMIT
        elif unhandled is not None:
            detail = Blame.UNHANDLED_GRAPH_BREAK
            text = (f"graph break Dynamo cannot resume from ({unhandled.reason}): `{fname}` is "
                    f"skipped and runs eagerly")
            where = (unhandled.abspath, unhandled.line) if unhandled.abspath else None
            note = unhandled.note
        else:
            detail = Blame.COMPILE_FAILED
            text = (f"compile of `{fname}` failed and torch ran it eagerly (suppress_errors or "
                    f"a skipped frame): {p['message'][:300]}")
            w = p.get("where")
            where = (w[0], w[1]) if w else ((frame["path"], frame["line"]) if frame.get("path") else None)
            note = "" if where else "torch names no user line for the failure"
        key = (detail, where, fname)
        if key in self._fallback_seen:
            return
        self._fallback_seen.add(key)
        self.events.append(Event(
            kind=FALLBACK, shape=dict(self.shape), reason=text, detail=detail, frame=fname,
            compile_id=f"{p['key'][0]}/{p['key'][1]}", abspath=where[0] if where else None,
            path=where[0] if where else None, line=where[1] if where else None, note=note))
        self._label(self.events[-1], p["key"])

    def fell_back(self, frame: Optional[Dict[str, Any]]) -> bool:
        """Whether torch already gave up compiling this frame (a fallback of its code)."""
        ids = {str(fid) for fid, fr in self.frames.items() if fr is frame}
        return bool(ids) and any(e.kind == FALLBACK and e.compile_id.split("/")[0] in ids
                                 for e in self.events)

    def _specialization(self, md: Dict[str, Any], key: Tuple[Any, Any]) -> None:
        where, inner = self.pick(self.stack_frames(md.get("user_stack")))
        sources = [str(x) for x in md.get("sources") or []]
        seen = (where[:2] if where else None, str(sources), md.get("value"))
        if seen in self._spec_seen:
            return
        self._spec_seen.add(seen)
        self.events.append(Event(
            kind=SPECIALIZATION, shape=dict(self.shape), symbol=md.get("symbol"),
            value=None if md.get("value") is None else str(md.get("value")),
            reason=f"{', '.join(sources)} specialized to {md.get('value')} ({md.get('reason')})",
            detail=Blame.SPECIALIZATION, sources=sources,
            abspath=where[0] if where else None, path=where[0] if where else None,
            line=where[1] if where else None, framework=self.framework_guard(md),
            note=self.inside(inner, "torch specialized it") if where else
            "torch recorded no user stack for this specialization"))
        self._label(self.events[-1], key)

    def _graph_break(self, payload: str, key: Tuple[Any, Any]) -> None:
        m = GB_AT.search(payload)
        gb = GB_ID.search(payload)
        lines = payload.splitlines()
        reason = ""
        for i, ln in enumerate(lines):
            if ln.startswith("Graph Break Reason:"):
                reason = ln.split(":", 1)[1].strip()
                if UNHANDLED_BREAK in reason or reason.startswith("Encountered graph break"):
                    # the real reason is the next line ("Unsupported Tensor.item() call ...")
                    rest = [x.strip() for x in lines[i + 1:] if x.strip()]
                    reason = rest[0] if rest else reason
                break
        if not reason:
            reason = lines[1].strip() if len(lines) > 1 else payload.strip()
        path = os.path.abspath(m.group("path")) if m else None
        line = int(m.group("line")) if m else None
        note = ""
        if path and (not self.is_user(path) or self.is_library(path)):
            # inside torch or a library: the user's call into it (the user stack before the
            # exception's own traceback), the library's line kept in the note
            frames = self.text_frames(payload.split("\nTraceback (most recent call last):")[0])
            where, inner = self.pick(frames)
            if where:
                path, line = where[0], where[1]
                note = self.inside(inner, "the graph broke")
            elif not self.is_user(path):
                note = "the break is inside torch and its traceback names no user frame"
        rid = f"GB{gb.group(1)}" if gb else None
        unhandled = UNHANDLED_BREAK in payload
        seen = (rid, path, line)
        ev = next((e for e in self.events if e.kind == GRAPH_BREAK
                   and (e.registry_id, e.abspath, e.line) == seen), None)
        if ev is None:
            ev = Event(kind=GRAPH_BREAK, shape=dict(self.shape), reason=reason[:300],
                       detail=Blame.UNHANDLED if unhandled else Blame.GRAPH_BREAK, registry_id=rid,
                       abspath=path, path=path, line=line,
                       note=note or ("Dynamo cannot resume after this break: the frame runs "
                                     "eagerly" if unhandled else ""))
            self.events.append(ev)
            self._label(ev, key)
        if unhandled:
            self._unhandled[key] = ev

    # -- recompiles -------------------------------------------------------------------------------
    def value_guard_codes(self, entry: Tuple[int, int]) -> List[str]:
        """The value guards of one compile, for the worker to re-check on a recompile."""
        return [str(g.get("code")) for g in self.value_guards.get(entry, ())]

    def _failed_guards(self, payload: str) -> None:
        try:
            failed = json.loads(payload)
        except ValueError:
            return
        for item in failed if isinstance(failed, list) else ():
            entry = tuple(item.get("entry") or ())
            if len(entry) == 2:
                self._also_failed.setdefault(entry[0], []).append((entry, str(item.get("code"))))

    def _also(self, frame_id: Any) -> List[Guard]:
        """The value guards that failed beside the one torch's reason names: torch stops at a
        cache entry's first failing guard, whose order its guard tree changes as guards fail
        (checking first what failed before), so which int it names is an accident."""
        out = []
        for entry, code in self._also_failed.pop(frame_id, []):
            for g in self.value_guards.get(entry, ()):
                if g.get("code") != code:
                    continue
                where = g.get("where")
                if where:
                    out.append(Guard(entry=f"{entry[0]}/{entry[1]}", text=code[:300],
                                     detail=Blame.VALUE_GUARD, guard=code, abspath=where[0],
                                     line=where[1], also=True,
                                     note="failed too; torch's reason names only a cache "
                                          "entry's first failing guard"))
                break
        return out

    def _recompile(self, ev: Dict[str, Any]) -> None:
        code = self.frame_of(ev.get("frame_id"))
        co_name, co_file = code.get("name") or "", code.get("path")
        guards: List[Guard] = []
        for text in parse_reasons(ev.get("payload") or ""):
            for g in self._blame(text):
                if not any(_same_guard(g, h) for h in guards):
                    guards.append(g)
        notes = []
        for g in guards:  # torch's names (___stack0, L['x']) in the user's words
            g.text, note = self.names.guard(g.text, co_name, co_file)
            if g.guard:
                g.guard, _ = self.names.guard(g.guard, co_name, co_file)
            if note and note not in notes:
                notes.append(note)
        # only beside a guard on a user line of the same cache entry: when torch names an input
        # whose dim changed (automatic dynamic, torch's own recompile), the ints that changed
        # with it become dynamic in that same recompile and cost nothing more (tests/cases/real
        # r23: line 63; examples/decoder.py's start_pos, which moves with the length)
        on_a_line = {g.entry for g in guards
                     if g.abspath and g.detail in (Blame.VALUE_GUARD, Blame.SHAPE_GUARD)}
        for g in self._also(ev.get("frame_id")):
            if g.entry in on_a_line and not any((g.abspath, g.line) == (h.abspath, h.line)
                                                for h in guards):
                guards.append(g)
        if not guards:
            guards = [Guard(detail=Blame.UNKNOWN, text="torch gave no reason",
                            note="torch gave no reason")]
        # the newest cache entry's failure is the cause (the older entries failed before:
        # that is why the newer one exists), torch's own reason first among its guards
        cause = Event(kind=RECOMPILE, guards=guards).cause
        named = [g for g in cause if not g.also] or cause
        primary = next((g for g in named if g.abspath and not g.framework), None) or \
            next((g for g in named if g.abspath), None) or named[0]
        framework = all(g.framework for g in cause if g.abspath) and \
            any(g.abspath for g in cause)
        # torch's own step: the reason says what torch did (the 0/1 specialization keeps
        # torch's text, which names the size)
        steps = primary.detail in TORCH_STEPS and primary.detail != Blame.SIZE_ONE
        self._specialized_by_code(primary)
        also: List[Place] = []
        for g in guards:  # the calls that lead to a value guard's line (its user stack)
            for c in g.callers:
                if c not in also:
                    also.append(c)
            g.callers = []
        self.events.append(Event(
            kind=RECOMPILE, shape=dict(self.shape),
            reason=(primary.note if steps else primary.text) or "",
            detail=primary.detail,
            frame=self.names.frame(co_name, co_file, code.get("line"), primary.abspath, primary.line),
            compile_id=f"{ev.get('frame_id')}/{ev.get('frame_compile_id')}", guards=guards, also=also,
            abspath=primary.abspath, path=primary.abspath, line=primary.line,
            note=("an input compiled static changed (torch's own recompile, not a line's)"
                  if steps else primary.note)
            if not primary.abspath else "; ".join(notes),
            framework=framework))
        self._label(self.events[-1], (ev.get("frame_id"), ev.get("frame_compile_id")))

    def _specialized_by_code(self, g: Guard) -> None:
        """An input dim whose size changed after the code specialized it (``if x.shape[0] >
        2:`` at a batch of 2 refines the range to one value): the line that specialized it is
        the cause, not torch's automatic dynamic."""
        if g.detail != Blame.INPUT_DYNAMIC or g.abspath or g.input is None or g.dim is None:
            return
        name = g.input[3:-2] if g.input.startswith("L['") else g.input
        sources = {f"L['{name}'].size()[{g.dim}]", f"{name}.size()[{g.dim}]"}
        spec = next((e for e in reversed(self.events) if e.kind == SPECIALIZATION and e.abspath
                     and sources & set(e.sources)), None)
        if spec is None:
            return
        g.abspath, g.line = spec.abspath, spec.line
        g.note = (f"`{name}` dim {g.dim} changed after the code specialized it to {spec.value} at "
                  f"line {spec.line}: every new size recompiles there")

    def _blame(self, text: str) -> List[Guard]:
        """The failed guards of one cache entry's reason line."""
        head = REASON_HEAD.match(text.strip())
        entry = (int(head.group("frame")), int(head.group("compile"))) if head else None
        body = head.group("text") if head else text
        summary = body.split("\n")[0].split("  #")[0].strip()
        base: Dict[str, Any] = {"entry": f"{entry[0]}/{entry[1]}" if entry else None, "text": summary[:300]}

        def guard(**kw: Any) -> Guard:
            return Guard(**base, **kw)

        mm = INPUT_MISMATCH.search(body)
        if mm and any(k in body for k in INPUT_REASONS):
            name = mm.group("name")
            attr = name.startswith("self.") or name.startswith("L['self']") or "._modules[" in name
            what = mm.group("what").strip()
            if attr:
                writes = self.attribute_writes(name)
                note = (f"module attribute `{name}` {what} changed: torch guards a tensor "
                        f"attribute's {what} like an input's")
                if writes:
                    return [guard(detail=Blame.ATTRIBUTE_WRITE, guard=summary, attribute=name,
                                  abspath=w[0], line=w[1], note=note) for w in writes]
                return [guard(detail=Blame.ATTRIBUTE, guard=summary, attribute=name,
                              note=note + "; no write of it ran in the replay")]
            index = mm.group("index")
            if entry and index is not None and what == "size":
                pinned = self._pinned(entry, name, int(index), mm.group("expected"), mm.group("actual"))
                if pinned:
                    for g in pinned:
                        g.entry, g.text = base["entry"], base["text"]
                    return pinned
            return [guard(detail=Blame.INPUT_DYNAMIC, input=name,
                          dim=int(index) if index is not None else None,
                          note=mode_note(name, what, index, mm.group("expected"),
                                         mm.group("actual"), self.mode))]
        if "_has_dynamo_dim_marking" in body:
            return [guard(detail=Blame.DIM_MARKING,
                          note="an input marked dynamic (mark_dynamic) after graphs compiled "
                               "without the mark")]
        if "BACKEND_MATCH" in body:
            return [guard(detail=Blame.HARNESS,
                          note="the same code compiled for another backend")]
        if "duck sizing" in body:
            return [guard(detail=Blame.DUCK_SIZING,
                          note="two inputs had the same size and shared one symbol (duck "
                               "sizing); they differ now")]
        if "User stack trace:" in body:
            stack = body.split("User stack trace:", 1)[1]
            frames = self.text_frames(stack)
            at, inner = self.pick(frames)
            where = (at[0], at[1]) if at else None
            # the calls that lead to it: the user's own (a library's frames are not theirs)
            outer = frames[:frames.index(at)] if at else []
            callers = [Place(abspath=p, line=ln, why="a call in the value guard's stack")
                       for p, ln in dict.fromkeys((f[0], f[1]) for f in outer
                                                  if not self.is_library(f[0])) if (p, ln) != where]
            # a guard on module state (`self.seq_len_cached == 5`): the read is guarded, and
            # the write an earlier call ran is what changed it
            for attr in dict.fromkeys(STATE_ATTR.findall(summary)):
                callers += [Place(abspath=p, line=ln, why=f"`self.{attr}` written here by an "
                                                          f"earlier call")
                            for p, ln in self.attribute_writes(f"self.{attr}")
                            if (p, ln) != where and (inner is None or not self.is_library(p))]
            return [guard(detail=Blame.VALUE_GUARD, guard=summary,
                          abspath=where[0] if where else None, line=where[1] if where else None,
                          callers=callers,
                          note=self.inside(inner) if where else
                          "the value guard's stack names no user frame")]
        out = self._reevaluate(entry) if entry else None
        if out:
            for g in out:
                g.entry, g.text = base["entry"], base["text"]
            return out
        # no logged guard is false: torch's implicit range guard (`2 <= s`), the 0/1
        # specialization, but only where a size it names is 0 or 1 now (a merged upper bound
        # torch did not log fails the same text at any size)
        size_one = self._size_one(body) if re.search(r"\b2 <= ", body) else False
        if out == [] and size_one is not False:
            return [guard(detail=Blame.SIZE_ONE,
                          note="a size-1 input after a dynamic compile (0/1 specialization): "
                               "torch never makes sizes 0 and 1 symbolic")]
        short = self.short_frame(body)
        if short and size_one is not False and "0/1 specialization" in body and "2 <= " in body.split("#")[0] \
                and "<=" not in body.split("#")[0].split("2 <=", 1)[1]:
            return [guard(detail=Blame.SIZE_ONE, abspath=short[0], line=short[1],
                          note="0/1 specialization; the line is the first use of the size")]
        return [guard(detail=Blame.SHAPE_GUARD, guard=summary,
                      abspath=short[0] if short else None, line=short[1] if short else None,
                      note="" if short else "torch's reason names no user line and the "
                                             "guard could not be re-evaluated")]

    def _size_one(self, body: str) -> Optional[bool]:
        """Whether a size a range guard's text names (``2 <= x.size()[0]``, ``2 <= ___stack0 <=
        32``) is 0 or 1 for the frame being recompiled; None when none can be read."""
        known = False
        for m in RANGE_SRC.finditer(body.split("#", 1)[0]):
            src = m.group(1) if m.group(1).startswith("L[") else \
                re.sub(r"^(\w+)", lambda mm: f"L[{mm.group(1)!r}]", m.group(1))
            try:
                value = self.values(src)
            except Exception:  # noqa: BLE001 - a source this frame cannot read
                continue
            known = True
            if value in (0, 1):
                return True
        return False if known else None

    def _pinned(self, entry: Tuple[int, int], name: str, dim: int,
                expected: Optional[str], actual: Optional[str] = None) -> List[Guard]:
        """``tensor 'x' size mismatch at index 0`` where the entry compiled that dim as a symbol
        and the code pinned it (``logits + bias`` with a bias of a fixed length adds ``Eq(s88,
        2)``): torch checks the pinned size as an input's, but the cause is the guard's line,
        as it is when the guard is re-evaluated. Empty when no guard of the entry on that dim
        is false now (automatic dynamic: the dim was compiled static)."""
        base = name if name.startswith("L[") else f"L['{name}']"
        source = f"{base}.size()[{dim}]"
        found = self._reevaluate(entry, lambda expr, srcs, raw: source in srcs) or []
        if not found and expected and actual and expected.isdigit() and actual.isdigit():
            # duck sizing: the dim shared the symbol of another input's equal size (torch names
            # the symbol by that one), pinned by `Eq(s, expected)` and now `actual`
            def pin(expr: Any, srcs: Set[str], raw: Dict[Any, Any]) -> bool:
                values = list(raw.values())
                return type(expr).__name__ == "Equality" and len(values) == 1 and \
                    values[0] == int(actual) and int(expected) in {_int(a) for a in expr.args}

            found = self._reevaluate(entry, pin) or []
        shown = name[3:-2] if name.startswith("L['") else name
        out = [g for g in found if g.abspath]
        for g in out:
            g.input, g.dim = name, dim
            pinned = f" to {expected}" if expected else ""
            said = LOCAL_NAME.sub(r"\1", str(g.guard))
            g.note = "; ".join(x for x in (
                f"`{shown}` dim {dim} was pinned{pinned} by this line when the graph compiled "
                f"(torch's guard `{said}`): each new size recompiles", g.note) if x)
        return out

    def _reevaluate(self, entry: Tuple[int, int],
                    keep: Optional[Callable[[Any, Set[str], Dict[Any, Any]], bool]] = None
                    ) -> Optional[List[Guard]]:
        """Guards of the failed entry that are false for the current inputs (with ``keep``,
        only those it keeps: ``keep(expr, its symbols' sources, their values)``); None if they
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
        except Exception:  # noqa: BLE001
            return None
        failed: List[Guard] = []
        evaluated = 0
        cache: Dict[str, Any] = {}
        for md in guards:
            try:
                expr = sympy.sympify(str(md.get("expr")), locals=loc)
                if any(str(s) not in symbols for s in expr.free_symbols):
                    continue
                raw = {}
                for s in expr.free_symbols:
                    src = symbols[str(s)]
                    if src not in cache:
                        cache[src] = self.values(src)
                    raw[s] = cache[src]
                if keep is not None and not keep(expr, {symbols[str(s)] for s in expr.free_symbols}, raw):
                    continue
                if any(isinstance(v, float) for v in raw.values()):
                    continue  # a float symbol (zf...): its guard prints a rounded constant
                vals = {s: sympy.Integer(int(v)) for s, v in raw.items()}
                evaluated += 1
                if bool(expr.xreplace(vals)):
                    continue
            except Exception:  # noqa: BLE001 - an unevaluable guard is skipped
                continue
            where, inner = self.pick(self.stack_frames(md.get("user_stack")))
            shown = SYMBOL.sub(lambda m: symbols.get(m.group(0), m.group(0)), str(md.get("expr")))
            if not md.get("user_stack"):
                failed.append(Guard(detail=Blame.BACKEND, guard=shown,
                                    note="guard added by the backend (AOTAutograd/Inductor): "
                                         "torch records no user stack for it"))
            else:
                failed.append(Guard(detail=Blame.SHAPE_GUARD, guard=shown,
                                    abspath=where[0] if where else None,
                                    line=where[1] if where else None,
                                    framework=self.framework_guard(md),
                                    note=self.inside(inner) if where else
                                    "the guard's stack is all inside torch"))
        if evaluated == 0:
            return None
        seen, out = set(), []
        for f in failed:
            k = (f.abspath, f.line, f.detail)
            if k not in seen:
                seen.add(k)
                out.append(f)
        return out

    # -- summary ----------------------------------------------------------------------------------
    def frame_list(self) -> List[Dict[str, Any]]:
        return [dict(f) for f in self.frames.values()]


def _int(x: Any) -> Optional[int]:
    try:
        return int(x) if getattr(x, "is_Integer", False) else None
    except (TypeError, ValueError):
        return None


def _same_guard(a: Guard, b: Guard) -> bool:
    return (a.detail, a.abspath, a.line, a.guard or a.text) == \
        (b.detail, b.abspath, b.line, b.guard or b.text)
