"""Measure torch's own verdict on the user models and write each one's measured.json.

    python tests/user_models/measure.py [NAME ...] [--modes auto,true,false] [--no-write] [--quiet]

For each model (a folder here with model.py and case.toml) and each mode (``auto`` is
dynamic=None, ``true``, ``false``) a fresh Python process compiles ``build()`` with
``torch.compile(..., backend="eager", dynamic=MODE)`` and calls it at the shapes of the case's
``[replay]`` table, in the order ``shapelint run`` replays them (each batch size, and for each the
sequence lengths), with ``TORCH_LOGS=+dynamic,recompiles,graph_breaks`` on and a handler on the
structured trace (torch-signals.md). Inputs are deterministic per shape (``_libs.padded_ids``
and seeded generators), weights are seeded in ``build()``, so the harness sees the same data.

What torch blames, per recompile (one ``recompile_reasons`` artifact, keyed by compile id). For
every cache entry torch says failed, the guards of that entry (``guard_added_fast``, not those
logged ``[guard suppressed]``) are re-evaluated against the frame's locals at the recompile
(captured from ``get_and_maybe_log_recompilation_reasons``, so a resumed frame's ``___stack0``
is evaluated too; float symbols ``zf*``, pinned attributes printed rounded, are left out); a
guard is blamed on the innermost frame of the model's folder in its ``user_stack`` (the user's
call into library code when the guard was added there; the innermost frame overall is kept as
``inner``). The entry's category is what torch's reason names:

- ``value``: a guard with a ``User stack trace`` (an int argument, an int attribute, an int that
  crossed a graph break): its innermost frame in the model's folder;
- ``symbolic``: a shape guard; every guard of the entry that is false now (torch prints one,
  sometimes as a range merged from guards of different lines);
- ``input``: ``tensor 'x' size mismatch``: an input compiled static (automatic dynamic, no line),
  ``input+guard`` when the dim torch names was pinned by a guard of the entry (a specialization:
  ``Eq(s27, 10)`` at a ``range(t)``), blamed on that guard;
- ``attribute``: ``tensor 'self._buffers['running']' requires_grad mismatch``: a tensor attribute
  of the module changed (torch names it, no line);
- ``implicit``: no logged guard is false: an implicit range guard (the 0/1 specialization when a
  size is 0 or 1, which ``size_one`` says by evaluating the sizes named in the text).

``named_lines`` are the lines of what torch names (above); ``user_lines`` add every other guard
of the entry that is false too (hidden behind the one torch prints: e.g. a size branch of an
entry that also fails on a batch compiled static).

Graph breaks: the ``dynamo_graph_break_reason`` artifacts, blamed on the innermost frame of the
model's folder in the user traceback. The stderr of TORCH_LOGS is kept in short form
(``torch_logs``): the ``[guard added]`` lines at the model's files, the recompile reasons, the
graph-break locations. ``bench/measure_case.py`` does the same for the labelled cases (fixed
batches, no sequence lengths, no ``false`` mode); this script imports its helpers.
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
import tempfile
import time
import traceback

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODES = {"auto": None, "true": True, "false": False}
KEEP = {"compilation_metrics", "guard_added_fast", "create_symbol", "symbolic_shape_specialization",
        "artifact", "create_unbacked_symbol"}
#: the compilation_metrics fields kept
METRIC_KEYS = ("compile_id", "co_name", "co_filename", "co_firstlineno", "fail_type", "fail_reason")
INPUT_REASONS = ("size mismatch", "stride mismatch", "rank mismatch", "dtype mismatch",
                 "device mismatch", "requires_grad mismatch", "dispatch key set mismatch",
                 "_has_dynamo_dim_marking", "BACKEND_MATCH", "duck sizing")
FILE_LINE = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)')
SHORT_LOC = re.compile(r"#\s*(?P<path>[^\s#()]+\.py):(?P<line>\d+) in (?P<fn>\w+)")
GB_AT = re.compile(r"Graph break(?: \([^)]*\))? in user code at (?P<path>.+?):(?P<line>\d+)\s*$", re.M)
GB_ID = re.compile(r"/gb/gb(\d{4})\.html")
REASON_HEAD = re.compile(r"^(?P<frame>\d+)/(?P<compile>\d+): (?P<text>.*)$", re.S)
SYMBOL = re.compile(r"\b(?:s|zf|u)\d+\b")
MISMATCH = re.compile(r"tensor '(?P<name>.+?)' size mismatch at index (?P<index>\d+)\. "
                      r"expected (?P<expected>\d+), actual (?P<actual>\d+)")
FLOAT_SYM = re.compile(r"\bzf\d+\b")
ATTRIBUTE = re.compile(r"tensor '(?:self\.|L\['self'\])")
RANGE_SRC = re.compile(r"([A-Za-z_][\w.]*(?:\.size\(\)\[\d+\]|___stack\d+))")


def model_names():
    return sorted(d for d in os.listdir(HERE)
                  if os.path.isfile(os.path.join(HERE, d, "model.py"))
                  and os.path.isfile(os.path.join(HERE, d, "case.toml")))


def replay_config(name):
    with open(os.path.join(HERE, name, "case.toml"), "rb") as fh:
        meta = tomllib.load(fh)
    rp = meta.get("replay", {})
    return meta, list(rp.get("batches", [1, 2, 3, 4, 8])), rp.get("seq_lens")


def shapes_of(batches, seqs):
    return [(b, s) for b in batches for s in (seqs or [None])]


# --------------------------------------------------------------------------------------------
# worker (fresh process)
# --------------------------------------------------------------------------------------------
def _load_measure_case():
    spec = importlib.util.spec_from_file_location("measure_case",
                                                  os.path.join(REPO, "bench", "measure_case.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def worker(name, mode, out_path):
    import torch
    import torch._dynamo
    import torch._dynamo.convert_frame as convert_frame
    from torch._logging.structured import INTERN_TABLE

    mc = _load_measure_case()
    os.environ.pop("TORCH_COMPILE_JOB_ID", None)
    model_dir = os.path.join(HERE, name)
    _, batches, seqs = replay_config(name)
    events, strings = [], {}
    state = {"call": -1, "locals": None}

    mc.listen(events, strings, state, metric_keys=METRIC_KEYS, keep=KEEP,
              quiet_shape_log=False)

    original = convert_frame.get_and_maybe_log_recompilation_reasons

    def capture(cache_entries, frame, *args, **kwargs):
        try:  # the frame's locals at the recompile: what torch's guards were checked against
            state["locals"] = (dict(frame.f_locals), frame.f_globals)
        except Exception:  # noqa: BLE001
            state["locals"] = None
        return original(cache_entries, frame, *args, **kwargs)

    convert_frame.get_and_maybe_log_recompilation_reasons = capture
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()

    sys.path.insert(0, model_dir)
    spec = importlib.util.spec_from_file_location("model", os.path.join(model_dir, "model.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["model"] = mod
    spec.loader.exec_module(mod)
    model = mod.build()
    compiled = torch.compile(model, backend="eager", dynamic=MODES[mode])
    takes_seq = "seq_len" in inspect.signature(mod.inputs).parameters

    calls, errors, t0 = [], [], time.perf_counter()
    for i, (b, s) in enumerate(shapes_of(batches, seqs)):
        state["call"] = i
        print(f"=== call {i} batch={b} seq_len={s}", file=sys.stderr, flush=True)
        try:
            args, kwargs = mc._normalize(mod.inputs(b, seq_len=s) if takes_seq and s is not None
                                         else mod.inputs(b))
            calls.append({"batch": b, "seq_len": s})
            compiled(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001
            tb = traceback.format_exc()
            where = None
            for m in FILE_LINE.finditer(tb):
                if os.path.abspath(m.group("path")).startswith(model_dir + os.sep):
                    where = f"{os.path.relpath(os.path.abspath(m.group('path')), model_dir)}:{m.group('line')}"
            errors.append({"call": i, "shape": [b, s], "error": f"{type(exc).__name__}: {exc}"[:600],
                           "where": where})
    seconds = round(time.perf_counter() - t0, 2)
    for path, idx in INTERN_TABLE.items():
        strings.setdefault(idx, path)
    result = analyse(model_dir, events, strings, calls, errors, mc)
    result["seconds"] = seconds
    with open(out_path, "w") as fh:
        json.dump(result, fh, default=str)


def _frames(stack, strings):
    out = []
    for fr in stack or []:
        if isinstance(fr, dict):
            idx = fr.get("filename")
            path = strings.get(idx) if isinstance(idx, int) else None
            if path:
                out.append((os.path.abspath(path), int(fr.get("line") or 0), str(fr.get("name", ""))))
    return out


def _short(path):
    for root in (REPO + os.sep,):
        if path.startswith(root):
            return path[len(root):]
    i = path.find("/torch/")
    return path[i + 1:] if i >= 0 else path


def pinned_dim_lines(rec, failed, specs):
    """For ``tensor 'x' size mismatch at index i. expected E``: the lines of the guards that
    pinned that dim to E in the failed entry: a failed guard on a symbol of that source, or one
    that pins a size at index i to E (``Eq(s53, 8)``: the seq dim of ``attention_mask``, shared
    with ``input_ids``), or a specialization to E of a size at index i in that entry. The code
    made the dim static, not the input compiled first. (measured.json keeps one specialization
    per source, value and line: one repeated by a later compile is found by its failed guard.)"""
    m = MISMATCH.search(rec["text"].split("#", 1)[0])
    if not m:
        return []
    name, idx, expected = m.group("name"), m.group("index"), m.group("expected")
    tail = (name[4:] if name.startswith("self") else f"['{name}']") + f".size()[{idx}]"
    same_index = f".size()[{idx}]"
    out = set()
    for f in failed:
        if not f.get("user_line"):
            continue
        pin = re.fullmatch(r"Eq\((\w+), (-?\d+)\)", f["expr"])
        if any(src.endswith(tail) for src in f.get("sources", [])) or (
                pin and pin.group(2) == expected and any(src.endswith(same_index) for src in f.get("sources", []))):
            out.add(f["user_line"])
    for sp in specs:
        if sp.get("compile_id") == rec["entry"] and sp.get("user_line") and str(sp.get("value")) == expected \
                and any(src.endswith(same_index) for src in sp.get("sources", [])):
            out.add(sp["user_line"])
    return sorted(out)


def analyse(model_dir, events, strings, calls, errors, mc):
    sympy, symloc = mc._sympy_env()
    prefix = model_dir + os.sep

    def user(frames):
        return [f for f in frames if f[0].startswith(prefix)]

    def rel(f):
        return f"{os.path.relpath(f[0], model_dir)}:{f[1]}"

    syms_of = {}
    for ev in events:
        if ev["kind"] == "create_symbol":
            md = ev["md"] or {}
            syms_of.setdefault((ev["frame_id"], ev["frame_compile_id"]), {})[str(md.get("symbol"))] = \
                str(md.get("source"))

    def value(src, loc):
        f_locals, f_globals = loc
        v = eval(src, {"L": f_locals, "G": f_globals, "__builtins__": __builtins__})  # noqa: S307
        return int(v) if not isinstance(v, (int, float)) or isinstance(v, bool) else v

    def holds(expr_text, entry, loc):
        try:
            expr = sympy.sympify(expr_text, locals=symloc)
            vals = {}
            for s in expr.free_symbols:
                src = syms_of.get(entry, {}).get(str(s))
                if src is None:
                    return None
                vals[s] = sympy.sympify(value(src, loc))
            return bool(expr.xreplace(vals))
        except Exception:  # noqa: BLE001
            return None

    def size_one(text, loc):
        """For an implicit range guard: whether a size it names is 0 or 1 now."""
        if loc is None:
            return None
        head = text.split("#", 1)[0]
        for m in RANGE_SRC.finditer(head):
            src = m.group(1)
            src = re.sub(r"^(\w+)", lambda mm: f"L[{mm.group(1)!r}]", src)
            src = re.sub(r"\.(?!size\(\))(\w+)", lambda mm: f"[{mm.group(1)!r}]", src)
            try:
                if value(src, loc) in (0, 1):
                    return True
            except Exception:  # noqa: BLE001
                continue
        return False

    compiles, frames, fallbacks = 0, {}, []
    for ev in events:
        if ev["kind"] != "compilation_metrics":
            continue
        md = ev["md"] or {}
        compiles += 1
        frames[md.get("co_name")] = frames.get(md.get("co_name"), 0) + 1
        if md.get("fail_type"):
            fallbacks.append({"compile_id": f"{ev['frame_id']}/{ev['frame_compile_id']}",
                              "call": ev["call"], "fail_type": md.get("fail_type"),
                              "fail_reason": str(md.get("fail_reason"))[:300]})

    all_specs = []
    for ev in events:
        if ev["kind"] == "symbolic_shape_specialization":
            md = ev["md"] or {}
            uf = user(_frames(md.get("user_stack"), strings))
            all_specs.append({"compile_id": f"{ev['frame_id']}/{ev['frame_compile_id']}",
                              "sources": [str(x) for x in md.get("sources") or []],
                              "value": str(md.get("value")), "user_line": rel(uf[-1]) if uf else None})

    recompiles = []
    for ev in events:
        if ev["kind"] != "artifact" or (ev["md"] or {}).get("name") != "recompile_reasons":
            continue
        texts = [str(t) for t in (json.loads(ev["payload"]) if (ev["payload"] or "").lstrip().startswith("[")
                                  else [ev["payload"] or ""])]
        loc = ev.get("locals")
        entries, lines, chain, inner, named_all = [], set(), set(), set(), set()
        for text in texts:
            hm = REASON_HEAD.match(text.strip())
            entry = (int(hm.group("frame")), int(hm.group("compile"))) if hm else None
            body = hm.group("text") if hm else text
            head = body.split("User stack trace:", 1)[0]
            rec = {"entry": f"{entry[0]}/{entry[1]}" if entry else None, "text": body.strip()[:600]}
            is_input = any(k in head.split("#")[0] for k in INPUT_REASONS)
            # every guard of the entry that is false now (for an input torch names as a size
            # mismatch, a guard that pinned that dim, a specialization such as Eq(s27, 10),
            # is one; for a value guard, the size guards that fail beside it)
            failed = []
            for g in events:
                if g["kind"] != "guard_added_fast" or (g["frame_id"], g["frame_compile_id"]) != entry:
                    continue
                expr = str((g["md"] or {}).get("expr"))
                if "suppressed" in str((g["md"] or {}).get("prefix", "")):
                    continue  # logged, never installed: not a guard that can fail
                if FLOAT_SYM.search(expr):
                    continue  # a float attribute pinned (scaling): printed rounded, never varies
                ok = holds(expr, entry, loc) if loc is not None else None
                if ok is False:
                    fr = _frames((g["md"] or {}).get("user_stack"), strings)
                    uf = user(fr)
                    failed.append({"expr": expr, "user_line": rel(uf[-1]) if uf else None,
                                   "user_chain": [rel(f) for f in uf],
                                   "inner": f"{_short(fr[-1][0])}:{fr[-1][1]}" if fr else None,
                                   "sources": sorted({syms_of.get(entry, {}).get(x, x)
                                                      for x in SYMBOL.findall(expr)})})
            rec["user_lines"], rec["user_chain"], named = [], [], []
            if "User stack trace:" in body and not is_input:
                fr = [(os.path.abspath(m.group("path")), int(m.group("line")), m.group("fn"))
                      for m in FILE_LINE.finditer(body.split("User stack trace:", 1)[1])]
                uf = user(fr)
                rec["category"] = "value"
                rec["user_lines"] = [rel(uf[-1])] if uf else []
                rec["user_chain"] = [rel(f) for f in uf]
                rec["inner"] = f"{_short(fr[-1][0])}:{fr[-1][1]}" if fr else None
                if rec["inner"]:
                    inner.add(rec["inner"])
                named = list(rec["user_lines"])
            elif is_input:
                kind = "attribute" if ATTRIBUTE.match(head) else "input"
                rec["category"] = f"{kind}+guard" if failed else kind
                named = pinned_dim_lines(rec, failed, all_specs)
            elif failed:
                rec["category"] = "symbolic"
                named = [f["user_line"] for f in failed if f["user_line"]]
            else:
                rec["category"] = "implicit"
                rec["size_one"] = size_one(body, loc)
                rec["printed"] = [f"{m.group('path')}:{m.group('line')}" for m in SHORT_LOC.finditer(head)]
            if failed:
                rec["failed_guards"] = failed
                rec["user_lines"] = sorted(set(rec["user_lines"]) | {f["user_line"] for f in failed if f["user_line"]})
                rec["user_chain"] = sorted(set(rec["user_chain"]) | {c for f in failed for c in f["user_chain"]})
                inner.update(f["inner"] for f in failed if f["inner"])
            rec["named_lines"] = sorted(set(named))
            lines.update(rec["user_lines"])
            named_all.update(rec["named_lines"])
            chain.update(rec["user_chain"])
            entries.append(rec)
        call = ev["call"]
        recompiles.append({"compile_id": f"{ev['frame_id']}/{ev['frame_compile_id']}", "call": call,
                           "shape": [calls[call]["batch"], calls[call]["seq_len"]] if 0 <= call < len(calls) else None,
                           "entries": entries, "named_lines": sorted(named_all), "user_lines": sorted(lines),
                           "user_chain": sorted(chain | lines),
                           "inner": sorted(inner)})
    names = {}
    for ev in events:
        if ev["kind"] == "compilation_metrics":
            names[(ev["frame_id"], ev["frame_compile_id"])] = (ev["md"] or {}).get("co_name")
    for r in recompiles:
        f, k = map(int, r["compile_id"].split("/"))
        r["frame"] = names.get((f, k))

    breaks, seen = [], set()
    for ev in events:
        if ev["kind"] != "artifact" or (ev["md"] or {}).get("name") != "dynamo_graph_break_reason":
            continue
        payload = ev["payload"] or ""
        tb = payload.split("User code traceback:", 1)[1] if "User code traceback:" in payload else ""
        fr = [(os.path.abspath(m.group("path")), int(m.group("line")), m.group("fn"))
              for m in FILE_LINE.finditer(tb.split("\n\n")[0] if tb else "")]
        m = GB_AT.search(payload)
        if not fr and m:
            fr = [(os.path.abspath(m.group("path")), int(m.group("line")), "?")]
        uf = [f for f in fr if f[0].startswith(prefix)]
        reason = ""
        for ln in payload.splitlines():
            if ln.strip().startswith("Explanation:") or ln.startswith("Graph Break Reason:"):
                reason = ln.split(":", 1)[1].strip()
                break
        gid = GB_ID.search(payload)
        key = (rel(uf[-1]) if uf else None, reason[:80])
        if key in seen:
            continue
        seen.add(key)
        call = ev["call"]
        breaks.append({"compile_id": f"{ev['frame_id']}/{ev['frame_compile_id']}", "call": call,
                       "shape": [calls[call]["batch"], calls[call]["seq_len"]] if 0 <= call < len(calls) else None,
                       "user_line": rel(uf[-1]) if uf else None,
                       "inner": f"{_short(fr[-1][0])}:{fr[-1][1]}" if fr else None,
                       "registry_id": f"GB{gid.group(1)}" if gid else None, "reason": reason[:300]})

    specs = []
    for ev in events:
        if ev["kind"] != "symbolic_shape_specialization":
            continue
        md = ev["md"] or {}
        uf = user(_frames(md.get("user_stack"), strings))
        if re.search(r"[.e]", str(md.get("value"))):
            continue  # a float attribute pinned (eps, dropout p): nothing varies
        if uf:
            specs.append({"compile_id": f"{ev['frame_id']}/{ev['frame_compile_id']}",
                          "sources": [str(s) for s in md.get("sources") or []], "value": md.get("value"),
                          "user_line": rel(uf[-1])})
    uniq = {}
    for s in specs:
        uniq.setdefault((tuple(s["sources"]), s["value"], s["user_line"]), s)

    return {
        "shapes": [[c["batch"], c["seq_len"]] for c in calls],
        "compiles": compiles,
        "recompiles": len(recompiles),
        "frames": frames,
        "graph_breaks": len(breaks),
        "recompile_events": recompiles,
        "graph_break_events": breaks,
        "specializations": list(uniq.values()),
        "fallbacks": fallbacks,
        "errors": errors,
        "torch_lines": {
            "recompile": sorted({ln for r in recompiles for ln in r["named_lines"]}),
            "recompile_every_failed_guard": sorted({ln for r in recompiles for ln in r["user_lines"]}),
            "graph_break": sorted({b["user_line"] for b in breaks if b["user_line"]}),
        },
    }


# --------------------------------------------------------------------------------------------
# parent
# --------------------------------------------------------------------------------------------
def torch_logs(stderr, name):
    """The TORCH_LOGS lines that matter, short: guards added at the model's files, recompile
    reasons, graph-break locations (per call)."""
    folder = f"user_models/{name}/"
    out, call = [], None
    seen = set()
    for raw in stderr.splitlines():
        if raw.startswith("=== call"):
            call = raw[4:].strip()
            continue
        line = re.sub(r"^[VIWE]\d{4} [\d:.]+ \d+ \S+\] ", "", raw)
        item = None
        if "[guard added]" in line and folder in line.split("[guard added]", 1)[1]:
            m = re.match(r"(\[\d+/\d+\]) eval (.*?) \[guard added\] (.*?)  # (\S+:\d+) in (\w+)", line)
            item = f"{m.group(1)} {m.group(4).split(folder)[-1]}: eval {m.group(2)}" if m else line[:200]
        elif "[__recompiles]" in line:
            item = line.replace("[__recompiles] ", "").rstrip()[:260]
        elif "Graph break" in line and "in user code at" in line:
            item = line.split("] ", 1)[-1].replace(REPO + "/", "")[:200]
        if item and (call, item) not in seen:
            seen.add((call, item))
            if call and not any(o == f"--- {call}" for o in out[-50:]):
                out.append(f"--- {call}")
            out.append(item)
    return out


def run_mode(name, mode, timeout=900):
    fd, out = tempfile.mkstemp(suffix=".json", prefix="user-model-")
    os.close(fd)
    env = dict(os.environ, TORCH_LOGS="+dynamic,recompiles,graph_breaks")
    for k in ("TORCH_COMPILE_JOB_ID", "TORCH_TRACE"):
        env.pop(k, None)
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", name, mode, out],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    try:
        with open(out) as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        raise SystemExit(f"{name} [{mode}]: worker failed (rc {proc.returncode})\n{proc.stderr[-3000:]}") from None
    finally:
        os.unlink(out)
    data["torch_logs"] = torch_logs(proc.stderr, name)
    return data


def summary(name, doc):
    out = [f"== {name}"]
    for mode, d in doc["modes"].items():
        out.append(f"  [{mode}] compiles={d['compiles']} recompiles={d['recompiles']} "
                   f"graph_breaks={d['graph_breaks']} frames={d['frames']} {d['seconds']}s")
        for r in d["recompile_events"]:
            cats = ",".join(f"{e['entry']}:{e['category']}" + ("(size-1)" if e.get("size_one") else "")
                            for e in r["entries"])
            hidden = sorted(set(r["user_lines"]) - set(r.get("named_lines", r["user_lines"])))
            out.append(f"    recompile {r['compile_id']} at {r['shape']} in {r['frame']}: [{cats}] "
                       f"-> {r.get('named_lines', r['user_lines']) or '-'}"
                       + (f" (+ failed too: {hidden})" if hidden else "")
                       + f"  inner={r['inner'] or '-'}")
        for b in d["graph_break_events"]:
            out.append(f"    break {b['compile_id']} at {b['shape']}: {b['user_line']} ({b['inner']}) "
                       f"{b['registry_id']} {b['reason'][:80]}")
        for s in d["specializations"]:
            out.append(f"    spec {s['sources']} -> {s['value']} at {s['user_line']}")
        for f in d["fallbacks"]:
            out.append(f"    fallback {f['compile_id']}: {f['fail_type']} {f['fail_reason'][:100]}")
        for e in d["errors"]:
            out.append(f"    error at {e['shape']}: {e['error'][:150]} ({e['where']})")
        out.append(f"    torch lines: {d['torch_lines']}")
    return "\n".join(out)


def rederive(doc):
    """Re-derive ``named_lines`` (and the per-mode ``torch_lines``) of a measured.json from what
    it stores, without running torch: the entry's text, its failed guards, the specializations."""
    for d in doc["modes"].values():
        for r in d["recompile_events"]:
            named_all = set()
            for e in r["entries"]:
                if e["category"].startswith(("input", "attribute")):
                    e["named_lines"] = pinned_dim_lines(e, e.get("failed_guards", []), d["specializations"])
                named_all.update(e.get("named_lines", []))
            r["named_lines"] = sorted(named_all)
        d["torch_lines"]["recompile"] = sorted({ln for r in d["recompile_events"] for ln in r["named_lines"]})
    return doc


