"""`shapelint run` on every labelled case, against what torch measurably did (measured.json).

The cases are tests/cases/shared (or ../shared/cases) and tests/cases/real; both carry
measured.json. For each case and mode (dynamic auto = measured "none", dynamic true = "true")
it runs `shapelint run --model model.py:build --inputs model.py:inputs --batch-sizes
1,2,3,4,8,17` and prints:
  - compile counts vs torch's (must match exactly): measured.json, taken with torch's
    structured trace attached as the harness has it; a data-dependent case's count depends on
    its random inputs, so one whose measured.json was taken with another seed is compared with
    torch's own count in the bare loop of this run (same seed), marked ok*,
  - the share of expected lines confirmed: the labelled lines (triggered_by_batch_variation,
    default true) that torch implicated in that mode when the case was measured (measured.json
    `check`; a label torch did not act on in a mode cannot be confirmed in it), and any decoy
    line the harness blamed,
  - the wall time of `shapelint run` over a bare loop (a fresh process that compiles the same
    model and calls it at the same shapes), measured side by side, alternating.

    python bench/harness.py [--cases a04,b45] [--modes auto,true] [--cases-dir DIR ...]
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
from _cases import REPO, load_cases  # noqa: E402

BATCHES = [1, 2, 3, 4, 8, 17]
MODE_KEY = {"auto": "none", "true": "true"}
BARE = """
import sys, importlib.util, torch
spec = importlib.util.spec_from_file_location("model", sys.argv[1])
sys.path.insert(0, sys.argv[2])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
torch.manual_seed(0)
model = m.build()
from torch._dynamo import utils
utils.set_compilation_metrics_limit(100000)
c = torch.compile(model, backend="eager", dynamic={dynamic})
for b in {batches}:  # grad mode on, as `shapelint run` (and measure_case.py) replay
    try:
        c(*m.inputs(b))
    except Exception:
        pass
print("COMPILES", len(utils.get_compilation_metrics()))  # every compile, failed ones too
"""


def run_shapelint(case, mode: str, out_json: str):
    cmd = [sys.executable, "-m", "shapelint.cli", "run", "--model", "model.py:build",
           "--inputs", "model.py:inputs", "--batch-sizes", ",".join(map(str, BATCHES)),
           "--dynamic", mode, "--backend", "eager", "--format", "json", "-o", out_json, "--no-cache",
           "--seed", "0", "--seed-once"]  # as measure_case.py: seed 0, then the shapes in order
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=case.path, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    try:
        with open(out_json) as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        doc = None
    return doc, wall, proc


def run_bare(case, mode: str):
    """Wall time of a bare compile loop, and torch's own compile count in it."""
    dynamic = {"auto": "None", "true": "True"}[mode]
    code = BARE.format(dynamic=dynamic, batches=BATCHES)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, os.path.join(case.path, "model.py"), case.path],
                          cwd=case.path, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    counted = [ln.split()[1] for ln in proc.stdout.splitlines() if ln.startswith("COMPILES ")]
    return wall, int(counted[-1]) if counted else None


