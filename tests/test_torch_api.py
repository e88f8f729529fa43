"""torch's API as data (shapelint/static/data/torch_api.json) and its loader.

The data is generated from the installed torch's stubs and sources by
scripts/gen_torch_api.py, with `ast` only; the loader must never import torch."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shapelint.static.torch_api import (KEYWORD_ONLY, POSITIONAL, VAR_POSITIONAL, TorchAPI,
                                        load)

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "shapelint" / "static" / "data" / "torch_api.json"
SCRIPT = REPO / "scripts" / "gen_torch_api.py"

# Runs first in a subprocess: any attempt to import torch fails loudly.
BLOCK_TORCH = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch must not be imported here")
sys.meta_path.insert(0, Block())
"""


def torch_dir():
    """The installed torch package, located without importing it (None when absent)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


@pytest.fixture(scope="module")
def api() -> TorchAPI:
    return load()


# -- the data file


def test_generator_reproduces_the_committed_file(tmp_path):
    where = torch_dir()
    if where is None:
        pytest.skip("torch is not installed: nothing to regenerate from (CI installs it)")
    out = tmp_path / "torch_api.json"
    code = BLOCK_TORCH + (
        "import runpy; sys.argv = ['gen_torch_api.py', '--torch-dir', sys.argv[1], "
        "'--output', sys.argv[2]]\nrunpy.run_path(%r, run_name='__main__')" % str(SCRIPT))
    res = subprocess.run([sys.executable, "-c", code, str(where), str(out)],
                         capture_output=True, text=True, cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    generated = out.read_text(encoding="utf-8")
    committed = DATA.read_text(encoding="utf-8")
    version = json.loads(generated)["header"]["torch_version"]
    assert generated == committed, (
        f"shapelint/static/data/torch_api.json is stale for torch {version}: "
        "run python scripts/gen_torch_api.py")
    # and a second run (in process, this time) gives the same bytes
    spec = importlib.util.spec_from_file_location("gen_torch_api", SCRIPT)
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    sys.modules["gen_torch_api"] = gen
    try:
        spec.loader.exec_module(gen)
        assert gen.generate(where) == committed
    finally:
        sys.modules.pop("gen_torch_api", None)


def test_data_file_is_small_sorted_and_uses_the_vocabulary():
    text = DATA.read_text(encoding="utf-8")
    assert len(text.encode()) < 1_000_000
    doc = json.loads(text)
    header = doc["header"]
    assert header["generated_by"].startswith("python scripts/gen_torch_api.py")
    assert header["torch_version"][0].isdigit()
    ret_kinds = set(header["return_kinds"])
    param_kinds = set(header["param_kinds"])
    for section in ("functions", "methods", "attributes"):
        assert list(doc[section]) == sorted(doc[section]), section
    for section in ("functions", "methods"):
        for name, entry in doc[section].items():
            assert entry["returns"].rstrip("?").split("(")[0] in ret_kinds, name
            assert entry["overloads"], name
            for ov in entry["overloads"]:
                assert ov["ret"].rstrip("?").split("(")[0] in ret_kinds, name
                for p in ov["params"]:
                    if p in ("/", "*"):
                        continue
                    kinds = p.lstrip("*").split(":", 1)[1].split("=", 1)[0]
                    assert set(kinds.split("|")) <= param_kinds, (name, p)
    for name, kind in doc["attributes"].items():
        assert kind.rstrip("?") in ret_kinds, name


def test_loading_never_imports_torch():
    code = BLOCK_TORCH + (
        "from shapelint.static.torch_api import load\n"
        "api = load()\n"
        "assert api.function('torch.cat').returns == 'tensor'\n"
        "assert api.bind('view', 2, is_method=True)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "print('ok')\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=str(REPO))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_load_is_cached(api):
    assert load() is api
    assert api.function("torch.cat") is api.function("torch.cat")


# -- returns


def test_tensor_size_overloads(api):
    size = api.method("size")
    assert size is not None and size.is_method
    assert [ov.returns for ov in size.overloads] == ["size", "int"]
    assert size.returns == "other"  # the overloads disagree
    assert api.resolve("size", 0, is_method=True).returns == "size"
    assert api.resolve("size", 1, is_method=True).returns == "int"
    assert api.resolve("size", 0, ["dim"], is_method=True).returns == "int"
    assert api.resolve("Tensor.size", 2).returns == "int"  # Tensor.size(x, 1), unbound


@pytest.mark.parametrize("name,kind", [
    ("item", "number"), ("tolist", "other"), ("split", "tensors"), ("chunk", "tensors"),
    ("unbind", "tensors"), ("dim", "int"), ("numel", "int"), ("is_floating_point", "bool"),
    ("view", "tensor"), ("reshape", "tensor"), ("repeat_interleave", "tensor"),
    ("__len__", "int"), ("__getitem__", "tensor"), ("element_size", "int"),
])
def test_method_returns(api, name, kind):
    m = api.method(name)
    assert m is not None, name
    assert m.returns == kind


@pytest.mark.parametrize("name,kind", [
    ("torch.cat", "tensor"), ("torch.nonzero", "other"), ("torch.is_tensor", "bool"),
    ("torch.split", "tensors"), ("torch.chunk", "tensors"), ("torch.meshgrid", "tensors"),
    ("torch.einsum", "tensor"), ("torch.stft", "tensor"), ("torch.broadcast_shapes", "size"),
    ("torch.numel", "int"), ("torch.is_floating_point", "bool"),
    ("torch.nn.functional.pad", "tensor"), ("torch.nn.functional.interpolate", "tensor"),
    ("torch.nn.functional.conv2d", "tensor"), ("torch.linalg.norm", "tensor"),
    ("torch.fft.rfft", "tensor"), ("torch.special.expit", "tensor"),
])
def test_function_returns(api, name, kind):
    f = api.function(name)
    assert f is not None, name
    assert f.returns == kind


def test_nonzero_as_tuple_selects_the_overload(api):
    for name, method in (("torch.nonzero", False), ("nonzero", True)):
        found = api.lookup(name, is_method=method)
        assert {ov.returns for ov in found.overloads} == {"tensor", "tensors"}
        npos = 0 if method else 1
        assert api.resolve(name, npos, is_method=method).returns == "tensor"
        picked = api.resolve(name, npos, ["as_tuple"], is_method=method,
                             literals={"as_tuple": True})
        assert picked.returns == "tensors"
        picked = api.resolve(name, npos, ["as_tuple"], is_method=method,
                             literals={"as_tuple": False})
        assert picked.returns == "tensor"


def test_max_overloads(api):
    fn = api.function("torch.max")
    rets = [(ov.returns, ov.arity) for ov in fn.overloads]
    assert ("tensor", None) in rets and ("tensor_tuple", 2) in rets
    assert fn.returns == "other"
    assert api.resolve("torch.max", 1).returns == "tensor"
    by_dim = api.resolve("torch.max", 1, ["dim"])
    assert (by_dim.returns, by_dim.arity, by_dim.fields) == ("tensor_tuple", 2,
                                                             ("values", "indices"))
    # torch.max(x, 1): the argument's kind decides between max(input, other) and max(input, dim)
    assert len(api.candidates("torch.max", 2)) == 2
    assert api.resolve("torch.max", 2, arg_kinds=["tensor", "int"]).returns == "tensor_tuple"
    assert api.resolve("torch.max", 2, arg_kinds=["tensor", "tensor"]).returns == "tensor"
    assert api.resolve("max", 1, ["keepdim"], is_method=True).arity == 2


def test_where_one_argument_returns_tensors(api):
    assert api.resolve("torch.where", 1).returns == "tensors"
    assert api.resolve("torch.where", 3).returns == "tensor"
    assert api.function("torch.where").returns == "other"


def test_unique_flags(api):
    assert api.resolve("torch.unique", 1).returns == "tensor"
    both = api.resolve("torch.unique", 1, ["return_inverse", "return_counts"],
                       literals={"return_inverse": True, "return_counts": True})
    assert (both.returns, both.arity) == ("tensor_tuple", 3)
    one = api.resolve("unique", 0, ["return_counts"], is_method=True,
                      literals={"return_counts": True})
    assert (one.returns, one.arity) == ("tensor_tuple", 2)


def test_tensor_attributes(api):
    expected = {"shape": ("size", False), "ndim": ("int", False), "dtype": ("dtype", False),
                "device": ("device", False), "is_cuda": ("bool", False),
                "T": ("tensor", False), "mT": ("tensor", False), "data": ("tensor", False),
                "grad": ("tensor", True), "requires_grad": ("bool", False)}
    for name, (kind, nullable) in expected.items():
        attr = api.attribute(name)
        assert attr is not None, name
        assert (attr.returns, attr.nullable) == (kind, nullable), name
    assert api.attribute("no_such_thing") is None
    assert api.method("shape") is None  # a property, not a method


def test_size_methods(api):
    assert api.method("numel", owner="Size").returns == "int"
    assert api.method("Size.__len__").returns == "int"
    getitem = api.method("Size.__getitem__")
    assert sorted(ov.returns for ov in getitem.overloads) == ["int", "size"]


# -- parameters and binding


def test_repeat_interleave_params(api):
    fn = api.function("torch.repeat_interleave")
    main = fn.overloads[0]
    assert [p.name for p in main.positional] == ["input", "repeats", "dim"]
    assert [p.name for p in main.keyword_only] == ["output_size"]
    repeats = main.param("repeats")
    assert set(repeats.kinds) == {"tensor", "int"}  # Tensor | int overloads, merged
    assert repeats.kind == POSITIONAL and not repeats.has_default
    assert main.param("dim").default == "None"
    assert main.param("output_size").kind == KEYWORD_ONLY
    # repeat_interleave(repeats) is an overload of its own
    assert any([p.name for p in ov.positional] == ["repeats"] for ov in fn.overloads)


def test_bind_repeat_interleave_by_position_and_keyword(api):
    name = "torch.repeat_interleave"
    assert api.bind(name, 2) == {"input": ("pos", 0), "repeats": ("pos", 1)}
    assert api.bind(name, 1, ["repeats"]) == {"input": ("pos", 0), "repeats": ("kw", "repeats")}
    assert api.bind(name, 0, ["input", "repeats", "dim"]) == {
        "input": ("kw", "input"), "repeats": ("kw", "repeats"), "dim": ("kw", "dim")}
    assert api.bind(name, 3, ["output_size"])["output_size"] == ("kw", "output_size")
    assert api.bind(name, 1) == {"repeats": ("pos", 0)}  # torch.repeat_interleave(repeats)
    assert api.bind(name, 4) is None  # output_size is keyword-only
    assert api.bind(name, 1, ["bogus"]) is None
    # the method: the receiver is self
    assert api.bind("repeat_interleave", 1, ["dim"], is_method=True) == {
        "self": ("receiver", 0), "repeats": ("pos", 0), "dim": ("kw", "dim")}
    assert api.bind("repeat_interleave", 0, ["repeats"], is_method=True)["repeats"] == (
        "kw", "repeats")


def test_pad_and_interpolate_params(api):
    pad = api.function("torch.nn.functional.pad").overloads[0]
    assert [p.name for p in pad.params] == ["input", "pad", "mode", "value"]
    assert pad.param("pad").kinds == ("size",)
    assert pad.param("mode").default_value() == "constant"
    assert api.bind("torch.nn.functional.pad", 2, ["value"]) == {
        "input": ("pos", 0), "pad": ("pos", 1), "value": ("kw", "value")}
    interp = api.function("torch.nn.functional.interpolate").overloads[0]
    assert [p.name for p in interp.positional] == [
        "input", "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor",
        "antialias"]
    assert set(interp.param("size").kinds) == {"int", "size"}
    assert interp.param("mode").default_value() == "nearest"
    assert api.bind("torch.nn.functional.interpolate", 1, ["scale_factor", "mode"]) == {
        "input": ("pos", 0), "scale_factor": ("kw", "scale_factor"), "mode": ("kw", "mode")}
    assert api.bind("torch.nn.functional.interpolate", 3)["scale_factor"] == ("pos", 2)


def test_varargs_and_kind_hints(api):
    view = api.method("view")
    assert any(ov.varargs is not None and ov.varargs.kind == VAR_POSITIONAL
               for ov in view.overloads)
    assert api.bind("view", 2, is_method=True) == {"self": ("receiver", 0),
                                                   "size": ("varpos", 0)}
    # one argument of unknown kind: a size, not the dtype overload
    assert api.bind("view", 1, is_method=True)["size"] == ("pos", 0)
    assert api.bind("view", 1, is_method=True, arg_kinds=["dtype"]) == {
        "self": ("receiver", 0), "dtype": ("pos", 0)}
    assert api.bind("Tensor.view", 3) == {"self": ("pos", 0), "size": ("varpos", 1)}
    assert api.bind("torch.cat", 1, ["dim"]) == {"tensors": ("pos", 0), "dim": ("kw", "dim")}


def test_unknown_names(api):
    assert api.function("torch.no_such_op") is None
    assert api.method("no_such_method") is None
    assert api.bind("torch.no_such_op", 1) is None
    assert api.resolve("no_such_method", 0, is_method=True) is None
