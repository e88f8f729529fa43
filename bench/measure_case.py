"""Measure what torch.compile really does on labelled cases and write their measured.json.

    python bench/measure_case.py CASE_DIR [CASE_DIR ...] [--modes none,true] [--no-write] [--quiet]

For each case and each mode (dynamic=None as "none", dynamic=True as "true") a fresh Python
process runs ``torch.compile(build(), backend="eager", dynamic=MODE)`` on ``inputs(b)`` for b in
[1, 2, 3, 4, 8, 17] (grad mode on, ``torch.manual_seed(0)``), listening to PyTorch's structured
trace (a handler on ``torch.__trace``, see docs/torch-signals.md). The parent then joins
the events with the case's labels (case.toml) and writes ``CASE_DIR/measured.json`` in the schema
of shared/cases/*/measured.json:

  modes.<mode>: compiles, recompiles, graph_breaks, frames, recompile_reasons (text + blamed
  case-file lines), guards (guard_added_fast with their case-file lines and their effect over the
  replayed inputs), specializations, errors, failed_compiles, lines (per signal),
  implicated_lines, static_dim_lines, constant_guard_lines, non_guard_lines.

A guard's ``effect`` is found by evaluating it on the inputs of every replayed call after the
first (the first call is always compiled static): ``splits`` (true for some, false for others),
``constant`` (same value for all), ``unresolved`` (a symbol whose source cannot be evaluated, e.g.
a resume function's ``___stack0``). ``implicated_lines`` is the union of the case-file lines of:
non-suppressed guards that split and are not only on constant dims, specializations of a varying
source, recompile reasons (value guards' user stacks, the location torch prints, and the guards of
the failed cache entry that are false for the new inputs), graph breaks, failed compiles, errors
raised by a call, and unbacked symbols. ``static_dim_lines`` are pins of dims that never varied.

Optional experiments (hazards a batch sweep cannot expose): a case's model.py may define
``EXPERIMENTS = {"name": "what it does"}`` and, per name, ``experiment_<name>_inputs(batch)`` and/or
``experiment_<name>_prepare(model, batch)`` (called before each call, e.g. to change a module
attribute between calls). Each experiment is measured the same way in its own processes and
stored under ``experiments.<name>`` in measured.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
import time
import traceback

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BATCHES = [1, 2, 3, 4, 8, 17]
MODES = {"none": None, "true": True}
CONTEXT = {"rank", "compiled_autograd_id", "frame_id", "frame_compile_id", "attempt", "severity",
           "timestamp", "pathname", "thread", "subgraph_name", "has_payload", "stack"}
KEEP = {"compilation_metrics", "dynamo_start", "guard_added_fast", "create_symbol",
        "create_unbacked_symbol", "symbolic_shape_specialization", "artifact"}
KEEP_ARTIFACTS = {"recompile_reasons", "dynamo_graph_break_reason", "dynamo_error"}
INPUT_REASONS = ("size mismatch", "stride mismatch", "rank mismatch", "dtype mismatch",
                 "device mismatch", "requires_grad mismatch", "dispatch key set mismatch",
                 "_has_dynamo_dim_marking", "BACKEND_MATCH", "duck sizing")
FILE_LINE = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)')
SHORT_LOC = re.compile(r"#\s*(?P<path>[^\s#()]+\.py):(?P<line>\d+) in (?P<fn>\w+)")
GB_AT = re.compile(r"Graph break(?: \([^)]*\))? in user code at (?P<path>.+?):(?P<line>\d+)\s*$", re.M)
REASON_HEAD = re.compile(r"^(?P<frame>\d+)/(?P<compile>\d+): ", re.S)
FIRST_USE = "user code shown is first use of this value"


# --------------------------------------------------------------------------------------------
# worker: runs inside the fresh process
# --------------------------------------------------------------------------------------------
def _walk_sources(name, value, out, depth=0):
    import torch

    if isinstance(value, torch.Tensor):
        for d, s in enumerate(value.shape):
            out[f"{name}.size()[{d}]"] = int(s)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        out[name] = value
    elif depth < 2 and isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _walk_sources(f"{name}[{i}]", v, out, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str):
                _walk_sources(f"{name}[{k!r}]", v, out, depth + 1)


def _normalize(value):
    import torch

    if isinstance(value, torch.Tensor):
        return (value,), {}
    if isinstance(value, dict):
        return (), dict(value)
    if isinstance(value, (tuple, list)):
        if len(value) == 2 and isinstance(value[0], (tuple, list)) and isinstance(value[1], dict):
            return tuple(value[0]), dict(value[1])
        return tuple(value), {}
    return (value,), {}


def _case_frames(stack, strings, case_dir):
    """Case-file frames of a structured user_stack, outermost first."""
    out = []
    for fr in stack or []:
        if not isinstance(fr, dict):
            continue
        idx = fr.get("filename")
        path = strings.get(idx) if isinstance(idx, int) else None
        if path and os.path.abspath(path).startswith(case_dir + os.sep):
            out.append({"file": os.path.relpath(os.path.abspath(path), case_dir),
                        "line": int(fr.get("line") or 0), "func": str(fr.get("name", "")),
                        "loc": str(fr.get("loc") or "").strip()})
    return out



#: the compilation_metrics fields kept
METRIC_KEYS = ("compile_id", "co_name", "co_filename", "co_firstlineno", "fail_type", "fail_reason",
               "fail_user_frame_filename", "fail_user_frame_lineno", "guard_count")


def listen(events, strings, state, metric_keys=METRIC_KEYS, keep=None, quiet_shape_log=True):
    """Collect torch's structured trace into ``events`` (and its interned file names into
    ``strings``), each event stamped with ``state["call"]``; a ``recompile_reasons`` artifact
    also gets ``state["locals"]`` when the caller keeps them there. The shape env's INFO line
    gives each ``guard_added_fast`` its prefix (``eval``, ``eval [guard suppressed]``,
    ``runtime_assert``). Shared by this script and tests/user_models/measure.py."""
    import logging

    import torch._logging._internal as internal

    keep = KEEP if keep is None else keep

    class Collector(logging.Handler):
        def emit(self, record):
            try:
                md = getattr(record, "metadata", None)
                if not isinstance(md, dict):
                    return
                if "str" in md:
                    path, idx = md["str"]
                    strings[int(idx)] = path
                    return
                kind = next((k for k in md if k not in CONTEXT), "?")
                if kind not in keep:
                    return
                body = md.get(kind)
                if kind == "artifact" and (body or {}).get("name") not in KEEP_ARTIFACTS:
                    return
                payload = getattr(record, "payload", None) if kind == "artifact" else None
                if kind == "compilation_metrics":
                    body = {k: body.get(k) for k in metric_keys}
                ev = {"kind": kind, "md": dict(body) if isinstance(body, dict) else body,
                      "payload": payload, "frame_id": md.get("frame_id"),
                      "frame_compile_id": md.get("frame_compile_id"), "call": state["call"]}
                if kind == "artifact" and body.get("name") == "recompile_reasons" \
                        and "locals" in state:
                    ev["locals"] = state["locals"]
                events.append(ev)
            except Exception:  # noqa: BLE001 - never break compilation
                pass

    class GuardPrefix(logging.Handler):
        def emit(self, record):
            try:
                args = record.args if isinstance(record.args, tuple) else ()
                if "[guard added]" not in str(record.msg) or len(args) < 2:
                    return
                prefix, expr = str(args[0]), str(args[1])
                for ev in reversed(events[-50:]):
                    if ev["kind"] == "guard_added_fast" and "prefix" not in ev["md"] \
                            and str(ev["md"].get("expr")) == expr:
                        ev["md"]["prefix"] = prefix
                        break
            except Exception:  # noqa: BLE001
                pass

    shape_log = logging.getLogger("torch.fx.experimental.symbolic_shapes")
    shape_log.addHandler(GuardPrefix(logging.INFO))
    if quiet_shape_log:
        shape_log.setLevel(logging.INFO)
        shape_log.propagate = False
    elif shape_log.getEffectiveLevel() > logging.INFO:
        shape_log.setLevel(logging.INFO)
    internal.trace_log.addHandler(Collector(logging.DEBUG))
    internal.trace_log.setLevel(logging.DEBUG)


def worker(case_dir, mode, out_path, experiment=None):

    import torch
    import torch._dynamo
    from torch._logging.structured import INTERN_TABLE

    os.environ.pop("TORCH_COMPILE_JOB_ID", None)
    case_dir = os.path.abspath(case_dir)
    events, strings = [], {}
    state = {"call": -1}

    listen(events, strings, state)
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()

    sys.path.insert(0, case_dir)
    spec = importlib.util.spec_from_file_location("model", os.path.join(case_dir, "model.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["model"] = mod
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    model = mod.build()
    inputs_fn = mod.inputs
    prepare = None
    if experiment:
        inputs_fn = getattr(mod, f"experiment_{experiment}_inputs", inputs_fn)
        prepare = getattr(mod, f"experiment_{experiment}_prepare", None)
    compiled = torch.compile(model, backend="eager", dynamic=MODES[mode])
    fwd = model.forward if isinstance(model, torch.nn.Module) else model
    try:
        sig = inspect.signature(fwd)
    except (TypeError, ValueError):
        sig = None

    calls, errors, t0 = [], [], time.perf_counter()
    for i, b in enumerate(BATCHES):
        state["call"] = i
        loc = {}
        try:
            args, kwargs = _normalize(inputs_fn(b))
            if prepare is not None:
                prepare(model, b)
            if sig is not None:
                try:
                    bound = sig.bind(*args, **kwargs)
                    bound.apply_defaults()
                    loc.update(bound.arguments)
                except TypeError:
                    pass
            sources = {}
            for name, value in loc.items():
                _walk_sources(f"L[{name!r}]", value, sources)
            if isinstance(model, torch.nn.Module):
                loc["self"] = model
            loc["__globals__"] = vars(mod)
            calls.append({"batch": b, "sources": sources, "locals": loc})
            compiled(*args, **kwargs)
            calls[-1]["ok"] = True
        except Exception as exc:  # noqa: BLE001 - one bad call must not end the run
            tb = traceback.format_exc()
            where = None
            for m in FILE_LINE.finditer(tb):
                p = os.path.abspath(m.group("path"))
                if p.startswith(case_dir + os.sep):
                    where = {"file": os.path.relpath(p, case_dir), "line": int(m.group("line"))}
            errors.append({"batch": b, "error": f"{type(exc).__name__}: {exc}"[:1500], "where": where})
            if calls and calls[-1]["batch"] == b:
                calls[-1]["ok"] = False
    seconds = round(time.perf_counter() - t0, 2)
    for idx, path in ((i, p) for p, i in INTERN_TABLE.items()):
        strings.setdefault(idx, path)
    gb_counter = sum(torch._dynamo.utils.counters.get("graph_break", {}).values())

    result = analyse(case_dir, events, strings, calls, errors)
    result["seconds"] = seconds
    result["graph_break_counter"] = gb_counter
    with open(out_path, "w") as fh:
        json.dump(result, fh, default=str)


# --------------------------------------------------------------------------------------------
# analysis (inside the worker: it needs the replayed inputs to evaluate guards)
# --------------------------------------------------------------------------------------------
def _sympy_env():
    import sympy
    import torch.utils._sympy.functions as tf

    loc = {n: getattr(tf, n) for n in dir(tf)
           if isinstance(getattr(tf, n), type) and issubclass(getattr(tf, n), sympy.Basic)}
    loc.update(Eq=sympy.Eq, Ne=sympy.Ne, And=sympy.And, Or=sympy.Or, Not=sympy.Not,
               Max=sympy.Max, Min=sympy.Min)
    try:
        from torch.utils._sympy.numbers import int_oo

        loc["int_oo"] = int_oo
    except Exception:  # noqa: BLE001
        pass
    return sympy, loc


def _eval_source(source, loc):
    # L: the forward's arguments (and self); G: the model module's globals (function defaults...)
    v = eval(source, {"L": loc, "G": loc.get("__globals__", {})})  # noqa: S307 - torch's own guard sources
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        return v
    return int(v)


def analyse(case_dir, events, strings, calls, errors):
    sympy, symloc = _sympy_env()
    case_name = os.path.basename(case_dir)
    case_files = sorted(os.path.relpath(os.path.join(r, f), case_dir)
                        for r, _, fs in os.walk(case_dir) for f in fs if f.endswith(".py"))

    def short_match(short):
        for rel in case_files:
            if short.endswith(f"{case_name}/{rel}"):
                return rel
        return None

    # input sources: which vary across the replayed calls
    all_sources = {}
    for c in calls:
        for s, v in c["sources"].items():
            all_sources.setdefault(s, []).append(v)
    sym_src, per_compile_syms = {}, {}
    for ev in events:
        if ev["kind"] == "create_symbol":
            md = ev["md"] or {}
            sym_src[str(md.get("symbol"))] = str(md.get("source"))
            per_compile_syms.setdefault((ev["frame_id"], ev["frame_compile_id"]), {})[
                str(md.get("symbol"))] = str(md.get("source"))
    for src in set(sym_src.values()) - set(all_sources):
        vals = []
        for c in calls:
            try:
                vals.append(_eval_source(src, c["locals"]))
            except Exception:  # noqa: BLE001
                vals = None
                break
        if vals:
            all_sources[src] = vals
    varying = sorted(s for s, v in all_sources.items() if len(set(v)) > 1)
    static = sorted(s for s, v in all_sources.items() if len(set(v)) == 1)

    later = [c for c in calls[1:]]

    def evaluate(expr_text, syms):
        """Value of a guard on each later call, or None when it cannot be evaluated."""
        try:
            expr = sympy.sympify(expr_text, locals=symloc)
        except Exception:  # noqa: BLE001
            return None
        out = []
        for c in later:
            vals = {}
            for s in expr.free_symbols:
                src = syms.get(str(s)) or sym_src.get(str(s))
                if src is None:
                    return None
                try:
                    vals[s] = sympy.sympify(_eval_source(src, c["locals"]))
                except Exception:  # noqa: BLE001
                    return None
            try:
                out.append(bool(expr.xreplace(vals)))
            except Exception:  # noqa: BLE001
                return None
        return out

    def is_static_only(expr_text, syms):
        try:
            expr = sympy.sympify(expr_text, locals=symloc)
        except Exception:  # noqa: BLE001
            return False
        srcs = [syms.get(str(s)) or sym_src.get(str(s)) for s in expr.free_symbols]
        return bool(srcs) and all(s in static for s in srcs)

    # frames and compiles
    frames, compiles, failed = {}, 0, []
    frame_of_id = {}
    for ev in events:
        if ev["kind"] != "compilation_metrics":
            continue
        md = ev["md"] or {}
        compiles += 1
        fn = md.get("co_filename")
        key = f"{md.get('co_name')}@{os.path.basename(fn) if fn else None}:{md.get('co_firstlineno')}"
        frames[key] = frames.get(key, 0) + 1
        frame_of_id[ev["frame_id"]] = key
        if md.get("fail_type"):
            where = None
            for g in events:
                if (g["kind"] == "artifact" and g["frame_id"] == ev["frame_id"]
                        and g["frame_compile_id"] == ev["frame_compile_id"]
                        and (g["md"] or {}).get("name") in ("dynamo_graph_break_reason", "dynamo_error")):
                    fl = _payload_frames(g["payload"] or "", case_dir)
                    if fl:
                        where = fl[-1]
            if where is None and md.get("fail_user_frame_filename"):
                p = os.path.abspath(md["fail_user_frame_filename"])
                if p.startswith(case_dir + os.sep):
                    where = {"file": os.path.relpath(p, case_dir), "line": md.get("fail_user_frame_lineno")}
            failed.append({"fail_type": md.get("fail_type"), "fail_reason": str(md.get("fail_reason"))[:1500],
                           "file": where["file"] if where else None, "line": where["line"] if where else None})

    # guards
    guards = []
    for ev in events:
        if ev["kind"] != "guard_added_fast":
            continue
        md = ev["md"] or {}
        syms = per_compile_syms.get((ev["frame_id"], ev["frame_compile_id"]), {})
        expr = str(md.get("expr"))
        vals = evaluate(expr, syms)
        effect = "unresolved" if vals is None else ("splits" if len(set(vals)) > 1 else "constant")
        guards.append({"expr": expr, "prefix": md.get("prefix", "eval"),
                       "lines": _case_frames(md.get("user_stack"), strings, case_dir),
                       "static_dims_only": is_static_only(expr, syms), "effect": effect,
                       "compile_id": f"{ev['frame_id']}/{ev['frame_compile_id']}", "call": ev["call"]})

    specs = []
    for ev in events:
        if ev["kind"] != "symbolic_shape_specialization":
            continue
        md = ev["md"] or {}
        sources = [str(s) for s in md.get("sources") or []]
        specs.append({"static_dims_only": bool(sources) and all(s in static for s in sources),
                      "symbol": md.get("symbol"), "sources": sources, "value": md.get("value"),
                      "reason": md.get("reason"),
                      "lines": _case_frames(md.get("user_stack"), strings, case_dir)})

    # a source that cannot be evaluated with the forward's arguments (an argument of a frame Dynamo
    # compiled separately after a graph break, a resume function's stack value) counts as constant
    # when every specialization of it pinned the same value
    by_source = {}
    for sp in specs:
        for src in sp["sources"]:
            by_source.setdefault(src, set()).add(str(sp["value"]))
    for sp in specs:
        if not sp["static_dims_only"] and sp["sources"] and all(
                src not in all_sources and len(by_source.get(src, ())) == 1 for src in sp["sources"]):
            sp["static_dims_only"] = True
            sp["constant_value_unevaluated"] = True

    unbacked = []
    for ev in events:
        if ev["kind"] == "create_unbacked_symbol":
            md = ev["md"] or {}
            unbacked.append({"symbol": md.get("symbol"), "vr": md.get("vr"),
                             "lines": _case_frames(md.get("user_stack"), strings, case_dir)})

    # graph breaks
    gbs = []
    for ev in events:
        if ev["kind"] != "artifact" or (ev["md"] or {}).get("name") != "dynamo_graph_break_reason":
            continue
        payload = ev["payload"] or ""
        m = GB_AT.search(payload)
        where = payload.splitlines()[0] if payload else ""
        if m:
            p = os.path.abspath(m.group("path"))
            where = f"Graph break in user code at {_rel_display(p, case_dir)}:{m.group('line')}"
        reason = ""
        for ln in payload.splitlines():
            s = ln.strip()
            if s.startswith("Explanation:"):
                reason = s.split(":", 1)[1].strip()
                break
        if not reason:
            for ln in payload.splitlines():
                if ln.startswith("Graph Break Reason:"):
                    reason = ln.split(":", 1)[1].strip()
                    break
        lines = _payload_frames(payload.split("User code traceback:", 1)[-1], case_dir) \
            if "User code traceback:" in payload else []
        if not lines and m:
            p = os.path.abspath(m.group("path"))
            if p.startswith(case_dir + os.sep):
                lines = [{"file": os.path.relpath(p, case_dir), "line": int(m.group("line"))}]
        gbs.append({"where": where, "reason": reason[:400], "lines": lines,
                    "compile_id": f"{ev['frame_id']}/{ev['frame_compile_id']}"})

    # recompile reasons
    reasons, unattributed = [], []
    for ev in events:
        if ev["kind"] != "artifact" or (ev["md"] or {}).get("name") != "recompile_reasons":
            continue
        payload = ev["payload"] or ""
        try:
            texts = json.loads(payload) if payload.lstrip().startswith("[") else [payload]
        except ValueError:
            texts = [payload]
        call = calls[ev["call"]] if 0 <= ev["call"] < len(calls) else None
        for text in texts:
            text = str(text)
            lines = []
            head = text.split("User stack trace:", 1)[0]
            if not any(k in head.split("#")[0] for k in INPUT_REASONS):
                for m in SHORT_LOC.finditer(head):
                    rel = short_match(m.group("path"))
                    if rel:
                        tail = head[m.end():m.end() + 120]
                        lines.append({"file": rel, "line": int(m.group("line")), "func": m.group("fn"),
                                      "first_use": FIRST_USE in tail})
                if "User stack trace:" in text:
                    for fl in _payload_frames(text.split("User stack trace:", 1)[1], case_dir, short_match):
                        lines.append(fl)
                hm = REASON_HEAD.match(text.strip())
                if hm and call is not None and "User stack trace:" not in text:
                    entry = (int(hm.group("frame")), int(hm.group("compile")))
                    syms = per_compile_syms.get(entry, {})
                    for g in events:
                        if g["kind"] != "guard_added_fast" or (g["frame_id"], g["frame_compile_id"]) != entry:
                            continue
                        gmd = g["md"] or {}
                        if "suppressed" in str(gmd.get("prefix", "")):
                            continue
                        val = _eval_one(sympy, symloc, str(gmd.get("expr")), syms, sym_src, call["locals"])
                        if val is False:
                            fr = _case_frames(gmd.get("user_stack"), strings, case_dir)
                            if fr:
                                lines.append({"file": fr[-1]["file"], "line": fr[-1]["line"],
                                              "func": fr[-1]["func"], "first_use": False,
                                              "guard": str(gmd.get("expr"))})
            rec = {"text": text[:3000], "lines": lines,
                   "first_use_only": bool(lines) and all(x.get("first_use") for x in lines),
                   "batch": call["batch"] if call else None}
            reasons.append(rec)
            if not lines:
                unattributed.append(text[:400])

    return {
        "input_sources": {"varying": varying, "static": static},
        "batches": [c["batch"] for c in calls],
        "calls_ok": sum(1 for c in calls if c.get("ok")),
        "errors": errors,
        "compiles": compiles,
        "dynamo_starts": sum(1 for e in events if e["kind"] == "dynamo_start"),
        "frames": [{"frame": k, "compiles": v} for k, v in frames.items()],
        # successful compiles of a code object that already had one (frame_compile_id > 0)
        "recompiles": sum(1 for e in events if e["kind"] == "compilation_metrics"
                          and (e.get("frame_compile_id") or 0) > 0 and not (e["md"] or {}).get("fail_type")),
        "graph_breaks": len(gbs),
        "graph_break_reasons": gbs,
        "recompile_reasons": reasons,
        "guards": guards,
        "guard_added_fast_events": len(guards),
        "specializations": specs,
        "unbacked_symbols": unbacked,
        "failed_compiles": failed,
        "symbol_sources": sym_src,
        "unattributed_recompile_reasons": unattributed,
    } | derive_lines({"guards": guards, "specializations": specs, "recompile_reasons": reasons,
                      "graph_break_reasons": gbs, "failed_compiles": failed, "errors": errors,
                      "unbacked_symbols": unbacked})


def _inner(lines):
    return f"{lines[-1]['file']}:{lines[-1]['line']}" if lines else None


def reason_lines(r):
    """The lines a recompile reason blames. A value guard: its user stack (and the location torch
    prints). A symbolic guard: the guards of the failed entry that are false for the new inputs
    (re-evaluated), plus the 'first use' location torch prints; the other printed locations are
    dropped when re-evaluation found the guard, because torch merges range bounds made at
    different lines into one text (torch-signals.md 2.3). Without re-evaluation: the text."""
    lines = r["lines"]
    if "User stack trace:" in r["text"] or not any("guard" in x for x in lines):
        return lines
    return [x for x in lines if "guard" in x or x.get("first_use")]


def derive_lines(d):
    """Per-signal case-file lines, implicated_lines, static_dim_lines, constant_guard_lines and
    non_guard_lines from the recorded events of one mode (used by the worker and by --recheck)."""
    L = {k: set() for k in ("guard", "specialization", "recompile_reason", "recompile_reason_first_use",
                            "graph_break", "unbacked", "error")}
    for g in d["guards"]:
        if (g["effect"] == "splits" and not g["static_dims_only"] and "suppressed" not in str(g["prefix"])
                and _inner(g["lines"])):
            L["guard"].add(_inner(g["lines"]))
    for sp in d["specializations"]:
        if not sp["static_dims_only"] and _inner(sp["lines"]):
            L["specialization"].add(_inner(sp["lines"]))
    for r in d["recompile_reasons"]:
        for x in reason_lines(r):
            key = "recompile_reason_first_use" if x.get("first_use") else "recompile_reason"
            L[key].add(f"{x['file']}:{x['line']}")
    for g in d["graph_break_reasons"]:
        if _inner(g["lines"]):
            L["graph_break"].add(_inner(g["lines"]))
    for f in d["failed_compiles"]:
        if f.get("file"):
            L["error"].add(f"{f['file']}:{f['line']}")
    for e in d["errors"]:
        if e.get("where"):
            L["error"].add(f"{e['where']['file']}:{e['where']['line']}")
    for u in d["unbacked_symbols"]:
        if _inner(u["lines"]):
            L["unbacked"].add(_inner(u["lines"]))
    implicated = set().union(*L.values())
    static_lines, const_lines, non_lines = set(), set(), set()
    for g in d["guards"]:
        at = _inner(g["lines"])
        if not at or at in L["guard"]:
            continue
        if g["static_dims_only"]:
            static_lines.add(at)
        elif g["effect"] == "constant":
            const_lines.add(at)
        if "suppressed" in str(g["prefix"]):
            non_lines.add(at)
    for sp in d["specializations"]:
        at = _inner(sp["lines"])
        if at and sp["static_dims_only"] and at not in L["guard"]:
            static_lines.add(at)
    return {"lines": {k: sorted(v) for k, v in L.items()}, "static_dim_lines": sorted(static_lines),
            "constant_guard_lines": sorted(const_lines), "non_guard_lines": sorted(non_lines),
            "implicated_lines": sorted(implicated)}


def _eval_one(sympy, symloc, expr_text, syms, sym_src, loc):
    try:
        expr = sympy.sympify(expr_text, locals=symloc)
        vals = {}
        for s in expr.free_symbols:
            src = syms.get(str(s)) or sym_src.get(str(s))
            if src is None:
                return None
            vals[s] = sympy.sympify(_eval_source(src, loc))
        return bool(expr.xreplace(vals))
    except Exception:  # noqa: BLE001
        return None


def _rel_display(path, case_dir):
    root = os.path.dirname(os.path.dirname(case_dir))
    return os.path.relpath(path, root) if path.startswith(root + os.sep) else path


def _payload_frames(text, case_dir, short_match=None):
    out = []
    for m in FILE_LINE.finditer(text):
        p = m.group("path")
        ap = os.path.abspath(p)
        if ap.startswith(case_dir + os.sep):
            out.append({"file": os.path.relpath(ap, case_dir), "line": int(m.group("line"))})
        elif short_match is not None and short_match(p):
            out.append({"file": short_match(p), "line": int(m.group("line"))})
    return out


# --------------------------------------------------------------------------------------------
# parent: one process per case and mode, then labels and the check
# --------------------------------------------------------------------------------------------
def run_mode(case_dir, mode, experiment=None, timeout=900):
    import tempfile

    fd, out = tempfile.mkstemp(suffix=".json", prefix="measure-")
    os.close(fd)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", case_dir, mode, out]
    if experiment:
        cmd.append(experiment)
    env = dict(os.environ)
    env.pop("TORCH_COMPILE_JOB_ID", None)
    env.pop("TORCH_TRACE", None)
    env.pop("TORCH_LOGS", None)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    try:
        with open(out) as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        raise SystemExit(f"{case_dir} [{mode}]: worker failed (rc {proc.returncode})\n{proc.stderr[-4000:]}")
    finally:
        os.unlink(out)
    return data


def check(meta, mode_data, case_dir):
    implicated = set(mode_data["implicated_lines"])
    lines = mode_data["lines"]
    names = set()
    for r in mode_data["recompile_reasons"]:
        if "User stack trace:" in r["text"]:
            m = re.match(r"\s*\d+/\d+: (?:self\.)?([\w.\[\]'_]+)", r["text"])
            if m:
                names.add(m.group(1).split(".")[-1].split("[")[0])
        # a buffer/parameter replaced in forward shows up as an input size mismatch naming it
        for m in re.finditer(r"_(?:buffers|parameters)\['(\w+)'\]' size mismatch", r["text"]):
            names.add(m.group(1))
    findings = []
    for e in meta.get("expected", []):
        at = f"{e['file']}:{e['line']}"
        seen = [k for k in ("guard", "specialization", "recompile_reason", "recompile_reason_first_use",
                            "graph_break", "error", "unbacked") if at in lines[k]]
        if e.get("kind") == "module-state-mutation":
            try:
                with open(os.path.join(case_dir, e["file"])) as fh:
                    src = fh.read().splitlines()[e["line"] - 1]
                if any(re.search(rf"self\.{re.escape(n)}\b\s*(\[.*\])?\s*[+\-*/]?=", src)
                       or re.search(rf"register_buffer\(\s*[\"']{re.escape(n)}[\"']", src) for n in names):
                    seen.append("recompile_reason(name)")
            except (OSError, IndexError):
                pass
        findings.append({"at": at, "kind": e.get("kind"), "seen_by": seen, "confirmed": bool(seen),
                         "triggered": e.get("triggered_by_batch_variation", True)})
    exp_at = {f["at"] for f in findings}
    return {
        "expected_confirmed": sum(f["confirmed"] for f in findings),
        "expected_total": len(findings),
        "triggered_confirmed": sum(f["confirmed"] for f in findings if f["triggered"]),
        "triggered_total": sum(1 for f in findings if f["triggered"]),
        "findings": findings,
        "decoys_implicated": sorted({f"{d['file']}:{d['line']}" for d in meta.get("decoys", [])} & implicated),
        "unexpected_lines": sorted(implicated - exp_at),
    }


def measure(case_dir, modes, quiet=False):
    import torch  # only for the version string

    case_dir = os.path.abspath(case_dir)
    meta = {}
    if os.path.isfile(os.path.join(case_dir, "case.toml")):  # labels may come after a first look
        with open(os.path.join(case_dir, "case.toml"), "rb") as fh:
            meta = tomllib.load(fh)
    data = {}
    for mode in modes:
        data[mode] = run_mode(case_dir, mode)
    first = next(iter(data.values()))
    case = {"polarity": meta.get("polarity"),
            "expected_kinds": sorted({e.get("kind") for e in meta.get("expected", [])}),
            "input_sources": first.pop("input_sources"),
            "modes": {}, "check": {}}
    for mode in modes:
        data[mode].pop("input_sources", None)
        case["modes"][mode] = data[mode]
        case["check"][mode] = check(meta, data[mode], case_dir)
    doc = {"torch": torch.__version__, "backend": "eager", "batches": BATCHES,
           "modes": {m: f"dynamic={MODES[m]}" for m in modes}, "case": case}
    # experiments (optional)
    spec = importlib.util.spec_from_file_location("_case_meta", os.path.join(case_dir, "model.py"))
    exps = {}
    src = open(os.path.join(case_dir, "model.py")).read()
    m = re.search(r"^EXPERIMENTS\s*=\s*(\{.*?\})\s*$", src, re.M | re.S)
    if m:
        import ast

        exps = ast.literal_eval(m.group(1))
    if exps:
        doc["experiments"] = {}
        for name, desc in exps.items():
            em = {}
            for mode in modes:
                d = run_mode(case_dir, mode, experiment=name)
                d["check"] = check(meta, d, case_dir)
                em[mode] = d
            doc["experiments"][name] = {"description": desc, "modes": em}
    del spec
    return doc


def recheck(case_dir):
    """Re-derive the labels-dependent parts (polarity, expected_kinds, check) of an existing
    measured.json from the current case.toml, without running torch again."""
    case_dir = os.path.abspath(case_dir)
    with open(os.path.join(case_dir, "case.toml"), "rb") as fh:
        meta = tomllib.load(fh)
    with open(os.path.join(case_dir, "measured.json")) as fh:
        doc = json.load(fh)
    case = doc["case"]
    case["polarity"] = meta.get("polarity")
    case["expected_kinds"] = sorted({e.get("kind") for e in meta.get("expected", [])})
    for d in case["modes"].values():
        d.update(derive_lines(d))
    case["check"] = {mode: check(meta, d, case_dir) for mode, d in case["modes"].items()}
    for ex in doc.get("experiments", {}).values():
        for d in ex["modes"].values():
            d.update(derive_lines(d))
            d["check"] = check(meta, d, case_dir)
    return doc


def summary(case_id, doc):
    out = [f"== {case_id}"]
    modes = doc["case"]["modes"]
    for mode, d in modes.items():
        ck = doc["case"]["check"][mode]
        out.append(f"  [{mode}] compiles={d['compiles']} recompiles={d['recompiles']} "
                   f"graph_breaks={d['graph_breaks']} calls_ok={d['calls_ok']} errors={len(d['errors'])} "
                   f"frames={[(f['frame'], f['compiles']) for f in d['frames']]}")
        for k, v in d["lines"].items():
            if v:
                out.append(f"      {k}: {v}")
        if d["static_dim_lines"] or d["constant_guard_lines"]:
            out.append(f"      static_dim_lines: {d['static_dim_lines']} constant_guard_lines: "
                       f"{d['constant_guard_lines']}")
        n_input = 0
        for r in d["recompile_reasons"]:
            if not r["lines"] and "mismatch" in r["text"]:
                n_input += 1
                continue
            out.append(f"      reason@b={r['batch']}: {r['text'].splitlines()[0][:150]} -> "
                       f"{sorted({(x['file'], x['line']) for x in r['lines']})}")
        if n_input:
            out.append(f"      (+{n_input} input size/grad mismatch reasons, no user line)")
        seen = set()
        for g in d["graph_break_reasons"]:
            k = (g["where"], g["reason"][:120])
            if k not in seen:
                seen.add(k)
                out.append(f"      break: {g['where']} :: {g['reason'][:120]}")
        seen = set()
        for s in d["specializations"]:
            k = (tuple(s["sources"]), tuple((x["file"], x["line"]) for x in s["lines"]), s["static_dims_only"])
            if k in seen:
                continue
            seen.add(k)
            vals = sorted({str(t["value"]) for t in d["specializations"]
                           if (tuple(t["sources"]), tuple((x["file"], x["line"]) for x in t["lines"]),
                               t["static_dims_only"]) == k})
            out.append(f"      spec: {[x[:60] for x in s['sources']]} -> {vals} at "
                       f"{[(x['file'], x['line']) for x in s['lines']]}{' (static)' if s['static_dims_only'] else ''}")
        for e in d["errors"]:
            out.append(f"      error@b={e['batch']}: {e['error'].splitlines()[0][:200]} at {e.get('where')}")
        out.append(f"      implicated: {d['implicated_lines']}  | expected confirmed {ck['expected_confirmed']}/"
                   f"{ck['expected_total']}  decoys implicated {ck['decoys_implicated']}  unexpected "
                   f"{ck['unexpected_lines']}")
    for name, ex in doc.get("experiments", {}).items():
        for mode, d in ex["modes"].items():
            out.append(f"  experiment {name} [{mode}] compiles={d['compiles']} recompiles={d['recompiles']} "
                       f"graph_breaks={d['graph_breaks']} implicated={d['implicated_lines']}")
            for r in d["recompile_reasons"]:
                out.append(f"      reason@b={r['batch']}: {r['text'].splitlines()[0][:150]} -> "
                           f"{sorted({(x['file'], x['line']) for x in r['lines']})}")
    return "\n".join(out)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        worker(argv[1], argv[2], argv[3], argv[4] if len(argv) > 4 else None)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--modes", default="none,true")
    ap.add_argument("--no-write", action="store_true", help="print the summary only")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--recheck", action="store_true",
                    help="no torch run: refresh the check of an existing measured.json from case.toml")
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    for case_dir in args.cases:
        doc = recheck(case_dir) if args.recheck else measure(case_dir, modes, args.quiet)
        if not args.no_write:
            with open(os.path.join(case_dir, "measured.json"), "w") as fh:
                json.dump(doc, fh, indent=1, default=str)
                fh.write("\n")
        if not args.quiet:
            print(summary(os.path.basename(os.path.abspath(case_dir)), doc), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
