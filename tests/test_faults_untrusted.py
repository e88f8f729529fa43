"""Issue 17, "Trust no input": the fault rows a breaker found (the security rows first). Each row
is reproduced as a user (or an attacker) would cause it, and checked for what must happen
instead. Shares the table's machinery with tests/test_faults.py (tests/fault_support.py)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
import zipfile

import pytest

from conftest import write_tree
from fault_support import (HAZARD, OK_FINDING, Row, alive, children_of, clean_error, env, row,
                           rows_of, sl)

FORMATS = ("text", "json", "github", "sarif", "markdown", "junit", "html")


def _report(tmp_path, **finding) -> str:
    """A saved JSON report of one real finding, with ``finding``'s fields replaced."""
    write_tree(tmp_path, {"ok.py": HAZARD})
    res = sl(tmp_path, "check", "ok.py", "--format", "json", "-o", "r.json", "--no-cache")
    assert res.returncode == 1, res.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    doc["findings"][0].update(finding)
    (tmp_path / "r.json").write_text(json.dumps(doc))
    return "r.json"


def _git(cwd, *args):
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=str(cwd),
                   check=True, capture_output=True)


# =============================================================================================
# Security: a file read or code run that the user did not point at
# =============================================================================================

@row("a saved report naming a secret file as a finding's path (`/proc/self/environ`)",
     "shapelint report r.json --format html (and every other format)",
     "the file is never read: the page quotes only the snippet saved in the report")
def report_reads_no_file(tmp_path):
    (tmp_path / "secret.env").write_text("AWS_SECRET=s3cr3t-token\n")
    name = _report(tmp_path, path=str(tmp_path / "secret.env"), line=1, snippet=None,
                   source_line="")
    for fmt in FORMATS:
        res = sl(tmp_path, "report", name, "--format", fmt)
        assert res.returncode == 1, (fmt, res.stderr)
        assert "s3cr3t" not in res.stdout, fmt
    # and a live report still shows the code around a finding, from the snippet it saved
    res = sl(tmp_path, "report", _report(tmp_path), "--format", "html")
    assert "if x.shape[0] &gt; 8:" in res.stdout and "return x * 2" in res.stdout


EVIL_RULE = """\
import pathlib
pathlib.Path(__file__).with_name("RAN").write_text("imported")
"""


@row("a config in a folder above the repository, naming rule files (`rule-paths`)",
     "shapelint check . (in a repository below it); shapelint rule --all; shapelint report",
     "the search stops at the repository root: the config is not read and its rules never run")
def config_above_the_repository(tmp_path):
    write_tree(tmp_path, {"shapelint.toml": 'rule-paths = ["evil"]\nignore = ["SL101"]\n',
                          "evil/evil_rule.py": EVIL_RULE, "repo/ok.py": HAZARD})
    _git(tmp_path / "repo", "init", "-q")
    for cmd in (["check", ".", "--no-cache"], ["rule", "--all"]):
        res = sl(tmp_path / "repo", *cmd)
        assert res.returncode in (0, 1) and "Traceback" not in res.stderr, res.stderr
    assert not (tmp_path / "evil" / "RAN").exists()
    assert OK_FINDING in sl(tmp_path / "repo", "check", ".", "--no-cache").stdout  # not ignored


@row("a project's config whose `rule-paths` lead outside the project (`../evil`, an absolute path)",
     "shapelint check .", "exit 2 naming the entry; nothing imported; `--config FILE` (named by the user) may")
def rule_paths_outside_the_project(tmp_path):
    write_tree(tmp_path, {"evil/evil_rule.py": EVIL_RULE, "repo/ok.py": HAZARD,
                          "repo/shapelint.toml": 'rule-paths = ["../evil"]\n'})
    _git(tmp_path / "repo", "init", "-q")
    line = clean_error(sl(tmp_path / "repo", "check", ".", "--no-cache"))
    assert "rule-paths" in line and "../evil" in line and "outside the project" in line
    assert not (tmp_path / "evil" / "RAN").exists()
    res = sl(tmp_path / "repo", "check", ".", "--no-cache", "--config", "shapelint.toml")
    assert res.returncode == 1 and (tmp_path / "evil" / "RAN").exists()  # the user named it


@row("a config found by the search but owned by another user", "shapelint check .",
     "exit 2: refused, with how to trust it (`--config`)")
def config_of_another_user(tmp_path):
    if os.getuid() != 0:
        pytest.skip("needs root to give a file to another user")
    write_tree(tmp_path, {"ok.py": HAZARD, "shapelint.toml": 'ignore = ["SL101"]\n'})
    os.chown(tmp_path / "shapelint.toml", 65534, 65534)
    line = clean_error(sl(tmp_path, "check", ".", "--no-cache"))
    assert "owned by another user" in line and "--config" in line


