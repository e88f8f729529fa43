"""The processes of a replay: none outlives its target, and no worker outlives ``shapelint run``.

Without cgroups, a worker's processes are found three ways, each covering what the others miss:

- the tree: ``/proc/PID/task/*/children`` from the worker down. The worker is a child
  subreaper (``PR_SET_CHILD_SUBREAPER``), so a process whose parent exited is re-parented to
  it rather than to PID 1 and stays in the tree, a new session (``setsid``) or not;
- the process group, which the runner kills as a whole;
- the mark: every process a worker starts inherits ``SHAPELINT_WORKDIR`` (the work folder's
  path, unique to the replay) in its environment, so a process that escaped the tree (the
  worker crashed or was killed first, and PID 1 adopted it) is still known as the target's.

The other way round, a worker whose parent dies (``kill -9`` of ``shapelint run``) is told by
the kernel (``PR_SET_PDEATHSIG``; elsewhere a watchdog thread polls the parent's pid): it ends
its own processes, removes its work folder and exits.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import sys
import threading
import time
from typing import Callable, List, Optional, Set

#: the environment variable that marks a replay's processes (and names its work folder)
MARK = "SHAPELINT_WORKDIR"
#: the pid of the process that started the worker
PARENT = "SHAPELINT_PARENT_PID"
#: a work folder the runner makes (and so one a worker may remove)
WORKDIR_PREFIX = "shapelint-run-"


def _prctl(option: int, arg: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, arg, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> None:
    """Orphaned descendants (a child the model started, then its parent exited) are re-parented
    to this process instead of PID 1, so :func:`end_descendants` finds them (Linux)."""
    _prctl(36, 1)  # PR_SET_CHILD_SUBREAPER


def children(pid: int) -> List[int]:
    out: List[int] = []
    for task in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            with open(task) as fh:
                out.extend(int(x) for x in fh.read().split())
        except (OSError, ValueError):
            pass
    return out


def end_descendants(root: Optional[int] = None) -> Set[int]:
    """SIGKILL every process ``root`` (default: this process) started, and theirs, walking the
    tree again until it is empty (a process killed mid-fork leaves an orphan the subreaper
    adopts). Returns the pids killed."""
    root = os.getpid() if root is None else root
    killed: Set[int] = set()
    for _ in range(50):
        todo, found = children(root), False
        while todo:
            pid = todo.pop()
            if pid in killed:
                continue
            found = True
            killed.add(pid)
            todo.extend(children(pid))
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if not found:
            break
    if root == os.getpid():
        for _ in range(len(killed)):
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except OSError:
                break
    return killed


def marked(workdir: str) -> List[int]:
    """Processes of this user whose environment carries the replay's mark."""
    needle = f"{MARK}={workdir}".encode("utf-8", "surrogateescape") + b"\0"
    out: List[int] = []
    me = os.getpid()
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read() + b"\0"
        except OSError:  # gone, or another user's
            continue
        if b"\0" + needle in b"\0" + env:
            out.append(int(entry))
    return out


def end_marked(workdir: str) -> List[int]:
    """SIGKILL every process that carries the replay's mark (see the module's doc)."""
    pids = marked(workdir)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return pids


def end_worker(pid: int, workdir: Optional[str]) -> None:
    """End a worker and everything it started: stop its group (nothing new is forked), kill its
    tree while it still adopts orphans, then the group, then whatever carries its mark."""
    try:
        os.killpg(pid, signal.SIGSTOP)
    except OSError:
        pass
    end_descendants(pid)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if workdir:
        end_marked(workdir)


def own_workdir() -> Optional[str]:
    """The work folder the runner made for this worker, if this process is one."""
    workdir = os.environ.get(MARK)
    if workdir and os.path.basename(workdir.rstrip(os.sep)).startswith(WORKDIR_PREFIX):
        return workdir
    return None


def _orphaned(cleanup: Callable[[], None]) -> None:
    try:
        end_descendants()
        cleanup()
        workdir = own_workdir()
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    finally:
        os._exit(1)


def die_with_parent(cleanup: Callable[[], None] = lambda: None) -> None:
    """Make this worker end when the process that started it does, however it ends (``kill
    -9`` included): its processes are ended and its work folder removed first. The kernel
    sends SIGHUP when the parent dies (Linux; a worker runs in a session of its own, so no
    terminal sends it one); a watchdog thread polls the parent's pid as well (other systems,
    and a parent that died before this was set up)."""
    try:
        parent = int(os.environ.get(PARENT, "0"))
    except ValueError:
        parent = 0
    if not parent:
        return
    try:
        signal.signal(signal.SIGHUP, lambda signum, frame: _orphaned(cleanup))
        _prctl(1, int(signal.SIGHUP))  # PR_SET_PDEATHSIG
    except (ValueError, OSError):  # not the main thread
        pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        _orphaned(cleanup)

    if os.getppid() != parent:
        _orphaned(cleanup)
    threading.Thread(target=watch, name="shapelint-parent-watch", daemon=True).start()
