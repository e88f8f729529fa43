"""The target's subprocess: compile the model, replay it at each shape, record blamed events.

    python -m shapelint.harness.worker SPEC.json OUT.jsonl

Each line of OUT is a JSON record written and flushed as soon as it is known (``meta``, one
``shape`` per replayed shape with the events that shape added, then ``done``), so the parent
keeps everything that finished even if this process hangs, runs out of memory or crashes.

The run is four named steps: :func:`choose_trace_source`, :func:`load_model`,
:func:`compile_options` and :func:`replay_shape`; :func:`run` strings them together.
"""

from __future__ import annotations

import contextlib
import glob
import inspect
import json
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from shapelint.finding import shape_text
from shapelint.harness.procs import become_subreaper, die_with_parent, end_descendants
from shapelint.harness.target import TargetError, TargetSpec, load


class Out:
    def __init__(self, path: str) -> None:
        self.fh = open(path, "a", encoding="utf-8")

    def write(self, record: Dict[str, Any]) -> None:
        self.fh.write(json.dumps(record, default=str) + "\n")
        self.fh.flush()


class Tape:
    """Records what the Recorder was fed (trace events, interned paths, shapes, the values it
    looked up) as JSON lines: ``SHAPELINT_RECORD=path`` writes the fixtures that
    tests/test_recorded_traces.py replays without torch."""

    def __init__(self, path: Optional[str]) -> None:
        self.fh = open(path, "w", encoding="utf-8") if path else None

    def write(self, **record: Any) -> None:
        if self.fh is not None:
            self.fh.write(json.dumps(record, default=str) + "\n")
            self.fh.flush()


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
    raise TargetError("it must return a tuple of args, (args, kwargs), a dict of keyword "
                      "arguments or one tensor")


def _to_device(obj: Any, device: str) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    return obj


# ---------------------------------------------------------------------------------------------
# step 1: where the events come from
# ---------------------------------------------------------------------------------------------

def _has_trace_api() -> bool:
    """Whether this torch lets a handler subscribe to the structured trace (2.4 and later)."""
    try:
        import torch._logging._internal as internal

        return hasattr(internal, "trace_log") and hasattr(internal, "trace_structured")
    except ImportError:
        return False


def choose_trace_source(collector, on_event: Callable[[Dict[str, Any]], None]) -> Tuple[str, Callable[[], None]]:
    """The structured-trace handler when torch has one; else re-run this process with
    ``TORCH_TRACE`` (its log files under the run's work folder) and read them after each shape.
    Returns the source's name and the function that feeds the events of the shape that just
    ran (a no-op for the handler, which feeds them as they come)."""
    from shapelint.harness.trace import attach, parse_trace_file

    trace_dir = os.environ.get("SHAPELINT_TRACE_DIR")
    if not trace_dir and (os.environ.get("SHAPELINT_TRACE_SOURCE") == "file" or not _has_trace_api()):
        base = os.environ.get("SHAPELINT_WORKDIR") or None
        import tempfile

        trace_dir = tempfile.mkdtemp(prefix="shapelint-trace-", dir=base)
        env = dict(os.environ, TORCH_TRACE=trace_dir, SHAPELINT_TRACE_DIR=trace_dir)
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable, "-m", "shapelint.harness.worker", *sys.argv[1:]], env)
    if not trace_dir:
        collector.on_event = on_event
        return attach(collector), lambda: None
    consumed = [0]

    def feed() -> None:
        from shapelint.harness.trace import Collector

        parsed = Collector()
        for log in sorted(glob.glob(os.path.join(trace_dir, "*.log"))):
            with open(log, encoding="utf-8", errors="replace") as fh:
                part = parse_trace_file(fh)
            parsed.events.extend(part.events)
            parsed.strings.update(part.strings)
        collector.strings.update(parsed.strings)
        for ev in parsed.events[consumed[0]:]:
            on_event(ev)
        consumed[0] = len(parsed.events)

    return "TORCH_TRACE log files (the structured-trace handler API is unavailable)", feed


# ---------------------------------------------------------------------------------------------
# step 2: the model
# ---------------------------------------------------------------------------------------------

