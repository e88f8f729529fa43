"""`shapelint run` on every labelled case, against what torch measurably did (measured.json).

For each case and mode (dynamic auto = measured "none", dynamic true = "true") it runs
`shapelint run --model model.py:build --inputs model.py:inputs --batch-sizes 1,2,3,4,8,17`
and prints:
  - compile counts vs measured.json (must match exactly),
  - the share of expected lines (triggered_by_batch_variation, default true) that the harness
    confirmed, and any decoy line it blamed,
  - the wall time of `shapelint run` over a bare loop (a fresh process that compiles the same
    model and calls it at the same shapes), measured side by side, alternating.

    python bench/harness.py [--cases a04,b45] [--modes auto,true] [--cases-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cases import load_cases  # noqa: E402

BATCHES = [1, 2, 3, 4, 8, 17]
MODE_KEY = {"auto": "none", "true": "true"}
BARE = """
import sys, importlib.util, torch
spec = importlib.util.spec_from_file_location("model", sys.argv[1])
sys.path.insert(0, sys.argv[2])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
model = m.build()
c = torch.compile(model, backend="eager", dynamic={dynamic})
for b in {batches}:
    try:
        with torch.no_grad():
            c(*m.inputs(b))
    except Exception:
        pass
"""


def run_shapelint(case, mode: str, out_json: str):
    cmd = [sys.executable, "-m", "shapelint.cli", "run", "--model", "model.py:build",
           "--inputs", "model.py:inputs", "--batch-sizes", ",".join(map(str, BATCHES)),
           "--dynamic", mode, "--backend", "eager", "--format", "json", "-o", out_json, "--no-cache"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=case.path, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    try:
        with open(out_json) as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        doc = None
    return doc, wall, proc


def run_bare(case, mode: str) -> float:
    dynamic = {"auto": "None", "true": "True"}[mode]
    code = BARE.format(dynamic=dynamic, batches=BATCHES)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, os.path.join(case.path, "model.py"), case.path],
                   cwd=case.path, capture_output=True)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", help="comma separated case id prefixes")
    ap.add_argument("--modes", default="auto,true")
    ap.add_argument("--cases-dir")
    args = ap.parse_args(argv)
    cases = load_cases(args.cases_dir)
    if args.cases:
        wanted = args.cases.split(",")
        cases = [c for c in cases if any(c.id.startswith(w) for w in wanted)]
    modes = args.modes.split(",")
    tmp = tempfile.mkdtemp(prefix="shapelint-bench-")
    count_ok = count_all = 0
    confirmed = expected = 0
    decoys_blamed = 0
    t_harness = t_bare = 0.0
    for i, case in enumerate(cases):
        for mode in modes:
            measured = case.measured_mode(MODE_KEY[mode])
            out_json = os.path.join(tmp, f"{case.id}-{mode}.json")
            # alternate the order so that machine noise hits both sides alike
            if i % 2:
                bare = run_bare(case, mode)
                doc, wall, proc = run_shapelint(case, mode, out_json)
            else:
                doc, wall, proc = run_shapelint(case, mode, out_json)
                bare = run_bare(case, mode)
            t_harness += wall
            t_bare += bare
            if doc is None:
                print(f"FAIL  {case.id} [{mode}]: no report; {proc.stderr.strip()[-300:]}")
                count_all += 1
                continue
            target = doc["targets"][0]
            got, want = target["compiles"], measured.get("compiles")
            count_all += 1
            count_ok += got == want
            mark = "ok " if got == want else "DIFF"
            # lines the harness blamed
            blamed = set()
            for key in ("recompiles", "specializations", "graph_breaks", "compile_errors"):
                for ev in target.get(key, []):
                    if ev.get("path") and ev.get("line"):
                        blamed.add((os.path.basename(ev["path"]), ev["line"]))
            # a line is confirmed by an event blamed on it, or by a finding there that the
            # join confirmed (a state write is confirmed by the guard on its later read)
            for f in doc["findings"]:
                if f.get("status") == "confirmed":
                    blamed_or_confirmed = (os.path.basename(f["path"]), f["line"])
                    blamed.add(blamed_or_confirmed)
            exp = [e for e in case.expected if e.get("triggered_by_batch_variation", True)]
            hit = [e for e in exp if (e["file"], e["line"]) in blamed]
            confirmed += len(hit)
            expected += len(exp)
            bad = [d for d in case.decoys if (d["file"], d["line"]) in blamed]
            decoys_blamed += len(bad)
            extra = ""
            if len(hit) < len(exp):
                extra += f" unconfirmed={[(e['file'], e['line']) for e in exp if e not in hit]}"
            if bad:
                extra += f" DECOYS_BLAMED={[(d['file'], d['line']) for d in bad]}"
            print(f"{mark} {case.id:<34} [{mode:<4}] compiles {got} (measured {want}) "
                  f"confirmed {len(hit)}/{len(exp)} harness {wall:5.2f}s bare {bare:5.2f}s{extra}",
                  flush=True)
    share = confirmed / expected if expected else 1.0
    print(f"compile counts equal: {count_ok}/{count_all}")
    print(f"expected lines confirmed: {confirmed}/{expected} = {share:.3f}; decoy lines blamed: {decoys_blamed}")
    print(f"wall time: shapelint run {t_harness:.1f}s, bare loop {t_bare:.1f}s")
    print(f"TOTAL counts_equal={count_ok}/{count_all} confirmed={share:.3f} decoys_blamed={decoys_blamed} "
          f"time_ratio={t_harness / t_bare if t_bare else float('nan'):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