ZIP_INIT = "raise RuntimeError('zipped package refuses to import')\n"


@row("a target reachable only through a zip on PYTHONPATH whose `__init__` raises",
     "shapelint run (two targets, -o r.json)",
     "user code runs only in workers: that target fails with its error, the other completes, "
     "the -o file is written", pytest.mark.slow)
def run_imports_no_user_code(tmp_path):
    pytest.importorskip("torch")
    with zipfile.ZipFile(tmp_path / "pkgs.zip", "w") as zf:
        zf.writestr("zipped/__init__.py", ZIP_INIT)
        zf.writestr("zipped/models.py", "def build(): pass\ndef inputs(b): pass\n")
    write_tree(tmp_path, {"good.py": """
        import torch
        def build(): return torch.nn.Linear(4, 4)
        def inputs(batch): return (torch.randn(batch, 4),)
        """, "shapelint.toml": """
        [[targets]]
        name = "zipped"
        model = "zipped.models:build"
        inputs = "zipped.models:inputs"
        batch-sizes = [1, 2]
        [[targets]]
        name = "good"
        model = "good.py:build"
        inputs = "good.py:inputs"
        batch-sizes = [1, 2]
        """})
    res = sl(tmp_path, "run", "--format", "json", "-o", "r.json", "--no-cache", timeout=600,
             extra_env={"PYTHONPATH": str(tmp_path / "pkgs.zip")})
    assert res.returncode == 1 and "internal error" not in res.stderr, res.stderr
    targets = {t["name"]: t for t in json.loads((tmp_path / "r.json").read_text())["targets"]}
    assert targets["zipped"]["failed"] and "refuses to import" in targets["zipped"]["error"]
    assert not targets["good"]["failed"] and targets["good"]["compiles"] >= 1


@row("`-o` onto a device, a FIFO, a symbolic link or the analysed source",
     "shapelint check model.py -o /dev/null | fifo | link | model.py",
     "exit 2, one line; nothing replaced (the device stays a device, the source unchanged); "
     "`--force` writes a .py; `-o -` and `-o /dev/stdout` write standard output")
def output_never_replaces(tmp_path):
    write_tree(tmp_path, {"model.py": HAZARD, "elsewhere.txt": "keep\n"})
    os.mkfifo(tmp_path / "fifo")
    os.symlink(tmp_path / "elsewhere.txt", tmp_path / "link")
    for target, words in (("/dev/null", "device"), ("fifo", "FIFO"), ("link", "symbolic link"),
                          ("model.py", "Python source")):
        line = clean_error(sl(tmp_path, "check", "model.py", "-o", target, "--no-cache"))
        assert words in line and target in line, line
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
    assert os.path.islink(tmp_path / "link") and (tmp_path / "elsewhere.txt").read_text() == "keep\n"
    assert (tmp_path / "model.py").read_text().startswith("import torch")
    for target in ("-", "/dev/stdout"):
        res = sl(tmp_path, "check", "model.py", "-o", target, "--no-cache")
        assert res.returncode == 1 and "model.py:4:12: SL101" in res.stdout, res.stderr
    res = sl(tmp_path, "check", "model.py", "-o", "model.py", "--force", "--no-cache")
    assert res.returncode == 1 and "SL101" in (tmp_path / "model.py").read_text()


@row("a `--diff` value that git would read as an option (`--diff=--output=FILE`)",
     "shapelint check . --diff=--output=pwned", "exit 2 naming the value; git never runs with it")
def diff_option_injection(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "x")
    line = clean_error(sl(tmp_path, "check", ".", "--diff=--output=pwned", "--no-cache"))
    assert "--diff" in line and "--output=pwned" in line
    assert not (tmp_path / "pwned").exists()


@row("saved-report fields that inject output (a newline and `::error` in `line`, HTML in `rule`, "
     "a heading in a target's name, a raw ESC)",
     "shapelint report r.json --format F",
     "a wrong type is exit 2 naming the field, in every format; strings are escaped wherever shown")
def report_fields_cannot_inject(tmp_path):
    for field, value in (("line", "4\n::error file=ok.py,line=1::INJECTED"),
                         ("rule", "<img src=x onerror=alert(1)>"), ("column", None),
                         ("path", None), ("status", "pwned")):
        name = _report(tmp_path, **{field: value})
        for fmt in FORMATS:
            line = clean_error(sl(tmp_path, "report", name, "--format", fmt))
            assert f"findings[0].{field}" in line and "INJECTED" not in line, line
    name = _report(tmp_path, message="\x1b[31mred\n# Heading\n::error::x", name="n|<b>")
    doc = json.loads((tmp_path / name).read_text())
    doc["targets"] = [{"name": "t\n## Pwned <img src=x>", "problems": ["boom\n::error::y"],
                       "per_shape": [{"batch": 1, "new_compiles": 1, "error": "\x1b]0;t\x07"}]}]
    (tmp_path / name).write_text(json.dumps(doc))
    for fmt in FORMATS:
        res = sl(tmp_path, "report", name, "--format", fmt)
        assert res.returncode == 1, (fmt, res.stderr)
        assert "\x1b" not in res.stdout, fmt
        if fmt in ("html", "markdown"):  # text formats may quote markup; these must not render it
            assert "<img" not in res.stdout and "n|<b>" not in res.stdout, fmt
        assert not any(ln.lstrip().startswith("::error::") for ln in res.stdout.splitlines()), fmt
        if fmt == "markdown":
            assert "\n## Pwned" not in res.stdout and "\n# Heading" not in res.stdout