def resolve_device(spec: TargetSpec) -> str:
    """``auto`` is CUDA when there is a device; asking for CUDA where there is none is an
    error that says so (not a failed factory)."""
    import torch

    device = spec.device
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        build = "this torch build has no CUDA support" if not torch.backends.cuda.is_built() \
            else "no CUDA device is visible"
        raise TargetError(f"device {device} requested but {build} (torch {torch.__version__}); "
                          f"use --device cpu or auto")
    return device


def load_model(spec: TargetSpec, device: str) -> Tuple[Any, Callable[..., Any], List[str]]:
    """Import the factory and the inputs callable, build the model, move it to ``device``;
    also the files the two came from (the parent resolves nothing by importing: user code runs
    only in workers). Every failure here is the target's, a TargetError that names the setting
    at fault (``model``, ``inputs``, ``seq-lens``) and what to do."""
    import torch

    factory = _import(spec, "model", spec.model)
    inputs_fn = _import(spec, "inputs", spec.inputs)
    check_inputs_signature(spec, inputs_fn)
    try:
        model = factory()
    except Exception as exc:  # noqa: BLE001 - the factory is the user's code
        raise TargetError(f"model `{spec.model}`: the factory failed: {_short_exc(exc)}"
                          f"{_raised_at(exc)}") from None
    if model is None or not callable(model):
        raise TargetError(f"model `{spec.model}`: the factory returned "
                          f"{'None' if model is None else type(model).__name__}: it must return "
                          f"an nn.Module or a callable")
    if isinstance(model, torch.nn.Module):
        try:
            model = model.to(device)
        except Exception as exc:  # noqa: BLE001
            raise TargetError(f"model `{spec.model}`: moving it to {device} failed: "
                              f"{_short_exc(exc)}; try device = \"cpu\"") from None
    return model, inputs_fn, _source_files(factory, inputs_fn)


def module_mode(model: Any) -> Optional[str]:
    """The side of ``self.training`` Dynamo traces in this model (``module-mode``): ``eval`` or
    ``train`` as its modules are set, ``any`` where they differ, None for a plain function. A
    factory that forgets ``.eval()`` returns a module in training mode (nn.Module's default)."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return None
    flags = {m.training for m in model.modules()}
    return "any" if len(flags) > 1 else ("train" if flags.pop() else "eval")


def _import(spec: TargetSpec, key: str, ref: str) -> Callable[..., Any]:
    """``load`` for one setting: what the user's module raises while it is imported is that
    setting's error too (with the line that raised)."""
    try:
        return load(ref, spec.base_dir, key, spec.import_paths)
    except TargetError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's module ran and raised
        raise TargetError(f"{key} `{ref}`: importing it failed: {_short_exc(exc)}"
                          f"{_raised_at(exc)}") from None


def _raised_at(exc: BaseException) -> str:
    """`` (at models.py:12)``: the innermost frame of the user's code that raised; never a
    frame of shapelint's own, nor of Python's import machinery."""
    from shapelint.harness.target import shown

    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return f" (at {shown(exc.filename)}:{exc.lineno})"
    own = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    best = None
    for fr in traceback.extract_tb(exc.__traceback__):
        path = os.path.abspath(fr.filename)
        if fr.filename.startswith("<") or path.startswith(own + os.sep):
            continue
        best = (path, fr.lineno)
    return f" (at {shown(best[0])}:{best[1]})" if best else ""


