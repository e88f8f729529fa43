"""Speed of the static pass on large real trees, measured side by side in one run.

Trees: the installed torch package's Python source, and a transformers source tree (its wheel
is downloaded into bench/_downloads on first use; never committed). For each tree it times:
  ast floor       ast.parse of every file, one process (the floor)
  libcst parse    libcst.parse_module of every file, one process (what a naive linter pays)
  cold            `shapelint check TREE` with an empty cache (interpreter start-up included)
  warm            the same again, cache filled, nothing changed
  pre-commit      `shapelint check` on 5 files of the tree, cache warm, from the tree's root
and prints cold/ast-floor, the warm and pre-commit wall seconds, and the cold check's peak
memory. Floor and cold run
alternately ``--repeat`` times and the best of each is kept: on a shared machine one sample
of either can be 50% slow.

    python bench/speed.py [--trees torch,transformers] [--skip-libcst] [--repeat 3]
"""

from __future__ import annotations

import argparse
import ast
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
DOWNLOADS = os.path.join(HERE, "_downloads")
TRANSFORMERS = "transformers==4.46.3"


def torch_tree() -> str:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        raise SystemExit("torch is not installed")
    return os.path.dirname(spec.origin)


def transformers_tree() -> str:
    target = os.path.join(DOWNLOADS, "transformers-src")
    if os.path.isdir(os.path.join(target, "transformers")):
        return os.path.join(target, "transformers")
    os.makedirs(DOWNLOADS, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "-d", DOWNLOADS, TRANSFORMERS], check=True)
    wheel = sorted(glob.glob(os.path.join(DOWNLOADS, "transformers-*.whl")))[-1]
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    return os.path.join(target, "transformers")


def py_files(tree: str):
    return sorted(glob.glob(os.path.join(tree, "**", "*.py"), recursive=True))


#: CPU seconds (user+sys) of the last time_ast / shapelint call; the machine is shared, so CPU
#: time is the steadier measure: the cold check's own (its forked walkers included) against
#: the floor's
CPU = {"ast": 0.0, "shapelint": 0.0}


def time_ast(files) -> float:
    c0 = time.process_time()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in files:
            try:
                with open(f, "rb") as fh:
                    ast.parse(fh.read())
            except (SyntaxError, ValueError):
                pass
    CPU["ast"] = time.process_time() - c0
    return time.perf_counter() - t0


def time_libcst(files) -> float:
    import libcst

    t0 = time.perf_counter()
    for f in files:
        try:
            with open(f, encoding="utf-8") as fh:
                libcst.parse_module(fh.read())
        except Exception:  # noqa: BLE001
            pass
    return time.perf_counter() - t0


#: the largest peak resident memory of a shapelint run so far, in MB (the process and the
#: children it forks for the walk, each counted on its own: a walk's share runs beside it)
PEAK_MB = {"cold": 0.0}


def shapelint(args, cwd, label: str = "") -> float:
    # the console script, as users run it (`python -m` would put the tree's own modules,
    # e.g. torch/random.py, in front of the standard library)
    exe = os.path.join(os.path.dirname(sys.executable), "shapelint")
    t0 = time.perf_counter()
    # a regular file: `-o /dev/null` is refused (a device)
    out = os.path.join(tempfile.gettempdir(), f"shapelint-speed-{os.getpid()}.out")
    proc = subprocess.Popen([exe, *args, "--exit-zero", "-o", out], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = proc.stderr.read() if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)  # the child's own peak memory (ru_maxrss, KB)
    wall = time.perf_counter() - t0
    # wait4 reports the child's usage with that of the children it waited for (the walkers)
    CPU["shapelint"] = usage.ru_utime + usage.ru_stime
    proc.returncode = os.waitstatus_to_exitcode(status)
    if label:
        PEAK_MB[label] = max(PEAK_MB.get(label, 0.0), usage.ru_maxrss / 1024)
    if proc.returncode != 0:
        print(f"  shapelint failed ({proc.returncode}): {err.strip()[-500:]}")
    return wall


