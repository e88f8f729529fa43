"""The result cache: plain JSON keyed by content hashes, shapelint's version and the settings.

A stat index remembers each file's content hash with its size, mtime, ctime and inode, so a warm
run re-reads only files whose stat changed (an edit that keeps the size and restores the mtime
still moves the ctime, which no user call can set back), and a hit returns before libcst or
networkx are imported. A hash taken within :data:`RACY_NS` of the file's last change is taken
again next time (a second write in the same clock tick leaves every stat field as it was: git's
"racily clean" entries). Beside the files a result depends on, it records the listings of the
folders imports are resolved in: a helper module that appears later (``from utils import f``
once ``utils.py`` exists) changes a listing and so misses. Nothing read back is executed (no
pickle)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from shapelint import __version__
from shapelint.config import Settings
from shapelint.finding import CheckResult, FileError, Finding


#: how long after a file's last change its hash is trusted from the stat index alone: a write
#: within the same timestamp tick (coarse clocks, 2 s on FAT) keeps every stat field
RACY_NS = 2_000_000_000


def cache_dir(settings: Settings) -> str:
    """The cache's folder: ``cache-dir`` with ``~`` expanded, relative to the config's folder."""
    d = os.path.expanduser(settings.cache_dir)
    return d if os.path.isabs(d) else os.path.join(os.path.abspath(settings.base_dir), d)


def listing(folder: str) -> Optional[str]:
    """A digest of what an import can find in ``folder``: its ``.py`` files and subfolders."""
    try:
        with os.scandir(folder) as it:
            names = sorted(e.name for e in it if e.name.endswith(".py") or (
                e.name != "__pycache__" and not e.name.startswith(".") and e.is_dir()))
    except OSError:
        return None
    return hashlib.sha256("\0".join(names).encode("utf-8", "surrogateescape")).hexdigest()[:24]


class RunCache:
    def __init__(self, settings: Settings, enabled: Iterable[str]) -> None:
        self.settings = settings
        self.enabled = sorted(enabled)
        self.dir = cache_dir(settings)
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
        """Content hash of a file, from the stat index when its size, mtime, ctime and inode
        match and the hash was taken well after the file's last change."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        entry = self.index().get(path)
        if isinstance(entry, list) and len(entry) == 6 and entry[:4] == stamp \
                and isinstance(entry[4], str) and isinstance(entry[5], int) \
                and entry[5] - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_NS:
            return entry[4]
        hashed_at = time.time_ns()
        try:
            with open(path, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
        except OSError:
            return None
        self.index()[path] = stamp + [digest, hashed_at]
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
            folders = data.get("folders", {})
            if not isinstance(depends, dict) or not isinstance(folders, dict):
                return None
            for path, digest in depends.items():
                if self.digest(path) != digest:
                    return None
            for folder, digest in folders.items():  # a module that appeared since
                if listing(folder) != digest:
                    return None
            return CheckResult(
                findings=[Finding.from_json(f) for f in data["findings"]],
                errors=[FileError(**e) for e in data["errors"]],
                unused_suppressions=[Finding.from_json(f) for f in data["unused"]],
                files_checked=int(data.get("files_checked", 0)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def store(self, key: str, result: CheckResult, context: Iterable[str] = (),
              folders: Iterable[str] = ()) -> None:
        """Store ``result``; ``context`` names every file beside the checked ones whose change
        must invalidate it (the files the engine parsed: see :func:`dependencies`), ``folders``
        the folders whose listing must not change (see :func:`import_folders`)."""
        self._make_dir()  # first: a cache folder made inside the project is in its listing
        data = {"version": __version__, "files_checked": result.files_checked,
                "findings": [f.to_json() for f in result.findings],
                "errors": [e.to_json() for e in result.errors],
                "unused": [f.to_json() for f in result.unused_suppressions],
                "context": {p: self.digest(p) for p in sorted(set(context))},
                "folders": {d: listing(d) for d in sorted(set(folders))}}
        self._write(self._result_path(key), data)
        self.flush()
        from shapelint.output import sweep_stale_tmp

        sweep_stale_tmp(self.dir)  # what a run killed while writing left behind

    def flush(self) -> None:
        if self._dirty and self._index is not None:
            self._write(self._index_path(), self._index)
            self._dirty = False

    def _make_dir(self) -> None:
        """Create the cache's folder; only a folder the cache made gets a `.gitignore` of `*`
        (in the project's root, `cache-dir = "."`, it would hide every untracked file from
        git)."""
        try:
            if not os.path.isdir(self.dir):
                os.makedirs(self.dir, exist_ok=True)
                with open(os.path.join(self.dir, ".gitignore"), "x") as fh:
                    fh.write("*\n")
        except OSError:
            pass

    def _write(self, path: str, data) -> None:
        try:
            self._make_dir()
            from shapelint.output import tmp_path

            tmp = tmp_path(path)
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(data, fh)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only tree still gets its findings


def import_folders(parsed: Iterable[str], root: Optional[str]) -> List[str]:
    """The folders whose listing decides what the imports of the ``parsed`` files resolve to:
    the root helpers are resolved from, each file's own folder and its import root (the folder
    above its packages)."""
    from shapelint.static.files import module_name_for

    out = {os.path.abspath(root)} if root else set()
    for path in parsed:
        out.add(os.path.dirname(path))
        out.add(module_name_for(path)[1])
    return sorted(out)


def dependencies(engine) -> List[str]:
    """Every file a finished check of ``engine`` read beyond the checked ones: the importers it
    looked at (``context_paths``) and every module it parsed, here or in a forked process (the
    helpers a compiled region calls). Editing any of them must invalidate the cached result."""
    parsed = set(getattr(engine, "context_paths", ()) or ())
    project = getattr(engine, "project", None)
    parsed.update(getattr(project, "by_path", {}) or {})
    parsed.update(getattr(engine, "_parsed_elsewhere", ()) or ())
    regions = getattr(engine, "regions", None)  # the targets' inputs functions it read
    if regions is not None:
        parsed.update(regions.files_read())
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
    result, depends, folders = run()  # the result, the files and folders it depends on
    if not result.rule_errors:  # a rule's bug is not a result to replay once it is fixed
        cache.store(key, result, depends, folders)
    return result
