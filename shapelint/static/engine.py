"""The static pass: files -> parsed modules -> compiled regions -> rules -> findings.

Never imports torch or the analysed code. Only files that may hold a compiled region, and
the files they import, are parsed (libcst is ~10x slower than ``ast``; most files of a large
tree never need it). Results are cached by content hash.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import os
import re
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Type

from shapelint import api
from shapelint.api import Rule
from shapelint.config import Settings
from shapelint.finding import CheckResult, FileError, Finding, Location, Severity, Snippet, relpath
from shapelint.static import dynamo
from shapelint.static import files as files_mod
from shapelint.static import parallel
from shapelint.static.flow import Analyzer, FunctionContext
from shapelint.static.regions import Regions
from shapelint.static.project import (FunctionInfo, Limits, ModuleInfo, Project,
                                      ast_dotted, may_hold_region, parse_ast)
from shapelint.static.engine_paths import anchor, exclude_patterns
from shapelint.static.suppress import Suppressions

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

UNUSED_SUPPRESSION = "SL001"
#: what ``ast`` raises on a file it cannot read (ValueError: NUL bytes and the like)
PARSE_FAILURES = (SyntaxError, ValueError, RecursionError, MemoryError)


@contextlib.contextmanager
def without_cyclic_gc(freeze: bool = False) -> Iterator[None]:
    """Run a check with the cyclic collector off: the syntax trees kept for the run are
    millions of acyclic objects, and the collector would walk them all again and again (a
    third of the run on a large tree). ``freeze``: the trees are never freed (the command
    exits with them), so move them out of the collector's sight for good; without this its
    next passes over them took 13 s after a check of transformers."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()