def bench_tree(name: str, tree: str, skip_libcst: bool, repeat: int = 3) -> None:
    files = py_files(tree)
    lines = 0
    for f in files:
        try:
            with open(f, "rb") as fh:
                lines += fh.read().count(b"\n")
        except OSError:
            pass
    print(f"{name}: {len(files)} files, {lines / 1e6:.2f} M lines ({tree})", flush=True)
    work = tempfile.mkdtemp(prefix="shapelint-speed-")
    # a config beside the work dir so the cache lands there, not in the tree
    cache = os.path.join(work, "cache")
    with open(os.path.join(work, "shapelint.toml"), "w") as fh:
        fh.write(f'cache-dir = "{cache}"\n')
    cfg = ["--config", os.path.join(work, "shapelint.toml")]
    if not skip_libcst:
        print(f"  libcst parse   {time_libcst(files):7.2f} s", flush=True)
    # floor and cold alternate, `repeat` times each, and the best of each is kept (as timeit
    # does): a shared machine's noise only ever adds time. Noise comes in spells, so a floor
    # and the cold run right after it are slowed alike: the median of those pairs' ratios is
    # printed too
    floors, colds, warms = [], [], []
    cpu_floors, cpu_colds, cpu_warms = [], [], []
    for _ in range(repeat):
        floors.append(time_ast(files))
        cpu_floors.append(CPU["ast"])
        shutil.rmtree(cache, ignore_errors=True)
        colds.append(shapelint(["check", tree, *cfg], work, label="cold"))
        cpu_colds.append(CPU["shapelint"])
        warms.append(shapelint(["check", tree, *cfg], work))
        cpu_warms.append(CPU["shapelint"])
        print(f"  ast floor {floors[-1]:7.2f} s   shapelint cold {colds[-1]:7.2f} s   "
              f"warm {warms[-1]:5.2f} s   pair ratio {colds[-1] / floors[-1]:.2f}   "
              f"CPU: floor {cpu_floors[-1]:6.2f} s cold {cpu_colds[-1]:6.2f} s "
              f"warm {cpu_warms[-1]:5.2f} s ratio {cpu_colds[-1] / cpu_floors[-1]:.2f}", flush=True)
    floor, cold, warm = min(floors), min(colds), min(warms)
    cpu_floor, cpu_cold = min(cpu_floors), min(cpu_colds)
    pairs = sorted(c / f for c, f in zip(colds, floors))
    picks = [f for f in files if "def forward" in open(f, encoding="utf-8", errors="ignore").read()][:5]
    rel = [os.path.relpath(p, tree) for p in picks]
    shapelint(["check", *rel, *cfg], tree)  # fill the cache for this file set
    pre = min(shapelint(["check", *rel, *cfg], tree) for _ in range(repeat))
    print(f"  pre-commit (5 files, warm) {pre:5.2f} s", flush=True)
    print(f"  RATIO {name} (best of {repeat}): cold/ast-floor = {cold / floor:.2f} "
          f"({cold:.2f} s / {floor:.2f} s; median of the pairs {pairs[len(pairs) // 2]:.2f}), "
          f"warm = {warm:.2f} s, pre-commit = {pre:.2f} s", flush=True)
    print(f"  CPU RATIO {name} (best of {repeat}): cold/ast-floor = {cpu_cold / cpu_floor:.2f} "
          f"({cpu_cold:.2f} CPU-s / {cpu_floor:.2f} CPU-s), warm = {min(cpu_warms):.2f} CPU-s",
          flush=True)
    print(f"  PEAK MEMORY {name}: cold check {PEAK_MB['cold']:.0f} MB (the main process)", flush=True)
    PEAK_MB["cold"] = 0.0
    shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", default="torch,transformers")
    ap.add_argument("--skip-libcst", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="runs of floor and cold; best kept")
    args = ap.parse_args(argv)
    for name in args.trees.split(","):
        tree = {"torch": torch_tree, "transformers": transformers_tree}[name]()
        bench_tree(name, tree, args.skip_libcst, max(1, args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
