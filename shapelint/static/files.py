"""Finding and reading Python files: excludes, symlink loops, encodings, oversized files.

Every failure becomes a FileError with a location; the run goes on with the other files.
"""

from __future__ import annotations

import fnmatch
import io
import os
import re
import tokenize
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

from shapelint.finding import FileError, relpath

#: Files above this are reported, not parsed: libcst on a 50 MB file takes minutes.
MAX_FILE_BYTES = 8 * 1024 * 1024

DEFAULT_EXCLUDES = (".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__",
                    "build", "dist", "node_modules", ".mypy_cache", ".pytest_cache",
                    ".ruff_cache", ".shapelint_cache", "site-packages", ".eggs")


@dataclass(frozen=True)
class SourceFile:
    path: str  # as shown to the user (relative to cwd when under it)
    abspath: str
    text: str
    digest: str


class _Excludes:
    """Exclude globs compiled once for a walk: plain names are a set lookup on the basename,
    real globs one regular expression each for the name, the path relative to the root
    walked and the absolute path (never the root's ancestors, so checking a tree inside
    site-packages works). A walk asks for thousands of paths: fnmatch and os.path per path
    and pattern were half of a warm check of transformers."""

    def __init__(self, patterns: Sequence[str], root: str = ".") -> None:
        self.plain = frozenset(p.rstrip("/") for p in patterns if not any(c in p for c in "*?[/"))
        globs = [p.rstrip("/") for p in patterns if any(c in p for c in "*?[/")]
        self.glob = re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs)) \
            if globs else None
        self.below = re.compile("|".join(f"(?:{fnmatch.translate(g + '/*')})" for g in globs)) \
            if globs else None
        self.root = root
        #: the root as the walk spells the paths it yields, and as an absolute path
        self.prefix = root.rstrip(os.sep) + os.sep if root.rstrip(os.sep) else os.sep
        self.abs_prefix = os.path.abspath(root).rstrip(os.sep) + os.sep

    def __call__(self, path: str) -> bool:
        name = os.path.basename(path)
        if name in self.plain:
            return True
        if self.glob is None or self.below is None:  # (both or neither: no real glob)
            return False
        if self.glob.match(name):
            return True
        if path.startswith(self.prefix):  # what the walk of the root yields: names below it
            rel = path[len(self.prefix):]
            full = self.abs_prefix + rel
        else:
            rel, full = os.path.relpath(path, self.root), os.path.abspath(path)
        return any(rx.match(c) is not None for rx in (self.glob, self.below) for c in (rel, full))


def excluded(path: str, patterns: Sequence[str]) -> bool:
    """Whether a file named on its own matches an exclude glob (by name, by its path from the
    working directory, or by its absolute path)."""
    return _Excludes(tuple(patterns))(path)


def _git_listed(root: str) -> Optional[List[str]]:
    """Python files under ``root`` that git tracks or would track (``.gitignore`` honoured),
    or None when ``root`` is not in a git work tree."""
    import subprocess

    try:
        proc = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard",
                               "--", "."], cwd=root, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    ignored = subprocess.run(["git", "check-ignore", "-q", "."], cwd=root, capture_output=True)
    if ignored.returncode == 0:  # the user named an ignored folder: check it all
        return None
    out = []
    for rel in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if rel.endswith(".py"):
            full = os.path.abspath(os.path.join(root, rel))
            if os.path.isfile(full):
                out.append(full)
    return sorted(set(out))


