"""shapelint's blame against torch's own, on the user-style models of tests/user_models (issue 20).

    python bench/user_models.py [NAME ...] [--modes auto,true,false] [-v] [--save DIR | --load DIR]
                                [--ref REV] [--no-static]

Each folder of tests/user_models holds a user's own model around a library encoder or decoder
(transformers, timm, diffusers), a ``case.toml`` (its ``[replay]`` shapes) and a
``measured.json``: what torch itself did in each mode, measured by
``tests/user_models/measure.py`` (TORCH_LOGS=+dynamic,recompiles,graph_breaks and the structured
trace, every failed guard re-evaluated against the frame's locals at the recompile). For every
model and mode this script runs ``shapelint run`` (the working tree's harness, or the commit
``--ref`` names; ``--format json``, backend eager, cpu) at the same shapes in the same order and
compares, per recompile (matched by compile id) and for the graph breaks:

- torch's lines (``named_lines`` of measured.json): for each cache entry torch says failed, what
  its reason names, resolved to a model-file line: a value guard's user stack; for a shape guard
  every guard of the entry that is false for the new inputs (torch prints one, sometimes as a
  range merged from guards of different lines); for a ``size mismatch`` of a dim a guard pinned
  (a specialization), that guard; none for an input compiled static (automatic dynamic), a
  changed tensor attribute or an implicit range guard. A guard is placed at its innermost frame
  in the model's folder: the user's call into library code when the guard was added there.
  The line before the total also counts the other guards of the failed entries that are false
  too (hidden behind the one torch names);
- shapelint's lines: the model-file lines of the event and of its guards. Library lines it
  blames are shown as such (``lib:masking_utils.py:846``).

A row matches when every recompile's lines are torch's (the calls in a value guard's stack may be
named too, and the write an earlier call ran of the module state a guard reads), no size-1 (0/1) specialization is claimed where torch's range guard was not on a size
0 or 1, and the graph-break lines are the same. Mismatches are classified: ``wrong line``, ``no
line``, ``0/1 claimed``, ``library line`` (a library file blamed where torch names a user line),
``extra line``, ``missing event`` / ``extra event``; naming leaks (``___stackN``, resume frames,
``L['...']``) are listed beside them but do not decide the match. The last line is
``TOTAL matched=X/Y``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MODELS = os.path.join(REPO, "tests", "user_models")
MODES = ("auto", "true", "false")
LEAK = re.compile(r"___stack\d+|torch_dynamo_resume_in_\w+|\bwrapped_func\b|L\['[^']+'\]")


def model_names():
    return sorted(d for d in os.listdir(MODELS)
                  if os.path.isfile(os.path.join(MODELS, d, "model.py"))
                  and os.path.isfile(os.path.join(MODELS, d, "measured.json")))


def replay(name):
    with open(os.path.join(MODELS, name, "case.toml"), "rb") as fh:
        rp = tomllib.load(fh).get("replay", {})
    return list(rp.get("batches", [1, 2, 3, 4, 8])), rp.get("seq_lens")


def export_ref(ref):
    """The harness as committed at ``ref``, in a temporary folder put first on PYTHONPATH (the
    venv's editable finder comes after it): shapelint/ with rules/ as shapelint/rules."""
    dest = tempfile.mkdtemp(prefix="shapelint-ref-")
    archive = subprocess.run(["git", "archive", ref, "shapelint", "rules"], cwd=REPO,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    shutil.move(os.path.join(dest, "rules"), os.path.join(dest, "shapelint", "rules"))
    return dest


def run_shapelint(name, mode, out_path, pythonpath=None, no_static=False, timeout=900):
    batches, seqs = replay(name)
    ref = f"tests/user_models/{name}/model.py"
    cmd = [sys.executable, "-m", "shapelint", "run", "--model", f"{ref}:build", "--inputs", f"{ref}:inputs",
           "--batch-sizes", ",".join(map(str, batches)), "--dynamic", mode, "--backend", "eager",
           "--device", "cpu", "--timeout", str(timeout), "--format", "json", "-o", out_path]
    if seqs:
        cmd += ["--seq-lens", ",".join(map(str, seqs))]
    if no_static:
        cmd.append("--no-static")
    env = dict(os.environ)
    for k in ("TORCH_LOGS", "TORCH_TRACE", "TORCH_COMPILE_JOB_ID"):
        env.pop(k, None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout + 120)
    seconds = round(time.perf_counter() - t0, 1)
    try:
        with open(out_path) as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        doc = {"error": f"shapelint run failed (rc {proc.returncode}): {proc.stderr[-1500:]}"}
    doc["_seconds"] = seconds
    doc["_rc"] = proc.returncode
    return doc


# --------------------------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------------------------
def _where(item, model_dir):
    """('user', 'model.py:26') / ('lib', 'masking_utils.py:846') / None for one event or guard."""
    ab, line = item.get("abspath") or item.get("path"), item.get("line")
    if not ab or not line:
        return None
    ab = os.path.abspath(ab if os.path.isabs(ab) else os.path.join(REPO, ab))
    if ab.startswith(model_dir + os.sep):
        return "user", f"{os.path.relpath(ab, model_dir)}:{line}"
    return "lib", f"{os.path.basename(ab)}:{line}"


def _leaks(ev):
    texts = [str(ev.get("reason") or "")] + [str(g.get("text") or g.get("guard") or "") for g in ev.get("guards") or []]
    texts.append(str(ev.get("frame") or ""))
    return sorted({m.group(0) if not m.group(0).startswith("L[") else "L['...']"
                   for t in texts for m in LEAK.finditer(t)})


def compare(name, mode, torch_mode, sl_doc):
    model_dir = os.path.join(MODELS, name)
    row = {"model": name, "mode": mode, "torch_compiles": torch_mode["compiles"], "problems": [],
           "events": [], "leaks": set(), "strict_miss": False}
    if sl_doc.get("error") or not sl_doc.get("targets"):
        row.update(sl_compiles=None, match=False, torch_lines=set(), sl_lines=set())
        row["problems"].append("run failed: " + str(sl_doc.get("error", "no target"))[:200])
        return row
    target = sl_doc["targets"][0]
    row["sl_compiles"] = target.get("compiles")
    if target.get("error"):
        row["problems"].append(f"target error: {str(target['error'])[:200]}")
    events = target.get("events") or []
    sl_rec = {}
    for ev in events:
        if ev.get("kind") == "recompile":
            sl_rec.setdefault(ev.get("compile_id"), []).append(ev)
    torch_lines, sl_lines = set(), set()
    cats = []
    for tr in torch_mode["recompile_events"]:
        t_lines = set(tr.get("named_lines", tr["user_lines"]))  # what torch's reason names
        t_every = set(tr["user_lines"])  # and every other guard of the failed entries false too
        accept = t_lines | t_every | set(tr.get("user_chain") or [])
        torch_lines |= {f"R:{x}" for x in t_lines}
        evs = sl_rec.pop(tr["compile_id"], [])
        info = {"compile_id": tr["compile_id"], "shape": tr["shape"], "torch": sorted(t_lines)}
        if not evs:
            info["problem"] = "missing event"
            cats.append("missing event")
            row["events"].append(info)
            continue
        user, lib, writes, size_one_claims = set(), set(), set(), []
        for ev in evs:
            row["leaks"].update(_leaks(ev))
            for item in [ev] + list(ev.get("guards") or []) + list(ev.get("also") or []):
                w = _where(item, model_dir)
                if w:
                    (user if w[0] == "user" else lib).add(w[1])
                    if str(item.get("detail", "")).startswith("attribute") or \
                            "written here" in str(item.get("why", "")):
                        writes.add(w[1])
            for g in ev.get("guards") or [{"detail": ev.get("detail"), "entry": None}]:
                if g.get("detail") == "size-one":
                    size_one_claims.append(g.get("entry"))
        sl_lines |= {f"R:{x}" for x in user} | {f"R:lib:{x}" for x in lib}
        info.update(shapelint=sorted(user), library=sorted(lib),
                    detail=",".join(sorted({str(ev.get("detail")) for ev in evs})))
        problems = []
        # torch names a tensor attribute that changed (no line), or guards an int attribute of
        # the module where forward reads it (`self.seen_len == 12`): the write shapelint names
        # beside it (the line an earlier call ran that changed it) is an addition, not a wrong line
        attr_entry = any(e["category"].startswith("attribute") or (
            e["category"] == "value" and re.search(r"\bself\.\w+", e["text"].split("#")[0]))
            for e in tr["entries"])
        # torch's innermost frames outside the model's folder (library code, torch's own modules)
        inner_lib = {f"{os.path.basename(x.rsplit(':', 1)[0])}:{x.rsplit(':', 1)[1]}"
                     for x in tr.get("inner") or [] if not x.startswith(f"tests/user_models/{name}/")}
        # where torch names no model-file line at all (a library frame compiled on its own), its
        # innermost frame is the line to name
        lib_ok = inner_lib if not t_lines and not t_every else set()
        torch_lines |= {f"R:lib:{x}" for x in lib_ok}
        writes_ok = writes if attr_entry else set()
        missing = t_lines - user
        if missing:
            # a library file named where torch's guard sits under the user's call into it
            problems.append("library line" if lib else ("wrong line" if user else "no line"))
        if user - accept - writes_ok:
            problems.append("extra line" if t_lines else "line where torch has none")
        if lib - lib_ok and "library line" not in problems:
            problems.append("library line")
        entries = {e["entry"]: e for e in tr["entries"]}
        for entry in size_one_claims:
            te = entries.get(entry) if entry else None
            if te is None or not (te["category"] == "implicit" and te.get("size_one")):
                problems.append("0/1 claimed")
                break
        if problems:
            info["problem"] = ", ".join(problems)
            cats.extend(problems)
        if not t_every.issubset(user):
            if t_every - t_lines - user:
                info["hidden_missed"] = sorted(t_every - t_lines - user)
            row["strict_miss"] = True
        row["events"].append(info)
    for cid, evs in sl_rec.items():
        cats.append("extra event")
        row["events"].append({"compile_id": cid, "shape": evs[0].get("shape"), "torch": [],
                              "shapelint": [], "problem": "extra event"})
    # graph breaks: the model-file line of each (the user's call into library code when the break
    # is there); a break with no model-file frame at all is named by its innermost frame
    t_gb = {b["user_line"] for b in torch_mode["graph_break_events"] if b["user_line"]}
    t_gb_lib = {os.path.basename(b["inner"].rsplit(":", 1)[0]) + ":" + b["inner"].rsplit(":", 1)[1]
                for b in torch_mode["graph_break_events"] if not b["user_line"] and b.get("inner")}
    s_gb, s_gb_lib = set(), set()
    for ev in events:
        if ev.get("kind") == "graph-break":
            w = _where(ev, model_dir)
            if w:
                (s_gb if w[0] == "user" else s_gb_lib).add(w[1])
    torch_lines |= {f"B:{x}" for x in t_gb} | {f"B:lib:{x}" for x in t_gb_lib}
    sl_lines |= {f"B:{x}" for x in s_gb} | {f"B:lib:{x}" for x in s_gb_lib}
    gb_problems = []
    if t_gb - s_gb:
        gb_problems.append("break: library line" if s_gb_lib - t_gb_lib else "break: no line")
    if s_gb - t_gb:
        gb_problems.append("break: extra line")
    if (s_gb_lib - t_gb_lib) and "break: library line" not in gb_problems:
        gb_problems.append("break: extra library line")
    if t_gb_lib - s_gb_lib:
        gb_problems.append("break: missing")
    if gb_problems:
        cats.extend(gb_problems)
        row["events"].append({"graph_breaks": True, "torch": sorted(t_gb | t_gb_lib), "shapelint": sorted(s_gb),
                              "library": sorted(s_gb_lib), "problem": ", ".join(gb_problems)})
    row["torch_lines"], row["sl_lines"] = torch_lines, sl_lines
    if row["sl_compiles"] != row["torch_compiles"]:
        row["problems"].append(f"compiles differ (torch {row['torch_compiles']}, shapelint {row['sl_compiles']})")
    row["categories"] = sorted(set(cats))
    row["match"] = not cats and not any(p.startswith(("run failed", "target error")) for p in row["problems"])
    row["leaks"] = sorted(row["leaks"])
    return row


def _fmt(lines):
    def key(x):
        kind, _, rest = x.partition(":")
        m = re.search(r":(\d+)$", rest)
        return (kind, "lib:" in rest, rest.rsplit(":", 1)[0], int(m.group(1)) if m else 0)

    out = []
    for x in sorted(lines, key=key):
        kind, _, rest = x.partition(":")
        rest = rest.replace("model.py:", "")
        out.append(f"{'brk ' if kind == 'B' else ''}{rest}")
    return " ".join(out) or "-"


def table(rows):
    head = ("model", "mode", "compiles t/s", "torch's line(s)", "shapelint's line(s)", "match", "mismatch")
    body = []
    for r in rows:
        comp = f"{r['torch_compiles']}/{r.get('sl_compiles')}"
        body.append((r["model"], r["mode"], comp, _fmt(r["torch_lines"]), _fmt(r["sl_lines"]),
                     "yes" if r["match"] else "no", "; ".join(r.get("categories", []) + r["problems"])))
    widths = [max(len(str(x[i])) for x in [head] + body) for i in range(len(head))]
    widths[-1] = len(head[-1])
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(head, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for b in body:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(b, widths)).rstrip())
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="model folders of tests/user_models (default: all)")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("-v", "--verbose", action="store_true", help="print each mismatched event")
    ap.add_argument("--save", help="keep each shapelint run's JSON in this folder")
    ap.add_argument("--load", help="compare the JSON saved by --save instead of running shapelint")
    ap.add_argument("--ref", help="run the harness as committed at this git revision")
    ap.add_argument("--no-static", action="store_true", help="pass --no-static to shapelint run")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    names = [os.path.basename(os.path.normpath(n)) for n in args.names] or model_names()
    pythonpath = export_ref(args.ref) if args.ref and not args.load else None
    work = args.save or tempfile.mkdtemp(prefix="shapelint-user-models-")
    os.makedirs(work, exist_ok=True)
    rows = []
    try:
        for name in names:
            with open(os.path.join(MODELS, name, "measured.json")) as fh:
                measured = json.load(fh)
            for mode in modes:
                if mode not in measured["modes"]:
                    print(f"{name} [{mode}]: not measured (run tests/user_models/measure.py)", file=sys.stderr)
                    continue
                path = os.path.join(args.load or work, f"{name}.{mode}.json")
                if args.load:
                    with open(path) as fh:
                        doc = json.load(fh)
                else:
                    doc = run_shapelint(name, mode, path, pythonpath, args.no_static)
                    if args.save:
                        with open(path, "w") as fh:
                            json.dump(doc, fh)
                row = compare(name, mode, measured["modes"][mode], doc)
                rows.append(row)
                print(f"{name} [{mode}]: {'match' if row['match'] else 'MISMATCH'} "
                      f"({doc.get('_seconds', '?')}s)", file=sys.stderr, flush=True)
    finally:
        if pythonpath:
            shutil.rmtree(pythonpath, ignore_errors=True)
        if not args.save and not args.load:
            shutil.rmtree(work, ignore_errors=True)
    print(table(rows))
    if args.verbose:
        for r in rows:
            bad = [e for e in r["events"] if e.get("problem")]
            if bad or r["leaks"]:
                names = f"  names shown: {', '.join(r['leaks'])}" if r["leaks"] else ""
                print(f"\n{r['model']} [{r['mode']}]{names}")
            for e in bad:
                where = "graph breaks" if e.get("graph_breaks") else f"{e['compile_id']} at {e.get('shape')}"
                lib = f" + library {e['library']}" if e.get("library") else ""
                hidden = f" (failed too, unnamed by torch: {e['hidden_missed']})" if e.get("hidden_missed") else ""
                print(f"  {where}: torch {e['torch'] or '-'} / shapelint {e.get('shapelint') or '-'}{lib} "
                      f"[{e.get('detail', '')}] -> {e['problem']}{hidden}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([dict(r, torch_lines=sorted(r["torch_lines"]), sl_lines=sorted(r["sl_lines"]))
                       for r in rows], fh, indent=1)
    matched = sum(r["match"] for r in rows)
    strict = sum(r["match"] and not r.get("strict_miss") for r in rows)
    print(f"also naming every other failed guard of the failed entries: {strict}/{len(rows)}")
    print(f"TOTAL matched={matched}/{len(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
