"""Every rule's VALID and INVALID examples are tests (Fixit-style): a rule's examples are its
documentation, so they must stay true."""

from __future__ import annotations

import re

import pytest

from shapelint.registry import all_rules

MARK = re.compile(r"#\s*error:\s*(SL\d+)")


def _examples():
    for code, rule in all_rules().items():
        if rule.runtime_only:
            continue
        for i, src in enumerate(rule.VALID):
            yield pytest.param(code, "valid", src, id=f"{code}-VALID-{i}")
        for i, src in enumerate(rule.INVALID):
            yield pytest.param(code, "invalid", src, id=f"{code}-INVALID-{i}")


@pytest.mark.parametrize("code,kind,src", list(_examples()))
def test_example(tree, code, kind, src):
    findings = tree({"example.py": src}, select=["ALL"])
    got = sorted(line for _, line, rule in findings if rule == code)
    lines = src.lstrip("\n").splitlines()
    want = sorted(i for i, line in enumerate(lines, 1) if MARK.search(line) and code in MARK.search(line).group(1))
    if kind == "valid":
        assert got == [], f"{code} reported on a VALID example at lines {got}"
    else:
        assert want, "an INVALID example must mark at least one line with '# error: CODE'"
        assert got == want


def test_every_rule_has_docs_and_examples():
    for code, rule in all_rules().items():
        doc = rule.documentation()
        for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
            assert section in doc, f"{code} lacks '{section}'"
        assert rule.runtime_only or (rule.VALID and rule.INVALID), f"{code} needs VALID and INVALID examples"
        assert re.fullmatch(r"SL\d{3}", code)
        assert rule.name and rule.summary


def test_a_rule_measured_under_nine_in_ten_is_not_on_by_default():
    """ruff's preview policy, with the zoo as the judge: a rule whose measured precision on real
    code is under 0.9 runs only when asked for (``--preview`` or its code)."""
    from shapelint.registry import on_by_default

    for code, rule in all_rules().items():
        if rule.measured_precision is not None and rule.measured_precision < 0.9:
            assert not on_by_default(rule), f"{code} is right {rule.measured_precision:.2f} of the time"