def discover(paths: Iterable[str], exclude: Sequence[str] = (),
             respect_gitignore: bool = True) -> Tuple[List[str], List[FileError]]:
    """Python files under ``paths`` (files named explicitly are always kept); inside a git
    work tree, files that ``.gitignore`` excludes are skipped."""
    patterns = tuple(DEFAULT_EXCLUDES) + tuple(exclude)
    found: List[str] = []
    errors: List[FileError] = []
    seen_dirs: set = set()
    for root in paths:
        if os.path.isfile(root) or (os.path.exists(root) and not os.path.isdir(root)):
            found.append(os.path.abspath(root))  # a FIFO too: read_source says what it is
            continue
        if not os.path.exists(root):
            errors.append(FileError(relpath(root), 1, 1, "no such file or directory"))
            continue
        is_excluded = _Excludes(patterns, root)
        listed = _git_listed(root) if respect_gitignore else None
        if listed is not None:  # what git tracks or would track: .gitignore respected
            found.extend(f for f in listed if not is_excluded(f))
            continue
        def unlisted(e: OSError, root: str = root) -> None:
            errors.append(FileError(relpath(e.filename or root), 1, 1, f"cannot list directory: {e.strerror}"))

        for dirpath, dirnames, filenames in os.walk(root, followlinks=True, onerror=unlisted):
            real = os.path.realpath(dirpath)
            if real in seen_dirs:  # a symlink loop, or the same tree twice
                dirnames[:] = []
                continue
            seen_dirs.add(real)
            dirnames[:] = sorted(d for d in dirnames
                                 if not is_excluded(os.path.join(dirpath, d)))
            for fname in sorted(filenames):
                if fname.endswith((".py", ".pyi")) and not fname.endswith(".pyi"):
                    full = os.path.join(dirpath, fname)
                    if not is_excluded(full):
                        found.append(os.path.abspath(full))
    # keep order, drop duplicates
    return list(dict.fromkeys(found)), errors


def read_source(abspath: str) -> Union[SourceFile, FileError]:
    """Read and decode a file as Python would (PEP 263 cookie, UTF-8 default)."""
    import hashlib

    import stat

    shown = relpath(abspath)
    try:
        st = os.stat(abspath)
        if not stat.S_ISREG(st.st_mode):  # a FIFO named x.py would block the read forever
            kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a folder" if stat.S_ISDIR(st.st_mode) \
                else "a device or socket"
            return FileError(shown, 1, 1, f"not a regular file ({kind}); skipped")
        size = st.st_size
        if size > MAX_FILE_BYTES:
            return FileError(shown, 1, 1, f"file too large to analyse ({size / 1e6:.1f} MB > "
                                          f"{MAX_FILE_BYTES / 1e6:.0f} MB); skipped")
        with open(abspath, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        return FileError(shown, 1, 1, f"cannot read file: {exc.strerror or exc}")
    if b"\x00" in raw:
        line = raw[: raw.index(b"\x00")].count(b"\n") + 1
        return FileError(shown, line, 1, "file contains a NUL byte; not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        text = raw.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        line = 1
        if isinstance(exc, UnicodeDecodeError):
            line = raw[: exc.start].count(b"\n") + 1
        return FileError(shown, line, 1, f"cannot decode file: {exc}")
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(shown, abspath, text, hashlib.sha256(raw).hexdigest())


def module_name_for(abspath: str, packages: Optional[Dict[str, bool]] = None) -> Tuple[str, str]:
    """(dotted module name, import root) for a file: walk up while ``__init__.py`` exists.
    ``packages``: whether each folder holds one, as found so far (for a caller that names
    thousands of files: a stat per file and level was a second of a check of transformers)."""
    directory, fname = os.path.split(abspath)
    stem = fname[:-3]
    parts: List[str] = [] if stem == "__init__" else [stem]
    while _is_package(directory, packages):
        directory, pkg = os.path.split(directory)
        parts.insert(0, pkg)
        if not pkg:
            break
    return ".".join(p for p in parts if p), directory


def _is_package(directory: str, known: Optional[Dict[str, bool]]) -> bool:
    if known is None:
        return os.path.isfile(os.path.join(directory, "__init__.py"))
    found = known.get(directory)
    if found is None:
        found = known[directory] = os.path.isfile(os.path.join(directory, "__init__.py"))
    return found


def common_root(paths: Sequence[str]) -> Optional[str]:
    if not paths:
        return None
    try:
        return os.path.commonpath([os.path.abspath(p) for p in paths])
    except ValueError:
        return None
