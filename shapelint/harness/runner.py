"""The parent side: one subprocess per target, with a timeout, and a result that survives the
child hanging, raising, running out of memory or crashing.

Nothing is left behind: the worker's work folder (spec, records, TORCH_TRACE logs) is removed
when the target ends, whatever ended it; the worker, its process group and every process it
started (a new session's too: see shapelint.harness.procs) are killed once it ends; a worker
whose parent dies ends itself and removes its folder; what the target prints is drained from a
pipe and only its last lines are kept, so a target that floods stdout fills neither memory nor
the disk. :func:`stop_all` ends every worker still running (Ctrl-C, SIGTERM, SIGHUP)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from typing import Any, Callable, Dict, List, Optional, Tuple

from shapelint.finding import FALLBACK, GRAPH_BREAK, Event, Frame, ShapeRow, TargetResult, relpath
from shapelint.schema import SchemaError, load
from shapelint.harness import procs
from shapelint.harness.blame import mark_benign, varying_sources
from shapelint.harness.coverage import merge
from shapelint.harness.target import TargetSpec

SIGNALS: Dict[int, str] = {signal.SIGKILL: "killed (SIGKILL; out of memory?)", signal.SIGSEGV: "segmentation fault",
           signal.SIGABRT: "aborted", signal.SIGBUS: "bus error"}
#: what is kept of a worker's own output (stdout and stderr together)
TAIL_BYTES = 16 * 1024

_LIVE: Dict[int, Tuple[subprocess.Popen, str]] = {}
_LIVE_LOCK = threading.Lock()


def stop_all() -> None:
    """Kill every worker still running, with everything it started, and remove its folder
    (here: the command may exit before the thread that ran the worker has cleaned up)."""
    with _LIVE_LOCK:
        live = list(_LIVE.values())
    for proc, workdir in live:
        _end(proc, workdir)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        shutil.rmtree(workdir, ignore_errors=True)


def _end(proc: subprocess.Popen, workdir: str) -> None:
    """The worker, its process group and every process it started (procs.end_worker)."""
    procs.end_worker(proc.pid, workdir)


class _Tail:
    """Drains a pipe on a thread, keeping the last TAIL_BYTES."""

    def __init__(self, pipe) -> None:
        self.chunks: deque = deque()
        self.size = 0
        self.dropped = 0
        self.thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self.thread.start()

    def _drain(self, pipe) -> None:
        try:
            while True:
                chunk = pipe.read1(65536) if hasattr(pipe, "read1") else pipe.read(65536)
                if not chunk:
                    break
                self.chunks.append(chunk)
                self.size += len(chunk)
                while self.size - len(self.chunks[0]) >= TAIL_BYTES and len(self.chunks) > 1:
                    old = self.chunks.popleft()
                    self.size -= len(old)
                    self.dropped += len(old)
        except (OSError, ValueError):
            pass
        finally:
            try:
                pipe.close()
            except OSError:
                pass

    def text(self) -> str:
        self.thread.join(timeout=5)
        data = b"".join(self.chunks)[-TAIL_BYTES:]
        return data.decode("utf-8", "replace")


def run_target(spec: TargetSpec, on_shape: Optional[Callable[[ShapeRow], None]] = None,
               python: Optional[str] = None) -> TargetResult:
    """Replay one target in a fresh interpreter; always returns a result."""
    workdir = tempfile.mkdtemp(prefix="shapelint-run-")
    try:
        return _run_in(workdir, spec, on_shape, python)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run_in(workdir: str, spec: TargetSpec, on_shape, python) -> TargetResult:
    spec_path = os.path.join(workdir, "spec.json")
    out_path = os.path.join(workdir, "out.jsonl")
    with open(spec_path, "w") as fh:
        json.dump(spec.to_json(), fh)
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.pop("TORCH_COMPILE_JOB_ID", None)
    env[procs.MARK] = workdir  # TORCH_TRACE logs go here, and go with it; marks its processes
    env[procs.PARENT] = str(os.getpid())  # a worker whose parent is gone ends itself
    if spec.backend == "inductor" or spec.mode:  # Inductor's kernel cache stays where torch keeps it
        import getpass

        try:
            user = getpass.getuser()
        except Exception:  # noqa: BLE001
            user = "user"
        env.setdefault("TORCHINDUCTOR_CACHE_DIR",
                       os.path.join(tempfile.gettempdir(), f"torchinductor_{user}"))
    env["TMPDIR"] = workdir  # so do the temporary files of torch and of the model
    pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["SHAPELINT_CWD"] = os.getcwd()  # the worker names folders as the user sees them
    env["PYTHONPATH"] = os.pathsep.join([pkg_root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    started = time.perf_counter()
    error: Optional[str] = None
    proc = subprocess.Popen([python or sys.executable, "-m", "shapelint.harness.worker",
                             spec_path, out_path], cwd=spec.base_dir, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    with _LIVE_LOCK:
        _LIVE[proc.pid] = (proc, workdir)
    tail = _Tail(proc.stdout)
    reader = _Reader(out_path)
    try:
        deadline = started + spec.timeout
        while True:
            try:
                proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            reader.poll(on_shape)
            if time.perf_counter() > deadline:
                _end(proc, workdir)
                proc.wait()
                error = f"timed out after {spec.timeout:g} s"
                break
    except BaseException:
        _end(proc, workdir)
        proc.wait()
        raise
    finally:
        _end(proc, workdir)  # whatever the target started ends with it, a new session's too
        with _LIVE_LOCK:
            _LIVE.pop(proc.pid, None)
    reader.poll(on_shape)
    records = reader.records
    output = tail.text()
    if error is None and proc.returncode not in (0, None):
        fatal = next((r for r in records if r.get("type") == "fatal"), None)
        if fatal is not None:
            error = fatal["error"]
        elif proc.returncode < 0:
            sig = -proc.returncode
            error = f"worker crashed: {SIGNALS.get(sig, f'signal {sig}')}"
        else:
            last = _last_line(output)
            error = f"worker exited with status {proc.returncode}" + (f": {last}" if last else "")
    elif error is None:
        fatal = next((r for r in records if r.get("type") == "fatal"), None)
        if fatal is not None:
            error = fatal["error"]
    if error is None and not any(r.get("type") == "done" for r in records):
        error = "worker stopped before finishing"
    try:
        result = assemble(spec, records, error)
    except (SchemaError, KeyError, TypeError, AttributeError) as exc:
        result = assemble(spec, [], f"the worker wrote a record shapelint cannot read: {exc}")
    result.seconds = round(time.perf_counter() - started, 2)
    if error:
        result.output_tail = output[-2000:]
    return result


class _Reader:
    """Reads the worker's records as they are appended (a line cut by a crash is skipped)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.pos = 0
        self.records: List[Dict[str, Any]] = []
        self.partial = ""

    def poll(self, on_shape) -> None:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as fh:
                fh.seek(self.pos)
                data = fh.read()
                self.pos = fh.tell()
        except OSError:
            return
        data = self.partial + data
        lines = data.split("\n")
        self.partial = lines.pop()
        for line in lines:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            self.records.append(rec)
            if on_shape is not None and rec.get("type") == "shape":
                try:
                    on_shape(load(ShapeRow, rec.get("row"), "row"))
                except SchemaError:
                    pass  # progress only: assemble() reports the record as the target's error


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


