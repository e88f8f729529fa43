"""Assertions for tests: does a model recompile, or break its graph? For pytest (through the
plugin's fixture and marker) and for unittest alike. Failure messages name every event with the
shape of the call that triggered it, torch's reason, the blamed ``file:line``, the source line
and the static rule that predicted it.

One meaning per assertion name, whichever helper you use:

- ``assert_no_recompiles``: no recompile that the code caused. torch's own steps to dynamic
  shapes are allowed: the recompile that makes an input compiled static dynamic (automatic
  dynamic, once per input dim) and the one a size-1 input costs after a dynamic compile (0/1
  specialization). A guard on a size, an int argument's value, module state, any second
  recompile for the same input dim (``dynamic=False``) fail it.
- ``assert_max_compiles(n)`` / ``max_compiles=n``: at most ``n`` compiles, whatever caused them.
- ``assert_no_graph_breaks``: no graph break (raises GraphBreakError, not RecompileError).

torch is imported only when these are used."""

from __future__ import annotations

import linecache
import logging
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence

from shapelint.finding import Event, EventKind, TargetResult, shape_text
from shapelint.harness.gate import code_caused  # noqa: F401 - the marker's verdict, one home
from shapelint.harness.target import DEFAULT_BATCHES, TargetSpec


class CompileAssertionError(AssertionError):
    """A compile check failed (base of RecompileError and GraphBreakError)."""


class RecompileError(CompileAssertionError):
    """A model recompiled (or compiled more often than allowed)."""


class GraphBreakError(CompileAssertionError):
    """A model broke its graph."""


def _predictions(paths: Iterable[str], module_mode: str) -> Dict[tuple, List[str]]:
    """(abspath, line) -> ['SL101 size-branch', ...] from the static pass (torch-free), walking
    the ``module-mode`` side of ``self.training``."""
    paths = sorted({os.path.abspath(p) for p in paths if p and os.path.isfile(p)})
    if not paths:
        return {}
    from shapelint.config import Settings, enabled_codes
    from shapelint.registry import all_rules
    from shapelint.static.engine import Engine

    rules = all_rules()
    # every line asked about is one torch acted on: a preview rule's finding there is confirmed,
    # as `shapelint run` keeps it
    enabled = enabled_codes(rules, preview=True)
    root = os.path.commonpath([os.path.dirname(p) for p in paths])
    result = Engine(rules, enabled, Settings(module_mode=module_mode)).check(
        paths, root=root, use_cache=False)
    out: Dict[tuple, List[str]] = {}
    for f in result.findings:
        for line in range(f.location.line, max(f.location.end_line, f.location.line) + 1):
            out.setdefault((os.path.abspath(f.path), line), []).append(f"{f.rule} {f.name}")
    return out


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def explain(events: Iterable[Event], header: str, module_mode: Optional[str] = None) -> str:
    """The failure message: each event with the shape of its call, its reason and its lines.
    ``module_mode``: the mode the model's modules were compiled in, when known (else both
    sides of ``self.training`` are walked for the rules that name a line)."""
    events = list(events)
    predicted = _predictions([ab for ev in events for ab, _ in ev.locations()], module_mode or "any")
    lines = [header]
    for ev in events:
        gb = f" [{ev.registry_id}]" if ev.registry_id else ""
        frame = f" in {ev.frame}" if ev.frame else ""
        shape = shape_text(ev.shape) if ev.shape else "a call whose inputs torch did not describe"
        lines.append(f"  {EventKind(ev.kind).label} at {shape}{frame}: {ev.reason}{gb}")
        places = ev.locations()
        for ab, line in places:
            src = linecache.getline(ab, int(line)).strip()
            rules = predicted.get((os.path.abspath(ab), int(line)), [])
            pred = f"   [predicted by {', '.join(rules)}]" if rules else "   [no static rule predicted it]"
            lines.append(f"    {_shown(ab)}:{line}: {src}{pred}")
        if not places:
            notes = [g.note for g in ev.guards if g.note] or [ev.note]
            if notes and notes[0]:
                lines.append(f"    ({notes[0]})")
    return "\n".join(lines)


