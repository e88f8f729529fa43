"""Who a call calls: a function or method of the analysed tree, a submodule, a class being
built, a method of a value, or a library function by qualified name.

Separated from the walk so that one place answers it: the walk then binds the arguments to the
callee's signature, hands the call to the rules, and either follows the callee or asks
``results.py`` what it returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import libcst as cst

from shapelint.static.project import ClassInfo, FunctionInfo, dotted
from shapelint.values import Kind, Value

if TYPE_CHECKING:  # pragma: no cover
    from shapelint.static.flow import Walker

#: the detail of a name a function imports locally, before the imported qualified name
IMPORTED = "import:"


@dataclass
class Callee:
    """What a call expression calls.

    ``kind`` is ``function`` (a function or method of the tree: ``target``), ``module`` (an
    nn.Module instance: ``module_class``, and ``target`` its forward when it is in the tree),
    ``construct`` (a class: ``module_class`` when it is an nn.Module), ``method`` (a method
    of ``receiver`` outside the tree: ``x.view``, ``cache.update``), ``external`` (a library
    function by ``qualname``: ``torch.cat``, ``math.log``, ``print``) or ``unknown``.
    """

    kind: str
    qualname: Optional[str] = None
    method: Optional[str] = None
    receiver: Optional[Value] = None
    target: Optional[FunctionInfo] = None
    bound_self: bool = False
    module_class: str = ""
    #: the class of ``self`` in ``target`` when it is a subclass of the class defining it
    #: (``LSTM2d`` runs ``RNN2dBase.forward`` with the ``self.rnn_v`` its own ``__init__`` built)
    instance: Optional[ClassInfo] = None


def _torch_nn_base(project, cls: ClassInfo) -> Optional[str]:
    """The torch.nn layer class ``cls`` derives from (``torch.nn.Embedding``), where no class
    of the tree between them defines ``forward``; None for ``nn.Module`` itself."""
    for c in project.mro(cls):
        if c is not cls and "forward" in c.methods:
            return None
        for base in c.bases:
            if base.startswith("torch.nn.") and base.rsplit(".", 1)[-1] != "Module":
                return base
    return None


def _is_self_attr(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) \
        and node.value.value == "self"


def resolve(w: "Walker", func: cst.BaseExpression) -> Callee:
    """Resolve ``func`` (the callee expression of a call) in the walker's function."""
    project = w.a.project
    method: Optional[str]
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) \
            and dotted(func.value.func) == "super" and w.cls is not None:
        method = func.attr.value
        for base in project.mro(w.cls)[1:]:
            if method in base.methods:
                fn = base.methods[method]
                return Callee("function", qualname=fn.qualname, method=method, target=fn,
                              bound_self=True, instance=w.cls)
        layer = _torch_nn_base(project, w.cls) if method == "forward" else None
        if layer is not None:  # `super().forward(x)` of an `nn.Embedding` subclass: the layer's
            return Callee("module", module_class=layer)
        if project.is_nn_module(w.cls):  # super().__init__() of a module: nn.Module's own
            return Callee("external", qualname=f"torch.nn.Module.{method}")
        return Callee("unknown", method=method)
    if isinstance(func, cst.Attribute) and _is_self_attr(func) and w.cls is not None:
        return _self_member(w, func)
    if isinstance(func, cst.Attribute) and w.local_base(func.value):
        method = func.attr.value
        receiver = w.ev(func.value)
        if receiver.detail.startswith(IMPORTED):  # `mod.f()` of a module imported locally
            return _imported(w, f"{receiver.detail[len(IMPORTED):]}.{method}")
        if receiver.is_module and receiver.detail:
            cls = project.class_of(receiver.detail, w.mod)
            found = project.method(cls, method) if cls is not None else None
            if found is not None:
                return Callee("function", qualname=found.qualname, method=method,
                              receiver=receiver, target=found, bound_self=True, instance=cls)
        return Callee("method", method=method, receiver=receiver)
    if isinstance(func, cst.Name) and func.value in w.env:
        receiver = w.ev(func)
        if receiver.detail.startswith(IMPORTED):  # a function imported inside the function
            return _imported(w, receiver.detail[len(IMPORTED):])
        if receiver.is_module:
            return _module_call(w, receiver)
        return Callee("unknown", receiver=receiver)
    name = dotted(func)
    if name is None:
        w.ev(func)
        return Callee("unknown")
    qualname = w.mod.resolve(name)
    method = None
    if isinstance(func, cst.Attribute) and name.split(".")[0] in w.mod.loggers:
        method = func.attr.value
    obj = project.lookup(qualname, w.mod) if "." in qualname else None
    if obj is None and name in w.mod.functions:
        obj = w.mod.functions[name]
    if obj is None and name in w.mod.classes:
        obj = w.mod.classes[name]
    if isinstance(obj, FunctionInfo):
        return Callee("function", qualname=obj.qualname, target=obj)
    if isinstance(obj, ClassInfo):
        if project.is_nn_module(obj):  # built inside the region: Dynamo traces its __init__
            init = project.method(obj, "__init__")
            return Callee("construct", qualname=obj.qualname, module_class=obj.qualname,
                          target=init, bound_self=True)
        return Callee("construct", qualname=obj.qualname)
    last = qualname.rsplit(".", 1)[-1]
    if qualname.startswith("torch.nn.") and last[:1].isupper() and \
            not qualname.startswith(("torch.nn.functional", "torch.nn.init", "torch.nn.utils")):
        if last in ("Parameter", "Buffer"):  # a tensor, not a module
            return Callee("construct", qualname=qualname)
        return Callee("construct", qualname=qualname, module_class=qualname)
    return Callee("external", qualname=qualname, method=method)


def _imported(w: "Walker", qualname: str) -> Callee:
    obj = w.a.project.lookup(qualname, w.mod)
    if isinstance(obj, FunctionInfo):
        return Callee("function", qualname=obj.qualname, target=obj)
    return Callee("external", qualname=qualname)


def _self_member(w: "Walker", func: cst.Attribute) -> Callee:
    """``self.name(...)``: a method of the class, or a submodule stored in ``self.name``."""
    project = w.a.project
    method = func.attr.value
    info = project.attr(w.cls, method)  # type: ignore[arg-type]
    fn = project.method(w.cls, method) if info is None else None  # type: ignore[arg-type]
    if fn is not None:
        return Callee("function", qualname=fn.qualname, method=method, target=fn,
                      bound_self=fn.is_method, instance=w.cls)
    receiver = w.ev(func)
    if receiver.is_module or receiver.has(Kind.MODULES):
        callee = _module_call(w, receiver)
        callee.qualname = f"self.{method}"
        return callee
    return Callee("method", qualname=f"self.{method}", method=None, receiver=receiver)


def _module_call(w: "Walker", receiver: Value) -> Callee:
    """Calling an nn.Module instance runs its forward. A Sequential runs its modules one
    after the other, and an item of a ModuleList of mixed classes may be any of them: a
    ``modules`` callee, which the walk calls class by class."""
    module_class = receiver.detail
    if "|" in module_class or receiver.has(Kind.MODULES):
        return Callee("modules", receiver=receiver, module_class=module_class)
    return module_callee(w, module_class, receiver)


def module_callee(w: "Walker", module_class: str, receiver: Optional[Value] = None) -> Callee:
    """Calling an instance of ``module_class``: its forward when the class is in the tree."""
    cls = w.a.project.class_of(module_class, w.mod) if module_class else None
    fwd = w.a.project.method(cls, "forward") if cls is not None else None
    return Callee("module", receiver=receiver, module_class=module_class, target=fwd,
                  bound_self=fwd is not None, instance=cls)
