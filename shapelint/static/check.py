"""One entry point for a static check: the command, the harness, the pytest plugin, the
benchmarks and the tests all call :func:`check`.

It finds the files once (the cache key and the walk share the list), answers from the cache
when no file the last check read has changed (before libcst or networkx is even imported),
and otherwise runs the engine.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Type

from shapelint.api import Rule
from shapelint.config import Settings, enabled_codes
from shapelint.finding import CheckResult


def check(paths: Sequence[str], settings: Optional[Settings] = None, *,
          rules: Optional[Dict[str, Type[Rule]]] = None, enabled: Optional[Sequence[str]] = None,
          use_cache: bool = True, root: Optional[str] = None, jobs: Optional[int] = 0,
          keep: Optional[List[Any]] = None) -> CheckResult:
    """Check ``paths`` with ``settings`` (defaults: the built-in rules and those of
    ``rule-paths``; the rules the settings select). ``keep``: a list the engine is appended
    to, for a caller that keeps the syntax trees until the process exits (the command)."""
    from shapelint.registry import all_rules
    from shapelint.static import files as files_mod
    from shapelint.static.cache import cached_check, dependencies, import_folders
    from shapelint.static.engine_paths import exclude_patterns

    settings = settings or Settings()
    if rules is None:
        rules = all_rules(settings.rule_paths, settings.base_dir)
    if enabled is None:
        enabled = enabled_codes(rules, settings.select, settings.extend_select, settings.ignore,
                                settings.preview)
    found, discover_errors = files_mod.discover(paths, exclude_patterns(settings))

    def run():
        from shapelint.static.engine import Engine, without_cyclic_gc

        engine = Engine(rules, enabled, settings, jobs=jobs, kept_until_exit=keep is not None)
        if keep is not None:
            keep.append(engine)
        # the cache's dependencies are read while the trees are alive: the collector stays off
        with without_cyclic_gc(freeze=keep is not None):
            result = engine.check(paths, root=root, use_cache=False,
                                  discovered=(found, discover_errors))
            depends = dependencies(engine)
            folders = import_folders(depends, root or files_mod.common_root(list(paths)))
        return result, depends, folders

    if not use_cache:
        return run()[0]
    return cached_check(paths, settings, sorted(enabled), run,
                        discovered=(found, discover_errors))
