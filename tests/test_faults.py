"""Issue 13, "Unbreakable": every fault a user (or someone out to break it) can throw at
shapelint gets a clear error, loses nothing and leaves nothing behind.

One table, one row per fault: what goes wrong, the command, and what the user must get (exit
code, a message naming the file, the other files' findings still reported, nothing left
behind). The README's "Reliability" section is this table in prose (a test keeps them in step).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
import pytest

from conftest import REPO, write_tree
from fault_support import (HARNESS, HAZARD, OK_FINDING, ROWS, UNUSED_NOQA, Row, alive,  # noqa: F401
                           children_of, clean_error, env, file_error, leftovers, row, rows_of,
                           sl, with_preview)


# =============================================================================================
# Files the static pass reads
# =============================================================================================

@row("syntax error", "shapelint check .", "exit 1; `bad.py:1:7: error syntax error`; the other files' findings")
def syntax_error(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD, "bad.py": "def f(:\n    pass\n"})
    file_error(sl(tmp_path, "check", ".", "--no-cache"), "bad.py", "syntax error")


@row("NUL bytes", "shapelint check .", "exit 1; `nul.py:2:1: error file contains a NUL byte`")
def nul_bytes(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    (tmp_path / "nul.py").write_bytes(b"x = 1\n\x00\n")
    file_error(sl(tmp_path, "check", ".", "--no-cache"), "nul.py", "NUL byte")


@row("invalid UTF-8", "shapelint check .", "exit 1; `latin.py:1:1: error cannot decode file: ...`")
def bad_utf8(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    (tmp_path / "latin.py").write_bytes(b"s = '\xff\xfe'\n")
    file_error(sl(tmp_path, "check", ".", "--no-cache"), "latin.py", "cannot decode")


@row("UTF-16 file", "shapelint check .", "exit 1; `u16.py:1:1: error file contains a NUL byte; not Python source`")
def utf16(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    (tmp_path / "u16.py").write_bytes("x = 1\n".encode("utf-16"))
    file_error(sl(tmp_path, "check", ".", "--no-cache"), "u16.py", "NUL byte")


@row("empty file", "shapelint check .", "checked, nothing reported for it")
def empty_file(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    (tmp_path / "empty.py").write_bytes(b"")
    res = sl(tmp_path, "check", ".", "--no-cache")
    assert res.returncode == 1 and OK_FINDING in res.stdout and "empty.py" not in res.stdout
    assert "of 2 files" in res.stdout


@row("folder named `x.py`", "shapelint check . x.py", "walked as a folder, no error")
def folder_named_py(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD, "x.py/inner.py": "y = 1\n"})
    for args in ((".",), ("x.py", "ok.py")):
        res = sl(tmp_path, "check", *args, "--no-cache")
        assert res.returncode == 1 and OK_FINDING in res.stdout and "error" not in res.stdout, res.stdout


@row("FIFO named `x.py`", "shapelint check .", "exit 1; `fifo.py:1:1: error not a regular file (a FIFO); skipped` (it used to block forever)")
def fifo(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    os.mkfifo(str(tmp_path / "fifo.py"))
    file_error(sl(tmp_path, "check", ".", "--no-cache", timeout=60), "fifo.py", "not a regular file")


@row("unreadable file", "shapelint check .", "exit 1; `locked.py:1:1: error cannot read file: ...`")
def unreadable(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    if os.geteuid() == 0:  # root reads any file: a file whose read fails even for root
        os.symlink("/proc/self/mem", str(tmp_path / "locked.py"))
    else:
        (tmp_path / "locked.py").write_text("x = 1\n")
        (tmp_path / "locked.py").chmod(0)
    file_error(sl(tmp_path, "check", ".", "--no-cache"), "locked.py", "cannot read")


@row("broken symlink", "shapelint check .", "exit 1; `dangling.py:1:1: error cannot read file: No such file or directory`")
def broken_symlink(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    os.symlink("nowhere.py", str(tmp_path / "dangling.py"))
    file_error(sl(tmp_path, "check", ".", "--no-cache"), "dangling.py", "cannot read")


@row("symlink loop", "shapelint check .", "each file once, no hang")
def symlink_loop(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    os.symlink(str(tmp_path), str(tmp_path / "loop"))
    res = sl(tmp_path, "check", ".", "--no-cache", timeout=60)
    assert res.returncode == 1 and res.stdout.count("SL101") == 1 and "of 1 file" in res.stdout


@row("missing path", "shapelint check nowhere.py ok.py", "exit 1; `nowhere.py:1:1: error no such file or directory`")
def missing_path(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    file_error(sl(tmp_path, "check", "nowhere.py", "ok.py", "--no-cache"), "nowhere.py",
               "no such file or directory")


@row("analysed code that must never run", "shapelint check .", "never imported or executed (torch neither)")
def never_imported(tmp_path):
    trap = "import pathlib\npathlib.Path(__file__).with_name('IMPORTED').write_text('x')\n"
    write_tree(tmp_path, {"ok.py": trap + HAZARD, "helper.py": trap + "def f(x):\n    return x\n"})
    res = sl(tmp_path, "check", ".", "--no-cache")
    assert res.returncode == 1 and "ok.py:6:12: SL101" in res.stdout
    assert not (tmp_path / "IMPORTED").exists()


@row("20,000 files", "shapelint check .", "every file counted, the one finding reported, in seconds", pytest.mark.slow)
def many_files(tmp_path):
    for i in range(20000):
        d = tmp_path / f"pkg{i // 500}"
        d.mkdir(exist_ok=True)
        (d / f"m{i}.py").write_text(f"x{i} = {i}\n")
    write_tree(tmp_path, {"ok.py": HAZARD})
    res = sl(tmp_path, "check", ".", "--no-cache", timeout=300)
    assert res.returncode == 1 and OK_FINDING in res.stdout and "of 20001 files" in res.stdout


@row("repeats passed by keyword (`x.repeat_interleave(repeats=r, dim=1)`)", "shapelint check .",
     "SL204 reported on it (it crashed the check of diffusers)")
def keyword_arguments(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD, "rep.py": """\
        import torch
        class M(torch.nn.Module):
            def forward(self, x, r):
                return x.repeat_interleave(repeats=r, dim=1)
        """})
    res = sl(tmp_path, "check", ".", "--no-cache")
    assert res.returncode == 1 and OK_FINDING in res.stdout and "rep.py:4:" in res.stdout, res.stdout


# -- the engine's rows (deep nesting, huge functions, walk time, form feeds, raising rules) ---

def _limited(seconds: int, megabytes: int):
    def limit():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (megabytes << 20, megabytes << 20))
    return dict(timeout=seconds, preexec_fn=limit)


def _engine_survives(tmp_path, name: str, text: str, **limits) -> None:
    write_tree(tmp_path, {"ok.py": HAZARD})
    (tmp_path / name).write_text(text)
    try:
        res = sl(tmp_path, "check", ".", "--no-cache", "-o", "out.txt", **limits)
    except subprocess.TimeoutExpired:
        pytest.fail("the check ran past its time limit")
    assert res.returncode == 1, (res.returncode, res.stderr[-1000:])
    out = (tmp_path / "out.txt").read_text()
    assert OK_FINDING in out and "internal error" not in res.stderr
    assert name in out  # either analysed or reported as a file error


@row("deep nesting: `y = ((((...1...))))`, 2,000 parentheses", "shapelint check . -o out.txt",
     "exit 1; `deep.py:1:1: error file is too deeply nested to analyse`; the others' findings (it segfaulted in libcst)",)
def deep_parentheses(tmp_path):
    _engine_survives(tmp_path, "deep.py", "y = " + "(" * 2000 + "1" + ")" * 2000 + "\n", timeout=120)


@row("a 600-term `n + n + ... + n` in `forward`", "shapelint check . -o out.txt",
     "exit 1; analysed, or a file error naming it (it raised RecursionError: internal error)",)
def long_sum(tmp_path):
    _engine_survives(tmp_path, "sum.py", "import torch\nclass S(torch.nn.Module):\n    def forward(self, x):\n"
                     "        n = x.shape[0]\n        y = " + " + ".join(["n"] * 600) + "\n"
                     "        if y > 3:\n            return x\n        return x\n", timeout=120)


@row("a 5 MB single-line expression in `forward`", "shapelint check . -o out.txt",
     "exit 1 within the per-file time and memory limits; the file reported (it took 7 min and 14 GiB)",
     pytest.mark.slow)
def huge_expression(tmp_path):
    body = ", ".join(["0"] * 1_700_000)
    _engine_survives(tmp_path, "big.py", "import torch\nclass B(torch.nn.Module):\n    def forward(self, x):\n"
                     f"        return x * torch.tensor([{body}])\n", **_limited(60, 3000))


@row("a form feed between top-level statements", "shapelint check .",
     "the file's finding reported, no error (it said `libcst cannot parse 'M.forward'`)",)
def form_feed(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    (tmp_path / "ff.py").write_text(HAZARD.replace("class M", "\x0c\nclass M"))
    res = sl(tmp_path, "check", ".", "--no-cache")
    assert "ff.py:5:12: SL101" in res.stdout and "error" not in res.stdout, res.stdout


@row("a user rule that raises in `on_condition`", "shapelint check . -o out.txt",
     "exit 2; one error naming the rule and the file; the built-in findings and the `-o` file kept")
def raising_rule(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD, "my_rules/boom.py": """\
        from shapelint.api import Condition, Rule
        class Boom(Rule):
            code = "CU001"
            name = "boom"
            summary = "raises"
            def on_condition(self, site: Condition) -> None:
                raise RuntimeError("rule bug")
        """})
    (tmp_path / "shapelint.toml").write_text('rule-paths = ["my_rules"]\n')
    res = sl(tmp_path, "check", ".", "--no-cache", "-o", "out.txt")
    assert res.returncode == 2 and "Traceback" not in res.stderr and "internal error" not in res.stderr
    assert "CU001" in res.stderr and "ok.py" in res.stderr
    assert OK_FINDING in (tmp_path / "out.txt").read_text()


# =============================================================================================
# The cache
# =============================================================================================

@row("truncated cache entry", "shapelint check . (twice)", "a miss: the same report, the entry rewritten")
def truncated_cache(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    first = sl(tmp_path, "check", ".")
    for p in (tmp_path / ".shapelint_cache").glob("*.json"):
        p.write_text(p.read_text()[: len(p.read_text()) // 2])
    again = sl(tmp_path, "check", ".")
    assert again.returncode == first.returncode == 1 and again.stdout == first.stdout, again.stderr


@row("cache entry of another shape (`null`, a list, a number)", "shapelint check . (twice)",
     "a miss, not `internal error`")
def cache_of_another_shape(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    first = sl(tmp_path, "check", ".")
    for junk in ("null", "[1, 2]", "7", '{"findings": 1, "context": []}'):
        for p in (tmp_path / ".shapelint_cache").glob("*.json"):
            p.write_text(junk)
        again = sl(tmp_path, "check", ".")
        assert again.returncode == 1 and again.stdout == first.stdout, (junk, again.stderr)


@row("read-only cache", "shapelint check . (cache-dir unwritable)", "findings as usual, nothing cached, no error")
def read_only_cache(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD, "blocker": "a file, so no folder can be made under it\n"})
    # a folder under a file cannot be created, whoever we are (root ignores permissions)
    (tmp_path / "shapelint.toml").write_text('cache-dir = "blocker/cache"\n')
    res = sl(tmp_path, "check", ".")
    assert res.returncode == 1 and OK_FINDING in res.stdout and res.stderr == ""
    if os.geteuid() != 0:
        (tmp_path / "shapelint.toml").write_text('cache-dir = "ro"\n')
        (tmp_path / "ro").mkdir(mode=0o555)
        res = sl(tmp_path, "check", ".")
        assert res.returncode == 1 and OK_FINDING in res.stdout and res.stderr == ""


@row("edited helper module", "shapelint check model.py; edit helpers.py; shapelint check model.py",
     "the warm run reports the helper as it is now (it reported the old finding)")
def stale_helper(tmp_path):
    write_tree(tmp_path, {"model.py": """\
        import torch
        from helpers import rows
        class M(torch.nn.Module):
            def forward(self, x):
                if rows(x) > 4:
                    return x * 2
                return x
        """, "helpers.py": "def rows(x):\n    return x.shape[0]\n"})
    first = sl(tmp_path, "check", "model.py", "--format", "json")
    assert [(f["path"], f["line"]) for f in json.loads(first.stdout)["findings"]] == [("model.py", 5)]
    (tmp_path / "helpers.py").write_text("def rows(x):\n    return 4\n")
    warm = sl(tmp_path, "check", "model.py", "--format", "json")
    assert json.loads(warm.stdout)["findings"] == [] and warm.returncode == 0, warm.stdout


@row("concurrent runs", "4 x shapelint check . at once, one cache", "the same report from each, no `.tmp` left")
def concurrent_runs(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD, "b.py": HAZARD})
    procs = [subprocess.Popen([sys.executable, "-m", "shapelint.cli", *with_preview(["check", "."])],
                              cwd=str(tmp_path),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
             for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [1] * 4
    assert len({o for o, _ in outs}) == 1 and all(e == "" for _, e in outs)
    assert leftovers(tmp_path) == []


@row("kill -9 during a check, then run again", "shapelint check .; kill -9; shapelint check .",
     "the rerun reports what a clean run does; the `.tmp` a killed write left is swept")
def kill_and_rerun(tmp_path):
    for i in range(40):
        write_tree(tmp_path, {f"m{i}.py": HAZARD})
    write_tree(tmp_path, {"ok.py": HAZARD})
    clean = sl(tmp_path, "check", ".", "--no-cache")
    stale = tmp_path / ".shapelint_cache" / ".check-0.json.shapelint-999999999.tmp"  # a killed write's
    stale.parent.mkdir()
    stale.write_text("{half")
    os.utime(str(stale), (1, 1))
    for delay in (0.3, 0.8):
        proc = subprocess.Popen([sys.executable, "-m", "shapelint.cli", "check", "."], cwd=str(tmp_path),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env())
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    again = sl(tmp_path, "check", ".")
    assert again.returncode == 1 and again.stdout == clean.stdout
    assert leftovers(tmp_path) == []


SLOW_RULE = """\
import time
from shapelint.api import Call, Rule
class Slow(Rule):
    code = "CU900"
    name = "slow"
    summary = "takes its time"
    def on_call(self, site: Call) -> None:
        time.sleep(0.2)
