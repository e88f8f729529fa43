"""Runtime-only: reported by `shapelint run` for events on lines no static rule flagged."""

from shapelint.api import Rule


class CompileError(Rule):
    """
    ## What it does
    Reports a compile error seen at run time on a line no static rule flagged.

    ## Why is this bad?
    The model does not compile at these shapes.

    ## Example
    An op without a fake (meta) implementation.

    ## Use instead
    Read the error; add the missing fake/meta kernel or move the code out of the region.
    """

    code = "SL903"
    name = "unpredicted-compile-error"
    summary = "A compile error on a line no static rule flagged (runtime only)"
    severity = "error"
    evidence = ("compile-error",)
    runtime_only = True
