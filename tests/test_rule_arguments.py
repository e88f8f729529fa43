"""Every rule reads a call's arguments by name and by position alike.

diffusers' ``x.repeat_interleave(repeats=r, dim=1)`` once ended a whole check with an
IndexError in a rule that expected ``repeats`` by position. Here each rule's examples are
rewritten with every argument of a torch call that can be passed by keyword passed by keyword
(the parameter names come from torch's stubs, ``shapelint/static/data/torch_api.json``), and
the rewritten example must give the same findings and no error.
"""

from __future__ import annotations

import libcst as cst
import pytest

from shapelint.registry import all_rules
from shapelint.static.project import dotted as _dotted
from shapelint.static.torch_api import load


class _ByKeyword(cst.CSTTransformer):
    """Rewrite ``torch.f(a, b)`` / ``x.m(a, b)`` as ``torch.f(input=a, other=b)`` where torch's
    signature allows it (a suffix of the positional arguments, each a named parameter that is
    not positional-only)."""

    def __init__(self) -> None:
        self.api = load()
        self.rewritten = 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        name, is_method = None, False
        dotted = _dotted(func)
        if dotted and dotted.startswith("torch.") and self.api.function(dotted) is not None:
            name = dotted
        elif isinstance(func, cst.Attribute) and self.api.method(func.attr.value) is not None \
                and not (dotted or "").startswith(("torch.", "self.", "super")):
            name, is_method = func.attr.value, True
        if name is None or any(a.star for a in updated.args):
            return updated
        positional = [a for a in updated.args if a.keyword is None]
        keywords = [a.keyword.value for a in updated.args if a.keyword is not None]
        overload = self.api.resolve(name, len(positional), keywords, is_method)
        binding = self.api.bind(name, len(positional), keywords, is_method)
        if overload is None or binding is None:
            return updated
        names = {}
        for pname, (where, key) in binding.items():
            param = overload.param(pname)
            if where == "pos" and param is not None and param.kind == "positional":
                names[key] = pname
        # only a suffix of the positional arguments can become keywords
        start = len(positional)
        while start > 0 and (start - 1) in names:
            start -= 1
        if start == len(positional):
            return updated
        new_args = []
        for i, a in enumerate(positional):
            if i >= start:
                a = a.with_changes(keyword=cst.Name(names[i]), equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
            new_args.append(a)
        new_args += [a for a in updated.args if a.keyword is not None]
        self.rewritten += 1
        return updated.with_changes(args=new_args)


def by_keyword(src: str):
    module = cst.parse_module(src.lstrip("\n"))
    t = _ByKeyword()
    return module.visit(t).code, t.rewritten


def _examples():
    """The examples with at least one torch call whose arguments a keyword can name (the
    others would pass unchanged, so they are not parametrized)."""
    for code, rule in all_rules().items():
        for kind, examples in (("VALID", rule.VALID), ("INVALID", rule.INVALID)):
            for i, src in enumerate(examples):
                rewritten, count = by_keyword(src)
                if count:
                    yield pytest.param(code, src, rewritten, id=f"{code}-{kind}-{i}")


def _findings(root, files):
    import os

    from conftest import check_tree, write_tree

    write_tree(root, files)
    result = check_tree(root, ["ALL"])
    return sorted((f.line, f.rule) for f in result.all_findings()), \
        [e for e in result.errors if os.path.abspath(e.path).startswith(str(root))]


@pytest.mark.parametrize("code,src,rewritten", list(_examples()))
def test_findings_do_not_depend_on_how_arguments_are_passed(tmp_path, code, src, rewritten):
    before, errors_before = _findings(tmp_path / "positional", {"example.py": src})
    after, errors_after = _findings(tmp_path / "keyword", {"example.py": rewritten})
    assert not errors_before and not errors_after, errors_before + errors_after
    assert after == before, rewritten


def test_the_rewrite_names_arguments():
    src = "import torch\ny = torch.repeat_interleave(x, counts, 0)\nz = x.repeat_interleave(r, 1)\n"
    out, n = by_keyword(src)
    assert n == 2
    assert "torch.repeat_interleave(input=x, repeats=counts, dim=0)" in out
    assert "x.repeat_interleave(repeats=r, dim=1)" in out
