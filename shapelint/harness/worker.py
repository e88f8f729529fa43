"""The target's subprocess: compile the model, replay it at each shape, record blamed events.

    python -m shapelint.harness.worker SPEC.json OUT.jsonl

Each line of OUT is a JSON record written and flushed as soon as it is known (``meta``, one
``shape`` per replayed shape with the cumulative ``summary``, then ``done``), so the parent keeps
everything that finished even if this process hangs, runs out of memory or crashes.
"""

from __future__ import annotations

import contextlib
import glob
import inspect
import json
import os
import sys
import tempfile
import time
import traceback
from typing import Any, Dict, List, Tuple

from shapelint.harness.target import TargetError, TargetSpec, load


class Out:
    def __init__(self, path: str) -> None:
        self.fh = open(path, "a", encoding="utf-8")

    def write(self, record: Dict[str, Any]) -> None:
        self.fh.write(json.dumps(record, default=str) + "\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())


def _short_exc(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    first = text.split("\n")[0]
    return first[:400]


def _is_oom(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, MemoryError) or "out of memory" in text or "can't allocate memory" in text \
        or type(exc).__name__ == "OutOfMemoryError"


def normalize_inputs(value: Any) -> Tuple[tuple, dict]:
    """``inputs()`` may return args, (args, kwargs), a dict of kwargs, or one tensor."""
    try:
        import torch

        if isinstance(value, torch.Tensor):
            return (value,), {}
    except ImportError:  # pragma: no cover
        pass
    if isinstance(value, dict):
        return (), dict(value)
    if isinstance(value, (tuple, list)):
        if len(value) == 2 and isinstance(value[0], (tuple, list)) and isinstance(value[1], dict):
            return tuple(value[0]), dict(value[1])
        return tuple(value), {}
    raise TargetError(f"inputs must return a tuple of args, (args, kwargs), a dict or a tensor; "
                      f"got {type(value).__name__}")


def _to_device(obj: Any, device: str) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    return obj


def run(spec: TargetSpec, out: Out) -> int:
    started = time.perf_counter()
    try:
        import torch
        import torch._dynamo
    except Exception as exc:  # noqa: BLE001
        out.write({"type": "fatal", "error": f"cannot import torch: {_short_exc(exc)}"})
        return 3

    from shapelint.harness.blame import Recorder
    from shapelint.harness.coverage import Coverage
    from shapelint.harness.trace import Collector, attach, parse_trace_file

    trace_dir = os.environ.get("SHAPELINT_TRACE_DIR")
    if not trace_dir and (os.environ.get("SHAPELINT_TRACE_SOURCE") == "file"
                          or not _has_trace_api()):
        # no handler API in this torch: start again with TORCH_TRACE and read its log files
        trace_dir = tempfile.mkdtemp(prefix="shapelint-trace-")
        env = dict(os.environ, TORCH_TRACE=trace_dir, SHAPELINT_TRACE_DIR=trace_dir)
        out.fh.flush()
        os.execve(sys.executable, [sys.executable, "-m", "shapelint.harness.worker", *sys.argv[1:]], env)

    os.environ.pop("TORCH_COMPILE_JOB_ID", None)  # PGO across processes makes runs irreproducible
    device = spec.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    current: Dict[str, Any] = {}
    collector = Collector()
    recorder = Recorder(collector, lambda: current)
    collector.on_event = recorder.on_event
    coverage = Coverage()  # lines traced into the compiled region (coverage.py)
    coverage.attach()
    consumed = [0]
    if trace_dir:
        source = "TORCH_TRACE log files (the structured-trace handler API is unavailable)"

        def feed() -> None:  # events of the shape that just ran
            parsed = Collector()
            for log in sorted(glob.glob(os.path.join(trace_dir, "*.log"))):
                with open(log, encoding="utf-8", errors="replace") as fh:
                    part = parse_trace_file(fh)
                parsed.events.extend(part.events)
                parsed.strings.update(part.strings)
            collector.strings.update(parsed.strings)
            for ev in parsed.events[consumed[0]:]:
                recorder.on_event(ev)
            consumed[0] = len(parsed.events)
    else:
        source = attach(collector)

        def feed() -> None:
            pass
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()

    cudagraph_records: List[int] = [0]
    if spec.mode and "reduce-overhead" in spec.mode and device.startswith("cuda"):
        try:
            from torch._inductor import cudagraph_trees as ct

            original = ct.CUDAGraphTreeManager.record_function

            def counting(self, *a, **kw):  # type: ignore[no-untyped-def]
                cudagraph_records[0] += 1
                return original(self, *a, **kw)

            ct.CUDAGraphTreeManager.record_function = counting  # type: ignore[assignment]
        except Exception:  # noqa: BLE001
            pass

    out.write({"type": "meta", "torch_version": torch.__version__, "device": device,
               "trace_source": source, "python": sys.version.split()[0]})
    if spec.seed is not None:  # default: torch's own start-up seed, as in a plain script
        torch.manual_seed(spec.seed)
    try:
        factory = load(spec.model, spec.base_dir)
        inputs_fn = load(spec.inputs, spec.base_dir)
        model = factory()
        if isinstance(model, torch.nn.Module):
            model = model.to(device)
    except Exception as exc:  # noqa: BLE001 - a factory that raises is reported, not fatal
        out.write({"type": "fatal", "error": f"model factory failed: {_short_exc(exc)}",
                   "traceback": traceback.format_exc()[-2000:]})
        return 2

    dynamic = {"auto": None, "true": True, "false": False, "mark": None}[spec.dynamic]
    kwargs: Dict[str, Any] = {"backend": spec.backend, "dynamic": dynamic, "fullgraph": spec.fullgraph}
    if spec.mode:
        kwargs["mode"] = spec.mode
        if spec.backend != "inductor":
            kwargs.pop("backend")
    compiled = torch.compile(model, **kwargs)
    forward = model.forward if isinstance(model, torch.nn.Module) else model
    try:
        sig = inspect.signature(forward)
    except (TypeError, ValueError):
        sig = None
    seq_param = _accepts_seq_len(inputs_fn)

    sizes: Dict[str, set] = {}
    recorder.varying = lambda: {src for src, seen in sizes.items() if len(seen) > 1}
    for shape in spec.shapes():
        recorder.shape = dict(shape)
        before = recorder.compiles
        before_graphs = cudagraph_records[0]
        error = None
        t0 = time.perf_counter()
        try:
            call_kw = {"seq_len": shape["seq_len"]} if shape["seq_len"] is not None and seq_param else {}
            if shape["seq_len"] is not None and not seq_param:
                raise TargetError("seq-lens given but the inputs callable takes no seq_len")
            if spec.seed is not None:  # each shape's inputs independent of the order tried
                torch.manual_seed(spec.seed + shape["batch"] * 1009 + (shape["seq_len"] or 0))
            args, kw = normalize_inputs(inputs_fn(shape["batch"], **call_kw))
            args, kw = _to_device(args, device), _to_device(kw, device)
            if spec.dynamic == "mark":
                for t in list(args) + list(kw.values()):
                    if isinstance(t, torch.Tensor) and t.dim() > 0 and t.shape[0] > 1:
                        torch._dynamo.mark_dynamic(t, 0)
            current.clear()
            if sig is not None:
                try:
                    bound = sig.bind(*args, **kw)
                    bound.apply_defaults()
                    current.update(bound.arguments)
                except TypeError:
                    pass
            current["self"] = model
            _wrapper_locals(current, args, kw)
            for src, value in _input_sources(current):  # which input dims vary across the shapes
                if isinstance(value, torch.Tensor):
                    for dim, size in enumerate(value.shape):
                        sizes.setdefault(f"{src}.size()[{dim}]", set()).add(int(size))
            with torch.no_grad() if spec.no_grad else contextlib.nullcontext():
                compiled(*args, **kw)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - one bad shape must not end the run
            error = ("out of memory: " if _is_oom(exc) else "") + _short_exc(exc)
            recorder._add_error(_short_exc(exc), recorder.text_frame(traceback.format_exc() + "\n" + str(exc)))
            if device.startswith("cuda") and _is_oom(exc):
                torch.cuda.empty_cache()
        feed()
        row = {"batch": shape["batch"], "seq_len": shape["seq_len"],
               "new_compiles": recorder.compiles - before, "error": error,
               "seconds": round(time.perf_counter() - t0, 3)}
        if spec.mode and "reduce-overhead" in spec.mode and device.startswith("cuda"):
            row["cudagraph_recordings"] = cudagraph_records[0] - before_graphs
        out.write({"type": "shape", "row": row, "summary": recorder.summary(),
                   "executed": coverage.new_lines(recorder.is_user)})
    out.write({"type": "done", "summary": recorder.summary(),
               "seconds": round(time.perf_counter() - started, 3)})
    return 0


def _wrapper_locals(current: Dict[str, Any], args: tuple, kw: Dict[str, Any]) -> None:
    """A forward behind a decorator (``def wrapper(self, *args, **kwargs)``, as every
    transformers model's is) compiles as the wrapper, whose guards read ``L['kwargs']['x']`` and
    ``L['args'][0]``: give the blame's re-evaluation those names too. ``kwargs`` holds every
    keyword passed (a superset of a ``**kwargs`` parameter's extras, so both frames resolve)."""
    current.setdefault("args", tuple(args))
    extra = current.get("kwargs")
    if extra is None or isinstance(extra, dict):
        current["kwargs"] = dict(kw, **(extra or {}))


def _input_sources(current: Dict[str, Any]):
    """(source, value) of every argument, and of the items of ``args``/``kwargs`` containers."""
    for name, value in current.items():
        yield f"L['{name}']", value
        if isinstance(value, dict):
            for key, item in value.items():
                yield f"L['{name}'][{key!r}]", item
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                yield f"L['{name}'][{i}]", item


def _has_trace_api() -> bool:
    """Whether this torch lets a handler subscribe to the structured trace (2.4 and later)."""
    try:
        import torch._logging._internal as internal

        return hasattr(internal, "trace_log") and hasattr(internal, "trace_structured")
    except ImportError:
        return False


def _accepts_seq_len(fn: Any) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "seq_len" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def main(argv: List[str]) -> int:
    spec_path, out_path = argv[1], argv[2]
    with open(spec_path, encoding="utf-8") as fh:
        spec = TargetSpec(**json.load(fh))
    if spec.memory_limit_mb:
        try:
            import resource

            limit = spec.memory_limit_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ImportError, ValueError, OSError):
            pass
    out = Out(out_path)
    try:
        return run(spec, out)
    except TargetError as exc:
        out.write({"type": "fatal", "error": str(exc)})
        return 2
    except MemoryError:
        out.write({"type": "fatal", "error": "out of memory"})
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
