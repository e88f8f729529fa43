"""The harness side of ``shapelint run`` (the command itself is ``shapelint.cli.cmd_run``):
which targets to replay (config or command line, ``--target``, ``--shard K/N``), replaying
them (``-j N`` side by side, each in its own subprocess), live progress, Ctrl-C, and the files
the static pass must check for the join."""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Tuple

from shapelint.config import ConfigError, Settings, check_target_value, validate_target
from shapelint.finding import ShapeRow, TargetResult, shape_text
from shapelint.harness.target import TargetError, TargetSpec, import_dirs, source_file
from shapelint.report.escape import clean


def _ints(text: Optional[str], flag: str) -> Optional[List[int]]:
    if text is None:
        return None
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise ConfigError(f"{flag} expects comma separated integers, got `{text}`") from exc
    if not values or any(v <= 0 for v in values):
        raise ConfigError(f"command line: `{flag}` expects positive integers, got `{text}`")
    return values


def parse_shard(text: Optional[str]) -> Optional[Tuple[int, int]]:
    """``K/N`` (1-based): the K-th of N deterministic shares of the targets."""
    if not text:
        return None
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError as exc:
        raise ConfigError(f"--shard expects K/N such as 2/4, got `{text}`") from exc
    if n < 1 or not 1 <= k <= n:
        raise ConfigError(f"--shard expects K/N with 1 <= K <= N, got `{text}`")
    return k, n


def shard(specs: List[TargetSpec], which: Optional[Tuple[int, int]]) -> List[TargetSpec]:
    """Targets i (in config order) with i % N == K - 1: the same share on every machine."""
    if which is None:
        return specs
    k, n = which
    return [s for i, s in enumerate(specs) if i % n == k - 1]


def build_targets(args: argparse.Namespace, settings) -> List[TargetSpec]:
    overrides: Dict[str, Any] = {}
    for flag, key in (("batch_sizes", "batch-sizes"), ("seq_lens", "seq-lens")):
        v = _ints(getattr(args, flag, None), "--" + key)
        if v is not None:
            overrides[key] = v
    for flag, key in (("dynamic", "dynamic"), ("backend", "backend"), ("device", "device"),
                      ("mode", "mode"), ("fullgraph", "fullgraph"), ("max_compiles", "max-compiles"),
                      ("timeout", "timeout"), ("no_grad", "no-grad"),
                      ("memory_limit_mb", "memory-limit-mb"), ("suggest", "suggest"),
                      ("seed", "seed"), ("seed_each_shape", "seed-each-shape")):
        v = getattr(args, flag, None)
        if v is not None:
            overrides[key] = v
    if getattr(args, "fail_on", None):
        overrides["fail-on"] = [w.strip() for w in args.fail_on.split(",") if w.strip()]
    for key, value in overrides.items():  # what a flag sets is checked as the key would be
        check_target_value(key, value, f"command line: `--{key}`")
    tables: List[Dict[str, Any]] = []
    if getattr(args, "model", None) or getattr(args, "inputs", None):
        if not (args.model and args.inputs):
            raise ConfigError("--model and --inputs go together")
        table = {"name": args.model.split(":")[-1], "model": args.model, "inputs": args.inputs}
        table.update(overrides)
        tables.append(validate_target(table, "command line", 0))
        tables[0]["_base_dir"] = os.getcwd()
    else:
        tables = [dict(t, **overrides) for t in settings.targets]
        if getattr(args, "target", None):
            names = {t.get("name") for t in tables}
            missing = [n for n in args.target if n not in names]
            if missing:
                raise ConfigError(f"unknown target(s) {', '.join(missing)}; configured: "
                                  f"{', '.join(sorted(n for n in names if n))}")
            tables = [t for t in tables if t.get("name") in args.target]
        if not tables:
            raise ConfigError("no targets: add [[targets]] to shapelint.toml (or "
                              "[[tool.shapelint.targets]] to pyproject.toml), or pass --model and --inputs")
    root, config_dir = project_folders(settings)
    for t in tables:
        t["_import_paths"] = import_dirs(t.get("_base_dir", "."), project_root=root,
                                         config_dir=config_dir)
    try:
        specs = [TargetSpec.from_config(t) for t in tables]
    except TargetError as exc:
        raise ConfigError(str(exc)) from exc
    return shard(specs, parse_shard(getattr(args, "shard", None)))