class Engine(api.ReportSink):
    """One static run over a set of paths."""

    def __init__(self, rules: Dict[str, Type[Rule]], enabled: Sequence[str],
                 settings: Optional[Settings] = None, jobs: Optional[int] = None,
                 kept_until_exit: bool = False) -> None:
        self.settings = settings or Settings()
        self.jobs = jobs  # processes for the walk; None or 0: one per core
        #: the caller keeps what the check builds until the process exits (the command)
        self.kept_until_exit = kept_until_exit
        self.enabled = set(enabled)
        self.rule_classes = rules
        self.rules = [rules[c](self) for c in sorted(self.enabled) if c in rules]
        self._hooks: Dict[str, List] = {}
        for r in self.rules:
            for hook in ("on_condition", "on_call", "on_iteration", "on_format", "on_subscript",
                         "on_slice", "on_state_write", "on_name_use", "on_binary_op"):
                impl = getattr(type(r), hook)
                if impl is not getattr(Rule, hook):
                    self._hooks.setdefault(hook, []).append(getattr(r, hook))
        #: (rule, path, line, col) -> candidates: a finding, the entry whose being nested
        #: drops it (None: never dropped) and the place in the entry order of the region whose
        #: walk reported it; of the candidates that stand, the earliest region's is kept, so a
        #: helper's finding quotes the same caller however the regions were shared out
        self._findings: Dict[Tuple, List[Candidate]] = {}
        #: [key, reporting function, its candidates before, kept] per report of the walk under
        #: way (see ``retract``)
        self._journal: List[list] = []
        self._entry_order: Dict[str, int] = {}
        self._suppressions: Dict[str, Suppressions] = {}
        self.project = Project()
        self.project.limits = Limits(self.settings.max_function_kib, self.settings.max_walk_seconds)
        self.analyzer: Optional[Analyzer] = None
        self._texts: Dict[str, files_mod.SourceFile] = {}
        self._parsed_elsewhere: Set[str] = set()  # files a forked process parsed
        #: (rule code, path) -> (path, line, message) of a rule that raised
        self._failed_rules: Dict[Tuple[str, str], Tuple[str, int, str]] = {}

    # -- ReportSink -----------------------------------------------------------------------------
    def report(self, rule: Rule, fn: FunctionContext, node: "cst.CSTNode", message: str,  # type: ignore[override]
               hint: str, near=None, unless_nested: Optional[str] = None) -> None:
        # the walker hands its own FunctionContext (api.Function is what rules see of it)
        line, col, end_line, end_col = fn.position(node, near)
        key = (rule.code, fn.path, line, col)
        order = self._entry_order.get(fn.root, len(self._entry_order))
        have = self._findings.get(key, [])
        if _outranked(have, unless_nested, order):
            return
        self._journal.append([key, fn.symbol, list(have), False])
        _keep(self._findings.setdefault(key, []), (Finding(
            rule=rule.code, name=rule.name, location=Location(fn.path, line, col, end_line, end_col),
            message=message, severity=Severity(rule.severity), symbol=fn.symbol, evidence=tuple(rule.evidence),
            hint=hint, registry_ids=tuple(rule.registry_ids),
            source_line=fn.module.line_text(line).strip(),
            snippet=fn.module.snippet(line)), unless_nested, order))

    def mark(self) -> int:
        """Where the journal of reports stands (see ``retract``)."""
        return len(self._journal)

    def retract(self, mark: int, path: str, symbol: str) -> None:
        """Undo what ``symbol`` in ``path`` reported since ``mark``: Dynamo skipped that
        frame (a graph break in a loop) and ran all of it eagerly, so none of its own sites
        were traced. What its callees reported stays: each runs as a frame of its own."""
        for key, sym, before, kept in reversed(self._journal[mark:]):
            if key[1] == path and sym == symbol and not kept:
                if before:
                    self._findings[key] = before
                else:
                    self._findings.pop(key, None)

    def keep(self, mark: int) -> None:
        """What was reported since ``mark`` stands even if its frame is skipped: the site
        broke the graph, and torch names the break ("Failed to handle graph break
        gracefully") whether or not it resumes."""
        for entry in self._journal[mark:]:
            entry[3] = True

    def forget_journal(self) -> None:
        """No walk is under way: what was reported stands."""
        self._journal.clear()

    def is_called_by_region(self, qualname: str) -> bool:
        """Whether another analysed function calls ``qualname`` (so it is not a root entry)."""
        g = self.analyzer.graph if self.analyzer else None
        return bool(g is not None and qualname in g and
                    any(p != qualname for p in g.predecessors(qualname)))

    def _dispatch(self, hook: str, site: api.Site) -> None:
        for fn in self._hooks.get(hook, ()):
            try:
                fn(site)
            except Exception as exc:  # noqa: BLE001 - a rule's bug must not end the run
                self._rule_failed(fn.__self__, site, exc)

    def _rule_failed(self, rule: Rule, site: api.Site, exc: BaseException) -> None:
        """Report a rule that raised, once per rule and file; the other rules, and this rule
        on the other files, go on."""
        key = (rule.code, site.fn.path)
        if key in self._failed_rules:
            return
        try:
            line = site.fn.position(site.node, site.near)[0]
        except Exception:  # noqa: BLE001 - the position of a failing site is a nicety
            line = 1
        self._failed_rules[key] = (site.fn.path, line, f"rule {rule.code} ({rule.name}) raised "
                                   f"{type(exc).__name__}: {str(exc)[:200]}; its findings in "
                                   f"this file are incomplete")

    # -- the run --------------------------------------------------------------------------------
    def check(self, paths: Sequence[str], root: Optional[str] = None, use_cache: bool = False,
              discovered: Optional[Tuple[List[str], List[FileError]]] = None) -> CheckResult:
        """Check ``paths`` (``discovered``: the files, found already). With ``use_cache``, go
        through :func:`shapelint.static.check.check`, which answers from the cache when no
        file changed."""
        if use_cache:
            from shapelint.static.check import check

            return check(paths, self.settings, rules=self.rule_classes, enabled=sorted(self.enabled),
                         root=root, jobs=self.jobs)
        return self._check(paths, root, discovered)

    def _exclude(self) -> Tuple[str, ...]:
        return exclude_patterns(self.settings)

    def _check(self, paths: Sequence[str], root: Optional[str] = None,
               discovered: Optional[Tuple[List[str], List[FileError]]] = None) -> CheckResult:
        with without_cyclic_gc(freeze=self.kept_until_exit):
            return self._check_all(paths, root, discovered)

    def _check_all(self, paths: Sequence[str], root: Optional[str] = None,
                   discovered: Optional[Tuple[List[str], List[FileError]]] = None) -> CheckResult:
        found, errors = discovered if discovered is not None else \
            files_mod.discover(paths, self._exclude())
        result = CheckResult(errors=list(errors))
        sources = []
        for f in found:
            src = files_mod.read_source(f)
            if isinstance(src, FileError):
                result.errors.append(src)
            else:
                sources.append(src)
        result.files_checked = len(found)

        # pre-commit passes changed files only: the compiled region that reaches a changed
        # helper may sit in a file that was not passed, so look for importers under the root
        index = _module_index(root or files_mod.common_root(list(paths)) or ".", found)
        context = _importers(sources, index, found) if any(os.path.isfile(p) for p in paths) else []

        self.context_paths = [c.abspath for c in context]

        # files whose text cannot name a region get a syntax check on a second core; the
        # others are parsed with ast here (which checks them too) and summarized if they
        # hold a region; the project summarizes what those import on first need
        by_abs = {s.abspath: s for s in sources + context}
        worded = [s for s in sources if self.settings.entry_points or may_hold_region(s.text)]
        worded_paths = {s.abspath for s in worded}
        checks = _SyntaxChecks([s for s in sources if s.abspath not in worded_paths])
        trees: Dict[str, object] = {}
        hinted = [s for s in worded if self.settings.entry_points or _holds_region(s, trees)]
        todo = sorted(hinted + context, key=lambda s: s.abspath)
        parse_errors: List[FileError] = []

        def load(path: str) -> Optional[ModuleInfo]:
            src = by_abs.get(path) or files_mod.read_source(path)
            if not isinstance(src, files_mod.SourceFile):
                return None
            return self._parse(src, parse_errors)

        self.project.index = index
        self.project.loader = load
        for src in todo:
            mod = self._parse(src, parse_errors, trees.pop(src.abspath, None))
            if mod is not None:
                self.project.add(mod)
        self._texts = by_abs
        self.regions = Regions(self.project, self.settings)
        self.analyzer = Analyzer(self.project, self._dispatch, self.regions, journal=self,
                                 hooks=frozenset(self._hooks),
                                 by_entry=any(r.needs_entry_scope for r in self.rules))
        function_errors = self._walk_all(self.min_parallel_lines)
        parse_errors.extend(FileError(path, line, 1, msg) for path, line, msg in function_errors)
        parsed = set(self.project.by_path) | self._parsed_elsewhere
        seen_errors = {e.path for e in parse_errors}
        parse_errors.extend(e for e in checks.result() if e.path not in seen_errors
                            and os.path.abspath(e.path) not in parsed)
        result.errors.extend(parse_errors)
        result.rule_errors = [FileError(path, line, 1, msg) for path, line, msg in
                              sorted(self._failed_rules.values())]

        reported = {s.abspath for s in sources}
        result.findings = self._filter(reported)
        result.unused_suppressions = self._unused(reported & parsed)
        result.findings.sort(key=Finding.sort_key)
        result.errors.sort(key=lambda e: (e.path, e.line))
        return result

    #: entries of fewer lines than this are walked in one process (see static/parallel.py)
    min_parallel_lines = parallel.MIN_LINES

    def _walk_all(self, min_lines: int) -> List[Tuple[str, int, str]]:
        """Walk every compiled entry, on several processes when the work is large; returns the
        functions libcst could not parse, as (path, line, message)."""
        entries = self._entries()
        self._entry_order = {e.qualname: i for i, e in reversed(list(enumerate(entries)))}
        jobs = parallel.jobs_for(self.jobs)
        units = parallel.units(entries, jobs, min_lines)
        payloads: List[Dict] = []
        try:
            queue = parallel.WorkQueue(len(units)) if len(units) > 1 else None
        except OSError:  # no pipe to be had (EMFILE): this process walks it all
            queue = None
        if queue is None:
            self._walk(entries)
        else:
            payloads = self._walk_shared(units, queue, min(jobs, len(units)))
        self._finish_rules()
        errors = self._function_errors()
        for payload in payloads:
            for key, candidates in payload["findings"].items():
                for cand in candidates:
                    if not _outranked(self._findings.get(key, ()), cand[1], cand[2]):
                        _keep(self._findings.setdefault(key, []), cand)
            assert self.analyzer is not None
            parallel.merge_graph(self.analyzer.graph, payload["edges"], payload["nodes"])
            self._parsed_elsewhere.update(payload["parsed"])
            errors.extend(e for e in payload["function_errors"] if e not in errors)
            for key, error in payload["rule_errors"]:
                self._failed_rules.setdefault(tuple(key), error)
        return errors

    def _walk_shared(self, units: List[List[FunctionInfo]], queue: parallel.WorkQueue,
                     jobs: int) -> List[Dict]:
        """Walk ``units`` on ``jobs`` processes, this one included, each taking the next unit
        from ``queue`` as it comes free; returns the forked processes' payloads. What a
        process that failed took is walked again here."""
        def walk(index: int) -> Dict[str, object]:  # runs in a forked child
            for unit in queue.take(index):
                self._walk(units[unit])
            self._finish_rules()
            g = self.analyzer.graph  # type: ignore[union-attr]
            return {"findings": self._findings, "edges": list(g.edges),
                    "nodes": list(g.nodes(data=True)), "parsed": list(self.project.by_path),
                    "function_errors": self._function_errors(),
                    "rule_errors": list(self._failed_rules.items())}

        payloads = []
        try:
            children = [parallel.Share(walk, i) for i in range(1, jobs)]
            for unit in queue.take(0):
                self._walk(units[unit])
            for child in children:
                payload = child.result()
                if payload is None:  # the child failed: walk what it took here
                    for unit in queue.lost(child.index):
                        self._walk(units[unit])
                else:
                    payloads.append(payload)
        finally:
            queue.close()
        return payloads

    def _finish_rules(self) -> None:
        for r in self.rules:
            try:
                r.on_finish()
            except Exception as exc:  # noqa: BLE001 - a rule's bug must not end the run
                self._failed_rules.setdefault((r.code, ""), (
                    "", 1, f"rule {r.code} ({r.name}) raised {type(exc).__name__} in on_finish: "
                           f"{str(exc)[:200]}; its findings are incomplete"))

    def _walk(self, entries: Sequence[FunctionInfo]) -> None:
        for entry in entries:
            self.analyzer.analyze_entry(entry)  # type: ignore[union-attr]

    def _function_errors(self) -> List[Tuple[str, int, str]]:
        return [(mod.path, line, msg) for mod in self.project.all_modules()
                for line, msg in mod.function_errors]

    def _parse(self, src: files_mod.SourceFile, errors: List[FileError],
               tree=None) -> Optional[ModuleInfo]:
        """The module's summary, from ``tree`` when the first pass already parsed it."""
        try:
            return ModuleInfo(src, tree if isinstance(tree, ast.Module) else None)
        except PARSE_FAILURES as exc:
            errors.append(_parse_failure(src, exc))
        return None

    def _entries(self) -> List[FunctionInfo]:
        """Compiled regions (see static/regions.py)."""
        return self.regions.entries()

    def _filter(self, reported: Set[str]) -> List[Finding]:
        out = []
        for candidates in self._findings.values():
            standing = [(order, f) for f, cond, order in candidates
                        if cond is None or not self.is_called_by_region(cond)]
            if not standing:
                continue
            f = min(standing, key=lambda c: c[0])[1]
            abspath = os.path.abspath(f.path)
            if abspath not in reported:
                continue
            if self._suppressed(f.rule, abspath, f.line) or self._file_ignored(f):
                continue
            out.append(f)
        return out

    def _source(self, abspath: str) -> Optional[files_mod.SourceFile]:
        src = self._texts.get(abspath)
        if src is None:
            mod = self.project.by_path.get(abspath)
            src = mod.source if mod is not None else None
        if src is None:
            read = files_mod.read_source(abspath)
            src = read if isinstance(read, files_mod.SourceFile) else None
        return src

    def _sup(self, abspath: str) -> Suppressions:
        if abspath not in self._suppressions:
            src = self._source(abspath)
            self._suppressions[abspath] = Suppressions(src.text if src else "")
        return self._suppressions[abspath]

    def _suppressed(self, code: str, abspath: str, line: int) -> bool:
        return self._sup(abspath).suppresses(code, line)

    def _file_ignored(self, f: Finding) -> bool:
        import fnmatch

        for pattern, codes in self.settings.per_file_ignores.items():
            pat = anchor(pattern, self.settings.base_dir)
            if fnmatch.fnmatch(os.path.abspath(f.path), pat) or fnmatch.fnmatch(f.path, pattern):
                if any(c == "ALL" or f.rule.startswith(c) for c in codes):
                    return True
        return False

    def _unused(self, reported: Set[str]) -> List[Finding]:
        if UNUSED_SUPPRESSION not in self.enabled:
            return []
        rule = self.rule_classes[UNUSED_SUPPRESSION]
        out = []
        for abspath in sorted(reported):
            src = self._source(abspath)
            if src is None:
                continue
            lines = src.text.splitlines()
            for sup, idle in self._sup(abspath).unused(self.enabled):
                if self._suppressed(UNUSED_SUPPRESSION, abspath, sup.line):
                    continue
                out.append(Finding(
                    rule=rule.code, name=rule.name,
                    location=Location(src.path, sup.line, sup.column),
                    message=f"unused suppression: {', '.join(idle)} reported nothing on this line",
                    severity=Severity(rule.severity), hint=rule.hint,
                    source_line=lines[sup.line - 1].strip() if 0 < sup.line <= len(lines) else "",
                    snippet=Snippet.around(lines, sup.line)))
        return out



