"""Command line: ``shapelint check``, ``shapelint run``, ``shapelint rule``.

Exit codes (ruff's): 0 no findings, 1 findings (or a file/target error), 2 usage, config or
internal error. ``shapelint PATHS...`` is ``shapelint check PATHS...`` (the pre-commit form).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import Dict, List, Optional, Sequence

from shapelint import __version__
from shapelint.config import ConfigError, Settings, load_settings, resolve_codes, check_codes
from shapelint.finding import CheckResult
from shapelint.report import FORMATS, render, write_atomic

COMMANDS = ("check", "run", "rule", "report")


def _codes(text: Optional[str]) -> List[str]:
    return [c.strip().upper() if c.strip().upper() != "ALL" else "ALL"
            for c in (text or "").split(",") if c.strip()]


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="use this config file instead of searching for one")
    p.add_argument("--select", help="rule codes or prefixes to enable (comma separated, or ALL)")
    p.add_argument("--extend-select", help="codes to enable in addition to the selection")
    p.add_argument("--ignore", help="codes or prefixes to disable")
    p.add_argument("--per-file-ignores", action="append", default=[], metavar="GLOB:CODES",
                   help="e.g. 'tests/*:SL1' (repeatable)")
    p.add_argument("--exclude", action="append", default=[], help="glob of paths to skip")
    p.add_argument("--format", "--output-format", dest="format", choices=FORMATS,
                   help="output format (default text)")
    p.add_argument("-o", "--output", help="write the report to this file")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    p.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                   help="processes for a large static pass (default: one per core; 1: no fork)")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    p.add_argument("--statistics", action="store_true", help="count findings per rule")
    p.add_argument("--diff", metavar="REF", help="only findings on lines changed since git REF")
    p.add_argument("--baseline", help="report only findings not in this baseline file")
    p.add_argument("--write-baseline", metavar="FILE", help="write today's findings as a baseline")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shapelint",
        description="Find code that makes torch.compile recompile, specialize or graph-break.")
    parser.add_argument("--version", action="version", version=f"shapelint {__version__}")
    sub = parser.add_subparsers(dest="command")

    check = sub.add_parser("check", help="static pass (never imports torch or your code)")
    check.add_argument("paths", nargs="*", default=["."])
    _add_common(check)

    run = sub.add_parser("run", help="replay models under torch.compile and confirm findings")
    run.add_argument("--target", action="append", default=[], help="only these configured targets")
    run.add_argument("--model", help="pkg.module:factory or path/to/file.py:factory")
    run.add_argument("--inputs", help="pkg.module:inputs or path/to/file.py:inputs")
    run.add_argument("--batch-sizes", help="comma separated, e.g. 1,2,3,4,8,17")
    run.add_argument("--seq-lens", help="comma separated sequence lengths (passed as seq_len=)")
    run.add_argument("--dynamic", choices=("auto", "true", "false", "mark"))
    run.add_argument("--backend", help="eager (default), aot_eager, inductor")
    run.add_argument("--device", help="auto (default), cpu, cuda")
    run.add_argument("--mode", help="torch.compile mode, e.g. reduce-overhead")
    run.add_argument("--fullgraph", action="store_true", default=None)
    run.add_argument("--max-compiles", type=int)
    run.add_argument("--timeout", type=float, help="seconds per target (default 300)")
    run.add_argument("--no-grad", action="store_true", default=None,
                     help="replay under torch.no_grad() (inference); default: grad enabled")
    run.add_argument("--memory-limit-mb", type=int,
                     help="address-space limit for the target's process (an allocation past it fails)")
    run.add_argument("--no-static", action="store_true", help="skip the static join")
    _add_common(run)

    report = sub.add_parser("report", help="re-render a saved --format json report in another format")
    report.add_argument("json_file")
    report.add_argument("--format", "--output-format", dest="format", choices=FORMATS, default="text")
    report.add_argument("-o", "--output")
    report.add_argument("--exit-zero", action="store_true")

    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", nargs="?")
    rule.add_argument("--all", action="store_true", help="list every rule")
    rule.add_argument("--format", choices=("text", "json"), default="text")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv = ["check"] + argv
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        if args.command == "rule":
            return cmd_rule(args)
        if args.command == "report":
            return cmd_report(args)
        if args.command == "run":
            from shapelint.harness.command import cmd_run

            return cmd_run(args)
        return cmd_check(args)
    except ConfigError as exc:
        print(f"shapelint: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception:  # an internal error: say so, exit 2, never pretend success
        print("shapelint: internal error, please report it:\n" + traceback.format_exc(),
              file=sys.stderr)
        return 2


def load_rules(settings: Settings):
    from shapelint.registry import RuleLoadError, all_rules

    try:
        return all_rules(settings.rule_paths, settings.base_dir)
    except RuleLoadError as exc:
        raise ConfigError(str(exc)) from exc


def resolve_settings(args: argparse.Namespace, paths: Sequence[str]):
    """Config file + CLI flags -> (settings, rule classes, enabled codes)."""
    from shapelint.registry import builtin_rules

    builtin_codes = [r.code for r in builtin_rules()]
    first = paths[0] if paths else "."
    # user rules are known only after the config is read; validate codes after loading them
    settings = load_settings(first, builtin_codes + ["SLX"], args.config)
    rules = load_rules(settings)
    known = list(rules)
    check_codes(settings.select + settings.ignore + settings.extend_select, known, "config")
    cli_select, cli_ignore, cli_extend = _codes(args.select), _codes(args.ignore), _codes(args.extend_select)
    check_codes(cli_select + cli_ignore + cli_extend, known, "command line")
    for spec in args.per_file_ignores:
        glob, _, codes = spec.rpartition(":")
        if not glob:
            raise ConfigError(f"--per-file-ignores expects GLOB:CODES, got `{spec}`")
        check_codes(_codes(codes), known, "--per-file-ignores")
        settings.per_file_ignores[glob] = tuple(_codes(codes))
    settings.exclude = tuple(settings.exclude) + tuple(args.exclude)
    select = cli_select or list(settings.select)
    defaults = [c for c, r in rules.items() if r.default_enabled]
    enabled = resolve_codes(known, defaults, select, list(settings.extend_select) + cli_extend,
                            list(settings.ignore) + cli_ignore)
    return settings, rules, enabled


def project_root(paths: Sequence[str], settings: Settings) -> Optional[str]:
    """Where helpers are resolved from: the config's folder, else the working directory when
    every path is under it (pre-commit runs from the repository root), else their common root."""
    if settings.config_path:
        return os.path.dirname(os.path.abspath(settings.config_path))
    cwd = os.getcwd()
    if all(not os.path.relpath(os.path.abspath(p), cwd).startswith("..") for p in paths):
        return cwd
    return None


def run_static(paths: Sequence[str], settings: Settings, rules, enabled, use_cache: bool = True,
               root: Optional[str] = None, jobs: int = 0) -> CheckResult:
    """The static pass; a cache hit returns before libcst and networkx are even imported."""
    root = root or project_root(paths, settings)

    def run():
        from shapelint.static.engine import Engine

        engine = Engine(rules, enabled, settings, jobs=jobs,
                        kept_until_exit=_KEEP_UNTIL_EXIT is not None)
        if _KEEP_UNTIL_EXIT is not None:
            _KEEP_UNTIL_EXIT.append(engine)
        return engine.check(paths, root=root, use_cache=False), engine.context_paths

    if not use_cache:
        return run()[0]
    from shapelint.static.cache import cached_check
    from shapelint.static.engine_paths import exclude_patterns

    return cached_check(paths, settings, sorted(enabled), exclude_patterns(settings), run)


def cmd_check(args: argparse.Namespace) -> int:
    paths = args.paths or ["."]
    settings, rules, enabled = resolve_settings(args, paths)
    result = run_static(paths, settings, rules, enabled, use_cache=not args.no_cache,
                        jobs=args.jobs)
    result = apply_filters(args, result)
    return emit(args, settings, result, rules, targets=[])


def apply_filters(args: argparse.Namespace, result: CheckResult) -> CheckResult:
    """--diff and --baseline narrow what is reported; --write-baseline records it."""
    from shapelint import baseline as bl

    if getattr(args, "write_baseline", None):
        bl.write(args.write_baseline, result.all_findings())
    if getattr(args, "baseline", None):
        result = bl.apply(args.baseline, result)
    if getattr(args, "diff", None):
        from shapelint import gitdiff

        result = gitdiff.only_changed(result, args.diff)
    return result


def emit(args: argparse.Namespace, settings: Settings, result: CheckResult, rules,
         targets: List[Dict], fail_on_findings: bool = True) -> int:
    fmt = args.format or settings.output_format or "text"
    color = fmt == "text" and not args.output and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    text = render(fmt, result, rules=rules, targets=targets, color=color,
                  statistics=getattr(args, "statistics", False))
    if args.output:
        write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    failed = (fail_on_findings and bool(result.all_findings() or result.errors)) or any(
        t.get("failed") for t in targets)
    return 0 if args.exit_zero or not failed else 1


def cmd_report(args: argparse.Namespace) -> int:
    """Render a saved JSON report (from check or run) in another format: CI runs the harness
    once and writes SARIF, annotations and the step summary from the same result."""
    import json

    from shapelint.finding import FileError, Finding
    from shapelint.registry import all_rules

    try:
        with open(args.json_file, encoding="utf-8") as fh:
            doc = json.load(fh)
        result = CheckResult(findings=[Finding.from_json(f) for f in doc["findings"]],
                             errors=[FileError(**e) for e in doc.get("errors", [])],
                             files_checked=int(doc.get("files_checked", 0)))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{args.json_file}: not a shapelint JSON report ({exc})") from exc
    targets = doc.get("targets", [])
    args.statistics = False
    return emit(args, Settings(), result, all_rules(), targets=targets,
                fail_on_findings=not targets)


def cmd_rule(args: argparse.Namespace) -> int:
    import json

    from shapelint.registry import all_rules

    rules = all_rules()
    if args.all or not args.code:
        if args.format == "json":
            print(json.dumps([r.describe() for r in rules.values()], indent=2))
        else:
            for code, r in rules.items():
                off = "" if r.default_enabled else "  (off by default)"
                print(f"{code}  {r.name:<30} {r.summary}{off}")
        return 0
    code = args.code.upper()
    if code not in rules:
        from shapelint.config import _closest

        print(f"shapelint: error: unknown rule `{args.code}`{_closest(code, list(rules))}",
              file=sys.stderr)
        return 2
    r = rules[code]
    if args.format == "json":
        print(json.dumps(dict(r.describe(), documentation=r.documentation()), indent=2))
        return 0
    print(f"# {r.name} ({r.code})\n")
    print(f"{r.summary}. Severity: {r.severity}. Confirmed at run time by: "
          f"{', '.join(r.evidence) or 'n/a'}"
          + (f" (graph-break registry {', '.join(r.registry_ids)})" if r.registry_ids else "")
          + ("" if r.default_enabled else ". Off by default.") + "\n")
    print(r.documentation())
    return 0


#: Where the command keeps what a check built until it exits (see :func:`entry`); None when
#: shapelint is used as a library, which must free it.
_KEEP_UNTIL_EXIT: Optional[List[object]] = None


def entry() -> None:
    """The ``shapelint`` command: :func:`main`, then an exit that skips tearing the
    interpreter down. A large check builds millions of syntax-tree objects: freeing them one
    by one, and the collector's last pass over them at shutdown, took 12 s after a 58 s check
    of transformers. The command keeps them until ``os._exit`` (mypy exits the same way);
    exit handlers still run and output is flushed first."""
    import atexit

    global _KEEP_UNTIL_EXIT
    _KEEP_UNTIL_EXIT = []
    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