# =============================================================================================
# Data lost or silently wrong
# =============================================================================================

TWO_TARGETS = """\
[[targets]]
name = "{a}"
model = "m.py:build"
inputs = "m.py:inputs"
[[targets]]
name = "{b}"
model = "other.py:build"
inputs = "other.py:inputs"
"""


def _saved_run(tmp_path, name: str, targets: list) -> str:
    """A saved ``run --format json`` report holding ``targets`` (as a shard of a CI matrix)."""
    (tmp_path / name).write_text(json.dumps({"version": "0", "findings": [], "errors": [],
                                             "files_checked": 0, "targets": targets}))
    return name


@row("two targets with the same name (and saved shards whose targets share a name)",
     "shapelint run; shapelint report shard-1.json shard-2.json",
     "exit 2 naming both targets at config load; a merge keeps every distinct target, so a failed "
     "one still fails the report (exit 1)")
def duplicate_target_names(tmp_path):
    write_tree(tmp_path, {"shapelint.toml": TWO_TARGETS.format(a="enc", b="enc")})
    for cmd in (["run", "--no-static"], ["check", "."]):
        line = clean_error(sl(tmp_path, *cmd, "--no-cache"))
        assert "targets[0]" in line and "targets[1]" in line and "`enc`" in line, line
    # targets without a name take their factory's: two `build`s collide the same way
    write_tree(tmp_path, {"shapelint.toml": TWO_TARGETS.replace('name = "{a}"\n', "")
                          .replace('name = "{b}"\n', "")})
    line = clean_error(sl(tmp_path, "run", "--no-static", "--no-cache"))
    assert "`build`" in line and "name" in line, line
    (tmp_path / "shapelint.toml").unlink()
    ok = {"name": "enc", "model": "m.py:build", "compiles": 2}
    bad = {"name": "enc", "model": "other.py:build", "compiles": 9,
           "problems": ["9 compiles exceed max-compiles 4"]}
    shards = [_saved_run(tmp_path, "shard-1.json", [ok]), _saved_run(tmp_path, "shard-2.json", [bad])]
    res = sl(tmp_path, "report", *shards)
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert "exceed max-compiles" in res.stdout and res.stdout.count("target enc") == 2, res.stdout
    doc = json.loads(sl(tmp_path, "report", *shards, "--format", "json").stdout)
    assert [t["compiles"] for t in doc["targets"]] == [2, 9]
    # the same target in two files (a shard saved twice) is still one target
    res = sl(tmp_path, "report", shards[1], _saved_run(tmp_path, "again.json", [bad]))
    assert res.returncode == 1 and res.stdout.count("target enc") == 1, res.stdout


SPAWNS = """\
import ctypes, os, subprocess, sys, time
import torch

def _sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                            start_new_session=True)
    with open(os.environ["SLEEPER_FILE"], "w") as fh:
        fh.write(str(proc.pid))

def crashes():
    _sleeper()
    ctypes.string_at(0)

def hangs():
    _sleeper()
    time.sleep(600)

def inputs(batch):
    return (torch.ones(batch, 4),)
"""


def _wait_for(path, proc, seconds=240) -> int:
    end = time.time() + seconds
    while time.time() < end and proc.poll() is None:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.2)
    raise AssertionError(f"the target never started its process: {proc.poll()} "
                         f"{proc.stderr.read()[-2000:] if proc.poll() is not None else ''}")


