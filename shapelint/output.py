"""Every file shapelint writes goes through here: reports (``-o``), baselines, cache entries.

A write is atomic (a temporary file beside the target, then a rename), so a crash never
leaves half a report; the temporary file never stays behind, and one a killed process left is
swept later (only shapelint's own: ``.<name>.shapelint-<pid>.tmp``). The target must be a
regular file or not exist yet: a device (``/dev/null``, which a rename would replace, as root,
with a regular file), a FIFO, a socket, a symbolic link or a folder is refused, and so is a
Python source file (``check model.py -o model.py`` would overwrite the code it checked) unless
``force``. ``-`` (and ``/dev/stdout``) mean standard output.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import time

#: the output names that mean standard output
STDOUT_NAMES = ("-", "/dev/stdout")
#: what a report must not overwrite without --force: the code shapelint reads
SOURCE_SUFFIXES = (".py", ".pyi", ".pyw")
TMP_MARK = ".shapelint-"


class OutputError(Exception):
    """A report or baseline that cannot be written; the CLI says so in one line, exits 2."""


def is_stdout(path: str) -> bool:
    return path in STDOUT_NAMES


def check_writable(path: str, force: bool = False) -> None:
    """Fail early (before a long check) when ``path`` cannot or must not be written: see the
    module's docstring. Whatever this misses, :func:`write_atomic` reports."""
    if is_stdout(path):
        return
    ab = os.path.abspath(path)
    try:
        st = os.lstat(ab)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    if st is not None:
        mode = st.st_mode
        if stat.S_ISLNK(mode):
            raise OutputError(f"cannot write {path}: it is a symbolic link (write to the file "
                              f"it points to, or use -o - for standard output)")
        if stat.S_ISDIR(mode):
            raise OutputError(f"cannot write {path}: it is a folder")
        if not stat.S_ISREG(mode):
            what = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                    else "a device")
            raise OutputError(f"cannot write {path}: it is {what}, not a regular file (use -o - "
                              f"for standard output)")
        if not force and ab.endswith(SOURCE_SUFFIXES):
            raise OutputError(f"cannot write {path}: it is a Python source file, which a report "
                              f"would overwrite (pass --force if that is what you want)")
    parent = os.path.dirname(ab)
    while not os.path.exists(parent):  # the folders write_atomic would create
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise OutputError(f"cannot write {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {path}: {parent} is not writable")


def write_atomic(path: str, text: str, force: bool = False) -> None:
    """Write ``text`` to ``path`` (``-``: standard output) so that a crash never leaves half a
    file behind; a failure is an OutputError in one line."""
    if is_stdout(path):
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    check_writable(path, force)
    directory = os.path.dirname(os.path.abspath(path))
    tmp = tmp_path(path)
    sweep_stale_tmp(directory, f".{os.path.basename(path)}")
    try:
        os.makedirs(directory, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc


def tmp_path(path: str) -> str:
    """Where a write of ``path`` goes before its rename: beside it, named so that only
    :func:`sweep_stale_tmp` ever removes it."""
    ab = os.path.abspath(path)
    return os.path.join(os.path.dirname(ab), f".{os.path.basename(ab)}{TMP_MARK}{os.getpid()}.tmp")


def sweep_stale_tmp(directory: str, prefix: str = "", min_age: float = 5.0) -> None:
    """Remove the temporary files of writes a killed process (``kill -9``) left behind: only
    shapelint's own (``{prefix}*.shapelint-{pid}.tmp``), whose pid is gone and which are older
    than ``min_age`` seconds (a process in another pid namespace writing the same folder
    finishes its write well within that). Other tools' ``*.tmp`` files are never touched."""
    pattern = re.compile(re.escape(prefix) + r".*" + re.escape(TMP_MARK) + r"(\d+)\.tmp$")
    try:
        names = os.listdir(directory)
    except OSError:
        return
    now = time.time()
    for name in names:
        m = pattern.match(name)
        if not m or int(m.group(1)) == os.getpid():
            continue
        full = os.path.join(directory, name)
        try:
            st = os.lstat(full)
            if not stat.S_ISREG(st.st_mode) or now - st.st_mtime < min_age:
                continue
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            try:
                os.unlink(full)
            except OSError:
                pass
        except (OSError, OverflowError):
            continue
