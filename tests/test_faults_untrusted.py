"""Issue 17, "Trust no input": the fault rows a breaker found (the security rows first). Each row
is reproduced as a user (or an attacker) would cause it, and checked for what must happen
instead. Shares the table's machinery with tests/test_faults.py (tests/fault_support.py)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import zipfile

import pytest

from conftest import write_tree
from fault_support import HAZARD, OK_FINDING, Row, clean_error, row, rows_of, sl

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

@pytest.mark.parametrize("case", rows_of(__name__))
def test_fault(case: Row, request):
    needs = case.check.__code__.co_varnames[: case.check.__code__.co_argcount]
    case.check(*(request.getfixturevalue(n) for n in needs))

