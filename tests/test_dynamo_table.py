"""torch is the judge of the Dynamo table (``shapelint/static/dynamo.py``): every row's program
is replayed with the harness (``torch.compile``, backend eager, CPU, torch's default dynamic
mode, batch sizes 1, 2, 3, 4, 8, 17; one subprocess per row, two at a time) and the events
blamed on its line marked ``# <-`` must show the row's effect.

The baseline, common to every program: batch 1 compiles a static graph (a size of 1 is always
specialized); batch 2 recompiles with dim 0 dynamic (automatic dynamic: a ``size mismatch``
reason, no line); batches 3, 4, 8 and 17 then hit that graph unless something at the line
guards or pins the size. So, at the marked line:

- ``SYMBOLIC`` / ``NONE``: no event, and no compile beyond the baseline (2 compiles).
- ``GRAPH_BREAK``: a graph break.
- ``GUARD`` and ``SPECIALIZE``: a recompile or a specialization, and the two are told apart by
  the sizes after the dynamic one: a guard holds on one side, so at least one of batches 3, 4, 8,
  17 reuses a graph (``n > 4`` recompiles at 8 only); a specialized size recompiles for every new
  size (each of 3, 4, 8 and 17 compiles).

A program must really vary the size it is about (dim 0 here), keep it over 1 (a size of 1 is
0/1-specialized whatever the line does) and compute something on every path (a first call whose
graph is empty makes Dynamo skip the frame for good). When a row fails, check the program
first, then change the row's effect to what torch did: the static pass follows these rows.
"""

from __future__ import annotations

import os
from typing import Any, Dict

import pytest

torch = pytest.importorskip("torch")

from replay_support import describe, replay_files, replay_selected  # noqa: E402
from shapelint.harness.join import events_of  # noqa: E402
from shapelint.static.dynamo import ROWS, Effect, Row  # noqa: E402

pytestmark = pytest.mark.slow

AFTER_DYNAMIC = [3, 4, 8, 17]  # the sizes after the one that made dim 0 dynamic
BASELINE_COMPILES = 2


def _marked_line(row: Row) -> int:
    lines = [n for n, text in enumerate(row.program.splitlines(), 1) if "# <-" in text]
    assert len(lines) == 1, f"{row.op}: the program must mark exactly one line `# <-`"
    return lines[0]


def _replay(row: Row, folder: str) -> Dict[str, Any]:
    return replay_files(row.op, folder, {"prog.py": row.program}, "prog.py:build", "prog.py:inputs")


@pytest.fixture(scope="module")
def replays(request, tmp_path_factory):
    """Every selected row replayed, two at a time (each in its own subprocess)."""
    yield from replay_selected(request, str(tmp_path_factory.mktemp("dynamo-table")), "row",
                               lambda row: row.op, _replay)


def test_rows_are_unique_and_marked() -> None:
    assert len({r.op for r in ROWS}) == len(ROWS)
    for row in ROWS:
        _marked_line(row)
        compile(row.program, row.op, "exec")


@pytest.mark.parametrize("row", ROWS, ids=[r.op for r in ROWS])
def test_torch_agrees_with_the_row(row: Row, replays) -> None:
    result = replays[row.op].result()
    assert not result.error, f"{row.op}: the program could not be replayed: {result.error}"
    line = _marked_line(row)
    at_line = [ev for ev in events_of(result)
               if ev["line"] == line and os.path.basename(ev["abspath"]) == "prog.py"]
    kinds = {ev["kind"] for ev in at_line}
    new = {r.batch: r.new_compiles for r in result.per_shape}
    what = (f"{row.op}: the table says {row.effect.name}; torch "
            f"{result.torch_version} did, at line {line}:\n{describe(result)}")
    assert not any(r.error for r in result.per_shape), f"the program raised\n{what}"
    if row.effect in (Effect.SYMBOLIC, Effect.NONE):
        assert not at_line, f"an event at the marked line\n{what}"
        assert result.compiles == BASELINE_COMPILES, \
            f"{result.compiles} compiles, not the baseline {BASELINE_COMPILES}\n{what}"
    elif row.effect is Effect.GRAPH_BREAK:
        assert "graph-break" in kinds, f"no graph break at the marked line\n{what}"
    else:
        assert kinds & {"recompile", "specialization"}, \
            f"no recompile or specialization at the marked line\n{what}"
        every_size = all(new.get(b, 0) >= 1 for b in AFTER_DYNAMIC)
        if row.effect is Effect.SPECIALIZE:
            assert every_size, f"a size after the dynamic one reused a graph: a guard, not a " \
                               f"specialization\n{what}"
        else:
            assert not every_size, f"every new size recompiled: a specialization, not a " \
                                   f"guard\n{what}"
