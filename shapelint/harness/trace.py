"""Listening to PyTorch's structured trace (``torch.__trace``), or reading a TORCH_TRACE file.

Both give the same event dicts: ``{"kind", "md", "payload", "frame_id", "frame_compile_id"}``,
so the blame logic does not care where events came from. Facts used here are in
``docs/torch-signals.md`` (verified on torch 2.13): interned filenames, payload forms.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, Callable, Dict, Iterable, List, Optional

CONTEXT = {"rank", "compiled_autograd_id", "frame_id", "frame_compile_id", "attempt", "severity",
           "timestamp", "pathname", "thread", "subgraph_name", "has_payload", "stack"}
#: events big enough to matter for memory and of no use to the blame logic
DROP = {"chromium_event", "describe_storage", "describe_source",
        "aot_inference_graph", "aot_forward_graph", "aot_backward_graph", "aot_joint_graph",
        "inductor_output_code", "inductor_post_grad_graph"}
KEEP_ARTIFACTS = {"recompile_reasons", "dynamo_graph_break_reason", "dynamo_error",
                  "shapelint_failed_guards"}
#: a guard on a Python int in torch's printed guard tree, with the user line it names:
#: ``+- EQUALS_MATCH: L['n'] == 1   # return x + n  # mp/ag/m.py:10 in forward``
VALUE_GUARD = re.compile(r"EQUALS_MATCH: (?P<code>(?:L|G)\[.*?\] == -?\d+)\s+#.*#\s*\S+\.py:\d+ in \w+\s*$")

Event = Dict[str, Any]


#: what describes a compile's inputs (their sources and sizes): kept when events must say the
#: shape of the call that triggered them (the pytest fixture, which sees no inputs)
INPUTS = {"describe_source", "describe_tensor"}


def make_event(md: Dict[str, Any], payload: Optional[str], keep_inputs: bool = False) -> Optional[Event]:
    kind = next((k for k in md if k not in CONTEXT), "?")
    if kind in DROP and not (keep_inputs and kind in INPUTS):
        return None
    body = md.get(kind)
    if kind == "artifact" and isinstance(body, dict) and body.get("name") not in KEEP_ARTIFACTS:
        return None
    if kind == "dynamo_output_graph":
        payload = None  # the FX code is large; sizes in md are enough
    if kind == "dynamo_cpp_guards_str":
        payload = value_guards(payload)
    return {"kind": kind, "md": body, "payload": payload,
            "frame_id": md.get("frame_id"), "frame_compile_id": md.get("frame_compile_id"),
            "attempt": md.get("attempt", 0)}


def value_guards(payload: Optional[str]) -> str:
    """A compile's printed guard tree (``dynamo_cpp_guards_str``: every guard, often hundreds
    of lines) cut down to its guards on Python ints, each with the user line it names:
    torch's recompile reason names only the first failing guard, and these are the ones the
    worker re-checks (see the worker's ``report_all_failed_guards``)."""
    return "\n".join(line.strip() for line in (payload or "").splitlines()
                     if "EQUALS_MATCH" in line and VALUE_GUARD.search(line))


class Collector(logging.Handler):
    """A handler on ``torch.__trace``: keeps the events the blame logic needs."""

    def __init__(self, on_event: Optional[Callable[[Event], None]] = None,
                 keep_inputs: bool = False, keep_events: bool = False) -> None:
        super().__init__(logging.DEBUG)
        self.events: List[Event] = []
        self.strings: Dict[int, str] = {}
        self.on_event = on_event
        self.keep_inputs = keep_inputs
        self.keep_events = keep_events or on_event is None  # a listener keeps nothing itself

    def emit(self, record: logging.LogRecord) -> None:  # never raise inside torch
        try:
            md = getattr(record, "metadata", None)
            if not isinstance(md, dict):
                return
            if "str" in md:
                path, idx = md["str"]
                self.strings[int(idx)] = path
                return
            ev = make_event(md, getattr(record, "payload", None), self.keep_inputs)
            if ev is None:
                return
            if self.keep_events or self.on_event is None:
                self.events.append(ev)
            if self.on_event is not None:
                self.on_event(ev)
        except Exception:  # noqa: BLE001 - a listener must not break compilation
            pass

    def filename(self, idx: Any) -> Optional[str]:
        if not isinstance(idx, int) or idx < 0:
            return None
        if idx not in self.strings:
            self.refresh()
        return self.strings.get(idx)

    def known_paths(self) -> List[str]:
        self.refresh()
        return list(self.strings.values())

    def refresh(self) -> None:
        """Paths interned before this handler was attached (the table is process-global and
        survives resets, torch-signals §1.2)."""
        try:
            from torch._logging.structured import INTERN_TABLE

            for path, i in INTERN_TABLE.items():
                self.strings.setdefault(i, path)
        except Exception:  # noqa: BLE001
            pass


def attach(collector: Collector) -> str:
    """Subscribe to the structured trace; returns the source name used."""
    logger = logging.getLogger("torch.__trace")
    try:
        import torch._logging._internal as internal

        logger = getattr(internal, "trace_log", logger)
    except Exception:  # noqa: BLE001
        pass
    logger.addHandler(collector)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    return "structured trace handler (torch.__trace)"


GLOG = re.compile(r"^[VIWE]\d{4} [\d:.]+ +\d+ [^\]]*\] (\{.*\})\s*$")


def parse_trace_file(lines: Iterable[str]) -> Collector:
    """Read a ``TORCH_TRACE`` log (one glog line + JSON envelope per event, payload lines
    indented by a tab) into a Collector, for torch versions without the handler API."""
    collector = Collector()
    pending: Optional[Dict[str, Any]] = None
    payload: List[str] = []

    def flush() -> None:
        nonlocal pending, payload
        if pending is not None:
            md = pending
            if "str" in md:
                path, idx = md["str"]
                collector.strings[int(idx)] = path
            else:
                ev = make_event(md, "\n".join(payload) if payload else None)
                if ev is not None:
                    collector.events.append(ev)
        pending, payload = None, []

    for line in lines:
        line = line.rstrip("\n")
        if line.startswith("\t"):
            payload.append(line[1:])
            continue
        m = GLOG.match(line)
        if not m:
            continue
        flush()
        try:
            pending = json.loads(m.group(1))
        except ValueError:
            pending = None
    flush()
    return collector