def check_inputs_signature(spec: TargetSpec, fn: Callable[..., Any]) -> None:
    """The inputs callable is called as ``inputs(batch)``, or ``inputs(batch, seq_len=N)``
    when seq-lens are given: a signature that cannot take that is the config's mistake, said
    once for the target (not once per shape, as a compile error)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or a C callable: called as it is
        return
    name = getattr(fn, "__name__", "inputs")
    if spec.seq_lens and not _accepts_seq_len(fn):
        raise TargetError(f"seq-lens {list(spec.seq_lens)} given, but the inputs callable "
                          f"`{spec.inputs}` takes no `seq_len`: add the parameter "
                          f"(`def {name}(batch, seq_len):`) or remove seq-lens")
    try:
        sig.bind(1, **({"seq_len": 1} if spec.seq_lens else {}))
    except TypeError as exc:
        seq = sig.parameters.get("seq_len")
        if not spec.seq_lens and seq is not None and seq.default is seq.empty:
            raise TargetError(f"seq-lens: the inputs callable `{spec.inputs}` needs `seq_len`, "
                              f"but no seq-lens are given: add them (`seq-lens = [16, 32]`, "
                              f"--seq-lens 16,32) or give `seq_len` a default") from None
        call = f"{name}(batch{', seq_len=N' if spec.seq_lens else ''})"
        raise TargetError(f"inputs `{spec.inputs}` cannot be called as {call}: {exc}; it is "
                          f"called with the batch size first, then seq_len= when seq-lens "
                          f"are given") from None


def _source_files(*objs: Any) -> List[str]:
    import inspect

    out: List[str] = []
    for obj in objs:
        try:
            path = inspect.getsourcefile(inspect.unwrap(obj))
        except Exception:  # noqa: BLE001 - a builtin, a C extension: no file to check
            continue
        if path and os.path.isfile(path) and path not in out:
            out.append(os.path.abspath(path))
    return out


# ---------------------------------------------------------------------------------------------
# step 3: how to compile it
# ---------------------------------------------------------------------------------------------

def compile_options(spec: TargetSpec) -> Dict[str, Any]:
    """``torch.compile`` keyword arguments for the spec (and the remedy being measured)."""
    dynamic = {"auto": None, "true": True, "false": False, "mark": None}[spec.dynamic]
    if spec.remedy and spec.remedy.get("kind") == "dynamic-true":
        dynamic = True
    kwargs: Dict[str, Any] = {"backend": spec.backend, "dynamic": dynamic, "fullgraph": spec.fullgraph}
    if spec.mode:
        kwargs["mode"] = spec.mode
        if spec.backend != "inductor":
            kwargs.pop("backend")
    return kwargs


def apply_config_remedy(spec: TargetSpec) -> None:
    """Remedies that are torch settings, applied before compiling."""
    import torch._dynamo

    remedy = spec.remedy or {}
    if remedy.get("kind") == "capture-scalar-outputs":
        torch._dynamo.config.capture_scalar_outputs = True
    elif remedy.get("kind") == "dynamic-sources":
        try:
            torch.compiler.config.dynamic_sources = remedy["sources"]
        except AttributeError:
            os.environ["TORCH_COMPILE_DYNAMIC_SOURCES"] = remedy["sources"]


# ---------------------------------------------------------------------------------------------
# step 4: one shape
# ---------------------------------------------------------------------------------------------

@dataclass
class Replay:
    """What every shape of one replay shares."""

    spec: TargetSpec
    device: str
    model: Any
    compiled: Any
    inputs_fn: Callable[..., Any]
    recorder: Any
    feed: Callable[[], None]
    coverage: Any
    tape: Tape
    signature: Any = None
    frame_signature: Any = None
    entry_code: Any = None
    frame_has_self: bool = False
    entry_fn: Any = None
    current: Dict[str, Any] = field(default_factory=dict)
    cudagraph_records: List[int] = field(default_factory=lambda: [0])


def replay_shape(r: Replay, shape: Dict[str, Any]) -> Dict[str, Any]:
    """Call the compiled model once at ``shape``; returns the shape's record (row, new events,
    executed lines, input sizes)."""
    import torch

    spec = r.spec
    recorder = r.recorder
    recorder.begin_shape(shape)
    r.tape.write(t="shape", shape=shape)
    before = recorder.compiles
    before_graphs = r.cudagraph_records[0]
    error: Optional[str] = None
    where = None
    eager_frame = None
    inputs: Dict[str, Any] = {}
    t0 = time.perf_counter()
    stage = "inputs"  # an error before the compiled call is the inputs callable's, not torch's
    try:
        call_kw = {"seq_len": shape["seq_len"]} if shape["seq_len"] is not None else {}
        if spec.seed is not None and spec.seed_each_shape:  # inputs independent of the order
            torch.manual_seed(spec.seed + shape["batch"] * 1009 + (shape["seq_len"] or 0))
        value = r.inputs_fn(shape["batch"], **call_kw)
        try:
            args, kw = normalize_inputs(value)
        except TargetError as exc:  # the same at every shape: the target's error, said once
            raise TargetError(f"inputs `{spec.inputs}` returned {type(value).__name__} at "
                              f"{shape_text(shape)}: {exc}") from None
        args, kw = _to_device(args, r.device), _to_device(kw, r.device)
        stage = "call"
        _bind(r, args, kw)
        _mark(r, args, kw)
        inputs = _input_values(r.current)
        with torch.no_grad() if spec.no_grad else contextlib.nullcontext():
            accepted, cached = _cache_accepts(r, args, kw)
            entry_compiles = _entry_compiles(r)
            r.compiled(*args, **kw)
            if entry_compiles and _entry_compiles(r) == entry_compiles:
                # no new compile of the entry frame: either a cached graph ran, or nothing did.
                # Nothing did when the frame has no graph at all (a frame torch skips for
                # good), or when none accepted the inputs after torch stopped compiling it
                frame = _entry_frame(r)
                if cached == 0 or (accepted is False and recorder.fell_back(frame)):
                    eager_frame = frame
        if r.device.startswith("cuda"):
            torch.cuda.synchronize()
    except TargetError:
        raise
    except Exception as exc:  # noqa: BLE001 - one bad shape must not end the run
        error = ("out of memory: " if _is_oom(exc) else "") + _short_exc(exc)
        if stage == "inputs":  # no compile happened: an error of the row, not an event
            error = f"inputs `{spec.inputs}` failed: {error}{_raised_at(exc)}"
        else:
            where = recorder.text_frame(traceback.format_exc() + "\n" + str(exc))
            recorder.add_call_error(_short_exc(exc), where)
        if r.device.startswith("cuda") and _is_oom(exc):
            torch.cuda.empty_cache()
    r.feed()
    new = recorder.end_shape(error, where, eager_frame)
    r.tape.write(t="end", error=error, where=list(where) if where else None, eager=eager_frame)
    row: Dict[str, Any] = {"batch": shape["batch"], "seq_len": shape["seq_len"],
                           "new_compiles": recorder.compiles - before, "error": error,
                           "seconds": round(time.perf_counter() - t0, 3)}
    if eager_frame is not None or any(e.kind == "fallback" for e in new):
        row["eager"] = True  # the call ran uncompiled
        if not recorder.fell_back(eager_frame or _entry_frame(r)):
            row["eager_why"] = ("torch skips this frame for good: its first compile traced no "
                                "ops (nothing to compile then)")
    if spec.mode and "reduce-overhead" in spec.mode and r.device.startswith("cuda"):
        row["cudagraph_recordings"] = r.cudagraph_records[0] - before_graphs
    return {"type": "shape", "row": row, "events": [e.to_json() for e in new],
            "executed": r.coverage.new_lines(recorder.is_user), "inputs": inputs,
            "compiles": recorder.compiles, "frames": recorder.frame_list()}


def _bind(r: Replay, args: tuple, kw: Dict[str, Any]) -> None:
    """The forward's locals for the guards' re-evaluation: its bound arguments, ``self``, and
    ``args``/``kwargs`` for a forward behind a decorator (``def wrapper(self, *args,
    **kwargs)``, as every transformers model's is), whose guards read ``L['kwargs']['x']``."""
    current = r.current
    current.clear()
    for arguments in (_bound(r.signature, False, r.model, args, kw),
                      _bound(r.frame_signature, r.frame_has_self, r.model, args, kw)):
        for k, v in (arguments or {}).items():
            current.setdefault(k, v)
    current["self"] = r.model
    current.setdefault("args", tuple(args))
    extra = current.get("kwargs")
    if extra is None or isinstance(extra, dict):
        current["kwargs"] = dict(kw, **(extra or {}))


def _bound(sig: Any, with_self: bool, model: Any, args: tuple, kw: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    if sig is None:
        return None
    try:
        bound = sig.bind(model, *args, **kw) if with_self else sig.bind(*args, **kw)
        bound.apply_defaults()
        return dict(bound.arguments)
    except TypeError:
        return None


def _mark(r: Replay, args: tuple, kw: Dict[str, Any]) -> None:
    """``dynamic = "mark"``: mark_dynamic dim 0 of every input above size 1; a remedy being
    measured marks the dims it names."""
    import torch

    if r.spec.dynamic == "mark":
        for t in list(args) + list(kw.values()):
            if isinstance(t, torch.Tensor) and t.dim() > 0 and t.shape[0] > 1:
                torch._dynamo.mark_dynamic(t, 0)
    remedy = r.spec.remedy or {}
    kind = remedy.get("kind")
    if kind not in ("mark-dynamic", "maybe-mark-dynamic", "mark-unbacked"):
        return
    from torch._dynamo import decorators

    fn = {"mark-dynamic": torch._dynamo.mark_dynamic,
          "maybe-mark-dynamic": torch._dynamo.maybe_mark_dynamic,
          "mark-unbacked": decorators.mark_unbacked}[kind]
    for name, dim in remedy.get("marks", []):
        t = _lookup(r.current, name)
        if isinstance(t, torch.Tensor) and dim < t.dim():
            if kind == "mark-dynamic" and t.shape[dim] <= 1:
                continue  # torch ignores a size-1 mark and raises on a later specialization
            fn(t, dim)


def _lookup(current: Dict[str, Any], name: str) -> Any:
    """An argument by name, or ``kwargs['x']`` / ``args[0]`` of a decorated forward."""
    if name in current and name not in ("args", "kwargs"):
        return current[name]
    for container in ("kwargs", "args"):
        value = current.get(container)
        if isinstance(value, dict) and name in value:
            return value[name]
    return None


def _input_values(current: Dict[str, Any]) -> Dict[str, Any]:
    """Sizes of every tensor argument and the value of every int argument, by guard source
    (``L['x'].size()[0]``, ``L['n']``): which of them varied says which specializations are
    benign, and which dims a remedy should mark."""
    import torch

    out: Dict[str, Any] = {}

    def add(src: str, value: Any) -> None:
        if isinstance(value, torch.Tensor):
            for dim, size in enumerate(value.shape):
                out[f"{src}.size()[{dim}]"] = int(size)
        elif isinstance(value, bool):
            return
        elif isinstance(value, int):
            out[src] = value

    for name, value in current.items():
        if name == "self":
            continue
        add(f"L['{name}']", value)
        if isinstance(value, dict):
            for key, item in value.items():
                add(f"L['{name}'][{key!r}]", item)
        elif isinstance(value, tuple):
            for i, item in enumerate(value):
                add(f"L['{name}'][{i}]", item)
    return out


def _cache_accepts(r: Replay, args: tuple, kw: Dict[str, Any]) -> Tuple[Optional[bool], Optional[int]]:
    """Whether a cached graph of the compiled entry frame accepts these inputs (checked before
    the call, so state the call mutates does not matter), and how many graphs it has; None
    when it cannot be told."""
    if r.entry_code is None:
        return None, None
    try:
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list

        entries = _debug_get_cache_entry_list(r.entry_code)
    except Exception:  # noqa: BLE001 - an unknown is not a claim
        return None, None
    if not entries:
        return False, 0
    try:
        f_locals = _bound(r.frame_signature, r.frame_has_self, r.model, args, kw)
        if f_locals is None:
            return None, len(entries)
        fn = getattr(r.entry_fn, "__closure__", None) or ()
        for name, cell in zip(r.entry_code.co_freevars, fn):  # a decorator's closure
            try:
                f_locals.setdefault(name, cell.cell_contents)
            except ValueError:
                pass
        return any(e.guard_manager.check(f_locals) for e in entries), len(entries)
    except Exception:  # noqa: BLE001
        return None, len(entries)


def _entry_frame(r: Replay) -> Optional[Dict[str, Any]]:
    code = r.entry_code
    if code is None:
        return None
    for fr in r.recorder.frames.values():
        if fr.get("name") == code.co_name and fr.get("line") == code.co_firstlineno and \
                fr.get("path") and os.path.abspath(fr["path"]) == os.path.abspath(code.co_filename):
            return fr
    return None


def _entry_compiles(r: Replay) -> int:
    fr = _entry_frame(r)
    return fr["compiles"] if fr else 0


def _entry_code(forward: Any) -> Any:
    fn = getattr(forward, "__func__", forward)
    code = getattr(fn, "__code__", None)
    if code is None and callable(forward):
        call = getattr(type(forward), "__call__", None)  # noqa: B004 - its code, not a callable test
        code = getattr(call, "__code__", None)
    return code


# ---------------------------------------------------------------------------------------------
# attribute writes: where a module attribute torch guards was assigned
# ---------------------------------------------------------------------------------------------

def attribute_writes(model: Any, current: Dict[str, Any], coverage: Any, name: str) -> List[Tuple[str, int]]:
    """The lines that assign ``name`` (``self.cache``, ``self.layers[0].cache``) in the class
    of the object that holds it: the writes the replay ran (coverage), else those in
    ``forward``."""
    import ast
    import re as _re

    expr = name
    if expr.startswith("L['self']"):
        expr = "self" + expr[len("L['self']"):]
    expr = _re.sub(r"\._modules\['([^']+)'\]", lambda m: f"[{m.group(1)}]" if m.group(1).isdigit()
                   else f".{m.group(1)}", expr)
    # a buffer or parameter torch names by its dict: `..._buffers['weights']` is `.weights`
    expr = _re.sub(r"\._(?:buffers|parameters)\['([^']+)'\]", r".\1", expr)
    owner_expr, _, attr = expr.rpartition(".")
    if not owner_expr or not attr.isidentifier():
        return []
    try:
        owner = eval(owner_expr, {"__builtins__": {}}, {"self": model})  # noqa: S307
    except Exception:  # noqa: BLE001
        return []
    executed = coverage.executed() if coverage is not None else {}
    found: List[Tuple[str, int, str]] = []
    for cls in type(owner).__mro__:
        try:
            path = inspect.getsourcefile(cls)
            lines, start = inspect.getsourcelines(cls)
        except (OSError, TypeError):
            continue
        if not path or "/torch/" in path.replace(os.sep, "/"):
            continue
        try:
            tree = ast.parse("".join(lines).expandtabs())
        except SyntaxError:
            try:
                import textwrap

                tree = ast.parse(textwrap.dedent("".join(lines)))
            except SyntaxError:
                continue
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                line = getattr(node, "lineno", None)
                if line is None:
                    continue
                targets: List[ast.expr] = []
                if isinstance(node, ast.Assign):
                    targets = node.targets
                elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                    targets = [node.target]
                for t in targets:
                    for sub in ast.walk(t):
                        if isinstance(sub, ast.Attribute) and sub.attr == attr and \
                                isinstance(sub.value, ast.Name) and sub.value.id == "self":
                            found.append((os.path.abspath(path), line + start - 1, fn.name))
                if _registers(node, attr):
                    found.append((os.path.abspath(path), line + start - 1, fn.name))
    ran = [(p, ln) for p, ln, _ in found if ln in set(executed.get(p, ()))]
    if ran:
        return sorted(set(ran))
    return sorted({(p, ln) for p, ln, fn in found if fn == "forward"})


def _registers(node: Any, attr: str) -> bool:
    """``self.register_buffer("attr", ...)``, ``self.register_parameter("attr", ...)`` or
    ``setattr(self, "attr", ...)``: a write of ``attr`` by call."""
    import ast

    if not isinstance(node, ast.Call):
        return False
    func, args = node.func, node.args
    if isinstance(func, ast.Attribute) and func.attr in ("register_buffer", "register_parameter") \
            and isinstance(func.value, ast.Name) and func.value.id == "self":
        name = args[0] if args else None
    elif isinstance(func, ast.Name) and func.id == "setattr" and len(args) >= 2 and \
            isinstance(args[0], ast.Name) and args[0].id == "self":
        name = args[1]
    else:
        return False
    return isinstance(name, ast.Constant) and name.value == attr


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------

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
    from shapelint.harness.trace import Collector

    tape = Tape(os.environ.get("SHAPELINT_RECORD"))
    tape.write(t="meta", dynamic=spec.dynamic, torch=torch.__version__)
    collector = Collector()
    r_holder: Dict[str, Any] = {}

    def values(src: str) -> Any:
        # the locals of the frame torch is recompiling (a resume frame holds ___stack0 and
        # the values its function computed before the break), else the entry's arguments
        scope = r_holder.get("frame_locals") or r_holder["replay"].current
        try:
            value = eval(src, {"__builtins__": {}}, {"L": scope})  # noqa: S307
        except Exception:
            tape.write(t="value", src=src, error=True)
            raise
        if not isinstance(value, (int, float, bool)):
            value = int(value)
        tape.write(t="value", src=src, value=value)
        return value

    def writes(name: str) -> List[Tuple[str, int]]:
        r = r_holder["replay"]
        found = attribute_writes(r.model, r.current, r.coverage, name)
        tape.write(t="writes", name=name, lines=found)
        return found

    recorder = Recorder(collector, values, mode=spec.dynamic, attribute_writes=writes)

    def on_event(ev: Dict[str, Any]) -> None:
        if tape.fh is not None:
            collector.refresh()
            for idx, path in collector.strings.items():
                if idx not in tape_strings:
                    tape_strings.add(idx)
                    tape.write(t="str", idx=idx, path=path)
            tape.write(t="ev", ev=ev)
        recorder.on_event(ev)

    tape_strings: set = set()
    source, feed = choose_trace_source(collector, on_event)
    report_all_failed_guards(recorder, lambda f_locals: r_holder.__setitem__("frame_locals", f_locals))
    coverage = Coverage()  # lines traced into the compiled region (coverage.py)
    coverage.attach()
    os.environ.pop("TORCH_COMPILE_JOB_ID", None)  # PGO across processes makes runs irreproducible
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    try:
        device = resolve_device(spec)
    except TargetError as exc:
        out.write({"type": "meta", "torch_version": torch.__version__, "device": spec.device,
                   "trace_source": source, "python": sys.version.split()[0]})
        out.write({"type": "fatal", "error": str(exc)})
        return 2
    cudagraph_records = _count_cudagraph_recordings(spec, device)
    out.write({"type": "meta", "torch_version": torch.__version__, "device": device,
               "trace_source": source, "python": sys.version.split()[0]})
    if spec.seed is not None:  # default: torch's own start-up seed, as in a plain script
        torch.manual_seed(spec.seed)
    try:
        model, inputs_fn, sources = load_model(spec, device)
    except TargetError as exc:  # the target's mistake, naming its setting: reported, not fatal
        out.write({"type": "fatal", "error": str(exc)})
        return 2
    out.write({"type": "sources", "files": sources})
    out.write({"type": "model", "module_mode": module_mode(model)})
    apply_config_remedy(spec)
    compiled = torch.compile(model, **compile_options(spec))
    forward = model.forward if isinstance(model, torch.nn.Module) else model
    r = Replay(spec=spec, device=device, model=model, compiled=compiled, inputs_fn=inputs_fn,
               recorder=recorder, feed=feed, coverage=coverage, tape=tape,
               cudagraph_records=cudagraph_records)
    r.signature = _signature(forward, True)
    r.frame_signature = _signature(getattr(forward, "__func__", forward), False)
    r.frame_has_self = hasattr(forward, "__func__")
    r.entry_code = _entry_code(forward)
    r.entry_fn = getattr(forward, "__func__", forward)
    r_holder["replay"] = r
    for shape in spec.shapes():
        out.write(replay_shape(r, shape))
    out.write({"type": "done", "compiles": recorder.compiles, "frames": recorder.frame_list(),
               "seconds": round(time.perf_counter() - started, 3)})
    return 0


def report_all_failed_guards(recorder: Any,
                             on_frame: Callable[[Optional[Dict[str, Any]]], None] = lambda f: None
                             ) -> Callable[[], None]:
    """Before torch explains a recompile, re-check every value guard (``L['n'] == 8``) of the
    cache entries that failed and log the failing ones as a ``shapelint_failed_guards``
    artifact. torch's reason names only an entry's first failing guard, and its guard tree
    checks first what failed before, so an int that crossed a graph break beside a tensor
    whose dim changed too is seldom the one named. While torch explains, ``on_frame`` holds
    the locals of the frame being recompiled: the failed entry's shape guards are re-evaluated
    against them (a resume frame's ``L['attention_mask']`` is the trimmed mask its function
    computed before the break, not the entry's argument). Best effort: any error leaves
    torch's own path untouched. Returns the function that takes the hook out again (the
    ``compile_watch`` fixture's, when its ``with`` block ends)."""
    try:
        import torch._dynamo.convert_frame as convert_frame
        from torch._logging import trace_structured
    except ImportError:
        return lambda: None
    original = getattr(convert_frame, "get_and_maybe_log_recompilation_reasons", None)
    if original is None or getattr(original, "_shapelint", None) is recorder:
        return lambda: None

    def failed(cache_entries: Any, frame: Any) -> List[Dict[str, Any]]:
        out = []
        scope = {"L": frame.f_locals, "G": frame.f_globals}
        for ce in cache_entries:
            cid = getattr(ce, "compile_id", None)
            entry = (getattr(cid, "frame_id", None), getattr(cid, "frame_compile_id", None))
            for code in recorder.value_guard_codes(entry):
                try:
                    ok = eval(code, {"__builtins__": {}}, scope)  # noqa: S307 - torch's guard
                except Exception:  # noqa: BLE001 - a source this scope cannot read
                    continue
                if ok is False:
                    out.append({"entry": list(entry), "code": code})
        return out

    def wrapped(cache_entries: Any, frame: Any, *args: Any, **kwargs: Any) -> Any:
        if not kwargs.get("skip_logging") and not (len(args) > 1 and args[1]):
            try:
                found = failed(cache_entries, frame)
                if found:
                    trace_structured("artifact", metadata_fn=lambda: {
                        "name": "shapelint_failed_guards", "encoding": "json"},
                        payload_fn=lambda: found)
            except Exception:  # noqa: BLE001
                pass
        try:
            on_frame(dict(frame.f_locals))
        except Exception:  # noqa: BLE001
            on_frame(None)
        try:
            return original(cache_entries, frame, *args, **kwargs)
        finally:
            on_frame(None)

    wrapped._shapelint = recorder  # type: ignore[attr-defined]
    convert_frame.get_and_maybe_log_recompilation_reasons = wrapped

    def remove() -> None:
        if convert_frame.get_and_maybe_log_recompilation_reasons is wrapped:
            convert_frame.get_and_maybe_log_recompilation_reasons = original

    return remove


def _signature(fn: Any, follow: bool) -> Any:
    try:
        return inspect.signature(fn, follow_wrapped=follow)
    except (TypeError, ValueError):
        return None


def _count_cudagraph_recordings(spec: TargetSpec, device: str) -> List[int]:
    records = [0]
    if spec.mode and "reduce-overhead" in spec.mode and device.startswith("cuda"):
        try:
            from torch._inductor import cudagraph_trees as ct

            original = ct.CUDAGraphTreeManager.record_function

            def counting(self, *a, **kw):
                records[0] += 1
                return original(self, *a, **kw)

            ct.CUDAGraphTreeManager.record_function = counting
        except Exception:  # noqa: BLE001
            pass
    return records


def _accepts_seq_len(fn: Any) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "seq_len" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def main(argv: List[str]) -> int:
    die_with_parent()  # `shapelint run` killed (kill -9): end, leaving nothing behind
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
    become_subreaper()
    out = Out(out_path)
    try:
        return run(spec, out)
    except TargetError as exc:
        out.write({"type": "fatal", "error": str(exc)})
        return 2
    except MemoryError:
        out.write({"type": "fatal", "error": "out of memory"})
        return 2
    finally:
        end_descendants()


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no teardown of torch's state: it can hang or crash after a bad target