"""
FORKING = """\
import sys
from shapelint.static import engine, parallel
engine.Engine.min_parallel_lines = 0          # fork whatever the size
parallel.jobs_for = lambda requested: 2
from shapelint.cli import main
sys.exit(main(sys.argv[1:]))
"""


@row("kill -9 of the parent during the parallel walk", "shapelint check -j 2 .; kill -9 <pid>",
     "the forked children end with it (one wrote to a pipe for a minute)")
def orphans(tmp_path):
    calls = "".join(f"        x = torch.relu(x)\n" for _ in range(40))
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
                                     + calls + "        return x\n")
    write_tree(tmp_path, {"my_rules/slow.py": SLOW_RULE, "forking.py": FORKING})
    (tmp_path / "shapelint.toml").write_text('rule-paths = ["my_rules"]\nexclude = ["my_rules", "forking.py"]\n')
    proc = subprocess.Popen([sys.executable, "forking.py", "check", "a.py", "b.py", "--no-cache"],
                            cwd=str(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env())
    deadline = time.time() + 60
    kids: List[int] = []
    while time.time() < deadline and not kids and proc.poll() is None:
        time.sleep(0.1)
        kids = children_of(proc.pid)
    assert kids, f"the walk never forked: {proc.communicate()[1][-2000:]}"
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    end = time.time() + 5
    while time.time() < end and any(alive(k) for k in kids):
        time.sleep(0.1)
    survivors = [k for k in kids if alive(k)]
    for k in survivors:
        os.kill(k, signal.SIGKILL)
    assert survivors == []


# =============================================================================================
# Configuration
# =============================================================================================

@row("malformed `pyproject.toml` found by the upward search", "shapelint check sub",
     "exit 2: `pyproject.toml: invalid TOML: ...` (it was skipped, and its `ignore` with it)")
def malformed_pyproject(tmp_path):
    write_tree(tmp_path, {"sub/ok.py": HAZARD})
    (tmp_path / "pyproject.toml").write_text('[tool.shapelint]\nignore = ["SL101"\n')
    line = clean_error(sl(tmp_path, "check", "sub", "--no-cache"))
    assert "pyproject.toml" in line and "invalid TOML" in line


@row("`per-file-ignores = { \"x.py\" = \"SL101\" }` (a string)", "shapelint check .",
     "exit 2 naming the file, the key and the glob (it said unknown rule code `L`)")
def per_file_ignores_string(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    (tmp_path / "shapelint.toml").write_text('per-file-ignores = { "x.py" = "SL101" }\n')
    line = clean_error(sl(tmp_path, "check", "."))
    assert "shapelint.toml" in line and "per-file-ignores" in line and "x.py" in line and "list" in line


@row("`output-format = \"xml\"`", "shapelint check .", "exit 2 naming the file, the key and the formats (it was a traceback)")
def output_format_unknown(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    (tmp_path / "shapelint.toml").write_text('output-format = "xml"\n')
    line = clean_error(sl(tmp_path, "check", "."))
    assert "shapelint.toml" in line and "output-format" in line and "sarif" in line


@row("invalid UTF-8 in the config", "shapelint check .", "exit 2 naming the file, the line and the key (it was a traceback)")
def config_not_utf8(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    (tmp_path / "shapelint.toml").write_bytes(b'ignore = ["SL1\xff"]\n')
    line = clean_error(sl(tmp_path, "check", "."))
    assert "shapelint.toml" in line and "UTF-8" in line and "`ignore`" in line


# =============================================================================================
# Output
# =============================================================================================

def _cannot_write(tmp_path, target: str) -> None:
    write_tree(tmp_path, {"ok.py": HAZARD})
    for cmd in (["check", ".", "--no-cache", "-o", target],
                ["check", ".", "--no-cache", "--write-baseline", target]):
        line = clean_error(sl(tmp_path, *cmd))
        assert line.startswith("shapelint: error: cannot write") and target in line
    assert leftovers(tmp_path) == []


@row("`-o` under a file", "shapelint check . -o afile/out.txt", "exit 2: `cannot write afile/out.txt: ... is not a folder`; no `.tmp` left")
def output_under_a_file(tmp_path):
    (tmp_path / "afile").write_text("x")
    _cannot_write(tmp_path, "afile/out.txt")


@row("`-o` onto a folder", "shapelint check . -o folder", "exit 2: `cannot write folder: it is a folder`; no `.tmp` left")
def output_onto_a_folder(tmp_path):
    (tmp_path / "folder").mkdir()
    _cannot_write(tmp_path, "folder")


@row("`-o` under /proc", "shapelint check . -o /proc/out.txt", "exit 2: `cannot write /proc/out.txt: ...`")
def output_under_proc(tmp_path):
    _cannot_write(tmp_path, "/proc/out.txt")


def _closed_pipe(tmp_path, *args, timeout=120) -> None:
    """Run with stdout a pipe whose reader has gone (``| head -c 0``)."""
    r, w = os.pipe()
    os.close(r)
    try:
        res = subprocess.run([sys.executable, "-m", "shapelint.cli", *args], cwd=str(tmp_path), stdout=w,
                             stderr=subprocess.PIPE, text=True, env=env(), timeout=timeout)
    finally:
        os.close(w)
    assert "BrokenPipe" not in res.stderr and "internal error" not in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and "Exception ignored" not in res.stderr, res.stderr
    assert res.returncode == 141, (res.returncode, res.stderr)


@row("closed pipe (`shapelint rule --format json SL202` piped to `head -c 10`)",
     "check, report, rule, test-rules into a closed pipe", "a quiet exit 141, as `cat` would (it said `internal error ... BrokenPipeError`)")
def closed_pipe(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    _closed_pipe(tmp_path, "rule", "--format", "json", "SL202")
    _closed_pipe(tmp_path, "rule", "--all")
    _closed_pipe(tmp_path, "check", ".", "--no-cache")
    assert sl(tmp_path, "check", ".", "--format", "json", "-o", "r.json", "--no-cache").returncode == 1
    _closed_pipe(tmp_path, "report", "r.json", "--format", "sarif")
    _closed_pipe(tmp_path, "test-rules", os.path.join(REPO, "rules", "sl202_scalar_read.py"))


HOSTILE_SOURCE = '''\
import torch
class M(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > len("\x1b]8;;http://evil\x07link\x1b]8;;\x07 \x1b[2J \u202e"):
            return x
        if x.shape[0] > len("""