#: a finding, the entry whose being nested drops it, the reporting region's entry order
Candidate = Tuple[Finding, Optional[str], int]


def _outranked(have: Sequence[Candidate], cond: Optional[str], order: int) -> bool:
    """Is a candidate with ``cond`` from region ``order`` redundant? It is when one that
    stands at least as often (never dropped, or dropped on the same condition) came from an
    earlier region."""
    return any((c is None or c == cond) and o <= order for _, c, o in have)


def _keep(have: List[Candidate], cand: Candidate) -> None:
    """Add ``cand``, dropping the candidates it makes redundant."""
    _, cond, order = cand
    have[:] = [c for c in have if not ((cond is None or cond == c[1]) and order <= c[2])]
    have.append(cand)


#: what the walk below looks for, as text: ``compile(name``, ``torch.compile(name`` or
#: ``torch.compiler.compile(name``, not ``re.compile(...)`` (whose tree walk cost 1 s on
#: transformers for nothing)
COMPILE_OF_NAME = re.compile(r"(?<![\w.])(?:torch\s*\.\s*(?:compiler\s*\.\s*)?)?compile\(\s*[A-Za-z_]")


def _holds_region(src: files_mod.SourceFile, trees: Dict[str, object]) -> bool:
    """The cheap first pass (ast, ~10x cheaper than libcst): does the file define a compiled
    entry (a ``forward`` method, a torch.compile'd function), a custom op, a fake or a
    disabled function? Its tree goes into ``trees`` for the summary. A file that does not
    parse is kept, so that its error is reported."""
    try:
        tree = parse_ast(src.text, src.path)
    except PARSE_FAILURES:
        return True
    markers = (*dynamo.COMPILE_WORDS, "custom_op", "register_fake", "impl_abstract", "disable")
    stack = list(tree.body)
    found = False
    while stack and not found:
        node = stack.pop()
        if isinstance(node, ast.ClassDef):
            stack.extend(node.body)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found = node.name == "forward" or any(
                m in (ast_dotted(d.func if isinstance(d, ast.Call) else d) or "")
                for d in node.decorator_list for m in markers)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            stack.extend(node.body)
            stack.extend(getattr(node, "orelse", []))
            stack.extend(getattr(node, "finalbody", []))
            for h in getattr(node, "handlers", []):
                stack.extend(h.body)
        elif isinstance(node, (ast.Expr, ast.Assign)) and isinstance(node.value, ast.Call):
            found = (ast_dotted(node.value.func) or "").endswith(
                ("compile", "register_fake", "impl_abstract", "register_abstract"))
    if not found and COMPILE_OF_NAME.search(src.text):  # torch.compile(fn), inside a function
        found = any(isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Name)
                    and ast_dotted(n.func) in ("torch.compile", "compile", "torch.compiler.compile")
                    for n in ast.walk(tree))
    if found:
        trees[src.abspath] = tree
    return found


