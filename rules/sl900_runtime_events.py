"""Runtime-only rules: what the harness saw on lines no static rule predicted.

They have no static hooks; ``shapelint run`` reports them so users (and this project) see what
the static pass missed."""

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