class CompileWatch:
    """Count compiles, recompiles and graph breaks in this process while the ``with`` block
    runs. Events carry the shapes of the call's inputs (``x=(8, 3)``) unless ``label()``
    names the calls.

    >>> with CompileWatch() as watch:
    ...     for b in (1, 2, 3, 8):
    ...         model(torch.randn(b, 16))
    >>> watch.assert_no_recompiles()
    """

    def __init__(self, reset: bool = True) -> None:
        self.reset = reset
        self._collector: Any = None
        self._recorder: Any = None
        self._muted: List[logging.Handler] = []
        self._frame_locals: Optional[Dict[str, Any]] = None
        self._unhook: Any = None

    def __enter__(self) -> "CompileWatch":
        import torch._dynamo

        from shapelint.harness.blame import Recorder
        from shapelint.harness.trace import Collector, attach
        from shapelint.harness.worker import report_all_failed_guards

        if self.reset:
            torch._dynamo.reset()
        # pytest's log capture also hooks this logger; the trace is data, not log lines
        trace_log = logging.getLogger("torch.__trace")
        self._muted = [h for h in trace_log.handlers if type(h).__module__.startswith("_pytest")]
        for h in self._muted:
            trace_log.removeHandler(h)
        self._collector = Collector(keep_inputs=True)
        self._recorder = Recorder(self._collector, self._value)
        self._recorder.begin_shape({})
        self._collector.on_event = self._recorder.on_event
        attach(self._collector)
        # as the marker's worker does: while torch explains a recompile, the failed entries'
        # guards are re-evaluated against the locals of the frame being recompiled, so a
        # merged range guard (`2 <= n <= 31`) is blamed on the lines that added its parts
        self._unhook = report_all_failed_guards(self._recorder, self._on_frame)
        return self

    def _on_frame(self, f_locals: Optional[Dict[str, Any]]) -> None:
        self._frame_locals = f_locals

    def _value(self, src: str) -> Any:
        """The value of a guard's source (``L['x'].size()[0]``) in the frame torch is
        recompiling; KeyError outside a recompile (the guard is then not re-evaluated)."""
        if self._frame_locals is None:
            raise KeyError(src)
        value = eval(src, {"__builtins__": {}}, {"L": self._frame_locals})  # noqa: S307 - torch's source
        return value if isinstance(value, (int, float, bool)) else int(value)

    def __exit__(self, *exc: Any) -> None:
        if self._unhook is not None:
            self._unhook()
            self._unhook = None
        trace_log = logging.getLogger("torch.__trace")
        trace_log.removeHandler(self._collector)
        for h in self._muted:
            trace_log.addHandler(h)
        self._recorder.end_shape()

    def _watched(self) -> Any:
        """The recorder of the ``with`` block; a clear error when there was none."""
        if self._recorder is None:
            raise RuntimeError("CompileWatch has watched nothing yet: use it as a context manager "
                               "first (`with CompileWatch() as watch:` around the calls), then "
                               "assert on `watch`")
        return self._recorder

    def label(self, text: str) -> None:
        """Name the next calls in failure messages (e.g. ``watch.label("batch=8")``)."""
        recorder = self._watched()
        recorder.end_shape()
        recorder.begin_shape({"label": text})

    @property
    def events(self) -> List[Event]:
        return list(self._watched().events)

    @property
    def compiles(self) -> int:
        return self._watched().compiles

    @property
    def recompiles(self) -> List[Event]:
        return [e for e in self.events if e.kind == "recompile"]

    @property
    def graph_breaks(self) -> List[Event]:
        return [e for e in self.events if e.kind == "graph-break"]

    def assert_max_compiles(self, n: int) -> None:
        if self.compiles > n:
            raise RecompileError(explain(self.recompiles, f"{self.compiles} compiles, more than the {n} allowed:"))

    def assert_no_recompiles(self) -> None:
        bad = code_caused(self.events)
        if bad:
            raise RecompileError(explain(bad, f"{len(bad)} recompile(s) caused by the code "
                                              f"({self.compiles} compiles):"))

    def assert_no_graph_breaks(self) -> None:
        if self.graph_breaks:
            raise GraphBreakError(explain(self.graph_breaks, f"{len(self.graph_breaks)} graph break(s):"))


