"""Shared fixtures: a helper to run the static pass on a snippet tree, and the cases folder."""

from __future__ import annotations

import os
import sys
import textwrap
from typing import Dict, List

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))

from _cases import BUNDLED  # noqa: E402


def cases_dir() -> str:
    """The labelled cases the tests read: the copy in ``tests/cases/shared`` (what a fresh
    clone and CI have), or ``SHAPELINT_CASES``. Never ``../shared``: a test must see the same
    cases wherever it runs."""
    return os.environ.get("SHAPELINT_CASES") or BUNDLED


def write_tree(root, files: Dict[str, str]) -> None:
    for rel, text in files.items():
        path = os.path.join(str(root), rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(textwrap.dedent(text).lstrip("\n"))


def check_tree(root, select=None, preview=True, **settings_kw):
    """The static pass on ``root`` with the rules ``shapelint check --preview`` would enable
    (the hazards these tests use are preview rules'; ``preview=False``: the default rules); a
    test that selects codes (``["ALL"]``) gets the preview rules among them too."""
    from shapelint.config import Settings, enabled_codes
    from shapelint.registry import all_rules
    from shapelint.static.check import check

    rules = all_rules()
    settings = Settings(**settings_kw)
    enabled = enabled_codes(rules, select or [], preview=preview or bool(select) or settings.preview)
    return check([str(root)], settings, rules=rules, enabled=enabled, root=str(root),
                 use_cache=False)


@pytest.fixture
def tree(tmp_path):
    """``tree({"m.py": src})`` writes files and returns the findings as (file, line, rule)."""

    def make(files: Dict[str, str], select=None, **kw) -> List[tuple]:
        write_tree(tmp_path, files)
        result = check_tree(tmp_path, select, **kw)
        tree.result = result
        return [(os.path.relpath(os.path.abspath(f.path), tmp_path), f.line, f.rule)
                for f in result.all_findings()]

    return make


@pytest.fixture(scope="session")
def cases_root(tmp_path_factory):
    """The labelled cases, copied outside the repository: a command run in a case folder must
    find no config above it (this repository's shapelint.toml ignores everything under
    tests/), as in ../shared/cases."""
    import shutil

    root = cases_dir()
    assert os.path.isdir(root), f"labelled cases not found at {root}"
    copy = tmp_path_factory.mktemp("labelled") / "cases"
    shutil.copytree(root, str(copy), ignore=shutil.ignore_patterns("__pycache__", ".shapelint_cache"))
    return str(copy)