def project_folders(settings) -> Tuple[str, Optional[str]]:
    """Where a run's ``pkg.module`` targets may live besides their own folder: the project
    root (the config's folder, else the repository holding the working directory, else the
    working directory) with its ``src/``, and the config's folder."""
    from shapelint.config import repository_root

    config_path = getattr(settings, "config_path", None)
    config_dir = os.path.dirname(os.path.abspath(config_path)) if config_path else None
    root = config_dir or repository_root(os.getcwd()) or os.getcwd()
    return root, config_dir


def _say(text: str) -> None:
    """A progress line on stderr: every field from a target cleaned (report/escape.py)."""
    try:
        print(clean(text), file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


class Progress:
    """Live progress on stderr: rich when installed and on a terminal (one target at a time),
    plain lines otherwise (prefixed with the target's name when several run at once)."""

    def __init__(self, total: int, jobs: int = 1, quiet: bool = False) -> None:
        self.total = total
        self.jobs = jobs
        self.quiet = quiet  # --quiet: nothing at all
        self.lock = threading.Lock()
        self._rich = None
        if sys.stderr.isatty() and jobs == 1 and not quiet:
            try:
                from rich.progress import Progress as RichProgress

                self._rich = RichProgress(transient=True)
                self._rich.start()
            except ImportError:
                self._rich = None
        self._task: Any = None

    def start(self, spec: TargetSpec) -> None:
        if self.quiet:
            return
        n = len(spec.shapes())
        with self.lock:
            if self._rich is not None:
                self._task = self._rich.add_task(clean(spec.name), total=n)
            else:
                _say(f"shapelint run: {spec.name}: {n} shapes, backend {spec.backend}, "
                     f"dynamic {spec.dynamic}")

    def shape(self, spec: TargetSpec, row: ShapeRow) -> None:
        if self.quiet:
            return
        with self.lock:
            if self._rich is not None and self._task is not None:
                self._rich.advance(self._task)
            else:
                who = f"{spec.name}: " if self.jobs > 1 else ""
                err = f"  error: {row.error}" if row.error else ""
                eager = "  ran uncompiled (eager)" if row.eager else ""
                _say(f"  {who}{shape_text(row.shape)}: {row.new_compiles} new compile(s) "
                     f"({row.seconds:.2f}s){eager}{err}")

    def note(self, text: str) -> None:
        if self.quiet:
            return
        with self.lock:
            if self._rich is None:
                _say(text)

    def done(self, spec: TargetSpec, result: TargetResult) -> None:
        if self.quiet:
            return
        with self.lock:
            if self._rich is None:
                # --fail-on is judged once the events are joined with the static pass: say so
                # rather than `ok` before a gate fails the target
                verdict = result.verdict if result.failed or not spec.fail_on else \
                    f"--fail-on {','.join(spec.fail_on)} is checked below"
                _say(f"  {spec.name}: {result.compiles} compiles in {result.seconds}s, {verdict}")

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()


class RunInterrupted(Exception):
    """Ctrl-C (or SIGTERM) during the replays: ``results`` are the targets that finished."""

    def __init__(self, results: List[TargetResult], total: int) -> None:
        super().__init__("interrupted")
        self.results = results
        self.total = total


#: open files a replay holds in this process (the worker's output pipe, its record file, the
#: pipes of its start)
FDS_PER_TARGET = 6


def jobs_for_targets(requested: Optional[int], targets: int) -> int:
    """Targets replayed side by side: ``-j`` at most, no more than there are targets, and no
    more than the open-file limit leaves room for (``-j 100`` under ``ulimit -n 40``)."""
    from shapelint.static.parallel import fd_room

    return max(1, min(requested or 1, targets or 1, fd_room(FDS_PER_TARGET)))


def run_targets(specs: List[TargetSpec], jobs: int = 1, quiet: bool = False) -> List[TargetResult]:
    """Replay every target (``jobs`` at a time, each in its own subprocess); results in the
    order of ``specs`` whatever finished first. Ctrl-C stops every worker and raises
    RunInterrupted with the targets that had finished. ``quiet``: no progress on stderr."""
    from shapelint.harness import runner

    jobs = jobs_for_targets(jobs, len(specs))
    progress = Progress(len(specs), jobs, quiet)
    results: List[Optional[TargetResult]] = [None] * len(specs)
    stopping = threading.Event()

    def one(i: int, spec: TargetSpec) -> None:
        if stopping.is_set():
            return
        progress.start(spec)
        def on_shape(row: ShapeRow) -> None:
            progress.shape(spec, row)

        result = runner.run_target(spec, on_shape=on_shape)
        if stopping.is_set():
            return  # killed by the interrupt: not a finished target
        if spec.suggest and not result.error:
            from shapelint.harness.remedy import measure

            result.remedies = measure(spec, result, stopping, say=progress.note)
        results[i] = result
        progress.done(spec, result)

    previous = _stop_signals_as_interrupt()
    try:
        if jobs == 1:
            for i, spec in enumerate(specs):
                one(i, spec)
        else:
            pool = ThreadPoolExecutor(max_workers=jobs)
            futures = [pool.submit(one, i, s) for i, s in enumerate(specs)]
            try:
                for fut in futures:
                    while True:
                        try:
                            fut.result(timeout=0.5)
                            break
                        except TimeoutError:
                            continue
                        except Exception as exc:  # noqa: BLE001 - concurrent.futures.TimeoutError
                            if type(exc).__name__ == "TimeoutError":
                                continue
                            raise
            finally:
                pool.shutdown(wait=not stopping.is_set(), cancel_futures=True)
    except KeyboardInterrupt:
        stopping.set()
        runner.stop_all()
        progress.close()
        raise RunInterrupted([r for r in results if r is not None], len(specs)) from None
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        progress.close()
    return [r for r in results if r is not None]


#: what ends a run as Ctrl-C does: a kill, and the terminal (or the ssh session) going away
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def _stop_signals_as_interrupt() -> Dict[int, Any]:
    """SIGTERM and SIGHUP end a run as Ctrl-C does: what finished is reported, every worker
    and everything it started is stopped, its folder removed (the default action would end
    this process and leave the workers to end themselves). Returns the handlers replaced."""
    def handler(signum, frame):  # noqa: ANN001
        raise KeyboardInterrupt

    previous: Dict[int, Any] = {}
    for signum in STOP_SIGNALS:
        try:
            previous[signum] = signal.signal(signum, handler)
        except ValueError:  # not the main thread
            break
    return previous


def static_paths(specs: List[TargetSpec], results: List[TargetResult]) -> List[str]:
    """Files the static pass checks for the join: each target's module and inputs, its
    ``check-paths``, every file an event points into and every file the replay executed
    (library code included)."""
    paths: List[str] = []
    for spec in specs:
        for ref in (spec.model, spec.inputs):
            try:
                f = source_file(ref, spec.base_dir, spec.import_paths)
            except TargetError:
                f = None
            if f:
                paths.append(f)
        paths.extend(os.path.join(spec.base_dir, p) for p in spec.check_paths)
    for r in results:
        paths.extend(r.sources)  # what the worker imported (a package only it can import)
        for ev in r.events:
            paths.extend(ab for ab, _ in ev.locations())
        paths.extend(r.executed)
    return [p for p in dict.fromkeys(os.path.abspath(p) for p in paths)
            if os.path.exists(p) and (os.path.isdir(p) or p.endswith(".py"))]


def static_settings(settings: Settings, results: List[TargetResult]) -> Settings:
    """The settings of the static pass that joins these replays: unless the config sets
    ``module-mode``, the mode the replayed modules were in (a factory that forgets ``.eval()``
    compiles the training side of every ``if self.training:``; ``any`` when targets differ)."""
    modes = {r.module_mode for r in results if r.module_mode}
    if "module-mode" in settings.given or not modes:
        return settings
    return dataclasses.replace(settings, module_mode=modes.pop() if len(modes) == 1 else "any")


def exercised_files(results: List[TargetResult]) -> List[str]:
    """Files the replays ran: compiled frames, executed lines, blamed events."""
    out = {os.path.abspath(f.path) for r in results for f in r.frames if f.path}
    out |= {os.path.abspath(p) for r in results for p in r.executed}
    return sorted(out)