def assert_no_recompiles(model: str, inputs: str, batch_sizes: Sequence[int] = tuple(DEFAULT_BATCHES),
                         seq_lens: Optional[Sequence[int]] = None, max_compiles: Optional[int] = None,
                         dynamic: str = "auto", backend: str = "eager", device: str = "auto",
                         timeout: float = 300.0, base_dir: Optional[str] = None,
                         fullgraph: bool = False,
                         import_paths: Optional[Sequence[str]] = None) -> TargetResult:
    """Replay ``model`` (a ``pkg.mod:factory`` or ``file.py:factory``) in a fresh process at
    the given shapes; raise RecompileError naming every recompile the code caused (see the
    module's docstring; with ``max_compiles``, also when it compiles more often than that),
    GraphBreakError under ``fullgraph`` when the graph breaks. Returns the replay's result.

    ``pkg.module`` references are imported from ``base_dir`` (default: the working
    directory), then ``import_paths`` (the pytest marker passes the project root, its
    ``src/``, pytest's ``pythonpath`` and the ini file's folder; by default the repository
    root holding ``base_dir`` and its ``src/``)."""
    from shapelint.config import repository_root
    from shapelint.harness.runner import run_target
    from shapelint.harness.target import import_dirs

    base_dir = base_dir or os.getcwd()
    if import_paths is None:
        import_paths = import_dirs(base_dir, project_root=repository_root(base_dir) or base_dir)
    spec = TargetSpec(name=model.split(":")[-1], model=model, inputs=inputs,
                      batch_sizes=list(batch_sizes), seq_lens=list(seq_lens) if seq_lens else None,
                      dynamic=dynamic, backend=backend, device=device, max_compiles=max_compiles,
                      timeout=timeout, base_dir=base_dir, fullgraph=fullgraph,
                      import_paths=list(import_paths))
    result = run_target(spec)

    def why(events: Iterable[Event], header: str) -> str:
        return explain(events, header, result.module_mode)

    counted = f"{result.compiles} compiles at {len(result.per_shape)} shapes"
    if result.error:
        raise RecompileError(why(result.events, f"{spec.name}: {result.error}"))
    failures = result.of_kind(EventKind.FALLBACK) + result.of_kind(EventKind.COMPILE_ERROR)
    if failures:
        raise RecompileError(why(failures, f"{spec.name}: torch did not compile every call "
                                           f"({counted}):"))
    if fullgraph and result.of_kind(EventKind.GRAPH_BREAK):
        raise GraphBreakError(why(result.of_kind(EventKind.GRAPH_BREAK),
                                  f"{spec.name}: graph break under fullgraph ({counted}):"))
    bad = code_caused(result.events)
    if bad:
        raise RecompileError(why(bad, f"{spec.name}: {len(bad)} recompile(s) caused by the "
                                      f"code ({counted}):"))
    if max_compiles is not None and result.compiles > max_compiles:
        raise RecompileError(why(result.of_kind(EventKind.RECOMPILE),
                                 f"{spec.name}: {counted}, more than the {max_compiles} allowed:"))
    return result


# ---------------------------------------------------------------------------------------------
# A rule's VALID and INVALID examples as tests (``shapelint test-rules PATH``, or pytest through
# :func:`rule_example_tests`): the same check tests/test_rule_examples.py runs on the built-in
# rules. An INVALID example marks each line the rule must report with ``# error: CODE``; a VALID
# example must report nothing.
# ---------------------------------------------------------------------------------------------

import re  # noqa: E402
from dataclasses import dataclass  # noqa: E402

#: ``# error: SL950`` (several codes: ``# error: SL950, CU001``)
EXAMPLE_MARK = re.compile(r"#\s*error:\s*(?P<codes>[A-Za-z]+\d+(?:\s*,\s*[A-Za-z]+\d+)*)")


