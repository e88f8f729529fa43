"""What fails a replay, in one place: the pytest marker, the fixture's assertions and
``shapelint run --fail-on`` give the same verdicts.

- ``code-recompiles``: a recompile the code caused. torch's own steps to dynamic shapes pass
  (``shapelint.finding.TORCH_STEPS``: the recompile that makes an input compiled static dynamic,
  once per input dim, and the one a size-1 input costs); a guard on a size, an int's value,
  module state, a second recompile for the same input dim (``dynamic=False``) fail.
- ``graph-breaks``: any graph break.
- ``unpredicted``: an event on a line no static rule flagged (``shapelint run`` only: it needs
  the static pass).
- ``any-recompile``: any recompile, torch's own steps included.

A fallback to eager and a failed compile always fail a replay (``runner.verdict``).
"""

from __future__ import annotations

from typing import Iterable, List, Sequence

from shapelint.finding import (GRAPH_BREAK, RECOMPILE, UNPREDICTED, Blame, Event, Finding,
                               StrEnum, TargetResult)


class Gate(StrEnum):
    CODE_RECOMPILES = "code-recompiles"
    GRAPH_BREAKS = "graph-breaks"
    UNPREDICTED = "unpredicted"
    ANY_RECOMPILE = "any-recompile"


def parse_gates(text: str) -> List[Gate]:
    """``code-recompiles,graph-breaks`` -> gates; a ValueError naming the unknown one."""
    out = []
    for word in (w.strip() for w in text.split(",")):
        if not word:
            continue
        try:
            out.append(Gate(word))
        except ValueError:
            raise ValueError(f"--fail-on: unknown `{word}` (one of "
                             f"{', '.join(g.value for g in Gate)})") from None
    return out


def code_caused(events: Iterable[Event]) -> List[Event]:
    """The recompiles the code caused (see the module's docstring)."""
    out: List[Event] = []
    promoted: set = set()
    for ev in events:
        if ev.kind != RECOMPILE:
            continue
        if ev.torch_step:
            keys = {(ev.frame, g.input, g.dim) for g in ev.cause if g.detail == Blame.INPUT_DYNAMIC}
            if not keys & promoted:
                promoted |= keys
                continue
        out.append(ev)
    return out


def gate_problems(result: TargetResult, gates: Sequence[Gate],
                  findings: Sequence[Finding] = ()) -> List[str]:
    """What ``gates`` find wrong with one replay (``findings``: the run's, for ``unpredicted``)."""
    problems = []
    if Gate.CODE_RECOMPILES in gates:
        bad = code_caused(result.events)
        if bad:
            lines = sorted({f"{ev.path}:{ev.line}" for ev in bad if ev.path and ev.line})
            where = f" at {', '.join(lines[:5])}" if lines else ""
            problems.append(f"{len(bad)} recompile(s) caused by the code{where} (--fail-on "
                            f"code-recompiles)")
    if Gate.ANY_RECOMPILE in gates and result.of_kind(RECOMPILE):
        problems.append(f"{len(result.of_kind(RECOMPILE))} recompile(s) (--fail-on any-recompile)")
    if Gate.GRAPH_BREAKS in gates and result.of_kind(GRAPH_BREAK):
        problems.append(f"{len(result.of_kind(GRAPH_BREAK))} graph break(s) (--fail-on graph-breaks)")
    if Gate.UNPREDICTED in gates:
        mine = [f for f in findings if f.status == UNPREDICTED
                and any(e.target == result.name for e in f.evidence_events)]
        if mine:
            problems.append(f"{len(mine)} event(s) no static rule predicted, at "
                            f"{', '.join(sorted({f'{f.path}:{f.line}' for f in mine})[:5])} "
                            f"(--fail-on unpredicted)")
    return problems
