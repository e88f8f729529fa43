"""Accuracy on the labelled cases may only go up: the recorded floor is bench/accuracy_baseline.json,
for the default rules and for the whole catalogue (``--preview``: the rules demoted for their
held-out precision still find what they found)."""

from __future__ import annotations

import json
import os

import pytest
from conftest import REPO


@pytest.mark.parametrize("rules", ["default", "preview"])
def test_accuracy_not_below_recorded(cases_root, rules):
    import accuracy

    recall, precision, lines = accuracy.measure(cases_root, preview=rules == "preview")
    with open(os.path.join(REPO, "bench", "accuracy_baseline.json")) as fh:
        floor = json.load(fh)[rules]
    report = "\n".join(lines)
    assert recall >= floor["recall"], report
    assert precision >= floor["precision"], report
