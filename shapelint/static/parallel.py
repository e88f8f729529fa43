"""Walking compiled regions on more than one core.

The summaries are built once; then the process forks and each process takes units of the
compiled entries (a file's entries together, so a file's helpers are mostly parsed once) from a
shared queue until none is left. Only data comes back over a pipe: findings with their
positions and messages already worked out, call graph edges, the paths parsed and the
functions libcst could not parse. The units of a process that fails are walked again by the
parent, so a crash costs time, never findings.

A child never outlives its parent: on Linux the kernel sends it SIGKILL when the parent dies
(``prctl(PR_SET_PDEATHSIG)``); elsewhere a watchdog thread in the child checks the parent's
pid every half second. Either way a ``kill -9`` of the command leaves no process behind.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
import struct
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

#: Below this many lines of entries, forking costs more than it saves.
MIN_LINES = 20_000


#: open files each forked walker holds in the parent (its pipe, the process's sentinel and the
#: pipes of the fork itself), and those kept free for everything else
FDS_PER_JOB = 4
FDS_RESERVED = 12


def fd_room(per_job: int, reserved: int = FDS_RESERVED) -> int:
    """How many more jobs of ``per_job`` open files each fit under the open-file limit
    (``ulimit -n``) beside the files open now; a large number when there is no limit."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return 1 << 16
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return 1 << 16
    try:
        used = len(os.listdir("/proc/self/fd")) - 1  # less the listing's own descriptor
    except OSError:
        used = reserved
    return max(1, (soft - used - reserved) // per_job)


def jobs_for(requested: Optional[int]) -> int:
    """``requested`` processes (0 or None: one per core), where fork exists and is safe (a
    process that already runs threads, torch's say, may hold a lock a forked child never gets),
    and no more than the open-file limit leaves room for (``-j 100`` under ``ulimit -n 40``)."""
    import threading

    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return 1
    if requested:
        wanted = max(1, requested)
    else:
        wanted = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                     else (os.cpu_count() or 1))
    return max(1, min(wanted, fd_room(FDS_PER_JOB)))


#: Most work units handed out: their tokens fill a pipe before any process reads it, and
#: 4-byte tokens of this many units fit in the smallest pipe buffer (one 4 KiB page: what
#: Linux gives a user past ``pipe-user-pages-soft``) and in one atomic write (``PIPE_BUF``).
MAX_UNITS = 1024