class _SyntaxChecks:
    """ast syntax checks of files that are not parsed with libcst, in a forked process when
    there are enough of them to pay for it (only the few errors travel back). A plain forked
    process, not a pool: a pool runs a thread here, and the walk must not fork a process
    that runs threads."""

    MIN_FOR_PROCESS = 300

    def __init__(self, sources: Sequence[files_mod.SourceFile]) -> None:
        self.sources = list(sources)
        self.share: Optional[parallel.Share] = None
        if len(self.sources) >= self.MIN_FOR_PROCESS and parallel.jobs_for(None) > 1:
            paths = [s.abspath for s in self.sources]
            try:
                self.share = parallel.Share(lambda _: {"rows": _syntax_errors_of(paths)}, 0)
            except OSError:
                self.share = None

    def result(self) -> List[FileError]:
        payload = self.share.result() if self.share is not None else None
        if payload is not None:
            return [FileError(files_mod.relpath(p), line, col, msg)
                    for p, line, col, msg in payload["rows"]]
        return [e for e in (_syntax_error(s) for s in self.sources) if e is not None]


def _syntax_errors_of(paths: Sequence[str]) -> List[Tuple[str, int, int, str]]:
    out = []
    for p in paths:
        src = files_mod.read_source(p)
        if isinstance(src, files_mod.SourceFile):
            err = _syntax_error(src)
            if err is not None:
                out.append((p, err.line, err.column, err.message))
    return out


