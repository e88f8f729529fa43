"""No crash on any program: hypothesmith generates syntactically valid Python (from the
grammar and from libcst's node types); the static pass must analyse it or report it as a file
error, never raise. Runs in CI at a modest size."""

from __future__ import annotations

import textwrap

import pytest

hypothesis = pytest.importorskip("hypothesis")
hypothesmith = pytest.importorskip("hypothesmith")
from hypothesis import HealthCheck, given, settings  # noqa: E402

from conftest import check_tree, write_tree  # noqa: E402

pytestmark = pytest.mark.slow
FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))


def _check(tmp_path_factory, files):
    root = tmp_path_factory.mktemp("fuzz")
    write_tree(root, files)
    result = check_tree(root, select=["ALL"], entry_points=("*",))
    for f in result.findings:
        assert f.location.line >= 1 and f.location.column >= 1 and f.rule.startswith("SL")
    return result


@FUZZ
@given(hypothesmith.from_grammar())
def test_grammar_programs_never_crash(tmp_path_factory, source):
    _check(tmp_path_factory, {"fuzz.py": source})


@FUZZ
@given(hypothesmith.from_node())
def test_node_programs_never_crash(tmp_path_factory, source):
    _check(tmp_path_factory, {"fuzz.py": source})


@FUZZ
@given(hypothesmith.from_grammar(auto_target=False))
def test_programs_inside_forward_never_crash(tmp_path_factory, source):
    body = textwrap.indent(source, "        ") if source.strip() else "        pass"
    module = ("import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
              "    def forward(self, x, n: int = 1):\n" + body + "\n        return x\n")
    _check(tmp_path_factory, {"model.py": module, "helper.py": source})
