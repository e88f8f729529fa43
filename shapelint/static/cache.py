"""The result cache: plain JSON keyed by content hashes, shapelint's version and the settings.

A stat index remembers each file's (size, mtime) and content hash, so a warm run re-reads only
files whose stat changed, and a hit returns before libcst or networkx are imported. Nothing read
back is executed (no pickle)."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from shapelint import __version__
from shapelint.config import Settings
from shapelint.finding import CheckResult, FileError, Finding


class RunCache:
    def __init__(self, settings: Settings, enabled: Iterable[str]) -> None:
        self.settings = settings
        self.enabled = sorted(enabled)
        d = settings.cache_dir
        self.dir = d if os.path.isabs(d) else os.path.join(os.path.abspath(settings.base_dir), d)
        self._index: Optional[Dict[str, List]] = None
        self._dirty = False

    # -- file digests -------------------------------------------------------------------------
    def _index_path(self) -> str:
        return os.path.join(self.dir, "stat-index.json")

    def index(self) -> Dict[str, List]:
        if self._index is None:
            try:
                with open(self._index_path(), encoding="utf-8") as fh:
                    data = json.load(fh)
                self._index = data if isinstance(data, dict) else {}
            except (OSError, ValueError):
                self._index = {}
        return self._index

    def digest(self, path: str) -> Optional[str]:
        """Content hash of a file, from the stat index when its size and mtime match."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        entry = self.index().get(path)
        if isinstance(entry, list) and len(entry) == 3 and entry[0] == st.st_size \
                and entry[1] == st.st_mtime_ns and isinstance(entry[2], str):
            return entry[2]
        try:
            with open(path, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
        except OSError:
            return None
        self.index()[path] = [st.st_size, st.st_mtime_ns, digest]
        self._dirty = True
        return digest

    def key(self, files: Sequence[str], paths: Sequence[str]) -> str:
        h = hashlib.sha256()
        for part in (__version__, self.settings.fingerprint(), ",".join(self.enabled), os.getcwd(),
                     "\0".join(sorted(os.path.abspath(p) for p in paths))):
            h.update(part.encode())
            h.update(b"\0")
        for f in sorted(files) + self.code_files():
            h.update(f.encode())
            h.update((self.digest(f) or "unreadable").encode())
        return h.hexdigest()[:32]

    def code_files(self) -> List[str]:
        """The code that makes the findings: shapelint's engine, its rules and the rules of
        ``rule-paths``. A rule edited in place (a user's own, or a checkout of shapelint
        between releases) must not replay what the old code found."""
        base = os.path.abspath(self.settings.base_dir)
        roots = [os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))]
        try:
            import shapelint.rules as builtin

            roots.append(os.path.dirname(os.path.abspath(builtin.__file__)))
        except ImportError:  # pragma: no cover - the package is installed with its rules
            pass
        roots += [p if os.path.isabs(p) else os.path.join(base, p) for p in self.settings.rule_paths]
        out: List[str] = []
        for root in dict.fromkeys(roots):
            try:
                names = sorted(os.listdir(root))
            except OSError:
                continue
            out += [os.path.join(root, n) for n in names if n.endswith(".py")]
        return out

    # -- results --------------------------------------------------------------------------------
    def _result_path(self, key: str) -> str:
        return os.path.join(self.dir, f"check-{key}.json")

    def load(self, key: str) -> Optional[CheckResult]:
        """The stored result, or None (a miss) when there is none, when a file it depends on
        changed, or when the entry is not what :meth:`store` writes (truncated, another shape:
        ``null``, a list): a bad entry costs a re-check, never the run."""
        try:
            with open(self._result_path(key), encoding="utf-8") as fh:
                data = json.load(fh)
            if not isinstance(data, dict):
                return None
            # every file the run parsed beyond the ones checked (helpers, importers)
            depends = data.get("context", {})
            if not isinstance(depends, dict):
                return None
            for path, digest in depends.items():
                if self.digest(path) != digest:
                    return None
            return CheckResult(
                findings=[Finding.from_json(f) for f in data["findings"]],
                errors=[FileError(**e) for e in data["errors"]],
                unused_suppressions=[Finding.from_json(f) for f in data["unused"]],
                files_checked=int(data.get("files_checked", 0)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def store(self, key: str, result: CheckResult, context: Iterable[str] = ()) -> None:
        """Store ``result``; ``context`` names every file beside the checked ones whose change
        must invalidate it (the files the engine parsed: see :func:`dependencies`)."""
        data = {"version": __version__, "files_checked": result.files_checked,
                "findings": [f.to_json() for f in result.findings],
                "errors": [e.to_json() for e in result.errors],
                "unused": [f.to_json() for f in result.unused_suppressions],
                "context": {p: self.digest(p) for p in sorted(set(context))}}
        self._write(self._result_path(key), data)
        self.flush()
        from shapelint.output import sweep_stale_tmp

        sweep_stale_tmp(self.dir)  # what a run killed while writing left behind

    def flush(self) -> None:
        if self._dirty and self._index is not None:
            self._write(self._index_path(), self._index)
            self._dirty = False

    def _write(self, path: str, data) -> None:
        try:
            os.makedirs(self.dir, exist_ok=True)
            ignore = os.path.join(self.dir, ".gitignore")
            if not os.path.exists(ignore):
                with open(ignore, "w") as fh:
                    fh.write("*\n")
            from shapelint.output import tmp_path

            tmp = tmp_path(path)
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(data, fh)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only tree still gets its findings


def dependencies(engine) -> List[str]:
    """Every file a finished check of ``engine`` read beyond the checked ones: the importers it
    looked at (``context_paths``) and every module it parsed, here or in a forked process (the
    helpers a compiled region calls). Editing any of them must invalidate the cached result."""
    parsed = set(getattr(engine, "context_paths", ()) or ())
    project = getattr(engine, "project", None)
    parsed.update(getattr(project, "by_path", {}) or {})
    parsed.update(getattr(engine, "_parsed_elsewhere", ()) or ())
    return sorted(os.path.abspath(p) for p in parsed)


def cached_check(paths: Sequence[str], settings: Settings, enabled: Sequence[str], run,
                 discovered: Tuple[List[str], list]) -> CheckResult:
    """Return the cached result for the ``discovered`` files (and their errors), or ``run()``
    and store what it returns."""
    found, discover_errors = discovered
    cache = RunCache(settings, enabled)
    key = cache.key(found, paths)
    hit = cache.load(key)
    if hit is not None:
        hit.errors = discover_errors + [e for e in hit.errors if e not in discover_errors]
        return hit
    result, depends = run()  # run() returns the result and its dependencies
    if not result.rule_errors:  # a rule's bug is not a result to replay once it is fixed
        cache.store(key, result, depends)
    return result
