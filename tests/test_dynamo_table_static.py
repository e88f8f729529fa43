"""The Dynamo table from the static side (torch's side is tests/test_dynamo_table.py, slow):
for every row, the static pass (the default rules and the preview rules) flags the program's
marked line exactly when torch acts there (a guard, a specialization or a graph break), and
stays quiet where torch does nothing. The walker and the rules read the same table, so a row
they disagree on shows here without torch."""

from __future__ import annotations

import pytest

from conftest import check_tree, write_tree
from shapelint.static.dynamo import ROWS, Effect, Row

QUIET = (Effect.SYMBOLIC, Effect.NONE)


@pytest.mark.parametrize("row", ROWS, ids=[r.op for r in ROWS])
def test_static_pass_flags_the_marked_line_exactly_when_torch_acts(row: Row, tmp_path) -> None:
    write_tree(tmp_path, {"prog.py": row.program})
    line = next(n for n, text in enumerate(row.program.splitlines(), 1) if "# <-" in text)
    rules = sorted({f.rule for f in check_tree(tmp_path, preview=True).all_findings()
                    if f.line == line})
    if row.effect in QUIET:
        assert not rules, f"{row.op}: torch does nothing at line {line}, the static pass says {rules}"
    else:
        assert rules, f"{row.op}: torch {row.effect.value} at line {line}; no finding there"
