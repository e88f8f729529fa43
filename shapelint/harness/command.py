"""``shapelint run``: replay every configured target (or one from the command line), join the
events with the static pass, and report."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Dict, List, Optional

from shapelint.config import ConfigError, validate_target
from shapelint.finding import CheckResult, shape_text
from shapelint.harness.target import TargetError, TargetSpec, source_file


def _ints(text: Optional[str], flag: str) -> Optional[List[int]]:
    if text is None:
        return None
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise ConfigError(f"{flag} expects comma separated integers, got `{text}`") from exc
    if not values or any(v <= 0 for v in values):
        raise ConfigError(f"{flag} expects positive integers, got `{text}`")
    return values


def build_targets(args: argparse.Namespace, settings) -> List[TargetSpec]:
    overrides: Dict[str, Any] = {}
    for flag, key in (("batch_sizes", "batch-sizes"), ("seq_lens", "seq-lens")):
        v = _ints(getattr(args, flag), "--" + key)
        if v is not None:
            overrides[key] = v
    for flag, key in (("dynamic", "dynamic"), ("backend", "backend"), ("device", "device"),
                      ("mode", "mode"), ("fullgraph", "fullgraph"), ("max_compiles", "max-compiles"),
                      ("timeout", "timeout"), ("no_grad", "no-grad"),
                      ("memory_limit_mb", "memory-limit-mb")):
        v = getattr(args, flag, None)
        if v is not None:
            overrides[key] = v
    tables: List[Dict[str, Any]] = []
    if args.model or args.inputs:
        if not (args.model and args.inputs):
            raise ConfigError("--model and --inputs go together")
        table = {"name": args.model.split(":")[-1], "model": args.model, "inputs": args.inputs}
        table.update(overrides)
        tables.append(validate_target(table, "command line", 0))
        tables[0]["_base_dir"] = os.getcwd()
    else:
        tables = [dict(t, **overrides) for t in settings.targets]
        if args.target:
            names = {t.get("name") for t in tables}
            missing = [n for n in args.target if n not in names]
            if missing:
                raise ConfigError(f"unknown target(s) {', '.join(missing)}; configured: "
                                  f"{', '.join(sorted(n for n in names if n))}")
            tables = [t for t in tables if t.get("name") in args.target]
        if not tables:
            raise ConfigError("no targets: add [[targets]] to shapelint.toml (or "
                              "[[tool.shapelint.targets]] to pyproject.toml), or pass --model and --inputs")
    try:
        return [TargetSpec.from_config(t) for t in tables]
    except TargetError as exc:
        raise ConfigError(str(exc)) from exc


class Progress:
    """Live progress on stderr: rich when installed and on a terminal, plain lines otherwise."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._rich = None
        if sys.stderr.isatty():
            try:
                from rich.progress import Progress as RichProgress

                self._rich = RichProgress(transient=True)
                self._rich.start()
            except ImportError:
                self._rich = None
        self._task = None

    def start(self, spec: TargetSpec) -> None:
        n = len(spec.shapes())
        if self._rich is not None:
            self._task = self._rich.add_task(f"{spec.name}", total=n)
        else:
            print(f"shapelint run: {spec.name}: {n} shapes, backend {spec.backend}, "
                  f"dynamic {spec.dynamic}", file=sys.stderr, flush=True)

    def shape(self, spec: TargetSpec, row: Dict[str, Any]) -> None:
        if self._rich is not None and self._task is not None:
            self._rich.advance(self._task)
        else:
            err = f"  error: {row['error']}" if row.get("error") else ""
            print(f"  {shape_text(row)}: {row['new_compiles']} new compile(s) "
                  f"({row['seconds']:.2f}s){err}", file=sys.stderr, flush=True)

    def done(self, spec: TargetSpec, result: Dict[str, Any]) -> None:
        if self._rich is None:
            status = "FAILED: " + "; ".join(result.get("problems") or [result.get("error") or ""]) \
                if result.get("failed") else "ok"
            print(f"  {spec.name}: {result['compiles']} compiles in {result.get('seconds', 0)}s, {status}",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()


def run_targets(specs: List[TargetSpec]) -> List[Dict[str, Any]]:
    from shapelint.harness.runner import run_target

    progress = Progress(len(specs))
    results = []
    try:
        for spec in specs:
            progress.start(spec)
            result = run_target(spec, on_shape=lambda row, s=spec: progress.shape(s, row))
            if result.get("error") and result.get("problems") is not None:
                result["problems"] = list(result["problems"]) + [result["error"]]
            progress.done(spec, result)
            results.append(result)
    finally:
        progress.close()
    return results


def static_for_targets(args, settings, rules, enabled, specs, results) -> CheckResult:
    """Static pass over each target's module and every file an event points into."""
    from shapelint.cli import run_static
    from shapelint.harness.join import events_of

    paths: List[str] = []
    for spec in specs:
        for ref in (spec.model, spec.inputs):
            try:
                f = source_file(ref, spec.base_dir)
            except TargetError:
                f = None
            if f:
                paths.append(f)
        paths.extend(os.path.join(spec.base_dir, p) for p in spec.check_paths)
    for r in results:
        for ev in events_of(r):
            paths.append(ev["abspath"])
    paths = [p for p in dict.fromkeys(os.path.abspath(p) for p in paths) if os.path.exists(p)]
    if not paths:
        return CheckResult()
    return run_static(paths, settings, rules, enabled, use_cache=not args.no_cache,
                      root=os.path.commonpath([os.path.dirname(p) for p in paths]))


def cmd_run(args: argparse.Namespace) -> int:
    from shapelint.cli import apply_filters, emit, resolve_settings
    from shapelint.harness.join import annotate_targets, join

    settings, rules, enabled = resolve_settings(args, ["."])
    specs = build_targets(args, settings)
    results = run_targets(specs)
    if args.no_static:
        result = CheckResult()
    else:
        result = static_for_targets(args, settings, rules, enabled, specs, results)
    exercised = {os.path.abspath(f["path"]) for r in results for f in r.get("frames", []) if f.get("path")}
    result.findings = join(result.findings, results, exercised)
    annotate_targets(results, result.findings)
    result = apply_filters(args, result)
    emit(args, settings, result, rules, targets=results, fail_on_findings=False)
    return 1 if any(r.get("failed") for r in results) else 0
