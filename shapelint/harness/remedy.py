"""Remedies, measured (``shapelint run --suggest``, target key ``suggest = true``).

For the recompiles whose cause is a varying dim (an input compiled static, a size-1
specialization) or a varying int argument, and for ``.item()`` graph breaks, the target is
replayed again with each candidate remedy applied, in a fresh process like the first replay:

- ``torch._dynamo.mark_dynamic(x, d)`` on the dims that varied (``maybe_mark_dynamic`` when
  marking raises because the code specializes the dim; ``mark_unbacked`` for the size-1
  specialization),
- ``TORCH_COMPILE_DYNAMIC_SOURCES`` naming the varying int arguments,
- ``torch.compile(..., dynamic=True)``,
- ``torch._dynamo.config.capture_scalar_outputs = True`` for ``.item()``.

Each is reported with the compile counts before and after (and graph breaks, errors), as
measured: ``helps``, ``no change``, ``worse``, ``breaks the graph`` or ``fails``."""

from __future__ import annotations

import dataclasses
import re
import threading
from typing import Callable, List, Optional, Tuple

from shapelint.finding import (CONFIRMED, GRAPH_BREAK, RECOMPILE, Blame, Counts, Finding, Remedy,
                               RemedyKind, RemedyVerdict, TargetResult)
from shapelint.harness.target import TargetSpec

SIZE_SRC = re.compile(r"^L\['(?P<name>\w+)'\](?:\['(?P<key>\w+)'\])?\.size\(\)\[(?P<dim>\d+)\]$")
INT_SRC = re.compile(r"^L\['(?P<name>\w+)'\]$")
#: dynamic modes in which marking a dim is a change (under dynamic=True it already is dynamic)
DIM_DETAILS = {Blame.INPUT_DYNAMIC, Blame.SIZE_ONE, Blame.DIM_MARKING}


def varying_dims(result: TargetResult) -> List[Tuple[str, int]]:
    out = []
    for src in result.varying:
        m = SIZE_SRC.match(src)
        if m:
            name = m.group("key") if m.group("name") in ("kwargs",) and m.group("key") else m.group("name")
            if m.group("name") == "args":
                continue
            out.append((name, int(m.group("dim"))))
    return sorted(set(out))


def varying_ints(result: TargetResult) -> List[str]:
    return sorted(src for src in result.varying for m in [INT_SRC.match(src)]
                  if m and m.group("name") not in ("self", "args", "kwargs"))


def promoted_dims(result: TargetResult) -> List[Tuple[str, int]]:
    """The (input, dim) pairs the recompiles name: an input compiled static whose dim changed
    (``tensor 'x' size mismatch at index 1``), kept when the dim varied across the shapes."""
    varied = set(varying_dims(result))
    out = []
    for ev in result.of_kind(RECOMPILE):
        for g in ev.guards:
            if g.detail == Blame.INPUT_DYNAMIC and g.input and g.dim is not None:
                name = g.input.split("'")[-2] if "'" in g.input else g.input
                pair = (name, g.dim)
                if pair in varied and pair not in out:
                    out.append(pair)
    return sorted(out) or sorted(varied)


def guarded_ints(result: TargetResult) -> List[str]:
    """Int arguments that varied and that a value guard names (``n == 1``)."""
    names = {m.group("name"): src for src in varying_ints(result) for m in [INT_SRC.match(src)] if m}
    out = []
    for ev in result.of_kind(RECOMPILE):
        for g in ev.guards:
            if g.detail != Blame.VALUE_GUARD:
                continue
            text = g.guard or g.text
            for name, src in names.items():
                if re.search(r"(?<![\w.'])" + re.escape(name) + r"\b", text) and src not in out:
                    out.append(src)
    return sorted(out)


MARK_FUNCTIONS = {RemedyKind.MARK_DYNAMIC: "torch._dynamo.mark_dynamic",
                  RemedyKind.MAYBE_MARK_DYNAMIC: "torch._dynamo.maybe_mark_dynamic",
                  RemedyKind.MARK_UNBACKED: "torch._dynamo.decorators.mark_unbacked"}