#: shapelint's own package: no event, executed line or source file may point into it
OWN_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: what an event that torch (or an error) placed in shapelint's own code says instead
OWN_NOTE = "raised inside shapelint's harness, not in your code (please report it)"


def is_own(path: Optional[str]) -> bool:
    """Whether ``path`` is a file of shapelint itself."""
    return bool(path) and os.path.abspath(path or "").startswith(OWN_PACKAGE + os.sep)


def not_ours(ev: Event) -> Event:
    """The one filter that keeps shapelint's own files out of what a target reports: a place
    in them is the harness's, never the user's code, so it is dropped (the event stays, with a
    note), and no finding can be made there (the static pass checks only the files events
    point into and the replay executed, both filtered here)."""
    if is_own(ev.abspath or ev.path):
        ev.path = ev.abspath = None
        ev.line = None
        ev.source = ""
        ev.note = ev.note or OWN_NOTE
    for g in ev.guards:
        if is_own(g.abspath or g.path):
            g.path = g.abspath = None
            g.line = None
            g.source = ""
            g.note = g.note or OWN_NOTE
        g.callers = [p for p in g.callers if not is_own(p.abspath or p.path)]
    ev.also = [p for p in ev.also if not is_own(p.abspath or p.path)]
    return ev


def _display(ev: Event) -> Event:
    """Paths shown relative to the working directory (absolute ones kept in ``abspath``)."""
    if ev.abspath:
        ev.path = relpath(ev.abspath)
    items: List[Any] = [*ev.guards, *ev.also]  # each has path and abspath
    for item in items:
        if item.abspath:
            item.path = relpath(item.abspath)
    return ev