::error file=ok.py,line=1::pwned
##[error]pwned
"""):
            return x
        return x
'''


def _hostile(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    (tmp_path / "evil.py").write_text(HOSTILE_SOURCE, encoding="utf-8")
    # an exception with escapes from a target, in a saved run
    res = sl(tmp_path, "check", ".", "--format", "json", "-o", "r.json", "--no-cache")
    assert res.returncode == 1
    doc = json.loads((tmp_path / "r.json").read_text())
    doc["targets"] = [{"name": "t\x1b[31m", "device": "cpu", "backend": "eager", "dynamic": "auto",
                       "torch_version": "2.13.0", "failed": True, "error": "RuntimeError: \x1b[31mboom\x1b]0;title\x07\n::error::x",
                       "problems": ["RuntimeError: \x1b[31mboom"], "per_shape": [{"batch": 1, "seq_len": None, "new_compiles": 0,
                                                        "error": "\x1b[2Jbad"}], "compiles": 0}]
    (tmp_path / "run.json").write_text(json.dumps(doc))
    return doc


@row("control characters in analysed code or a target's exception (ESC, OSC 8, bidi, `::error` on its own line)",
     "shapelint check . --format F; shapelint report run.json --format F",
     "escaped (`\\x1b`) in every format; no printed line can start a workflow command; JUnit stays well-formed XML")
def control_characters(tmp_path):
    _hostile(tmp_path)
    for fmt in ("text", "json", "github", "sarif", "markdown", "junit", "html"):
        for cmd in (["check", ".", "--no-cache", "--format", fmt], ["report", "run.json", "--format", fmt]):
            res = sl(tmp_path, *cmd)
            assert res.returncode == 1, (cmd, res.stderr)
            out = res.stdout
            assert "evil.py" in out, (fmt, out[:2000])
            bad = re.findall("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069]", out)
            assert not bad, (cmd, bad)
            commands = [ln for ln in out.splitlines() if ln.lstrip().startswith("::") or "##[" in ln]
            if fmt == "github":  # only ours: one per finding, and the failed target
                assert all(re.match(r"::(warning|error|notice) (file=|title=)", c) for c in commands), commands
                assert len(commands) == len(json.loads((tmp_path / "run.json").read_text())["findings"]) + \
                    (1 if cmd[0] == "report" else 0)
            else:
                assert commands == [], (cmd, commands)
            if fmt == "junit":
                ET.fromstring(out)  # well-formed
    text = sl(tmp_path, "check", ".", "--no-cache").stdout
    assert "\\x1b]8;;http://evil\\x07link" in text  # shown, not obeyed
    assert "::error file=ok.py" in text  # quoted (on one line, or with its newline escaped)


URI_OK = re.compile(r"^[A-Za-z0-9\-._~!$&'()*+;=/?#\[\]@%]*$")


@row("odd file names in SARIF (`a,b:c%d<e.py`, a newline)", "shapelint check . --format sarif",
     "`artifactLocation.uri` percent-encoded: a valid URI that names the file")
def sarif_uri(tmp_path):
    from urllib.parse import unquote

    names = ["a,b:c%d<e>.py", "new\nline.py", "spa ce#1?.py", "naïve.py"]
    for name in names:
        (tmp_path / name).write_text(HAZARD)
    doc = json.loads(sl(tmp_path, "check", ".", "--format", "sarif", "--no-cache").stdout)
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]]
    assert len(uris) == len(names)
    for uri in uris:
        assert URI_OK.match(uri) and ":" not in uri.split("/")[0], uri
    assert sorted(unquote(u) for u in uris) == sorted(names)
    assert URI_OK.match(doc["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"].replace("file:", "", 1))


# =============================================================================================
# Baselines and saved runs
# =============================================================================================

@row("`--write-baseline` with an unused suppression (SL001)", "shapelint check . --write-baseline b.json; shapelint check . --baseline b.json",
     "writes the file, says so on stderr, exit 0; the baseline then accepts SL001 too (exit 0)")
def baseline_with_sl001(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD, "n.py": UNUSED_NOQA})
    wrote = sl(tmp_path, "check", ".", "--no-cache", "--write-baseline", "b.json")
    assert wrote.returncode == 0 and wrote.stdout == "", wrote.stdout
    assert "wrote 2 findings to the baseline b.json" in wrote.stderr
    rules = sorted(e["rule"] for e in json.loads((tmp_path / "b.json").read_text())["findings"])
    assert rules == ["SL001", "SL101"]
    again = sl(tmp_path, "check", ".", "--no-cache", "--baseline", "b.json")
    assert again.returncode == 0 and "All checks passed" in again.stdout, again.stdout


@row("a saved JSON run re-rendered (`shapelint report r.json --format F`)", "shapelint report r.json --format sarif",
     "exactly what the live run printed, in every format (SARIF fingerprints and snippets included)")
def report_equals_check(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD, "bad.py": "def f(:\n", "n.py": UNUSED_NOQA})
    sl(tmp_path, "check", ".", "--format", "json", "-o", "r.json", "--no-cache")
    for fmt in ("sarif", "text"):
        live = sl(tmp_path, "check", ".", "--format", fmt, "--no-cache")
        again = sl(tmp_path, "report", "r.json", "--format", fmt)
        assert again.stdout == live.stdout and again.returncode == live.returncode


# =============================================================================================
# Users' rules
# =============================================================================================

USER_RULES = {
    "my_rules/sync.py": '''\
        from shapelint.api import Call, Rule
        class NoCudaSync(Rule):
            """Finds torch.cuda.synchronize() (it breaks the graph)."""
            code = "SL950"
            name = "cuda-synchronize"
            summary = "torch.cuda.synchronize() inside a compiled region"
            VALID = ["import torch\\nclass M(torch.nn.Module):\\n    def forward(self, x):\\n        return x\\n"]
            INVALID = ["import torch\\nclass M(torch.nn.Module):\\n    def forward(self, x):\\n"
                       "        torch.cuda.synchronize()  # error: SL950\\n        return x\\n"]
            def on_call(self, site: Call) -> None:
                if site.callee == "torch.cuda.synchronize":
                    self.report(site, "synchronizes inside the compiled region")
        ''',
    "my_rules/cu.py": '''\
        from shapelint.api import Call, Rule
        class NoEmptyCache(Rule):
            """Finds torch.cuda.empty_cache()."""
            code = "CU001"
            name = "empty-cache"
            summary = "torch.cuda.empty_cache() inside a compiled region"
            def on_call(self, site: Call) -> None:
                if site.callee == "torch.cuda.empty_cache":
                    self.report(site, "empties the cache inside the compiled region")
        ''',
    "m.py": """\
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
                torch.cuda.empty_cache()  # noqa: CU001
                return x
        """,
}


@row("a user rule's code (`SL950`, `CU001`) in the config, `shapelint rule`, `report`, `# noqa`",
     "shapelint check .; shapelint rule CU001; shapelint report r.json --format sarif",
     "accepted everywhere a built-in code is (config codes were checked before rule-paths loaded)")
def user_rule_codes(tmp_path):
    write_tree(tmp_path, USER_RULES)
    config = ('rule-paths = ["my_rules"]\nexclude = ["my_rules"]\nselect = ["SL950", "CU"]\n'
              'extend-select = ["CU001"]\n')
    (tmp_path / "shapelint.toml").write_text(config)
    res = sl(tmp_path, "check", ".", "--format", "json", "-o", "r.json", "--no-cache")
    assert res.returncode == 1, res.stderr
    got = [(f["rule"], f["line"]) for f in json.loads((tmp_path / "r.json").read_text())["findings"]]
    assert got == [("SL950", 4), ("CU001", 5)]  # the noqa on line 6 holds
    (tmp_path / "shapelint.toml").write_text(config + 'per-file-ignores = { "m.py" = ["CU001"] }\n')
    got = [f["rule"] for f in json.loads(sl(tmp_path, "check", ".", "--format", "json", "--no-cache").stdout)["findings"]]
    assert got == ["SL950"]
    (tmp_path / "shapelint.toml").write_text(config + 'ignore = ["CU001"]\n')
    assert sl(tmp_path, "check", ".", "--no-cache", "--ignore", "SL950").returncode == 0
    doc = sl(tmp_path, "rule", "CU001")
    assert doc.returncode == 0 and "empty-cache" in doc.stdout
    sarif = json.loads(sl(tmp_path, "report", "r.json", "--format", "sarif").stdout)
    ids = [r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]]
    assert {"SL950", "CU001"} <= set(ids)
    assert all("ruleIndex" in r for r in sarif["runs"][0]["results"])


@row("a user rule's VALID/INVALID examples", "shapelint test-rules my_rules",
     "each example run; exit 1 naming the example and the lines when one fails")
def user_rule_examples(tmp_path):
    write_tree(tmp_path, USER_RULES)
    ok = sl(tmp_path, "test-rules", "my_rules")
    assert ok.returncode == 0 and "ok   SL950-INVALID-0" in ok.stdout, ok.stdout + ok.stderr
    assert "CU001" in ok.stdout  # has no examples: said so
    write_tree(tmp_path, {"my_rules/sync.py": USER_RULES["my_rules/sync.py"].replace("  # error: SL950", "")})
    bad = sl(tmp_path, "test-rules", "my_rules")
    assert bad.returncode == 1, bad.stdout
    assert "FAIL SL950-INVALID-0: an INVALID example must mark each line" in bad.stdout


# =============================================================================================
# The harness: one `shapelint run` of every faulty target beside a plain one
# =============================================================================================

TARGETS = """\
import ctypes, os, sys, time
import torch
from torch import nn