def _marks(kind: RemedyKind, dims: List[Tuple[str, int]], why: str, spec: TargetSpec) -> Remedy:
    calls = "; ".join(f"{MARK_FUNCTIONS[kind]}({n}, {d})" for n, d in dims)
    return Remedy(kind=kind, marks=list(dims), code=calls, why=why,
                  where=f"on the tensors `{spec.inputs}` returns (or before each call of the "
                        f"compiled model)")


def propose(spec: TargetSpec, result: TargetResult) -> List[Remedy]:
    """Candidate remedies for what this replay saw (not yet measured)."""
    details = {g.detail for ev in result.of_kind(RECOMPILE) for g in ev.guards} | \
        {ev.detail for ev in result.of_kind(RECOMPILE)}
    out: List[Remedy] = []
    # every varying dim, not only those the recompiles name: inputs whose dims are tied (an
    # attention mask beside input_ids) must be marked together, or the equality torch guards
    # between them specializes the marked one (a ConstraintViolationError, then retried
    # without the dims it names)
    dims = (sorted(set(promoted_dims(result)) | set(varying_dims(result)))
            if details & set(DIM_DETAILS) else [])
    if dims:
        out.append(_marks(RemedyKind.MARK_DYNAMIC, dims,
                          why="the varying dims compiled static first (automatic dynamic "
                              "recompiles to make them dynamic)", spec=spec))
        if Blame.SIZE_ONE in details or any(r.batch == 1 for r in result.per_shape):
            out.append(_marks(RemedyKind.MARK_UNBACKED, dims,
                              why="sizes 0 and 1 are specialized unless the dim is unbacked",
                              spec=spec))
    ints = guarded_ints(result)
    if ints:
        value = ",".join(ints)
        out.append(Remedy(kind=RemedyKind.DYNAMIC_SOURCES, sources=value,
                          code=f'TORCH_COMPILE_DYNAMIC_SOURCES="{value}"',
                          where="in the environment of the process that compiles",
                          why="the int arguments are guarded by value until automatic dynamic "
                              "promotes them"))
    if result.of_kind(RECOMPILE) and spec.dynamic != "true" and (dims or ints):
        out.append(Remedy(kind=RemedyKind.DYNAMIC_TRUE, code="torch.compile(model, dynamic=True)",
                          where="where the model is compiled",
                          why="every size and int argument symbolic from the first compile"))
    if any(ev.registry_id == "GB0124" for ev in result.of_kind(GRAPH_BREAK)):
        out.append(Remedy(kind=RemedyKind.CAPTURE_SCALAR_OUTPUTS,
                          code="torch._dynamo.config.capture_scalar_outputs = True",
                          where="before torch.compile",
                          why="`.item()` becomes an unbacked symbol instead of a graph break"))
    return out


SOURCE_DIM = re.compile(r"L\['(?P<name>\w+)'\](?:\['(?P<key>\w+)'\])?\.size\(\)\[(?P<dim>\d+)\]")


def _violated(problem: str) -> List[Tuple[str, int]]:
    """The dims a ConstraintViolationError names: the code specializes them."""
    out = []
    for m in SOURCE_DIM.finditer(problem or ""):
        name = m.group("key") if m.group("name") == "kwargs" and m.group("key") else m.group("name")
        out.append((name, int(m.group("dim"))))
    return out


def _counts(r: TargetResult) -> Counts:
    return Counts(compiles=r.compiles, graph_breaks=len(r.of_kind(GRAPH_BREAK)),
                  errors=sum(1 for row in r.per_shape if row.error) + (1 if r.error else 0))


def judge(before: Counts, after: Counts) -> RemedyVerdict:
    if after.errors > before.errors:
        return RemedyVerdict.FAILS
    if after.graph_breaks > before.graph_breaks:
        return RemedyVerdict.BREAKS_GRAPH
    if after.compiles < before.compiles or after.graph_breaks < before.graph_breaks:
        return RemedyVerdict.HELPS
    if after.compiles == before.compiles:
        return RemedyVerdict.NO_CHANGE
    return RemedyVerdict.WORSE