def _gone(pids, seconds=15.0) -> list:
    end = time.time() + seconds
    while time.time() < end and any(alive(p) for p in pids):
        time.sleep(0.1)
    left = [p for p in pids if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    return left


@row("`shapelint run` killed by SIGHUP or SIGKILL, or a target that started a process in a new "
     "session and then crashed",
     "shapelint run; kill -HUP <pid> (or kill -9 <pid>)",
     "every worker and every process a model started ends with the run, and no `shapelint-run-*` "
     "folder is left; SIGHUP is an interrupt as Ctrl-C is (exit 130)", pytest.mark.slow)
def killed_run_leaves_nothing(tmp_path):
    pytest.importorskip("torch")
    write_tree(tmp_path, {"spawns.py": SPAWNS})
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    base = ["run", "--inputs", "spawns.py:inputs", "--batch-sizes", "1", "--no-static", "--no-cache"]
    # a target that starts a process in a new session, then crashes: the process goes with it
    sleeper = tmp_path / "crash.pid"
    res = sl(tmp_path, *base, "--model", "spawns.py:crashes", timeout=400,
             extra_env={"TMPDIR": str(tmp), "SLEEPER_FILE": str(sleeper)})
    assert res.returncode == 1 and "segmentation fault" in res.stdout, (res.stdout, res.stderr)
    assert _gone([int(sleeper.read_text())]) == [] and os.listdir(tmp) == []
    for sig, code in ((signal.SIGHUP, 130), (signal.SIGKILL, -9)):
        sleeper = tmp_path / f"{sig.name}.pid"
        proc = subprocess.Popen([sys.executable, "-m", "shapelint.cli", *base, "--model",
                                 "spawns.py:hangs"], cwd=str(tmp_path), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True,
                                env=env(TMPDIR=str(tmp), SLEEPER_FILE=str(sleeper)))
        pid = _wait_for(sleeper, proc)
        workers = children_of(proc.pid)
        assert workers, "no worker"
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == code, proc.stderr.read()[-2000:]
        assert _gone(workers + [pid]) == [], sig
        end = time.time() + 15
        while time.time() < end and os.listdir(tmp):
            time.sleep(0.2)
        assert os.listdir(tmp) == [], (sig, os.listdir(tmp))


HELPER_CALL = """\
import torch
from utils import length
class M(torch.nn.Module):
    def forward(self, x):
        if length(x) > 8:
            return x * 2
        return x
"""


@row("the same module name in two folders (`a/utils.py`, `b/utils.py`, each imported by "
     "`from utils import ...` beside it)", "shapelint check .",
     "each import resolves to the file beside the importer, as Python does for a script's folder: "
     "the finding on b's line, none on a's")
def same_module_name_in_two_folders(tmp_path):
    write_tree(tmp_path, {"a/model.py": HELPER_CALL, "b/model.py": HELPER_CALL,
                          "a/utils.py": "def length(x):\n    return 4\n",
                          "b/utils.py": "def length(x):\n    return x.shape[0]\n"})
    res = sl(tmp_path, "check", ".", "--no-cache")
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert "b/model.py:5:12: SL101" in res.stdout and "a/model.py" not in res.stdout, res.stdout
    # and the other way round (which folder sorts first must not matter)
    write_tree(tmp_path, {"a/utils.py": "def length(x):\n    return x.shape[0]\n",
                          "b/utils.py": "def length(x):\n    return 4\n"})
    res = sl(tmp_path, "check", ".", "--no-cache")
    assert "a/model.py:5:12: SL101" in res.stdout and "b/model.py" not in res.stdout, res.stdout


@row("`--diff` with `diff.mnemonicPrefix=true` in git's config, and new files with spaces or "
     "non-ASCII letters in their names", "shapelint check . --diff HEAD",
     "the changed lines and every new file are seen, whatever git's settings and the names")
def diff_whatever_git_settings(tmp_path):
    write_tree(tmp_path, {"ok.py": "import torch\nclass M(torch.nn.Module):\n"
                                   "    def forward(self, x):\n        return x\n"})
    _git(tmp_path, "init", "-q")
    for key, value in (("diff.mnemonicPrefix", "true"), ("diff.noprefix", "false"),
                       ("core.quotePath", "true"), ("color.ui", "always")):
        _git(tmp_path, "config", key, value)
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "x")
    write_tree(tmp_path, {"ok.py": HAZARD, "new dir/é x.py": HAZARD, "tab\tname.py": HAZARD})
    res = sl(tmp_path, "check", ".", "--diff", "HEAD", "--no-cache")
    assert res.returncode == 1, (res.stdout, res.stderr)
    for shown in (OK_FINDING, "new dir/é x.py:4:12: SL101", "tab\tname.py:4:12: SL101"):
        assert shown in res.stdout, (shown, res.stdout)


@row("an empty exclude pattern (`--exclude \"\"`, `exclude = [\"\"]`) or one written `./sub`",
     "shapelint check .", "an empty pattern is exit 2 naming it (it used to exclude every file); "
     "`./sub` excludes `sub` as `sub` does")