def measure(name, modes):
    import torch

    _, batches, seqs = replay_config(name)
    doc = {"torch": torch.__version__, "backend": "eager", "device": "cpu", "batches": batches,
           "seq_lens": seqs, "order": "each batch size, then each sequence length (as shapelint run)",
           "modes": {}}
    for mode in modes:
        doc["modes"][mode] = run_mode(name, mode)
    return doc


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        worker(argv[1], argv[2], argv[3])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="model folders (default: all)")
    ap.add_argument("--modes", default="auto,true,false")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--rederive", action="store_true",
                    help="no torch run: re-derive the named lines of an existing measured.json")
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    for name in args.names or model_names():
        name = os.path.basename(os.path.normpath(name))
        path = os.path.join(HERE, name, "measured.json")
        if args.rederive:
            with open(path) as fh:
                doc = rederive(json.load(fh))
            with open(path, "w") as fh:
                json.dump(doc, fh, indent=1, default=str)
                fh.write("\n")
            if not args.quiet:
                print(summary(name, doc), flush=True)
            continue
        doc = measure(name, modes)
        if os.path.isfile(path) and set(modes) != set(MODES):  # keep the other modes' results
            with open(path) as fh:
                old = json.load(fh)
            doc["modes"] = {**old.get("modes", {}), **doc["modes"]}
            doc["modes"] = {m: doc["modes"][m] for m in MODES if m in doc["modes"]}
        if not args.no_write:
            with open(path, "w") as fh:
                json.dump(doc, fh, indent=1, default=str)
                fh.write("\n")
        if not args.quiet:
            print(summary(name, doc), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