def measure(spec: TargetSpec, result: TargetResult,
            stopping: Optional[threading.Event] = None,
            say: Callable[[str], None] = lambda text: None) -> List[Remedy]:
    """Replay ``spec`` once per proposed remedy; each remedy with its measured counts. A
    ``mark_dynamic`` the code's specialization makes raise is tried again without the dims it
    names (``maybe_mark_dynamic`` for those)."""
    from shapelint.harness.runner import run_target

    before = _counts(result)
    out: List[Remedy] = []
    todo = propose(spec, result)
    while todo:
        remedy = todo.pop(0)
        if stopping is not None and stopping.is_set():
            break
        say(f"  {spec.name}: measuring `{remedy.code}`")
        trial = dataclasses.replace(spec, suggest=False, remedy={
            "kind": remedy.kind.value, "marks": [list(m) for m in remedy.marks],
            "sources": remedy.sources})
        after_result = run_target(trial)
        after = _counts(after_result)
        verdict = judge(before, after)
        problem = after_result.error or next((r.error for r in after_result.per_shape if r.error), None)
        row = dataclasses.replace(remedy, before=before, after=after, verdict=verdict,
                                  problem=problem)
        out.append(row)
        if remedy.kind == RemedyKind.MARK_DYNAMIC and verdict == RemedyVerdict.FAILS and problem \
                and "Constraint" in problem:  # the code specializes a marked dim
            marks = list(remedy.marks)
            bad = [m for m in _violated(problem) if m in marks]
            rest = [m for m in marks if m not in bad]
            retries = sum(1 for r in out if r.kind == RemedyKind.MARK_DYNAMIC)
            if bad and rest and retries < 3:  # measure the marks the code lets be dynamic
                todo.insert(0, _marks(RemedyKind.MARK_DYNAMIC, rest,
                                      why=f"mark_dynamic of {', '.join(f'{n} dim {d}' for n, d in bad)} "
                                          f"raised: the code specializes it", spec=spec))
            if not any(r.kind == RemedyKind.MAYBE_MARK_DYNAMIC for r in out + todo):
                first = next(r for r in out if r.kind == RemedyKind.MARK_DYNAMIC).marks
                todo.insert(1 if bad and rest and retries < 3 else 0,
                            _marks(RemedyKind.MAYBE_MARK_DYNAMIC, first,
                                   why="mark_dynamic raised: the code specializes a dim; "
                                       "maybe_mark_dynamic lets it", spec=spec))
    return out


def describe(row: Remedy) -> str:
    """One remedy for a report: a helpful one with its code, where it goes and what it
    measured; one that did not help on one short line; a code change with its place."""
    if row.kind == RemedyKind.CODE_CHANGE:
        return f"change the code at {row.where} ({row.why}): {row.code}"
    b, a = row.before, row.after
    if b is None or a is None:
        return f"`{row.code}`: not measured"
    extra = ""
    if a.graph_breaks != b.graph_breaks:
        extra = f", graph breaks {b.graph_breaks} -> {a.graph_breaks}"
    counts = f"{b.compiles} compiles -> {a.compiles}{extra}"
    if row.verdict != RemedyVerdict.HELPS:
        problem = f": {row.problem.splitlines()[0][:120]}" if row.problem else ""
        return f"`{row.code}`: {row.verdict} ({counts}){problem}"
    where = f" {row.where}" if row.where else ""
    return f"`{row.code}`{where}: {counts} (measured, helps)"


def code_changes(target: TargetResult, findings: List[Finding]) -> List[Remedy]:
    """The code change each confirmed finding of this target's events describes (its rule's
    hint, at its line), after the knobs: what moves a model the knobs cannot bring within its
    budget (issue 20's classifier: moving the trim out of forward, removing the fixed slice)."""
    out: List[Remedy] = []
    for f in findings:
        if f.status != CONFIRMED or f.library or not f.hint:
            continue
        if not any(e.target == target.name for e in f.evidence_events):
            continue
        out.append(Remedy(kind=RemedyKind.CODE_CHANGE, code=f.hint, where=f"{f.path}:{f.line}",
                          why=f"{f.rule} {f.name}"))
    return out


def within_budget(target: TargetResult) -> Optional[bool]:
    """Whether a measured knob brings the target within its ``max-compiles`` (None: no
    budget, or nothing measured)."""
    measured = [r for r in target.remedies if r.after is not None]
    if target.max_compiles is None or not measured:
        return None
    return any(r.after.compiles <= target.max_compiles and r.verdict == RemedyVerdict.HELPS
               for r in measured if r.after is not None)