def exclude_patterns_that_lie(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD, "sub/hidden.py": HAZARD})
    line = clean_error(sl(tmp_path, "check", ".", "--exclude", "", "--no-cache"))
    assert "--exclude" in line and "empty" in line, line
    for key in ("exclude", "extend-exclude"):
        (tmp_path / "shapelint.toml").write_text(f'{key} = [""]\n')
        line = clean_error(sl(tmp_path, "check", ".", "--no-cache"))
        assert f"`{key}`" in line and "empty" in line, line
    for pattern in ("./sub", "sub", "./sub/", "sub/*"):
        (tmp_path / "shapelint.toml").write_text(f'exclude = ["{pattern}"]\n')
        res = sl(tmp_path, "check", ".", "--no-cache")
        assert res.returncode == 1 and OK_FINDING in res.stdout, (pattern, res.stdout)
        assert "hidden.py" not in res.stdout and "of 1 file" in res.stdout, (pattern, res.stdout)
    (tmp_path / "shapelint.toml").unlink()
    res = sl(tmp_path, "check", ".", "--exclude", "./sub", "--no-cache")
    assert "hidden.py" not in res.stdout and OK_FINDING in res.stdout, res.stdout


@row("`cache-dir = \".\"` (the project's root) or `cache-dir = \"~/...\"`", "shapelint check .",
     "no `.gitignore` written into a folder the cache did not create (git still shows untracked "
     "files); `~` is the home folder, never a folder named `~`")
def cache_dir_odd_places(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD, "shapelint.toml": 'cache-dir = "."\n'})
    _git(tmp_path, "init", "-q")
    assert sl(tmp_path, "check", ".").returncode == 1
    assert not (tmp_path / ".gitignore").exists()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=str(tmp_path),
                            capture_output=True, text=True).stdout
    assert "ok.py" in status, status
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "shapelint.toml").write_text('cache-dir = "~/caches/sl"\n')
    assert sl(tmp_path, "check", ".", extra_env={"HOME": str(home)}).returncode == 1
    assert not (tmp_path / "~").exists()
    assert (home / "caches" / "sl" / ".gitignore").read_text() == "*\n"
    assert any(n.startswith("check-") for n in os.listdir(home / "caches" / "sl"))


def _same_size_edit(path, old: str, new: str) -> None:
    assert len(old) == len(new)
    st = os.stat(path)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_size == st.st_size and os.stat(path).st_mtime_ns == st.st_mtime_ns


@row("a cached result whose missing helper module appears later, or whose file was edited "
     "without changing its size and its mtime restored", "shapelint check model.py (twice)",
     "the second run sees the new helper and the edit: the same report as with --no-cache")
def cache_sees_new_helpers_and_hidden_edits(tmp_path):
    write_tree(tmp_path, {"model.py": HELPER_CALL})
    _git(tmp_path, "init", "-q")
    res = sl(tmp_path, "check", "model.py")
    assert res.returncode == 0, res.stdout  # `length` cannot be followed yet
    write_tree(tmp_path, {"utils.py": "def length(x):\n    return x.shape[0]\n"})
    res = sl(tmp_path, "check", "model.py")
    assert res.returncode == 1 and "model.py:5:12: SL101" in res.stdout, res.stdout
    write_tree(tmp_path, {"ok.py": HAZARD})
    assert sl(tmp_path, "check", "ok.py").returncode == 1
    _same_size_edit(tmp_path / "ok.py", "x.shape[0]", "x.dtype   ")
    res = sl(tmp_path, "check", "ok.py")
    assert res.returncode == 0 and "SL101" not in res.stdout, res.stdout
    assert res.stdout == sl(tmp_path, "check", "ok.py", "--no-cache").stdout


BAD_SETTINGS = (("timeout = nan", "timeout"), ("timeout = -5", "timeout"), ("timeout = 0", "timeout"),
                ("timeout = inf", "timeout"), ("memory-limit-mb = -1", "memory-limit-mb"),
                ("memory-limit-mb = 0", "memory-limit-mb"), ("max-compiles = -1", "max-compiles"),
                ("batch-sizes = [0, 2]", "batch-sizes"), ("batch-sizes = []", "batch-sizes"),
                ("seq-lens = [4, -1]", "seq-lens"), ("seq-lens = [1.5]", "seq-lens"),
                ("seed = -3", "seed"), ('dynamic = "maybe"', "dynamic"), ('model = "m.py"', "model"))
BAD_FLAGS = ((["--timeout", "nan"], "--timeout"), (["--timeout", "-5"], "--timeout"),
             (["--memory-limit-mb", "-1"], "--memory-limit-mb"), (["--max-compiles", "-1"], "--max-compiles"),
             (["--batch-sizes", "0,2"], "--batch-sizes"), (["--seq-lens", "-1"], "--seq-lens"),
             (["--seed", "-1"], "--seed"))


@row("target settings out of range (`timeout = nan`, `timeout = -5`, `memory-limit-mb = -1`, "
     "batch sizes, sequence lengths, `max-compiles`, `seed`; the same as flags)",
     "shapelint run", "exit 2, one line naming the key (or the flag) and what it must be; "
     "no worker starts")