class Plain(nn.Module):
    def forward(self, x):
        return x * 2

class Raises(nn.Module):
    def forward(self, x):
        raise ValueError("bad batch \\x1b[31mred\\x1b[0m")

@torch.compiler.disable  # runs for real (Dynamo would only trace the loop)
def allocate_forever():
    keep = []
    while True:
        keep.append(torch.ones(64, 1024, 1024))

class Hog(nn.Module):
    def forward(self, x):
        allocate_forever()
        return x

class Segfault(nn.Module):
    def forward(self, x):
        ctypes.string_at(0)

class Exits(nn.Module):
    def forward(self, x):
        os._exit(3)

@torch.compiler.disable  # runs for real (a print in a traced loop would skip the frame)
def flood():
    for _ in range(20_000):
        print("x" * 1000)

class Floods(nn.Module):
    def forward(self, x):
        flood()
        return x * 2

def hang():
    time.sleep(600)

def build(name):
    return {"plain": Plain, "raises": Raises, "hog": Hog, "segfault": Segfault, "exits": Exits,
            "floods": Floods}[name]()

def plain(): return build("plain")
def raises(): return build("raises")
def hog(): return build("hog")
def segfault(): return build("segfault")
def exits(): return build("exits")
def floods(): return build("floods")

def inputs(batch):
    return (torch.ones(batch, 4),)