def assemble(spec: TargetSpec, records: List[Dict[str, Any]], error: Optional[str] = None) -> TargetResult:
    meta: Dict[str, Any] = next((r for r in records if r.get("type") == "meta"), {})
    shapes = [r for r in records if r.get("type") == "shape"]
    rows = [load(ShapeRow, r["row"], "row") for r in shapes]
    done = next((r for r in records if r.get("type") == "done"), None)
    last: Dict[str, Any] = done or (shapes[-1] if shapes else {})
    events = [_display(not_ours(Event.from_json(e))) for r in shapes for e in r.get("events", [])]
    varying = varying_sources(r.get("inputs") or {} for r in shapes)
    mark_benign(events, varying)
    backend = spec.backend if not spec.mode else "inductor"
    result = TargetResult(
        name=spec.name, model=spec.model, torch_version=meta.get("torch_version"),
        device=meta.get("device"), backend=backend, dynamic=spec.dynamic, mode=spec.mode,
        fullgraph=spec.fullgraph, trace_source=meta.get("trace_source"),
        shapes=[r.shape for r in rows],
        shapes_planned=spec.shapes(), compiles=int(last.get("compiles") or 0), per_shape=rows,
        frames=[dataclasses.replace(f, path=relpath(f.path) if f.path else f.path)
                for f in (load(Frame, f, "frame") for f in last.get("frames", []))],
        sources=[f for r in records if r.get("type") == "sources"
                 for f in r.get("files") or [] if isinstance(f, str) and not is_own(f)],
        events=events,
        executed={relpath(p): ls for p, ls in merge([r.get("executed") or {} for r in records]).items()
                  if not is_own(p)},
        varying=sorted(varying), max_compiles=spec.max_compiles, error=error,
        module_mode=next((r.get("module_mode") for r in records if r.get("type") == "model"), None))
    result.problems = verdict(spec, result)
    return result


def verdict(spec: TargetSpec, result: TargetResult) -> List[str]:
    """Everything that fails a target, in one place: the reporters only read it."""
    problems: List[str] = []
    if result.error:
        problems.append(result.error)
    if spec.max_compiles is not None and result.compiles > spec.max_compiles:
        problems.append(f"{result.compiles} compiles exceed max-compiles {spec.max_compiles}")
    if spec.fullgraph and result.of_kind(GRAPH_BREAK):
        problems.append("graph break under fullgraph")
    for ev in result.of_kind(FALLBACK):
        where = f" ({ev.path}:{ev.line})" if ev.path and ev.line else ""
        problems.append(f"fell back to eager{where}: {ev.reason}")
    shape_errors = [r for r in result.per_shape if r.error]
    if shape_errors:
        problems.append(f"{len(shape_errors)} shape(s) failed")
    return problems