def _parse_failure(src: files_mod.SourceFile, exc: BaseException) -> FileError:
    """The error to report for a file ``ast`` rejects, whichever pass met it. A file libcst
    accepts but ``ast`` does not (``def f[T]()`` read by Python 3.11) is written for a newer
    Python, which deserves its own message."""
    import sys

    if isinstance(exc, (RecursionError, MemoryError)) or \
            (isinstance(exc, SyntaxError) and "too many" in str(exc.msg) and "nested" in str(exc.msg)):
        # never hand such a file to libcst below: its native parser overflows the C stack
        return FileError(src.path, getattr(exc, "lineno", 1) or 1, 1,
                         "file is too deeply nested to parse")
    if not isinstance(exc, SyntaxError):
        return FileError(src.path, 1, 1, f"cannot parse: {exc}")
    try:
        import libcst as cst

        cst.parse_module(src.text)
    except Exception:  # noqa: BLE001 - any failure: it is a real syntax error
        return FileError(src.path, exc.lineno or 1, exc.offset or 1, f"syntax error: {exc.msg}")
    return FileError(src.path, exc.lineno or 1, exc.offset or 1,
                     f"not analysed: written for a newer Python than this one "
                     f"({sys.version_info.major}.{sys.version_info.minor}); run shapelint "
                     f"under that Python to analyse it")


