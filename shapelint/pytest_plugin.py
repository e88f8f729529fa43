"""pytest plugin (entry point ``pytest11``): assert that a model does not recompile.

- fixture ``compile_watch``: ``with compile_watch() as watch: ...; watch.assert_no_recompiles()``
  (also ``assert_max_compiles(n)``, ``assert_no_graph_breaks()``)
- marker ``@pytest.mark.no_recompiles(model=..., inputs=..., batch_sizes=[...])`` replays the
  model in a fresh process before the test body runs, with the same meaning as the fixture's
  ``assert_no_recompiles`` (shapelint.testing explains it); ``max_compiles=n`` adds a budget.

Loading the plugin never imports torch; the fixture and marker import it when used."""

from __future__ import annotations

from typing import Any

import pytest


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("shapelint", "torch.compile recompile checks")
    group.addoption("--shapelint-backend", default=None,
                    help="torch.compile backend for no_recompiles markers (default: ini or eager)")
    parser.addini("shapelint_backend", "torch.compile backend for no_recompiles markers", default="eager")
    parser.addini("shapelint_timeout", "seconds per no_recompiles replay", default="300")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers", "no_recompiles(model, inputs, batch_sizes=[1,2,3,4,8,17], seq_lens=None, "
                   "max_compiles=None, dynamic='auto', device='auto', fullgraph=False): replay the "
                   "model at these shapes under torch.compile in a fresh process and fail on a "
                   "recompile the code caused (or more compiles than max_compiles)")


def import_paths(config: Any, base_dir: str) -> list:
    """Where the marker's worker imports ``pkg.module`` references from, as pytest itself
    would find them: the test's folder, the rootdir and its ``src/``, the ``pythonpath`` ini
    entries (a src layout's ``pythonpath = ["src"]``), the ini file's folder."""
    from shapelint.harness.target import import_dirs

    try:
        pythonpath = [str(p) for p in config.getini("pythonpath") or []]
    except (ValueError, KeyError):  # a pytest without the `pythonpath` ini (before 7.0)
        pythonpath = []
    inipath = getattr(config, "inipath", None)
    return import_dirs(base_dir, project_root=str(config.rootpath), pythonpath=pythonpath,
                       config_dir=str(inipath.parent) if inipath else None)


@pytest.fixture
def compile_watch():
    """A factory of CompileWatch context managers (``with compile_watch() as watch:``)."""
    from shapelint.testing import CompileWatch

    return CompileWatch


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem: Any):
    marker = pyfuncitem.get_closest_marker("no_recompiles")
    if marker is not None:
        from shapelint.testing import CompileAssertionError, assert_no_recompiles

        config = pyfuncitem.config
        kwargs = dict(marker.kwargs)
        if marker.args:
            kwargs.setdefault("model", marker.args[0])
            if len(marker.args) > 1:
                kwargs.setdefault("inputs", marker.args[1])
        if "model" not in kwargs or "inputs" not in kwargs:
            pytest.fail("@pytest.mark.no_recompiles needs model= and inputs=", pytrace=False)
        kwargs.setdefault("backend", config.getoption("--shapelint-backend") or config.getini("shapelint_backend"))
        kwargs.setdefault("timeout", float(config.getini("shapelint_timeout")))
        kwargs.setdefault("base_dir", str(pyfuncitem.path.parent))
        kwargs.setdefault("import_paths", import_paths(config, kwargs["base_dir"]))
        failure = None
        try:
            assert_no_recompiles(**kwargs)
        except CompileAssertionError as exc:
            failure = str(exc)
        if failure is not None:  # outside the except: the message is printed once, unchained
            pytest.fail(failure, pytrace=False)
    yield
