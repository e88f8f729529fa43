"""Runtime-only: reported by `shapelint run` for events on lines no static rule flagged."""

from shapelint.api import Rule


class UnpredictedSpecialization(Rule):
    """
    ## What it does
    Reports a symbolic-shape specialization (a dynamic size replaced by a constant) on a line
    no static rule flagged.

    ## Why is this bad?
    A specialized size recompiles for every new value.

    ## Example
    `x.view(4, 3)` with a dynamic first dimension.

    ## Use instead
    Keep the size symbolic (`x.view(x.shape[0], -1)`).
    """

    code = "SL902"
    name = "unpredicted-specialization"
    summary = "A shape specialization on a line no static rule flagged (runtime only)"
    evidence = ("specialization",)
    runtime_only = True