def target_settings_range_checked(tmp_path):
    for setting, key in BAD_SETTINGS:
        table = {"name": '"t"', "model": '"m.py:build"', "inputs": '"m.py:inputs"'}
        table[setting.split(" = ")[0]] = setting.split(" = ", 1)[1]
        (tmp_path / "shapelint.toml").write_text(
            "[[targets]]\n" + "".join(f"{k} = {v}\n" for k, v in table.items()))
        line = clean_error(sl(tmp_path, "run", "--no-static", "--no-cache"))
        assert f"`{key}`" in line and "targets[0]" in line, (setting, line)
    (tmp_path / "shapelint.toml").unlink()
    for flags, flag in BAD_FLAGS:
        line = clean_error(sl(tmp_path, "run", "--model", "m.py:build", "--inputs", "m.py:inputs",
                              *flags, "--no-static", "--no-cache"))
        assert flag in line, (flags, line)


FD_WRAPPER = """\
import resource, sys
from shapelint.static import engine
engine.Engine.min_parallel_lines = 0          # fork whatever the size
resource.setrlimit(resource.RLIMIT_NOFILE, (40, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from shapelint.cli import main
sys.exit(main(sys.argv[1:]))
"""


@row("`-j 100` on 120 files under `ulimit -n 40`", "shapelint check -j 100 .",
     "as many processes as the files and the open-file limit allow: every finding, no `Too many "
     "open files`; `run -j` is capped the same way")
def jobs_capped(tmp_path):
    write_tree(tmp_path, {f"m{i:03}.py": HAZARD for i in range(120)})
    write_tree(tmp_path, {"wrapper.py": FD_WRAPPER, "shapelint.toml": 'exclude = ["wrapper.py"]\n'})
    res = subprocess.run([sys.executable, "wrapper.py", "check", "--preview", ".", "-j", "100", "--no-cache"],
                         cwd=str(tmp_path), capture_output=True, text=True, env=env(), timeout=600)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr[-3000:]
    assert res.stdout.count(": SL101 ") == 120, res.stdout[-2000:]
    from shapelint.harness.command import jobs_for_targets

    assert 1 <= jobs_for_targets(100, 3) <= 3


def _baseline(tmp_path, name: str, text) -> str:
    (tmp_path / name).write_text(text if isinstance(text, str) else json.dumps(text))
    return name


@row("a malformed baseline (deep JSON, a number past a float's range, `path: null`, "
     "`findings: \"x\"`, a negative count) or a FIFO given as `--baseline`",
     "shapelint check . --baseline b.json",
     "exit 2, one line: `b.json: not a shapelint baseline: findings[0].path: expected a string, "
     "got null`; a FIFO is refused at once, never read")
def malformed_baselines(tmp_path):
    write_tree(tmp_path, {"ok.py": HAZARD})
    entry = {"rule": "SL101", "path": "ok.py", "source": "if x.shape[0] > 8:", "count": 1}
    cases = [("[" * 100000 + "]" * 100000, "nested too deeply"),
             ('{"version": 2, "findings": [{"rule": "SL101", "path": "ok.py", "source": "s", '
              '"count": 1e400}]}', "out of range"),
             ({"version": 2, "findings": [dict(entry, path=None)]}, "findings[0].path"),
             ({"version": 2, "findings": "x"}, "findings"),
             ({"version": 2, "findings": [1]}, "findings[0]"),
             ({"version": 2, "findings": [dict(entry, count=-1)]}, "count"),
             ({"version": 2, "findings": [dict(entry, count=2 ** 70)]}, "count"),
             ([entry], "an object")]
    for i, (text, words) in enumerate(cases):
        name = _baseline(tmp_path, f"b{i}.json", text)
        line = clean_error(sl(tmp_path, "check", ".", "--baseline", name, "--no-cache"))
        assert "not a shapelint baseline" in line and words in line, (i, line)
    os.mkfifo(tmp_path / "fifo.json")
    line = clean_error(sl(tmp_path, "check", ".", "--baseline", "fifo.json", "--no-cache", timeout=60))
    assert "fifo.json" in line and "not a regular file" in line, line


@row("a baseline written at the project's root and applied from a subfolder (or the other way "
     "round)", "shapelint check . --write-baseline b.json; cd sub; shapelint check . --baseline ../b.json",
     "paths are kept relative to the project's root (the config's folder, else the repository's "
     "root): the accepted finding stays accepted wherever the command runs")
