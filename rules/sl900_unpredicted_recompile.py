"""Runtime-only: reported by `shapelint run` for events on lines no static rule flagged."""

from shapelint.api import Rule


class UnpredictedRecompile(Rule):
    """
    ## What it does
    Reports a recompile that `shapelint run` blamed on a line where no static rule had a
    finding.

    ## Why is this bad?
    The line really costs a recompile at the shapes you replayed; the static pass did not see
    why, so the evidence (guard and reason text) is the best lead.

    ## Example
    A guard installed by code the static pass cannot follow (dynamic `getattr`, a C
    extension, a library outside the analysed tree).

    ## Use instead
    Read the reason, fix the line, and consider filing the pattern as a new rule.
    """

    code = "SL900"
    name = "unpredicted-recompile"
    summary = "A recompile on a line no static rule flagged (runtime only)"
    evidence = ("recompile",)
    runtime_only = True
