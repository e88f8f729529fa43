"""The read-only libcst walk (shapelint/static/cstwalk.py) visits what ``node.visit`` does."""

import libcst as cst

from shapelint.static.cstwalk import _LAYOUT, walk

SOURCE = '''
@decorator(1)
class M(nn.Module):  # a comment
    def forward(self, x, *ys, k: int = 2, **kw):
        """doc"""
        for i, y in enumerate(ys):
            x = x[:, 0] + y.view(-1) if k else [z for z in y if z]
        with ctx() as c:
            lam = lambda a: a ** 2
        try:
            del kw["a"]
        except (KeyError, ValueError) as e:
            raise RuntimeError(f"{e!r} {x.shape[0]:>4}") from e
        return {**kw, "x": x}, (yield x), not k
'''


class _Record(cst.CSTVisitor):
    def __init__(self) -> None:
        self.seen: list = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if type(node) not in _LAYOUT:
            self.seen.append(id(node))
        return True


class _Names:
    def __init__(self) -> None:
        self.names: list = []
        self.left: list = []

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node.value)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self.left.append(node)


def test_walk_visits_every_node_libcst_visits() -> None:
    module = cst.parse_module(SOURCE)
    rec = _Record()
    module.visit(rec)
    seen: list = []

    class _All:
        def __getattr__(self, name: str):
            if name.startswith("visit_"):
                return lambda node: seen.append(id(node))
            raise AttributeError(name)

    walk(module, _All())
    assert sorted(seen) == sorted(rec.seen)
    assert seen[0] == id(module)


def test_walk_skips_children_on_false_and_still_leaves() -> None:
    v = _Names()
    walk(cst.parse_module(SOURCE), v)
    assert "a" not in v.names and "lam" in v.names and "forward" in v.names
    assert len(v.left) == 1


def test_walk_of_a_deep_expression_raises_nothing() -> None:
    v = _Names()
    walk(cst.parse_module("y = " + " + ".join(["n"] * 3000) + "\n"), v)
    assert v.names.count("n") == 3000
