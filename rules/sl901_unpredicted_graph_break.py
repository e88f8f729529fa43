"""Runtime-only: reported by `shapelint run` for events on lines no static rule flagged."""

from shapelint.api import Rule


class UnpredictedGraphBreak(Rule):
    """
    ## What it does
    Reports a graph break seen at run time on a line no static rule flagged.

    ## Why is this bad?
    Each graph break splits the compiled region and adds a resume frame with its own compiles.

    ## Example
    An unsupported builtin or library call inside `forward`.

    ## Use instead
    See the registry id's page (`https://meta-pytorch.org/compile-graph-break-site/gb/`) for
    the hints torch ships.
    """

    code = "SL901"
    name = "unpredicted-graph-break"
    summary = "A graph break on a line no static rule flagged (runtime only)"
    evidence = ("graph-break",)
    runtime_only = True
