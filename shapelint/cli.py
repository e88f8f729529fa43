"""Command line: ``shapelint check``, ``shapelint run``, ``shapelint rule``.

Exit codes (ruff's): 0 no findings, 1 findings (or a file/target error), 2 usage, config or
internal error. ``shapelint PATHS...`` is ``shapelint check PATHS...`` (the pre-commit form).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import traceback
from typing import Iterator, List, Optional, Sequence

from shapelint import __version__
from shapelint.config import (ConfigError, Settings, check_codes, check_setting_codes,
                              enabled_codes, load_settings, normalize_exclude)
from shapelint.finding import CheckResult, Status, TargetResult
from shapelint.output import OutputError, check_writable, is_stdout, write_atomic
from shapelint.report import FORMATS, render

COMMANDS = ("check", "run", "rule", "report", "test-rules")
#: the exit status of a command whose reader went away (``| head``), as a shell reports a
#: process that SIGPIPE ended
BROKEN_PIPE = 141


def _codes(text: Optional[str]) -> List[str]:
    return [c.strip().upper() if c.strip().upper() != "ALL" else "ALL"
            for c in (text or "").split(",") if c.strip()]


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE",
                   help="use this config file instead of searching for the nearest "
                        "shapelint.toml or pyproject.toml, e.g. --config ci/shapelint.toml")
    p.add_argument("--select", metavar="CODES",
                   help="rule codes or prefixes to enable, comma separated, e.g. --select SL1,SL202 "
                        "or --select ALL")
    p.add_argument("--extend-select", metavar="CODES",
                   help="codes to enable in addition to the selection, e.g. --extend-select SL105")
    p.add_argument("--ignore", metavar="CODES",
                   help="codes or prefixes to disable, e.g. --ignore SL106,SL2")
    p.add_argument("--preview", action="store_true", default=None,
                   help="turn on the preview rules (measured precision under 0.9)")
    p.add_argument("--per-file-ignores", action="append", default=[], metavar="GLOB:CODES",
                   help="codes to ignore in files matching GLOB, e.g. 'tests/*:SL1' (repeatable)")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="paths to skip, e.g. --exclude 'gen/*' (repeatable; .git, .venv, build... "
                        "are always skipped)")
    p.add_argument("--format", "--output-format", dest="format", choices=FORMATS,
                   help="output format (default text; concise: one `path:line:col: CODE message` "
                        "line per finding), e.g. --format sarif -o shapelint.sarif")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the report to this file (`-`: standard output); never a device, "
                        "FIFO, link or, without --force, a .py file")
    p.add_argument("--force", action="store_true",
                   help="let -o and --write-baseline overwrite a Python source file")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print only the findings: no summary line, no progress")
    p.add_argument("--statistics", action="store_true",
                   help="print only the number of findings per rule (a JSON list with --format json)")
    p.add_argument("--show-settings", action="store_true",
                   help="print the resolved settings (config file, rules, excludes, targets) and "
                        "exit 0 without checking anything")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    p.add_argument("--cache-dir", metavar="DIR",
                   help="keep the cache in DIR instead of the config's cache-dir "
                        "(default .shapelint_cache), e.g. --cache-dir /tmp/shapelint-cache")
    p.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                   help="processes for a large static pass (default: one per core; 1: no fork)")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    p.add_argument("--diff", metavar="REF",
                   help="only findings on lines changed since git REF, e.g. --diff origin/main")
    p.add_argument("--baseline", metavar="FILE",
                   help="report only findings not in this baseline file (see --write-baseline)")
    p.add_argument("--write-baseline", metavar="FILE",
                   help="record today's findings in FILE (and report nothing else), e.g. "
                        "--write-baseline shapelint-baseline.json")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shapelint",
        description="Find code that makes torch.compile recompile, specialize or graph-break.")
    parser.add_argument("--version", action="version", version=f"shapelint {__version__}")
    sub = parser.add_subparsers(dest="command")

    check = sub.add_parser(
        "check", help="static pass (never imports torch or your code)",
        description="Static pass: report the lines that make torch.compile recompile, "
                    "specialize or break its graph. It never imports torch or your code.",
        epilog="examples:\n  shapelint check src/\n  shapelint check . --select SL1 --format concise"
               "\n  shapelint check . --diff origin/main --format github\n"
               "  cat model.py | shapelint check - --stdin-filename src/model.py",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("paths", nargs="*", default=["."], metavar="PATH",
                       help="files or folders to check (default: .); `-` reads the source from "
                            "standard input")
    check.add_argument("--stdin-filename", metavar="PATH",
                       help="with `-`: check standard input as if it were the file PATH (its "
                            "findings name PATH, its imports resolve beside it)")
    _add_common(check)

    run = sub.add_parser(
        "run", help="replay models under torch.compile and confirm findings",
        description="Replay each target (the config's [[targets]], or --model and --inputs) "
                    "under torch.compile at several shapes, each in its own process; blame "
                    "every compile, recompile and graph break on a line and confirm the static "
                    "findings.",
        epilog="examples:\n  shapelint run\n  shapelint run --target decoder --suggest\n"
               "  shapelint run --model model.py:build --inputs model.py:inputs "
               "--batch-sizes 1,2,8 --seq-lens 16,32\n"
               "  shapelint run --fail-on code-recompiles --format json -o run.json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("--target", action="append", default=[], metavar="NAME",
                     help="only this configured target (repeatable), e.g. --target decoder")
    run.add_argument("--model", metavar="REF",
                     help="the model factory: pkg.module:factory or path/to/file.py:factory, "
                          "e.g. --model src/model.py:build")
    run.add_argument("--inputs", metavar="REF",
                     help="the inputs callable, called as inputs(batch[, seq_len=N]): "
                          "pkg.module:inputs or path/to/file.py:inputs")
    run.add_argument("--batch-sizes", metavar="N,N,...",
                     help="batch sizes to replay, comma separated, e.g. 1,2,3,4,8,17")
    run.add_argument("--seq-lens", metavar="N,N,...",
                     help="sequence lengths, comma separated, passed to the inputs callable as "
                          "seq_len=, e.g. 16,32")
    run.add_argument("--dynamic", choices=("auto", "true", "false", "mark"),
                     help="torch.compile's dynamic: auto (torch's default), true, false, or mark "
                          "(mark_dynamic dim 0 of every input)")
    run.add_argument("--backend", help="eager (default), aot_eager, inductor")
    run.add_argument("--device", help="auto (default: cuda when available), cpu, cuda")
    run.add_argument("--mode", help="torch.compile mode, e.g. reduce-overhead")
    run.add_argument("--fullgraph", action="store_true", default=None,
                     help="compile with fullgraph=True: a graph break fails the target")
    run.add_argument("--max-compiles", type=int, metavar="N",
                     help="budget: more compiles than N fail the target (exit 1), e.g. 4")
    run.add_argument("--timeout", type=float, metavar="SECONDS",
                     help="seconds per target (default 300)")
    run.add_argument("--no-grad", action="store_true", default=None,
                     help="replay under torch.no_grad() (inference); default: grad enabled")
    run.add_argument("--memory-limit-mb", type=int,
                     help="address-space limit for the target's process (an allocation past it fails)")
    run.add_argument("--fail-on", metavar="GATES",
                     help="also fail (exit 1) a target on: code-recompiles (a recompile the code "
                          "caused, as the pytest marker judges), graph-breaks, unpredicted (an "
                          "event no static rule predicted), any-recompile; comma separated, "
                          "e.g. --fail-on code-recompiles,graph-breaks")
    run.add_argument("--show-library", action="store_true",
                     help="also report findings in library code outside the project that the "
                          "replay never confirmed (default: only those torch confirmed, and "
                          "events no rule predicted)")
    run.add_argument("--no-static", action="store_true",
                     help="skip the static pass (and so the join: no finding is confirmed or unpredicted)")
    run.add_argument("--seed", type=int, help="torch.manual_seed before building the model and "
                                              "before each shape's inputs (repeatable replays)")
    run.add_argument("--seed-once", dest="seed_each_shape", action="store_false", default=None,
                     help="with --seed: seed once before building, as a plain script does")
    run.add_argument("--shard", metavar="K/N",
                     help="replay only the K-th of N deterministic shares of the targets (CI matrix)")
    run.add_argument("--suggest", action="store_true", default=None,
                     help="replay again with each remedy (mark_dynamic, dynamic=True, ...) and "
                          "print the compile counts measured before and after")
    _add_common(run)
    for action in run._actions:  # -j for run: targets replayed side by side
        if action.dest == "jobs":
            action.help = "targets replayed side by side, each in its own process (default 1)"

    report = sub.add_parser("report", help="re-render saved --format json reports (several: "
                                           "merged, as the shards of one run) in another format")
    report.add_argument("json_files", nargs="+", metavar="JSON_FILE",
                        help="reports saved with --format json, e.g. shard-*.json")
    report.add_argument("--format", "--output-format", dest="format", choices=FORMATS, default="text",
                        help="output format (default text), e.g. --format markdown >> "
                             "$GITHUB_STEP_SUMMARY")
    report.add_argument("-o", "--output", metavar="FILE",
                        help="write the report to this file (`-`: standard output)")
    report.add_argument("--force", action="store_true", help="let -o overwrite a Python source file")
    report.add_argument("-q", "--quiet", action="store_true",
                        help="print only the findings: no summary line")
    report.add_argument("--exit-zero", action="store_true",
                        help="exit 0 even when there are findings or failed targets")
    report.add_argument("--statistics", action="store_true",
                        help="print only the number of findings per rule")
    report.add_argument("--config", help="the config whose rule-paths name the rules (default: search)")

    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", nargs="?", help="a rule code, e.g. SL101")
    rule.add_argument("--all", action="store_true", help="list every rule")
    rule.add_argument("--format", choices=("text", "json"), default="text",
                      help="text (default) or json")
    rule.add_argument("--config", help="the config whose rule-paths name your rules (default: search)")

    test_rules = sub.add_parser("test-rules", help="run the VALID/INVALID examples of your rules")
    test_rules.add_argument("paths", nargs="+", metavar="PATH", help="a folder or file of rules")
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
        if args.command == "test-rules":
            return cmd_test_rules(args)
        if args.command == "run":
            return cmd_run(args)
        return cmd_check(args)
    except (ConfigError, OutputError) as exc:
        _say(f"shapelint: error: {exc}")
        return 2
    except BrokenPipeError:  # the reader went away (`| head`): nothing more to say
        _silence_stdout()
        return BROKEN_PIPE
    except KeyboardInterrupt:
        return 130
    except Exception:  # an internal error: say so, exit 2, never pretend success
        _say("shapelint: internal error, please report it:\n" + traceback.format_exc())
        return 2


def _say(text: str) -> None:
    try:
        print(text, file=sys.stderr)
    except (OSError, ValueError):  # stderr closed too
        pass


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the flush at exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def load_rules(settings: Settings):
    from shapelint.registry import RuleLoadError, all_rules

    try:
        return all_rules(settings.rule_paths, settings.base_dir)
    except RuleLoadError as exc:
        raise ConfigError(str(exc)) from exc


def resolve_settings(args: argparse.Namespace, paths: Sequence[str]):
    """Config file + CLI flags -> (settings, rule classes, enabled codes, confirmable codes:
    the enabled ones with the preview rules, which `run` checks and keeps where torch
    confirms them)."""
    first = paths[0] if paths else "."
    for target in (getattr(args, "output", None), getattr(args, "write_baseline", None)):
        if target:
            check_writable(target, args.force)  # before a long check, not after it
    settings = load_settings(first, None, args.config)
    # user rules are known only once rule-paths are loaded: check the codes after that
    rules = load_rules(settings)
    known = list(rules)
    check_setting_codes(settings, known)
    cli_select, cli_ignore, cli_extend = _codes(args.select), _codes(args.ignore), _codes(args.extend_select)
    check_codes(cli_select + cli_ignore + cli_extend, known, "command line")
    for spec in args.per_file_ignores:
        glob, _, codes = spec.rpartition(":")
        if not glob:
            raise ConfigError(f"--per-file-ignores expects GLOB:CODES, got `{spec}`")
        check_codes(_codes(codes), known, "--per-file-ignores")
        settings.per_file_ignores[glob] = tuple(_codes(codes))
    settings.exclude = tuple(settings.exclude) + tuple(
        normalize_exclude(p, "command line: `--exclude`") for p in args.exclude)
    if getattr(args, "preview", None):
        settings.preview = True
    if getattr(args, "cache_dir", None):  # relative to where the command runs, as -o is
        settings.cache_dir = os.path.abspath(os.path.expanduser(args.cache_dir))
    choice = (cli_select or list(settings.select), list(settings.extend_select) + cli_extend,
              list(settings.ignore) + cli_ignore)
    enabled = enabled_codes(rules, *choice, preview=settings.preview)
    return settings, rules, enabled, enabled_codes(rules, *choice, preview=True)


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
    from shapelint.static.check import check

    return check(paths, settings, rules=rules, enabled=enabled, use_cache=use_cache,
                 root=root or project_root(paths, settings), jobs=jobs, keep=_KEEP_UNTIL_EXIT)


def cmd_check(args: argparse.Namespace) -> int:
    paths = args.paths or ["."]
    stdin = "-" in paths
    if stdin and len(paths) > 1:
        raise ConfigError("`-` (standard input) is checked alone: give no other path with it")
    if args.stdin_filename and not stdin:
        raise ConfigError("--stdin-filename names the source read from standard input: "
                          "pass `-` as the path")
    if stdin:
        paths = [args.stdin_filename or STDIN_NAME]
    settings, rules, enabled, _ = resolve_settings(args, paths)
    if args.show_settings:
        return show_settings(args, settings, enabled, paths)
    # the command exits through os._exit with every tree still alive (_KEEP_UNTIL_EXIT): the
    # cyclic collector has nothing to free, only millions of objects to walk (15% of a cold
    # check of transformers, measured)
    gc.disable()
    if stdin:
        with stdin_source(paths[0], sys.stdin.buffer.read()):
            result = run_static(paths, settings, rules, enabled, use_cache=False, jobs=1)
        if not args.stdin_filename:  # unnamed: its findings are `-:4:12: ...`, as ruff's
            result = renamed(result, paths[0], "-")
    else:
        result = run_static(paths, settings, rules, enabled, use_cache=not args.no_cache,
                            jobs=args.jobs)
    result = apply_filters(args, result, settings)
    if args.write_baseline:
        # the findings were accepted, not reported: say where they went. Files that could not
        # be analysed are in no baseline: they are shown, and fail the command
        if result.errors:
            sys.stdout.write(render("text", CheckResult(errors=result.errors,
                                                        files_checked=result.files_checked),
                                    rules=rules))
        status = 0 if args.exit_zero or not result.errors else 1
    else:
        status = emit(args, settings, result, rules, targets=[])
    if result.rule_errors:  # a bug in a rule, not in the code checked: said apart, exit 2
        for e in result.rule_errors:
            from shapelint.report.escape import clean

            where = f"{e.path}:{e.line}: " if e.path else ""
            _say(clean(f"shapelint: error: {where}{e.message}"))
        return 2
    return status


def apply_filters(args: argparse.Namespace, result: CheckResult,
                  settings: Optional[Settings] = None) -> CheckResult:
    """--diff and --baseline narrow what is reported; --write-baseline records it (every
    finding, SL001 included: a baseline accepts everything it records)."""
    from shapelint import baseline as bl

    if getattr(args, "write_baseline", None):
        findings = result.all_findings()
        bl.write(args.write_baseline, findings, force=args.force, settings=settings)
        if not getattr(args, "quiet", False):
            _say(f"shapelint: wrote {len(findings)} finding{'s' if len(findings) != 1 else ''} "
                 f"to the baseline {args.write_baseline}")
    if getattr(args, "baseline", None):
        result = bl.apply(args.baseline, result, settings)
    if getattr(args, "diff", None):
        from shapelint import gitdiff

        result = gitdiff.only_changed(result, args.diff)
    return result


def emit(args: argparse.Namespace, settings: Settings, result: CheckResult, rules,
         targets: List[TargetResult], fail_on_findings: bool = True) -> int:
    fmt = args.format or settings.output_format or "text"
    to_stdout = not args.output or is_stdout(args.output)
    color = fmt == "text" and to_stdout and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    text = render(fmt, result, rules=rules, targets=targets, color=color,
                  statistics=getattr(args, "statistics", False), quiet=getattr(args, "quiet", False))
    if to_stdout:
        sys.stdout.write(text)
    else:
        write_atomic(args.output, text, args.force)
    failed = (fail_on_findings and bool(result.all_findings() or result.errors)) or any(
        t.failed for t in targets)
    return 0 if args.exit_zero or not failed else 1


def cmd_report(args: argparse.Namespace) -> int:
    """Render saved JSON reports (from check or run) in another format: CI runs the harness
    once and writes SARIF, annotations and the step summary from the same result, exactly
    what the live run would have printed in that format. Several files (the shards of one
    run) are merged into one report (see shapelint.report.merge)."""
    from shapelint.report.merge import merge, read_report

    if args.output:
        check_writable(args.output, args.force)
    settings = load_settings(".", None, args.config)
    rules = load_rules(settings)  # the user's rules too: their codes and documentation
    docs = []
    for path in args.json_files:
        try:
            docs.append(read_report(path))
        except (OSError, ValueError) as exc:  # a SchemaError names the field
            raise ConfigError(str(exc)) from exc
    result, targets = merge(docs, labels=args.json_files)
    return emit(args, Settings(), result, rules, targets=targets, fail_on_findings=not targets)


def cmd_run(args: argparse.Namespace) -> int:
    """``shapelint run``: replay the targets (shapelint.harness.command), check the files they
    ran with the static pass, join events and findings (shapelint.harness.join), report. Exit
    1 when a target fails; 130 after Ctrl-C, with what had finished reported."""
    from shapelint.harness import command as harness
    from shapelint.harness.join import annotate_targets, join
    from shapelint.harness.scope import Scope
    from shapelint.harness.gate import Gate, gate_problems
    from shapelint.harness.remedy import code_changes

    settings, rules, enabled, confirmable = resolve_settings(args, ["."])
    if args.show_settings:
        return show_settings(args, settings, enabled, ["."])
    specs = harness.build_targets(args, settings)
    interrupted = None
    try:
        results = harness.run_targets(specs, jobs=args.jobs or 1, quiet=args.quiet)
    except harness.RunInterrupted as exc:
        results, interrupted = exc.results, exc
    result = CheckResult()
    # a preview rule (measured under 0.9 on held-out code) is checked too: torch judges each
    # of its findings, and only the confirmed ones are reported
    on_trial = set(confirmable) - set(enabled)
    if not args.no_static and interrupted is None:
        try:
            result = _static_for_run(args, settings, rules, list(confirmable), specs,
                                     results)
        except KeyboardInterrupt:
            interrupted = harness.RunInterrupted(results, len(specs))
            result = CheckResult()
    result.findings = join(result.findings, results, harness.exercised_files(results), rules,
                           unpredicted=not args.no_static and interrupted is None)
    result.findings = [f for f in result.findings
                       if f.rule not in on_trial or f.status is Status.CONFIRMED]
    annotate_targets(results, result.findings)
    gates = {spec.name: [Gate(g) for g in spec.fail_on] for spec in specs}
    for target in results:  # --fail-on: the marker's verdicts
        target.problems += gate_problems(target, gates.get(target.name, []), result.findings)
    scope = Scope.of_run(settings.config_path, [spec.base_dir for spec in specs])
    result.findings = scope.findings(result.findings, args.show_library)
    scope.targets(results)
    suggested = {spec.name for spec in specs if spec.suggest}
    for target in results:  # after the knobs, the code changes the confirmed findings describe
        if target.name in suggested:
            target.remedies += code_changes(target, result.findings)
    result = apply_filters(args, result, settings)
    status = emit(args, settings, result, rules, targets=results, fail_on_findings=False)
    if interrupted is not None:
        _say(f"shapelint: interrupted: {len(results)} of {interrupted.total} target(s) finished "
             f"and are reported above; every worker was stopped")
        return 130
    return status


def _static_for_run(args, settings, rules, enabled, specs, results) -> CheckResult:
    """The static pass over what the replays ran (shapelint.harness.command.static_paths),
    library files (site-packages...) included. When some are outside the working directory,
    the files are checked together with nothing else indexed around them: imports between them
    resolve (their module names come from their packages), and no library tree is walked."""
    import tempfile

    from shapelint.harness.command import static_paths, static_settings

    from shapelint.static.engine_paths import exclude_patterns
    from shapelint.static.files import excluded

    # files the replay ran are named one by one, so --exclude is applied here (a library
    # folder: `--exclude '*/site-packages/*'`)
    patterns = exclude_patterns(settings)
    paths = [p for p in static_paths(specs, results) if not excluded(p, patterns)]
    settings = static_settings(settings, results)
    if not paths:
        return CheckResult()
    cwd = os.getcwd()
    if all(not os.path.relpath(p, cwd).startswith("..") for p in paths):
        return run_static(paths, settings, rules, enabled, use_cache=not args.no_cache)
    with tempfile.TemporaryDirectory(prefix="shapelint-lib-") as empty:
        return run_static(paths, settings, rules, enabled, use_cache=not args.no_cache, root=empty)


#: what findings on standard input are named without --stdin-filename (shown as ``-``)
STDIN_NAME = "stdin.py"


@contextlib.contextmanager
def stdin_source(path: str, raw: bytes) -> Iterator[None]:
    """``shapelint check -``: the static pass reads ``raw`` wherever it would read ``path``
    (which need not exist), decoded as a file would be (encoding cookie, NUL bytes, size).
    Every read of a source and every discovery of the paths given goes
    through ``shapelint.static.files``' two functions, so swapping them for the check is
    enough: helpers beside ``path`` resolve as they would for the file itself."""
    import tempfile

    from shapelint.finding import FileError, relpath
    from shapelint.static import files

    target = os.path.abspath(path)
    read, discover = files.read_source, files.discover
    with tempfile.TemporaryDirectory(prefix="shapelint-stdin-") as folder:
        copy = os.path.join(folder, "stdin.py")
        with open(copy, "wb") as fh:
            fh.write(raw)
        got = read(copy)  # decoded and checked exactly as a file on disk
        shown = relpath(target)  # as read_source names the file itself
        if isinstance(got, files.SourceFile):
            source: object = files.SourceFile(shown, target, got.text, got.digest)
        else:
            source = FileError(shown, got.line, got.column, got.message)

    def read_source(abspath: str):
        return source if os.path.abspath(abspath) == target else read(abspath)

    def discover_paths(paths, *a, **kw):
        paths = list(paths)
        rest = [p for p in paths if os.path.abspath(p) != target]
        found, errors = discover(rest, *a, **kw) if rest else ([], [])
        return ([target] if len(rest) < len(paths) else []) + found, errors

    files.read_source, files.discover = read_source, discover_paths
    try:
        yield
    finally:
        files.read_source, files.discover = read, discover


def renamed(result: CheckResult, path: str, name: str) -> CheckResult:
    """``result`` with the findings and errors of the file ``path`` named ``name``."""
    import dataclasses

    from shapelint.finding import relpath

    shown = relpath(os.path.abspath(path))

    def moved(findings):
        return [f.replace(location=dataclasses.replace(f.location, path=name))
                if f.path == shown else f for f in findings]

    result.findings = moved(result.findings)
    result.unused_suppressions = moved(result.unused_suppressions)
    result.errors = [dataclasses.replace(e, path=name) if e.path == shown else e
                     for e in result.errors]
    return result


def show_settings(args: argparse.Namespace, settings: Settings, enabled: Sequence[str],
                  paths: Sequence[str]) -> int:
    """``--show-settings``: what a check (or run) would use, as resolved from the config file
    and the flags, then exit 0 without checking or replaying anything."""
    from shapelint.finding import relpath
    from shapelint.static.cache import cache_dir
    from shapelint.static.engine_paths import exclude_patterns
    from shapelint.static.files import DEFAULT_EXCLUDES

    def listed(values) -> str:
        return ", ".join(str(v) for v in values) or "-"

    out = [f"config file: {relpath(settings.config_path) if settings.config_path else 'none (defaults)'}",
           f"paths: {listed(paths)}",
           f"rules: {listed(sorted(enabled))} ({len(enabled)} enabled)",
           f"preview: {str(bool(settings.preview)).lower()}",
           f"exclude: {listed(exclude_patterns(settings))} (always skipped: "
           f"{', '.join(DEFAULT_EXCLUDES)})",
           "per-file-ignores: " + (listed(f"{g}: {' '.join(c)}" for g, c in
                                         settings.per_file_ignores.items())),
           f"module-forward: {str(settings.module_forward).lower()}",
           f"module-mode: {settings.module_mode}",
           f"entry-points: {listed(settings.entry_points)}",
           "dynamic-dims: " + listed(f"{k}={list(v)}" for k, v in settings.dynamic_dims.items()),
           f"scalar-arg-names: {listed(settings.scalar_arg_names)}",
           f"rule-paths: {listed(settings.rule_paths)}",
           f"cache-dir: {'off (--no-cache)' if args.no_cache else relpath(cache_dir(settings))}",
           f"output-format: {args.format or settings.output_format or 'text'}"]
    specs = []
    if settings.targets or getattr(args, "model", None):
        from shapelint.harness.command import build_targets

        specs = build_targets(args, settings)
    out.append(f"targets: {len(specs) or 'none'}")
    for spec in specs:
        out.append(f"  {spec.name}: model {spec.model}, inputs {spec.inputs}, batch-sizes "
                   f"{spec.batch_sizes}, seq-lens {spec.seq_lens or '-'}, dynamic {spec.dynamic}, "
                   f"backend {spec.backend}, device {spec.device}, max-compiles "
                   f"{spec.max_compiles if spec.max_compiles is not None else '-'}, timeout "
                   f"{spec.timeout:g} s" + (f", fail-on {listed(spec.fail_on)}" if spec.fail_on else ""))
    from shapelint.report.escape import clean

    sys.stdout.write("".join(clean(line) + "\n" for line in out))
    return 0


def cmd_rule(args: argparse.Namespace) -> int:
    import json

    from shapelint.registry import rule_status

    rules = load_rules(load_settings(".", None, args.config))  # built-in and rule-paths

    def precision(r) -> str:
        return "-" if r.measured_precision is None else f"{r.measured_precision:.2f}"

    if args.all or not args.code:
        if args.format == "json":
            print(json.dumps([dict(r.describe(), status=rule_status(r)) for r in rules.values()],
                             indent=2))
        else:
            print(f"{'code':<6} {'name':<30} {'status':<15} {'precision':<9}  summary")
            for code, r in rules.items():
                print(f"{code:<6} {r.name:<30} {rule_status(r):<15} {precision(r):<9}  {r.summary}")
        return 0
    code = args.code.upper()
    if code not in rules:
        from shapelint.config import _closest

        print(f"shapelint: error: unknown rule `{args.code}`{_closest(code, list(rules))}",
              file=sys.stderr)
        return 2
    r = rules[code]
    if args.format == "json":
        print(json.dumps(dict(r.describe(), status=rule_status(r), documentation=r.documentation()),
                         indent=2))
        return 0
    status = rule_status(r)
    how = {"preview": " (turn it on with --preview, `preview = true` or by selecting its code)",
           "off by default": " (turn it on by selecting its code)",
           "runtime-only": " (reported by `shapelint run` only)"}.get(status, "")
    print(f"# {r.name} ({r.code})\n")
    print(f"{r.summary}. Severity: {r.severity}. Confirmed at run time by: "
          f"{', '.join(r.evidence) or 'n/a'}"
          + (f" (graph-break registry {', '.join(r.registry_ids)})" if r.registry_ids else "") + ".")
    print(f"Status: {status}{how}. Measured precision: "
          f"{precision(r) if r.measured_precision is not None else 'not measured'}.\n")
    print(r.documentation())
    return 0


def cmd_test_rules(args: argparse.Namespace) -> int:
    """Run the VALID and INVALID examples of the rules in each PATH (as ``fixit test`` does):
    exit 0 when every example holds, 1 when one fails, 2 when the rules cannot be loaded."""
    from shapelint.registry import RuleLoadError, load_rule_paths
    from shapelint.testing import check_rule_example, rule_examples

    try:
        rules = load_rule_paths(args.paths, os.getcwd())
    except RuleLoadError as exc:
        raise ConfigError(str(exc)) from exc
    if not rules:
        raise ConfigError(f"no rules (classes deriving shapelint.api.Rule with a code) in "
                          f"{', '.join(args.paths)}")
    examples = rule_examples(rules)
    failed = 0
    for rule in rules:
        if not rule.runtime_only and not (rule.VALID or rule.INVALID):
            print(f"note: {rule.code} ({rule.__module__}) has no VALID or INVALID examples")
    for example in examples:
        problem = check_rule_example(example)
        if problem:
            failed += 1
            print(f"FAIL {problem}")
        else:
            print(f"ok   {example.id}")
    print(f"{len(examples) - failed} of {len(examples)} examples of {len(rules)} "
          f"rule{'s' if len(rules) != 1 else ''} passed" + (f"; {failed} failed" if failed else ""))
    return 1 if failed else 0


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