def _syntax_error(src: files_mod.SourceFile) -> Optional[FileError]:
    try:
        parse_ast(src.text, src.path)
    except PARSE_FAILURES as exc:
        return _parse_failure(src, exc)
    return None


def _module_index(root: str, found: Sequence[str]) -> Dict[str, List[str]]:
    """Dotted module name -> files, for every .py under ``root`` (listing only, no reading)."""
    index: Dict[str, List[str]] = {}
    root_files, _ = files_mod.discover([root]) if os.path.isdir(root) else ([], [])
    packages: Dict[str, bool] = {}
    for f in dict.fromkeys(list(found) + root_files):  # (the root's files are mostly ``found``)
        name, _ = files_mod.module_name_for(f, packages)
        index.setdefault(name, []).append(f)
    return index


def _importers(sources: Sequence[files_mod.SourceFile], index: Dict[str, List[str]],
               found: Sequence[str]) -> List[files_mod.SourceFile]:
    """Files under the root, not among ``sources``, that may hold a compiled region and import
    one of the ``sources`` modules (read as text, never imported)."""
    import re

    names = {files_mod.module_name_for(s.abspath)[0].split(".")[-1] for s in sources}
    names.discard("__init__")
    if not names:
        return []
    pattern = re.compile(r"^\s*(?:from\s+[\w.]*\b(?:%s)\b|import\s+[\w., ]*\b(?:%s)\b"
                         r"|from\s+[\w.]+\s+import\s+[^#\n]*\b(?:%s)\b)"
                         % (("|".join(map(re.escape, names)),) * 3), re.M)
    taken = set(found)
    out: List[files_mod.SourceFile] = []
    for files in index.values():
        for f in files:
            if f in taken:
                continue
            taken.add(f)
            src = files_mod.read_source(f)
            if isinstance(src, files_mod.SourceFile) and may_hold_region(src.text) \
                    and pattern.search(src.text):
                out.append(src)
    return out


def rel(path: str) -> str:
    return relpath(path)