def baseline_from_any_folder(tmp_path):
    write_tree(tmp_path, {"sub/ok.py": HAZARD, "shapelint.toml": "preview = false\n"})
    _git(tmp_path, "init", "-q")
    sub = tmp_path / "sub"
    wrote = sl(tmp_path, "check", ".", "--write-baseline", "b.json", "--no-cache")
    assert wrote.returncode == 0, wrote.stderr
    assert json.loads((tmp_path / "b.json").read_text())["findings"][0]["path"] == "sub/ok.py"
    for cwd, base in ((sub, "../b.json"), (tmp_path, "b.json")):
        res = sl(cwd, "check", ".", "--baseline", base, "--no-cache")
        assert res.returncode == 0 and "SL101" not in res.stdout, (cwd, res.stdout)
    wrote = sl(sub, "check", "ok.py", "--write-baseline", "../c.json", "--no-cache")
    assert wrote.returncode == 0, wrote.stderr
    res = sl(tmp_path, "check", "sub", "--baseline", "c.json", "--no-cache")
    assert res.returncode == 0 and "SL101" not in res.stdout, res.stdout
    # a version 1 baseline (paths as the working directory saw them) still applies from there
    (tmp_path / "v1.json").write_text(json.dumps({"version": 1, "findings": [
        {"rule": "SL101", "path": "ok.py", "source": "if x.shape[0] > 8:", "count": 1}]}))
    res = sl(sub, "check", ".", "--baseline", "../v1.json", "--no-cache")
    assert res.returncode == 0 and "SL101" not in res.stdout, res.stdout


@row("`CompileWatch().assert_no_recompiles()` (or `.events`, `.label()`) without `with`",
     "python -c 'from shapelint.testing import CompileWatch; CompileWatch().assert_no_recompiles()'",
     "a clear error saying to use it as a context manager first (`with CompileWatch() as watch:`), "
     "not AttributeError on None")
def compile_watch_without_with(tmp_path):
    for call in ("assert_no_recompiles()", "assert_max_compiles(1)", "assert_no_graph_breaks()",
                 "events", "compiles", "label('x')"):
        res = subprocess.run([sys.executable, "-c", "from shapelint.testing import CompileWatch\n"
                              f"CompileWatch().{call}"], capture_output=True, text=True, env=env())
        assert res.returncode == 1 and "AttributeError" not in res.stderr, (call, res.stderr)
        last = res.stderr.strip().splitlines()[-1]
        assert "with CompileWatch() as watch" in last, (call, last)


# =============================================================================================
# Whose fault: a mistake in the target's settings is the target's error, naming the setting
# =============================================================================================

MISTAKES = """\
import torch
def build(): return torch.nn.Linear(4, 4)
def raises(): raise RuntimeError("cannot build the model")
def inputs(batch): return (torch.randn(batch, 4),)
def wrong(batch): return 42
"""
MISTAKE_TARGETS = (  # (name, settings, the key its error must start with, words it must hold)
    ("seq", 'inputs = "m.py:inputs"\nseq-lens = [5, 9]', "seq-lens", "add the parameter"),
    ("wrong", 'inputs = "m.py:wrong"', "inputs `m.py:wrong`", "must return a tuple of args"),
    ("raises", 'model = "m.py:raises"', "model `m.py:raises`", "cannot build the model (at m.py:3)"),
    ("noattr", 'model = "m.py:nope"', "model `m.py:nope`", "has no attribute `nope`"),
    ("nofile", 'inputs = "gone.py:inputs"', "inputs `gone.py:inputs`", "no such file gone.py"),
    ("nomodule", 'model = "nowhere.models:build"', "model `nowhere.models:build`", "looked in ./"),
)


def _no_shapelint_places(doc) -> None:
    """Nothing in a run's report points into shapelint's own files."""
    own = "shapelint/"
    for f in doc["findings"]:
        assert not f["path"].startswith(own), f
    for t in doc["targets"]:
        for ev in t.get("events", []):
            assert ev["kind"] != "compile-error" and own not in json.dumps(ev), ev
        assert not any(own in p for p in t.get("executed", {})), t["executed"]


@row("a target's setting that is wrong (`seq-lens` for an inputs callable without `seq_len`, "
     "inputs that return no args, kwargs or tensor, a factory that raises, a `model` or "
     "`inputs` that names nothing)",
     "shapelint run --model m.py:build --inputs m.py:inputs --seq-lens 5,9 (and one target of "
     "each beside a good one)",
     "that target fails with one line that starts with the setting (`seq-lens`, `inputs`, "
     "`model`) and says what to do; no per-shape compile error, nothing blamed on shapelint's "
     "own files; the others complete", pytest.mark.slow)