"""
HARNESS_RUNS: dict = {}


def harness_run(tmp_path_factory):
    """Run every target once per session; the rows read their own target from it."""
    if "doc" not in HARNESS_RUNS:
        pytest.importorskip("torch")
        root = tmp_path_factory.mktemp("harness")
        write_tree(root, {"targets.py": TARGETS})
        tables = []
        for name, extra in (("plain", ""), ("raises", ""), ("hang", "timeout = 20\n"),
                            ("hog", "memory-limit-mb = 6000\n"), ("segfault", ""), ("exits", ""),
                            ("floods", "")):
            tables.append(f'[[targets]]\nname = "{name}"\nmodel = "targets.py:{name}"\n'
                          f'inputs = "targets.py:inputs"\nbatch-sizes = [1, 2]\n{extra}')
        (root / "shapelint.toml").write_text("\n".join(tables))
        tmp = root / "tmp"  # the run's own temporary folder: what is left in it was left by it
        tmp.mkdir()
        res = sl(root, "run", "--format", "json", "-o", "run.json", "--no-cache", timeout=580,
                 extra_env={"TMPDIR": str(tmp)})
        HARNESS_RUNS.update(res=res, doc=json.loads((root / "run.json").read_text()), root=root,
                            left=sorted(os.listdir(str(tmp))))
    return HARNESS_RUNS


def _target(tmp_path_factory, name: str) -> dict:
    run = harness_run(tmp_path_factory)
    targets = {t["name"]: t for t in run["doc"]["targets"]}
    assert run["res"].returncode == 1  # the faulty targets fail the run
    plain = targets["plain"]
    assert not plain.get("failed") and plain["compiles"] >= 1, plain  # the others complete
    return targets[name]


def _failed_with(tmp_path_factory, name: str, words: str) -> None:
    t = _target(tmp_path_factory, name)
    assert t["failed"] and words in (t.get("error") or ""), t


@row("harness target that raises", "shapelint run", "that target failed with its exception; the others complete", pytest.mark.slow)
def target_raises(tmp_path_factory):
    t = _target(tmp_path_factory, "raises")
    assert t["failed"] and all("bad batch" in (r.get("error") or "") for r in t["per_shape"]), t


@row("harness target that hangs", "shapelint run", "`timed out after 20 s`; the others complete", pytest.mark.slow)
def target_hangs(tmp_path_factory):
    _failed_with(tmp_path_factory, "hang", "timed out")


@row("harness target that runs out of memory", "shapelint run", "its shape fails with `out of memory`; the others complete", pytest.mark.slow)
def target_out_of_memory(tmp_path_factory):
    t = _target(tmp_path_factory, "hog")
    assert t["failed"] and "out of memory" in json.dumps(t), t


@row("harness target that segfaults", "shapelint run", "`worker crashed: segmentation fault`; the others complete", pytest.mark.slow)
def target_segfaults(tmp_path_factory):
    _failed_with(tmp_path_factory, "segfault", "segmentation fault")


@row("harness target that exits", "shapelint run", "`worker exited with status 3`; the others complete", pytest.mark.slow)
def target_exits(tmp_path_factory):
    _failed_with(tmp_path_factory, "exits", "status 3")


@row("harness target that floods stdout", "shapelint run", "the flood stays out of the report; the target completes", pytest.mark.slow)
def target_floods(tmp_path_factory):
    t = _target(tmp_path_factory, "floods")
    assert not t.get("failed") and t["compiles"] >= 1, t
    assert "xxxxxxxxxx" not in HARNESS_RUNS["res"].stdout + HARNESS_RUNS["res"].stderr


@row("harness leaves nothing behind", "shapelint run", "no `shapelint-run-*` folder left in the temporary folder",
     pytest.mark.slow)
def harness_leftovers(tmp_path_factory):
    _target(tmp_path_factory, "plain")
    assert HARNESS_RUNS["left"] == []


@row("a target's exception on the progress lines", "shapelint run", "control characters escaped on stderr too",
     pytest.mark.slow)
def harness_progress_escaped(tmp_path_factory):
    _target(tmp_path_factory, "plain")
    assert "\x1b" not in HARNESS_RUNS["res"].stderr


@row("`shapelint run` into a closed pipe", "shapelint run --model ... (piped to head -c 0)", "a quiet exit 141", pytest.mark.slow)
def run_closed_pipe(tmp_path_factory):
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("runpipe")
    write_tree(root, {"targets.py": TARGETS})
    _closed_pipe(root, "run", "--model", "targets.py:plain", "--inputs", "targets.py:inputs",
                 "--batch-sizes", "1,2", "--no-cache", "--no-static", timeout=300)


# =============================================================================================
# The test command on a fresh clone
# =============================================================================================

@row("a fresh clone without `../shared`", "python -m pytest", "the cases the tests need are in tests/cases/shared: nothing fails or skips")
def fresh_clone(tmp_path):
    import conftest

    root = conftest.cases_dir()
    assert os.path.commonpath([root, REPO]) == REPO and os.path.isdir(root)
    assert len([d for d in os.listdir(root) if os.path.isfile(os.path.join(root, d, "case.toml"))]) >= 40


# =============================================================================================

@pytest.mark.parametrize("case", rows_of(__name__))
def test_fault(case: Row, request):
    needs = case.check.__code__.co_varnames[: case.check.__code__.co_argcount]
    case.check(*(request.getfixturevalue(n) for n in needs))


def test_readme_lists_every_fault():
    import test_faults_untrusted  # noqa: F401 - its rows join ROWS

    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    section = readme.split("## Reliability", 1)[1].split("\n## ", 1)[0]
    for p in ROWS:
        assert p.values[0].fault in section, p.values[0].fault
