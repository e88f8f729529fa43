"""Finding rules: the built-in catalogue (``rules/``, installed as ``shapelint.rules``) and
users' own rule folders (config key ``rule-paths``). Both go through the same loader."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import pkgutil
import re
import sys
from typing import Dict, Iterable, List, Type

from shapelint.api import Rule
from shapelint.finding import RULE_CODE, Severity


class RuleLoadError(Exception):
    pass


CODE = re.compile(RULE_CODE)


def rule_status(rule: Type[Rule]) -> str:
    """``stable``, ``preview``, ``off by default`` or ``runtime-only``: how a rule is turned on
    (see :func:`shapelint.config.enabled_codes`)."""
    if rule.runtime_only:
        return "runtime-only"
    if rule.preview:
        return "preview"
    if not rule.default_enabled:
        return "off by default"
    return "stable"


def on_by_default(rule: Type[Rule]) -> bool:
    """Whether the rule runs without being selected (SARIF's ``defaultConfiguration.enabled``)."""
    return bool(rule.default_enabled and not rule.preview)


def _rules_in(module: object) -> List[Type[Rule]]:
    out = []
    for _, obj in inspect.getmembers(module, inspect.isclass):
        if issubclass(obj, Rule) and obj is not Rule and obj.code and \
                obj.__module__ == getattr(module, "__name__", None):
            out.append(obj)
    return out


def _rules_package():
    """``shapelint.rules``: installed from ``rules/`` by the package-dir mapping, or, when
    running from a source checkout that was not installed, the ``rules/`` folder beside it."""
    try:
        return importlib.import_module("shapelint.rules")
    except ModuleNotFoundError:
        import shapelint

        folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(shapelint.__file__))), "rules")
        init = os.path.join(folder, "__init__.py")
        if not os.path.isfile(init):
            raise
        spec = importlib.util.spec_from_file_location("shapelint.rules", init,
                                                      submodule_search_locations=[folder])
        if spec is None or spec.loader is None:
            raise
        module = importlib.util.module_from_spec(spec)
        sys.modules["shapelint.rules"] = module
        spec.loader.exec_module(module)
        return module


def builtin_rules() -> List[Type[Rule]]:
    pkg = _rules_package()

    found: List[Type[Rule]] = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        found.extend(_rules_in(importlib.import_module(f"{pkg.__name__}.{info.name}")))
    return found


def load_rule_paths(paths: Iterable[str], base_dir: str = ".") -> List[Type[Rule]]:
    """Rules from ``.py`` files in the given folders (or files). These are the user's own
    linter plugins, imported like any plugin; the analysed code itself is never imported."""
    found: List[Type[Rule]] = []
    for entry in paths:
        full = entry if os.path.isabs(entry) else os.path.join(base_dir, entry)
        files = [full] if os.path.isfile(full) else sorted(
            os.path.join(full, f) for f in os.listdir(full)
            if f.endswith(".py") and not f.startswith("_")) if os.path.isdir(full) else None
        if files is None:
            raise RuleLoadError(f"rule-paths: `{entry}` is neither a folder nor a file")
        for f in files:
            name = "shapelint_user_rules." + os.path.splitext(os.path.basename(f))[0]
            spec = importlib.util.spec_from_file_location(name, f)
            if spec is None or spec.loader is None:
                raise RuleLoadError(f"rule-paths: cannot load {f}")
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod
            try:
                spec.loader.exec_module(mod)
            except Exception as exc:  # a user's rule file is arbitrary code
                raise RuleLoadError(f"rule-paths: {f} failed to import: {exc!r}") from exc
            for rule in _rules_in(mod):
                if not CODE.fullmatch(rule.code):
                    raise RuleLoadError(f"rule-paths: {f}: {rule.__name__}.code `{rule.code}` must be "
                                        f"capital letters then digits, such as SL950 or CU001")
                if rule.severity not in {s.value for s in Severity}:
                    raise RuleLoadError(f"rule-paths: {f}: {rule.__name__}.severity `{rule.severity}` must "
                                        f"be one of {', '.join(s.value for s in Severity)}")
                found.append(rule)
    return found


def all_rules(rule_paths: Iterable[str] = (), base_dir: str = ".") -> Dict[str, Type[Rule]]:
    rules: Dict[str, Type[Rule]] = {}
    for r in builtin_rules() + load_rule_paths(rule_paths, base_dir):
        if r.code in rules and rules[r.code] is not r:
            raise RuleLoadError(f"rule code {r.code} is defined twice "
                                f"({rules[r.code].__module__} and {r.__module__})")
        rules[r.code] = r
    from shapelint.static import suppress

    suppress.know_codes(rules)  # so that a noqa comment naming a user rule's code (CU001) is read
    return dict(sorted(rules.items()))