@dataclass
class RuleExample:
    rule: Any  # the Rule class
    kind: str  # "VALID" or "INVALID"
    index: int
    source: str

    @property
    def id(self) -> str:
        return f"{self.rule.code}-{self.kind}-{self.index}"

    def marked_lines(self) -> List[int]:
        """Lines marked ``# error: CODE`` with this rule's code (1-based, as checked)."""
        out = []
        for n, line in enumerate(self.source.lstrip("\n").splitlines(), 1):
            m = EXAMPLE_MARK.search(line)
            if m and self.rule.code in re.split(r"\s*,\s*", m.group("codes").upper()):
                out.append(n)
        return out


def rule_examples(rules: Iterable[Any]) -> List[RuleExample]:
    """Every VALID and INVALID example of ``rules`` (runtime-only rules have none)."""
    out = []
    for rule in rules:
        if rule.runtime_only:
            continue
        for kind in ("VALID", "INVALID"):
            for i, src in enumerate(getattr(rule, kind) or ()):
                out.append(RuleExample(rule, kind, i, src))
    return out


def check_rule_example(example: RuleExample) -> Optional[str]:
    """None when the example holds; else what is wrong, in a sentence a rule author can act on.
    The example is written to a temporary folder and checked with every rule enabled (as
    ``--select ALL --preview``: SL001's examples need the codes they name); only its rule's
    findings count."""
    import tempfile

    from shapelint.config import Settings
    from shapelint.registry import builtin_rules
    from shapelint.static import suppress
    from shapelint.static.engine import Engine

    code = example.rule.code
    rules = {r.code: r for r in builtin_rules()}
    rules[code] = example.rule
    suppress.know_codes(rules)
    src = example.source.lstrip("\n")
    with tempfile.TemporaryDirectory(prefix="shapelint-example-") as d:
        path = os.path.join(d, "example.py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(src)
        try:
            result = Engine(rules, list(rules), Settings()).check([d], root=d, use_cache=False)
        except Exception as exc:  # noqa: BLE001 - a user's rule is arbitrary code
            return f"{example.id}: checking the example raised {exc!r}"
    if result.errors:
        return f"{example.id}: the example is not valid Python: " + \
            "; ".join(f"line {e.line}: {e.message}" for e in result.errors)
    got = sorted(f.line for f in result.all_findings() if f.rule == code)
    if example.kind == "VALID":
        if got:
            return (f"{example.id}: {code} reported a VALID example at line(s) "
                    f"{', '.join(map(str, got))}; a VALID example must report nothing")
        return None
    want = example.marked_lines()
    if not want:
        return (f"{example.id}: an INVALID example must mark each line {code} reports with "
                f"`# error: {code}`")
    if got != want:
        missing = sorted(set(want) - set(got))
        extra = sorted(set(got) - set(want))
        parts = []
        if missing:
            parts.append(f"not reported at marked line(s) {', '.join(map(str, missing))}")
        if extra:
            parts.append(f"reported at unmarked line(s) {', '.join(map(str, extra))}")
        return f"{example.id}: {code} {' and '.join(parts)}"
    return None


def rule_example_tests(path: str, base_dir: Optional[str] = None):
    """A pytest test (parametrized, one case per example) over the examples of the rules in
    ``path`` (a folder or a file, as in ``rule-paths``; relative to ``base_dir``, by default the
    folder of the calling test file)::

        # tests/test_my_rules.py
        from shapelint.testing import rule_example_tests

        test_my_rules = rule_example_tests("../my_rules")
    """
    import inspect

    import pytest

    from shapelint.registry import load_rule_paths

    if base_dir is None:
        base_dir = os.path.dirname(os.path.abspath(inspect.stack()[1].filename))
    examples = rule_examples(load_rule_paths([path], base_dir))

    @pytest.mark.parametrize("example", examples or [None],
                             ids=[e.id for e in examples] or ["no-examples"])
    def test_rule_example(example: Optional[RuleExample]) -> None:
        if example is None:
            pytest.fail(f"no rule with VALID or INVALID examples in {path}", pytrace=False)
        problem = check_rule_example(example)
        if problem:
            pytest.fail(problem, pytrace=False)

    return test_rule_example
