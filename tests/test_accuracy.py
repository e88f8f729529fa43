"""Accuracy on the labelled cases may only go up: the recorded floor is bench/accuracy_baseline.json."""

from __future__ import annotations

import json
import os

from conftest import REPO


def test_accuracy_not_below_recorded(cases_root):
    import accuracy

    recall, precision, lines = accuracy.measure(cases_root)
    with open(os.path.join(REPO, "bench", "accuracy_baseline.json")) as fh:
        floor = json.load(fh)
    report = "\n".join(lines)
    assert recall >= floor["recall"], report
    assert precision >= floor["precision"], report
