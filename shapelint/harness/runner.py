"""The parent side: one subprocess per target, with a timeout, and a result that survives the
child hanging, raising, running out of memory or crashing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional

from shapelint.finding import relpath
from shapelint.harness.coverage import merge
from shapelint.harness.target import TargetSpec

SIGNALS = {signal.SIGKILL: "killed (SIGKILL; out of memory?)", signal.SIGSEGV: "segmentation fault",
           signal.SIGABRT: "aborted", signal.SIGBUS: "bus error"}


def _rel_paths(records: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    out = []
    for r in records:
        r = dict(r)
        if r.get("path"):
            r["abspath"] = r["path"]
            r["path"] = relpath(r["path"])
        out.append(r)
    return out


def run_target(spec: TargetSpec, on_shape: Optional[Callable[[Dict[str, Any]], None]] = None,
               python: Optional[str] = None) -> Dict[str, Any]:
    """Replay one target in a fresh interpreter; always returns a result dict."""
    workdir = tempfile.mkdtemp(prefix="shapelint-run-")
    spec_path = os.path.join(workdir, "spec.json")
    out_path = os.path.join(workdir, "out.jsonl")
    err_path = os.path.join(workdir, "stderr.txt")
    with open(spec_path, "w") as fh:
        json.dump(spec.to_json(), fh)
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.pop("TORCH_COMPILE_JOB_ID", None)
    pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([pkg_root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    started = time.perf_counter()
    error: Optional[str] = None
    with open(err_path, "w") as err:
        proc = subprocess.Popen([python or sys.executable, "-m", "shapelint.harness.worker",
                                 spec_path, out_path], cwd=spec.base_dir, env=env,
                                stdout=err, stderr=err, start_new_session=True)
        seen = 0
        deadline = started + spec.timeout
        while True:
            try:
                proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            seen = _poll(out_path, seen, on_shape)
            if time.perf_counter() > deadline:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    proc.kill()
                proc.wait()
                error = f"timed out after {spec.timeout:g} s"
                break
        _poll(out_path, seen, on_shape)
    records = _read(out_path)
    result = assemble(spec, records)
    result["seconds"] = round(time.perf_counter() - started, 2)
    if error is None and proc.returncode not in (0, None):
        fatal = next((r for r in records if r.get("type") == "fatal"), None)
        if fatal is not None:
            error = fatal["error"]
        elif proc.returncode < 0:
            sig = -proc.returncode
            error = f"worker crashed: {SIGNALS.get(sig, f'signal {sig}')}"
        else:
            tail = _tail(err_path)
            error = f"worker exited with status {proc.returncode}" + (f": {tail}" if tail else "")
    if error is None and not any(r.get("type") == "done" for r in records):
        error = "worker stopped before finishing"
    if error:
        result["error"] = error
        result["failed"] = True
    return result


def _read(path: str) -> List[Dict[str, Any]]:
    out = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass  # a line cut by a crash
    except OSError:
        pass
    return out


def _poll(path: str, seen: int, on_shape) -> int:
    if on_shape is None:
        return seen
    records = [r for r in _read(path) if r.get("type") == "shape"]
    for r in records[seen:]:
        on_shape(r["row"])
    return len(records)


def _tail(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = [ln.strip() for ln in fh.read().splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def assemble(spec: TargetSpec, records: List[Dict[str, Any]]) -> Dict[str, Any]:
    meta = next((r for r in records if r.get("type") == "meta"), {})
    rows = [r["row"] for r in records if r.get("type") == "shape"]
    summaries = [r["summary"] for r in records if "summary" in r]
    summary = summaries[-1] if summaries else {}
    backend = spec.backend if not spec.mode else "inductor"
    result: Dict[str, Any] = {
        "name": spec.name, "model": spec.model, "torch_version": meta.get("torch_version"),
        "device": meta.get("device"), "backend": backend, "dynamic": spec.dynamic,
        "mode": spec.mode, "fullgraph": spec.fullgraph, "trace_source": meta.get("trace_source"),
        "shapes": [{"batch": r["batch"], "seq_len": r["seq_len"]} for r in rows],
        "shapes_planned": spec.shapes(),
        "compiles": summary.get("compiles", 0),
        "per_shape": rows,
        "frames": [dict(f, path=relpath(f["path"]) if f.get("path") else f.get("path"))
                   for f in summary.get("frames", [])],
        "recompiles": _rel_paths(summary.get("recompiles", [])),
        "specializations": _rel_paths(summary.get("specializations", [])),
        "graph_breaks": _rel_paths(summary.get("graph_breaks", [])),
        "compile_errors": _rel_paths(summary.get("compile_errors", [])),
        # user lines the compiled region ran, {path: lines}; each shape record adds its new ones
        "executed": {relpath(p): ls for p, ls in
                     merge([r.get("executed") or {} for r in records]).items()},
        "max_compiles": spec.max_compiles,
        "error": None, "failed": False,
    }
    problems = []
    if spec.max_compiles is not None and result["compiles"] > spec.max_compiles:
        problems.append(f"{result['compiles']} compiles exceed max-compiles {spec.max_compiles}")
    if spec.fullgraph and result["graph_breaks"]:
        problems.append("graph break under fullgraph")
    shape_errors = [r for r in rows if r.get("error")]
    if shape_errors:
        problems.append(f"{len(shape_errors)} shape(s) failed")
    result["problems"] = problems
    result["failed"] = bool(problems)
    return result
