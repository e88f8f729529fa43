"""What the slow tests that let torch judge small programs share: replay each program with the
harness (its own subprocess, backend eager, CPU, torch's default dynamic mode), a few at a
time, and describe a result when an assertion fails."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, Iterator, List

from shapelint.finding import TargetResult
from shapelint.harness.join import events_of
from shapelint.harness.runner import run_target
from shapelint.harness.target import TargetSpec

BATCHES = [1, 2, 3, 4, 8, 17]
JOBS = max(1, min(2, os.cpu_count() or 1))


def replay_files(name: str, folder: str, files: Dict[str, str], model: str,
                 inputs: str) -> Dict[str, Any]:
    """Write ``files`` into ``folder`` and replay ``model`` over ``BATCHES``."""
    os.makedirs(folder, exist_ok=True)
    for rel, text in files.items():
        with open(os.path.join(folder, rel), "w", encoding="utf-8") as fh:
            fh.write(text)
    return run_target(TargetSpec(name=name, model=model, inputs=inputs, batch_sizes=list(BATCHES),
                                 dynamic="auto", backend="eager", device="cpu", timeout=300,
                                 base_dir=folder))


def replay_selected(request, root: str, param: str, key: Callable[[Any], str],
                    replay: Callable[[Any, str], Dict[str, Any]]) -> Iterator[Dict[str, Any]]:
    """Futures of the replays of the ``param`` values this session selected in the requesting
    module (skipped ones left out), by ``key``: the body of a module-scoped fixture."""
    wanted: List[Any] = []
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        if item.module is request.module and spec is not None and param in spec.params \
                and not item.get_closest_marker("skip"):
            wanted.append(spec.params[param])
    pool = ThreadPoolExecutor(max_workers=JOBS)
    by_key = {key(v): v for v in wanted}
    futures = {k: pool.submit(replay, v, os.path.join(root, _slug(k))) for k, v in by_key.items()}
    yield futures
    pool.shutdown(wait=False, cancel_futures=True)


def describe(result: TargetResult) -> str:
    """The compiles per batch, each event with its file:line, and what the calls raised."""
    lines = [f"  compiles per batch: {[(r.batch, r.new_compiles) for r in result.per_shape]}"]
    for ev in events_of(result):
        where = os.path.basename(ev.get("abspath") or ev.get("path") or "?")
        lines.append(f"  {ev['kind']} at batch={(ev.get('shape') or {}).get('batch')} "
                     f"{where}:{ev['line']}: {ev.get('reason')}")
    errors = {r.error for r in result.per_shape if r.error}
    lines += [f"  call raised: {e}" for e in sorted(errors)]
    return "\n".join(lines)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_") or "program"