def torch_implicated(case, mode: str):
    """The labelled lines torch implicated in ``mode`` when the case was measured (None when
    measured.json has no check for the mode)."""
    check = ((case.measured or {}).get("case", {}).get("check") or {}).get(mode)
    if not check:
        return None
    return {f["at"] for f in check.get("findings", []) if f.get("confirmed")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", help="comma separated case id prefixes")
    ap.add_argument("--modes", default="auto,true")
    ap.add_argument("--cases-dir", action="append",
                    help="a folder of cases (repeatable; default: the shared cases and tests/cases/real)")
    args = ap.parse_args(argv)
    dirs = args.cases_dir or [None, os.path.join(REPO, "tests", "cases", "real")]
    cases = [c for d in dirs for c in load_cases(d)]
    if args.cases:
        wanted = args.cases.split(",")
        cases = [c for c in cases if any(c.id.startswith(w) for w in wanted)]
    modes = args.modes.split(",")
    tmp = tempfile.mkdtemp(prefix="shapelint-bench-")
    # run each case outside the repository: its shapelint.toml ignores everything under tests/
    import shutil

    for case in cases:
        copy = os.path.join(tmp, "cases", os.path.basename(case.path))
        shutil.copytree(case.path, copy, ignore=shutil.ignore_patterns("__pycache__", ".shapelint_cache"))
        case.path = copy
    count_ok = count_all = measured_ok = 0
    confirmed = expected = 0
    decoys_blamed = 0
    t_harness = t_bare = 0.0
    for i, case in enumerate(cases):
        for mode in modes:
            measured = case.measured_mode(MODE_KEY[mode])
            out_json = os.path.join(tmp, f"{case.id}-{mode}.json")
            # alternate the order so that machine noise hits both sides alike
            if i % 2:
                bare, torch_count = run_bare(case, mode)
                doc, wall, proc = run_shapelint(case, mode, out_json)
            else:
                doc, wall, proc = run_shapelint(case, mode, out_json)
                bare, torch_count = run_bare(case, mode)
            t_harness += wall
            t_bare += bare
            if doc is None:
                print(f"FAIL  {case.id} [{mode}]: no report; {proc.stderr.strip()[-300:]}")
                count_all += 1
                continue
            target = doc["targets"][0]
            got, want = target["compiles"], measured.get("compiles")
            count_all += 1
            # torch's count: measured.json (taken with its structured trace attached, as the
            # harness has), or, for a data-dependent case whose inputs depend on the seed, the
            # bare loop of this run (same seed; it counts without a trace handler attached)
            count_ok += got == want or got == torch_count
            measured_ok += got == want
            mark = "ok " if got == want else ("ok*" if got == torch_count else "DIFF")
            # lines the harness blamed: every place of every event (failed guards, the calls in
            # a value guard's stack, attribute writes), benign specializations aside
            blamed = set()
            for ev in target.get("events", []):
                if ev["kind"] == "specialization" and ev.get("benign"):
                    continue
                for item in [ev] + ev.get("guards", []) + ev.get("also", []):
                    if item.get("path") and item.get("line"):
                        blamed.add((os.path.basename(item["path"]), item["line"]))
            # a line is confirmed by an event blamed on it, or by a finding there that the
            # join confirmed (a state write is confirmed by the guard on its later read)
            for f in doc["findings"]:
                if f.get("status") == "confirmed":
                    blamed.add((os.path.basename(f["path"]), f["line"]))
            exp = [e for e in case.expected if e.get("triggered_by_batch_variation", True)]
            implicated = torch_implicated(case, MODE_KEY[mode])
            if implicated is not None:
                exp = [e for e in exp if f"{e['file']}:{e['line']}" in implicated]
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
            print(f"{mark} {case.id:<34} [{mode:<4}] compiles {got} (torch {torch_count}, measured.json {want}) "
                  f"confirmed {len(hit)}/{len(exp)} harness {wall:5.2f}s bare {bare:5.2f}s{extra}",
                  flush=True)
    share = confirmed / expected if expected else 1.0
    print(f"compile counts equal torch's: {count_ok}/{count_all} (measured.json: {measured_ok}; "
          f"ok* = only the bare loop of this run, same seed: {count_ok - measured_ok})")
    print(f"expected lines confirmed: {confirmed}/{expected} = {share:.3f}; decoy lines blamed: {decoys_blamed}")
    print(f"wall time: shapelint run {t_harness:.1f}s, bare loop {t_bare:.1f}s")
    print(f"TOTAL counts_equal={count_ok}/{count_all} confirmed={share:.3f} decoys_blamed={decoys_blamed} "
          f"time_ratio={t_harness / t_bare if t_bare else float('nan'):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