def target_settings_name_the_key(tmp_path):
    pytest.importorskip("torch")
    write_tree(tmp_path, {"m.py": MISTAKES})
    # the command: a compile error per shape and an SL903 in harness/worker.py before
    res = sl(tmp_path, "run", "--model", "m.py:build", "--inputs", "m.py:inputs",
             "--seq-lens", "5,9", "--batch-sizes", "1,2", "--no-cache", timeout=600)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert "shapelint/" not in res.stdout and "compile error" not in res.stdout, res.stdout
    assert "SL903" not in res.stdout and "new compiles" not in res.stdout, res.stdout
    said = [ln for ln in res.stdout.splitlines() if "seq_len" in ln]
    assert len(said) == 1 and said[0].startswith("  FAILED: seq-lens [5, 9] given"), res.stdout
    toml = ""
    for name, settings, _, _ in MISTAKE_TARGETS:
        table = {"name": f'"{name}"', "model": '"m.py:build"', "inputs": '"m.py:inputs"',
                 "batch-sizes": "[1, 2]"}
        for line in settings.splitlines():
            key, value = line.split(" = ", 1)
            table[key] = value
        toml += "[[targets]]\n" + "".join(f"{k} = {v}\n" for k, v in table.items())
    toml += '[[targets]]\nname = "good"\nmodel = "m.py:build"\ninputs = "m.py:inputs"\nbatch-sizes = [1, 2]\n'
    (tmp_path / "shapelint.toml").write_text(toml)
    res = sl(tmp_path, "run", "-j", "2", "--format", "json", "-o", "r.json", "--no-cache", timeout=900)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    targets = {t["name"]: t for t in doc["targets"]}
    for name, _, key, words in MISTAKE_TARGETS:
        t = targets[name]
        assert t["failed"] and t["error"].startswith(key) and words in t["error"], (name, t["error"])
        assert "\n" not in t["error"] and not t.get("per_shape"), (name, t)
    assert not targets["good"].get("failed") and targets["good"]["compiles"] >= 1
    _no_shapelint_places(doc)
    text = sl(tmp_path, "report", "r.json").stdout
    for name, _, key, _ in MISTAKE_TARGETS:  # said once, on the target's FAILED line
        assert text.count(targets[name]["error"]) == 1, text


SRC_LAYOUT = {
    "src/mymodels/__init__.py": "",
    "src/mymodels/models.py": """
        import torch
        def build(): return torch.nn.Linear(4, 4)
        """,
    "lib/helpers/__init__.py": "",
    "lib/helpers/shapes.py": """
        import torch
        def inputs(batch): return (torch.randn(batch, 4),)
        """,
    "pyproject.toml": """
        [tool.pytest.ini_options]
        pythonpath = ["src", "lib"]
        """,
    "tests/test_model.py": """
        import pytest

        @pytest.mark.no_recompiles(model="mymodels.models:build", inputs="helpers.shapes:inputs",
                                   batch_sizes=[1, 2])
        def test_compiles_once():
            pass

        @pytest.mark.no_recompiles(model="nowhere.models:build", inputs="helpers.shapes:inputs",
                                   batch_sizes=[1])
        def test_names_nothing():
            pass
        """,
}


@row("a src-layout project (`src/mymodels`, `pythonpath = [\"src\"]` in its pytest config) whose "
     "targets name `mymodels.models:build`",
     "shapelint run --model mymodels.models:build (from the root or a subfolder); pytest with "
     "`@pytest.mark.no_recompiles(model=\"mymodels.models:build\")`",
     "imported: the worker looks in the target's folder, the project's `src/`, pytest's "
     "`pythonpath` (the marker passes it) and the config's folder; a module in none of them is "
     "the target's error, listing the folders it looked in", pytest.mark.slow)
def src_layout_targets(tmp_path):
    pytest.importorskip("torch")
    write_tree(tmp_path, SRC_LAYOUT)
    _git(tmp_path, "init", "-q")
    for cwd in (tmp_path, tmp_path / "tests"):
        res = sl(cwd, "run", "--model", "mymodels.models:build", "--inputs",
                 "mymodels.models:build", "--batch-sizes", "1", "--no-static", "--no-cache",
                 timeout=600)
        # found: the inputs callable is the wrong one on purpose (a cheap check of the import)
        assert "No module named" not in res.stdout + res.stderr, (cwd, res.stdout)
        assert "inputs `mymodels.models:build`" in res.stdout, (cwd, res.stdout)
    res = sl(tmp_path, "run", "--model", "nowhere.models:build", "--inputs",
             "mymodels.models:build", "--batch-sizes", "1", "--no-static", "--no-cache", timeout=600)
    assert res.returncode == 1, res.stderr
    assert "model `nowhere.models:build`: no module named `nowhere` (looked in ./, src/, then" \
        in res.stdout, res.stdout
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-rf", "tests"], cwd=str(tmp_path), capture_output=True, text=True,
                         env=env(), timeout=900)
    out = res.stdout
    assert "1 passed" in out and "1 failed" in out, out[-3000:]
    assert "test_names_nothing" in out and "No module named 'mymodels'" not in out, out[-3000:]
    assert "no module named `nowhere` (looked in tests/, ./, src/, lib/, then" in out, out[-3000:]


# =============================================================================================

@pytest.mark.parametrize("case", rows_of(__name__))
def test_fault(case: Row, request):
    needs = case.check.__code__.co_varnames[: case.check.__code__.co_argcount]
    case.check(*(request.getfixturevalue(n) for n in needs))