def units(entries: Sequence[Any], jobs: int, min_lines: int = MIN_LINES) -> List[List[Any]]:
    """Entries in units of work handed out in turn, each a file's entries (several files'
    when there are more files than ``MAX_UNITS``), in the entries' order: a process that takes
    units one after another walks the regions in the same relative order as a single process,
    so the earliest caller of a shared helper reports it first. One unit when the work is
    small."""
    by_file: Dict[str, List[Any]] = {}
    for e in entries:
        by_file.setdefault(e.module.source.abspath, []).append(e)
    total = sum((e.tree.end_lineno or e.tree.lineno) - e.tree.lineno + 1 for e in entries)
    if jobs <= 1 or total < min_lines or len(by_file) < 2:
        return [list(entries)]
    files = list(by_file.values())
    per_unit = -(-len(files) // MAX_UNITS)
    return [[e for fns in files[i:i + per_unit] for e in fns]
            for i in range(0, len(files), per_unit)]


class WorkQueue:
    """Units of work handed out to forked processes as they come free, so that none idles
    while another still has a backlog (static shares of about equal lines ended seconds
    apart: the lines of a file say little of its walk's cost).

    The units' indices are tokens in a pipe filled before the fork; a process takes the next
    by reading one token (pipe reads are serialized by the kernel; no lock that a killed
    process could leave held). It then records itself as the unit's owner in a shared
    array, so the units of a process that failed, and a unit taken by one that died before
    recording it, can be walked again by the parent."""

    TOKEN = struct.Struct("=i")

    def __init__(self, count: int) -> None:
        assert count <= MAX_UNITS, "more tokens than a pipe holds before anyone reads"
        self.count = count
        read, write = os.pipe()
        try:
            os.set_blocking(write, False)  # a pipe smaller than thought: EAGAIN, never a hang
            tokens = b"".join(self.TOKEN.pack(i) for i in range(count))
            if os.write(write, tokens) != len(tokens):
                raise OSError("the pipe took part of the work units")
            self._owners = mmap.mmap(-1, self.TOKEN.size * max(1, count))  # shared over the fork
        except OSError:
            os.close(read)
            raise
        finally:
            os.close(write)  # read() gives b"" once every token is taken
        self._read: Optional[int] = read
        self.owners = memoryview(self._owners).cast("i")
        for i in range(count):
            self.owners[i] = -1

    def take(self, worker: int) -> Iterator[int]:
        """The units ``worker`` takes, one at a time, until none is left."""
        while self._read is not None:
            token = os.read(self._read, self.TOKEN.size)
            if len(token) < self.TOKEN.size:
                return
            (unit,) = self.TOKEN.unpack(token)
            self.owners[unit] = worker
            yield unit

    def lost(self, worker: int) -> List[int]:
        """The units ``worker`` (a process that failed) took, and any unit taken but never
        recorded; they now belong to the parent (worker 0), so none is walked twice."""
        out = [u for u in range(self.count) if self.owners[u] in (worker, -1)]
        for u in out:
            self.owners[u] = 0
        return out

    def close(self) -> None:
        if self._read is not None:
            os.close(self._read)
            self._read = None
        self.owners.release()
        self._owners.close()


class Share:
    """One job run in a forked process: ``walk(index)``, whose payload comes back."""

    def __init__(self, walk, index: int) -> None:
        ctx = multiprocessing.get_context("fork")
        self.index = index
        self._recv = self._proc = None
        send = None
        try:
            self._recv, send = ctx.Pipe(duplex=False)
            self._proc = ctx.Process(target=_child, args=(walk, index, send, os.getpid()),
                                     daemon=True)
            self._proc.start()
        except OSError:  # no process or pipe to be had (EMFILE, EAGAIN): the parent walks it
            for end in (self._recv, send):
                if end is not None:
                    end.close()
            self._recv = self._proc = None
            return
        send.close()

    def result(self) -> Optional[Dict[str, Any]]:
        """The child's payload, or None when it failed (then the parent does its work)."""
        if self._recv is None or self._proc is None:
            return None
        try:
            payload = self._recv.recv()
        except (EOFError, OSError):
            payload = None
        finally:
            self._recv.close()
            self._proc.join()
        if not isinstance(payload, dict) or "error" in payload:
            return None
        return payload


def die_with_parent(parent: int) -> None:
    """Make this (forked) process end when ``parent`` does, however the parent ends."""
    import signal
    import sys

    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0:
                if os.getppid() != parent:  # the parent died before prctl took effect
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass
    _watch_parent(parent)


def _watch_parent(parent: int, interval: float = 0.5) -> None:
    """The portable fallback: a daemon thread that ends the process once it is orphaned."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    if os.getppid() != parent:
        os._exit(1)
    threading.Thread(target=watch, name="shapelint-parent-watch", daemon=True).start()


def _child(walk, index: int, send, parent: Optional[int] = None) -> None:
    if parent is not None:
        die_with_parent(parent)
    try:
        payload = walk(index)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which walks it again
        payload = {"error": repr(exc)}
    try:
        send.send(payload)
    finally:
        send.close()


def merge_graph(graph, edges: List[Tuple[str, str]], nodes: List[Tuple[str, Dict]]) -> None:
    for name, attrs in nodes:
        if name in graph:
            graph.nodes[name].update({k: v for k, v in attrs.items() if k not in graph.nodes[name]})
        else:
            graph.add_node(name, **attrs)
    graph.add_edges_from(edges)
